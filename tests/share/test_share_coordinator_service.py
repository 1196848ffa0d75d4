"""The share coordinator over a real replica manager and `__share_group_state` log: state
written with acks=all and replayed, loaded again by a new coordinator as it was, and the
answers of a coordinator that does not hold the key's partition."""

from __future__ import annotations

import asyncio
import time

import pytest

from kt.broker.metadata_cache import PartitionState
from kt.broker.replication.replica_manager import ReplicaManager
from kt.broker.share.share_coordinator import ShareStateError, WriteRequest
from kt.broker.share.share_coordinator_service import (
    SHARE_GROUP_STATE_TOPIC,
    ShareCoordinatorService,
)
from kt.broker.share.share_state import SharePartitionKey, StateBatch
from kt.config import LogConfig
from kt.storage.log_manager import LogManager
from tests.share.test_share_state import ORDERS

KEY = SharePartitionKey("sg", ORDERS, 0)


def service_on(replicas: ReplicaManager) -> ShareCoordinatorService:
    service = ShareCoordinatorService(replicas, lambda: 1, lambda t: 2 if t == ORDERS else None)
    replicas.leadership_listeners.append(service.on_leadership_change)
    return service


async def loaded(service: ShareCoordinatorService) -> None:
    deadline = time.monotonic() + 10
    while 0 not in service.shards:
        assert time.monotonic() < deadline, "the partition did not load"
        await asyncio.sleep(0.005)


def test_state_survives_the_coordinator_moving(tmp_path) -> None:
    async def scenario() -> None:
        config = LogConfig()
        logs = LogManager([str(tmp_path)], config, {})
        replicas = ReplicaManager(0, logs, lambda topic: config)
        service = service_on(replicas)
        state = PartitionState(SHARE_GROUP_STATE_TOPIC, 0, 0, 0, [0], [0])
        replicas.become_leader_or_follower(0, 1, [state], {})
        await loaded(service)
        await service.initialize(KEY, 1, 0)
        await service.write(WriteRequest(KEY, 1, 0, 5, [StateBatch(5, 9, 2, 1),
                                                         StateBatch(10, 12, 0, 3)]))  # fmt: skip
        before = service.summary(KEY)
        assert before is not None and before.start_offset == 5
        again = service_on(replicas)  # a broker taking the partition over replays the log
        again.on_election(0, 2)
        await loaded(again)
        assert again.summary(KEY) == before
        assert (await again.read(KEY, 1)).state_batches == (StateBatch(5, 9, 2, 1),
                                                             StateBatch(10, 12, 0, 3))  # fmt: skip
        service.on_resignation(0)
        with pytest.raises(ShareStateError) as elsewhere:
            await service.write(WriteRequest(KEY, 1, 1, 5, []))
        assert elsewhere.value.error == "NOT_COORDINATOR"
        logs.shutdown()

    asyncio.run(scenario())
