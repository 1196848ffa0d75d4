"""The share coordinator (KIP-932): the share partitions' state in `__share_group_state`
partitions this broker leads (Kafka's ShareCoordinatorService).

A partition is loaded (its records replayed into a ShareCoordinatorShard) when this broker
becomes its leader, and dropped when leadership goes; an operation on a key whose
partition is elsewhere answers NOT_COORDINATOR, one still loading
COORDINATOR_LOAD_IN_PROGRESS. An operation's records are appended with acks=all and
replayed once written: what a new coordinator loads is what the old one answered.
"""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Callable
from typing import Any

from kt.broker.coordinator_errors import APPEND_ERRORS
from kt.broker.coordinator_loader import log_batches
from kt.broker.replication.partition import TopicPartition
from kt.broker.share import share_state as ss
from kt.broker.share.share_coordinator import ShareCoordinatorShard, ShareStateError, WriteRequest
from kt.broker.share.share_state import ShareGroupOffset, SharePartitionKey, StateRecord
from kt.broker.task_set import TaskSet
from kt.storage.producer_state import ORIGIN_COORDINATOR
from kt.storage.record_batch import Record, build_batch

log = logging.getLogger(__name__)

SHARE_GROUP_STATE_TOPIC = "__share_group_state"


class ShareCoordinatorService:
    """The share coordinator's shards, one per `__share_group_state` partition led here."""

    def __init__(
        self,
        replica_manager: Any,
        partition_count: Callable[[], int],
        topic_partitions: Callable[[object], int | None],
        *,
        write_timeout_ms: int = 5000,
        load_buffer_size: int = 5 * 1024 * 1024,
        updates_per_snapshot: int = 500,
        clock: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self.replica_manager = replica_manager
        self.partition_count = partition_count  # of __share_group_state
        self.topic_partitions = topic_partitions  # a topic id's partition count
        self.write_timeout_ms = write_timeout_ms
        self.load_buffer_size = load_buffer_size
        self.updates_per_snapshot = updates_per_snapshot
        self.clock = clock
        self.shards: dict[int, ShareCoordinatorShard] = {}
        self.loading: set[int] = set()
        self._epochs: dict[int, int] = {}
        self._tasks = TaskSet()

    # -- the operations (the internal RPCs' semantics) -----------------------------------

    async def initialize(self, key: SharePartitionKey, state_epoch: int, start_offset: int) -> None:
        shard, partition = self._shard(key)
        await self._append(partition, shard, shard.initialize(key, state_epoch, start_offset))

    async def read(self, key: SharePartitionKey, leader_epoch: int) -> ShareGroupOffset:
        shard, partition = self._shard(key)
        state, records = shard.read(key, leader_epoch)
        await self._append(partition, shard, records)
        return state

    async def write(self, request: WriteRequest) -> None:
        shard, partition = self._shard(request.key)
        await self._append(partition, shard, shard.write(request))

    async def delete(self, key: SharePartitionKey) -> None:
        shard, partition = self._shard(key)
        await self._append(partition, shard, shard.delete(key))

    def summary(self, key: SharePartitionKey) -> ShareGroupOffset | None:
        shard, _ = self._shard(key)
        return shard.summary(key)

    def _shard(self, key: SharePartitionKey) -> tuple[ShareCoordinatorShard, int]:
        partition = key.coordinator_partition(self.partition_count())
        if partition in self.loading:
            raise ShareStateError("COORDINATOR_LOAD_IN_PROGRESS")
        shard = self.shards.get(partition)
        if shard is None:
            raise ShareStateError("NOT_COORDINATOR")
        return shard, partition

    async def _append(self, partition: int, shard: ShareCoordinatorShard,
                      records: list[StateRecord]) -> None:  # fmt: skip
        """Write `records` with acks=all, then replay them; ShareStateError on failure."""
        if not records:
            return
        tp = TopicPartition(SHARE_GROUP_STATE_TOPIC, partition)
        now = self.clock()
        batch = build_batch([
            Record(None, now, ss.key_bytes(t, k), None if v is None else ss.value_bytes(t, v))
            for t, k, v in records
        ])  # fmt: skip
        results = await self.replica_manager.append_records(
            self.write_timeout_ms, -1, {tp: bytearray(batch)}, ORIGIN_COORDINATOR
        )
        code = results[tp].error_code
        if code:
            from kt.errors import error_for

            name = error_for(code).name
            raise ShareStateError(APPEND_ERRORS.get(name, name))
        if self.shards.get(partition) is shard:  # still ours
            for record in records:
                shard.replay(record)

    # -- leadership of __share_group_state partitions ------------------------------------

    def on_leadership_change(self, leaders: list[Any], resigned: list[Any]) -> None:
        """ReplicaManager callback: load the partitions led here now, drop the others."""
        for partition in leaders:
            if partition.tp.topic == SHARE_GROUP_STATE_TOPIC:
                self.on_election(partition.tp.partition, partition.leader_epoch)
        for tp in resigned:
            if tp.topic == SHARE_GROUP_STATE_TOPIC:
                self.on_resignation(tp.partition)

    def on_election(self, partition: int, epoch: int) -> None:
        if self._epochs.get(partition) == epoch and partition in self.shards:
            return
        self._epochs[partition] = epoch
        self.loading.add(partition)
        self._tasks.spawn(self._load(partition, epoch))

    def on_resignation(self, partition: int) -> None:
        self._epochs.pop(partition, None)
        self.loading.discard(partition)
        self.shards.pop(partition, None)

    async def _load(self, partition: int, epoch: int) -> None:
        shard = ShareCoordinatorShard(self.topic_partitions, self.clock, self.updates_per_snapshot)
        started = time.monotonic()
        tp = TopicPartition(SHARE_GROUP_STATE_TOPIC, partition)
        async for batch in log_batches(self.replica_manager, tp, self.load_buffer_size,
                                       lambda: self._epochs.get(partition) == epoch):  # fmt: skip
            for record in batch.records():
                try:
                    shard.replay(ss.read_record(record.key, record.value))
                except (ValueError, IndexError, struct.error) as e:
                    log.warning("Skipping unreadable %s record at offset %s: %s",
                                SHARE_GROUP_STATE_TOPIC, record.offset, e)  # fmt: skip
        if self._epochs.get(partition) != epoch:
            return
        self.shards[partition] = shard
        self.loading.discard(partition)
        log.info("Finished loading share state from %s-%d in %d milliseconds (%d partitions)",
                 SHARE_GROUP_STATE_TOPIC, partition, (time.monotonic() - started) * 1000,
                 len(shard.state))  # fmt: skip

    def shutdown(self) -> None:
        self._tasks.cancel_all()
