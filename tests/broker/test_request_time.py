"""LoopTime (kt/broker/api/request_time.py): a handler's request time is the time its steps
run on the loop, not the time it waits; its result, its exception and a cancellation
pass through as if it were awaited directly. A clock that moves only when told makes
the sums exact."""

from __future__ import annotations

import asyncio

import pytest

from kt.broker.api.request_time import LoopTime


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_only_the_steps_count() -> None:
    clock = Clock()

    async def handler() -> str:
        clock.now += 2  # works
        await asyncio.sleep(0)  # waits: the purgatory, another thread
        clock.now += 3
        return "answer"

    async def main() -> tuple[str, float]:
        timed = LoopTime(handler(), clock)
        waiting = asyncio.get_running_loop().call_soon(
            lambda: setattr(clock, "now", clock.now + 100)
        )
        result = await timed
        waiting.cancel()
        return result, timed.seconds

    assert asyncio.run(main()) == ("answer", 5)


def test_an_exception_and_a_cancellation_pass_through() -> None:
    async def failing() -> None:
        await asyncio.sleep(0)
        raise ValueError("bad request")

    async def waiting(started: asyncio.Event, cleaned: list[str]) -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        finally:
            cleaned.append("closed")

    async def main() -> list[str]:
        with pytest.raises(ValueError, match="bad request"):
            await LoopTime(failing())
        started, cleaned = asyncio.Event(), []
        task = asyncio.create_task(_await(LoopTime(waiting(started, cleaned))))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return cleaned

    assert asyncio.run(main()) == ["closed"]


async def _await(timed: LoopTime) -> None:
    await timed
