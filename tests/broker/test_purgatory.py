"""Delayed operations wake on notification or time out, and leave nothing behind."""

import asyncio

from kt.broker.replication.purgatory import DelayedOperationPurgatory


def test_notification_wakes_the_waiter() -> None:
    async def scenario() -> bool:
        purgatory = DelayedOperationPurgatory("Fetch")
        waiter = asyncio.create_task(purgatory.wait_any([("t", 0), ("t", 1)], 30))
        while purgatory.watched() < 2:
            await asyncio.sleep(0)
        assert purgatory.check_and_complete(("t", 1)) == 1
        woke = await waiter
        assert purgatory.watched() == 0
        return woke

    assert asyncio.run(scenario()) is True


def test_deadline_without_notification() -> None:
    async def scenario() -> bool:
        purgatory = DelayedOperationPurgatory("Produce")
        woke = await purgatory.wait_any([("t", 0)], 0.01)
        assert purgatory.watched() == 0
        assert purgatory.check_and_complete(("t", 0)) == 0
        return woke

    assert asyncio.run(scenario()) is False
