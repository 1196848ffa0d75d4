"""How a share partition's leader reaches the share coordinator (Kafka's
DefaultStatePersister): this broker's own when it leads the key's `__share_group_state`
partition, another broker's over the internal RPCs (Initialize, Read, Write and
DeleteShareGroupState, ReadShareGroupStateSummary) when that one does.

`__share_group_state` is created the first time a share partition needs it. While the
key's partition has no leader, or it is still loading, or leadership is moving, the
persister asks again, within a deadline; then it answers COORDINATOR_NOT_AVAILABLE (the
share partition's fetch answers that, and the member fetches again).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from kt.broker.share.share_coordinator import ShareStateError, WriteRequest
from kt.broker.share.share_coordinator_service import ShareCoordinatorService
from kt.broker.share.share_state import ShareGroupOffset, SharePartitionKey, StateBatch
from kt.errors import KafkaError
from kt.protocol import ApiKey
from kt.protocol import messages as m

T = TypeVar("T")
_RETRY = frozenset(("NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS",
                    "COORDINATOR_NOT_AVAILABLE", "REQUEST_TIMED_OUT", "BROKER_NOT_AVAILABLE",
                    "NETWORK_EXCEPTION"))  # fmt: skip


class Persister:
    def __init__(
        self,
        service: ShareCoordinatorService,
        coordinator_leader: Callable[[SharePartitionKey], int | None],
        broker_id: int,
        create_topic: Callable[[], Awaitable[None]],
        connections: Any,
        request_timeout_s: float = 30.0,
        wait_s: float = 10.0,
    ) -> None:
        self.service = service
        # The broker leading the key's __share_group_state partition (-1: none now);
        # None without the topic.
        self.coordinator_leader = coordinator_leader
        self.broker_id = broker_id
        self.create_topic = create_topic
        self.connections = connections  # InterBrokerConnections
        self.request_timeout_s = request_timeout_s
        self.wait_s = wait_s

    async def initialize(self, key: SharePartitionKey, state_epoch: int, start: int) -> None:
        R = m.InitializeShareGroupStateRequest
        partition = R.PartitionData(partition=key.partition, state_epoch=state_epoch,
                                    start_offset=start)  # fmt: skip
        request = R(group_id=key.group_id, topics=[
            R.InitializeStateData(topic_id=key.topic_id, partitions=[partition])])  # fmt: skip
        await self._call(key, lambda: self.service.initialize(key, state_epoch, start),
                         ApiKey.INITIALIZE_SHARE_GROUP_STATE, request, _no_result)  # fmt: skip

    async def read(self, key: SharePartitionKey, leader_epoch: int) -> ShareGroupOffset:
        R = m.ReadShareGroupStateRequest
        request = R(group_id=key.group_id, topics=[R.ReadStateData(
            topic_id=key.topic_id, partitions=[R.PartitionData(
                partition=key.partition, leader_epoch=leader_epoch)])])  # fmt: skip
        return await self._call(key, lambda: self.service.read(key, leader_epoch),
                                ApiKey.READ_SHARE_GROUP_STATE, request, _read_result)  # fmt: skip

    async def write(self, w: WriteRequest) -> None:
        R = m.WriteShareGroupStateRequest
        batches = [R.StateBatch(first_offset=b.first, last_offset=b.last,
                                delivery_state=b.delivery_state, delivery_count=b.delivery_count)
                   for b in w.state_batches]  # fmt: skip
        partition = R.PartitionData(
            partition=w.key.partition, state_epoch=w.state_epoch, leader_epoch=w.leader_epoch,
            start_offset=w.start_offset, delivery_complete_count=w.delivery_complete_count,
            state_batches=batches,
        )  # fmt: skip
        request = R(group_id=w.key.group_id, topics=[
            R.WriteStateData(topic_id=w.key.topic_id, partitions=[partition])])  # fmt: skip
        await self._call(w.key, lambda: self.service.write(w), ApiKey.WRITE_SHARE_GROUP_STATE,
                         request, _no_result)  # fmt: skip

    async def delete(self, key: SharePartitionKey) -> None:
        R = m.DeleteShareGroupStateRequest
        partition = R.PartitionData(partition=key.partition)
        request = R(group_id=key.group_id, topics=[
            R.DeleteStateData(topic_id=key.topic_id, partitions=[partition])])  # fmt: skip
        await self._call(key, lambda: self.service.delete(key), ApiKey.DELETE_SHARE_GROUP_STATE,
                         request, _no_result)  # fmt: skip

    async def read_summary(self, key: SharePartitionKey) -> ShareGroupOffset:
        """The partition's start offset, delivered count and epochs (start offset and
        delivered count -1, epochs 0, when it was never initialized)."""
        R = m.ReadShareGroupStateSummaryRequest
        partition = R.PartitionData(partition=key.partition)
        request = R(group_id=key.group_id, topics=[
            R.ReadStateSummaryData(topic_id=key.topic_id, partitions=[partition])])  # fmt: skip

        async def local() -> ShareGroupOffset:
            return self.service.summary(key) or NEVER_INITIALIZED

        return await self._call(key, local, ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, request,
                                _summary_result)  # fmt: skip

    async def _call(self, key: SharePartitionKey, local: Callable[[], Awaitable[T]],
                    api: ApiKey, request: Any, result: Callable[[Any], T]) -> T:  # fmt: skip
        deadline = time.monotonic() + self.wait_s
        created = False
        while True:
            leader = self.coordinator_leader(key)
            try:
                if leader is None or leader < 0 or leader == self.broker_id:
                    return await local()
                response = await self.connections.send(leader, api, request,
                                                       self.request_timeout_s)  # fmt: skip
                return result(response.results[0].partitions[0])
            except ShareStateError as e:
                if e.error not in _RETRY:
                    raise
                failure: Exception = e
            except KafkaError as e:  # the other broker could not be reached
                if e.name not in _RETRY:
                    raise ShareStateError(e.name, str(e)) from e
                failure = e
            if time.monotonic() > deadline:
                raise ShareStateError("COORDINATOR_NOT_AVAILABLE") from failure
            if leader is None and not created:
                await self.create_topic()
                created = True
            await asyncio.sleep(0.02)


def _checked(partition: Any) -> Any:
    if partition.error_code:
        raise ShareStateError(KafkaError(partition.error_code).name, partition.error_message)
    return partition


def _no_result(partition: Any) -> None:
    _checked(partition)


# ReadShareGroupStateSummaryResponse.toResponseData(topic, partition, -1, -1, 0, 0)
NEVER_INITIALIZED = ShareGroupOffset(0, 0, 0, -1, -1)


def _summary_result(partition: Any) -> ShareGroupOffset:
    p = _checked(partition)
    return ShareGroupOffset(0, p.state_epoch, p.leader_epoch, p.start_offset,
                            p.delivery_complete_count)  # fmt: skip


def _read_result(partition: Any) -> ShareGroupOffset:
    p = _checked(partition)
    batches = tuple(StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                    for b in p.state_batches)  # fmt: skip
    return ShareGroupOffset(0, p.state_epoch, 0, p.start_offset, state_batches=batches)
