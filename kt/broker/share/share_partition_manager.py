"""The share partitions this broker leads, for ShareFetch and ShareAcknowledge (Kafka's
SharePartitionManager).

A share partition is created on its first fetch: its durable state is read from the
share coordinator, which the group coordinator initialized before it assigned the
partition (a start offset of -1 follows share.auto.offset.reset, `latest` by default:
the log end). A state the share coordinator cannot give fails the fetch of that
partition with Kafka's error for it (SharePartition.fetchPersisterError). A fetch
reads the log from each share partition's next available offset (waiting up to MaxWaitMs
for MinBytes, as a consumer's fetch does), acquires for the member what it may, and
answers the records with their acquired ranges. Acknowledgements, and locks that expire,
are written to the share coordinator before the answer: a broker killed then loses
nothing acknowledged and redelivers only what was in flight.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from kt.broker.group.group_config import parse_auto_offset_reset
from kt.broker.replication.partition import TopicPartition
from kt.broker.share.share_coordinator import ShareStateError, WriteRequest
from kt.broker.share.share_partition import (
    AcknowledgeType,
    AcquiredRecords,
    ShareAcknowledgeError,
    SharePartition,
    SharePartitionConfig,
)
from kt.broker.share.share_state import (
    UNINITIALIZED_START_OFFSET,
    ShareGroupOffset,
    SharePartitionKey,
    StateBatch,
)
from kt.broker.task_set import TaskSet
from kt.storage.control_records import ABORT, parse_control_type
from kt.storage.records import iter_batches

log = logging.getLogger(__name__)

# SharePartition.fetchPersisterError: the share coordinator's error as a fetch's.
PERSISTER_ERRORS = {
    "NOT_COORDINATOR": "COORDINATOR_NOT_AVAILABLE",
    "COORDINATOR_NOT_AVAILABLE": "COORDINATOR_NOT_AVAILABLE",
    "COORDINATOR_LOAD_IN_PROGRESS": "COORDINATOR_NOT_AVAILABLE",
    "GROUP_ID_NOT_FOUND": "GROUP_ID_NOT_FOUND",
    "UNKNOWN_TOPIC_OR_PARTITION": "UNKNOWN_TOPIC_OR_PARTITION",
    "FENCED_LEADER_EPOCH": "NOT_LEADER_OR_FOLLOWER",
    "FENCED_STATE_EPOCH": "NOT_LEADER_OR_FOLLOWER",
}


class Persister(Protocol):
    """The share coordinator's operations, wherever it runs."""

    async def read(self, key: SharePartitionKey, leader_epoch: int) -> ShareGroupOffset: ...

    async def write(self, request: WriteRequest) -> None: ...


def aborted_batches(batches: Iterable[Any], aborted: Iterable[Any]) -> list[tuple[int, int]]:
    """The (base, last) offsets of the log batches of aborted transactions among
    `batches` (SharePartition.fetchAbortedTransactionRecordBatches): a producer's
    transactional batches from its aborted transaction's first offset until its abort
    marker."""
    pending = sorted(aborted, key=lambda t: t.first_offset)
    producers: set[int] = set()
    out = []
    for batch in batches:
        if batch.producer_id < 0:
            continue
        while pending and pending[0].first_offset <= batch.last_offset:
            producers.add(pending.pop(0).producer_id)
        if batch.is_control:
            records = batch.records()
            if records and parse_control_type(records[0].key) == ABORT:
                producers.discard(batch.producer_id)
        elif batch.is_transactional and batch.producer_id in producers:
            out.append((batch.base_offset, batch.last_offset))
    return out


def _reset_offset(log: Any, auto_offset_reset: str) -> int:
    """Where a share partition the group never read starts (SharePartition's
    startOffsetDuringInitialization): the log start (earliest), the first offset at or
    after now less the duration (by_duration; the log end when none is), else the log end."""
    strategy, duration_ms = parse_auto_offset_reset(auto_offset_reset)
    if strategy == "earliest":
        return log.log_start_offset
    if strategy == "by_duration":
        found = log.fetch_offset_by_timestamp(int(time.time() * 1000) - duration_ms)
        if found is not None:
            return min(found.offset, log.high_watermark)
    return log.high_watermark


@dataclass(frozen=True)
class ShareFetchSettings:
    """A group's share settings: its share partitions' limits, where a partition it never
    read starts (share.auto.offset.reset) and what it reads (share.isolation.level)."""

    partition: SharePartitionConfig = field(default_factory=SharePartitionConfig)
    auto_offset_reset: str = "latest"
    isolation_level: str = "read_uncommitted"


@dataclass
class PartitionFetch:
    """One partition's part of a ShareFetch answer."""

    error: str = "NONE"
    records: bytes = b""
    acquired: list[AcquiredRecords] = field(default_factory=list)


@dataclass
class _Held:
    partition: SharePartition
    key: SharePartitionKey
    leader_epoch: int
    state_epoch: int
    writing: asyncio.Lock = field(default_factory=asyncio.Lock)


class SharePartitionManager:
    def __init__(
        self,
        replica_manager: Any,
        persister: Persister,
        settings: Callable[[str], ShareFetchSettings],
    ) -> None:
        self.replica_manager = replica_manager
        self.persister = persister
        self.settings = settings  # a group's share settings
        self._held: dict[tuple[str, TopicPartition], _Held] = {}
        self._tasks = TaskSet()

    # -- share partitions ----------------------------------------------------------------

    async def _share_partition(self, group_id: str, tp: TopicPartition,
                               topic_id: uuid.UUID) -> _Held:  # fmt: skip
        held = self._held.get((group_id, tp))
        partition = self.replica_manager.get_partition(tp)  # KafkaError when not leading
        partition.check_leader(-1)
        settings = self.settings(group_id)
        if held is not None and held.leader_epoch == partition.leader_epoch:
            held.partition.config = settings.partition  # the group's configs, as they are now
            return held
        key = SharePartitionKey(group_id, topic_id, tp.partition)
        epoch = partition.leader_epoch
        state = await self.persister.read(key, epoch)
        start = state.start_offset
        if start == UNINITIALIZED_START_OFFSET:
            start = _reset_offset(partition.log, settings.auto_offset_reset)
        loop = asyncio.get_running_loop()
        sp = SharePartition.from_state(
            start,
            [(b.first, b.last, b.delivery_state, b.delivery_count) for b in state.state_batches],
            settings.partition,
            lambda ms, callback: loop.call_later(ms / 1000, callback),
        )
        current = self._held.get((group_id, tp))
        if current is not None and current.leader_epoch == epoch:
            return current  # another fetch made it meanwhile
        held = self._held[(group_id, tp)] = _Held(sp, key, epoch, state.state_epoch)
        sp.on_released = lambda: self._tasks.spawn(self._persist(held))
        return held

    async def _persist(self, held: _Held) -> str:
        """Write the share partition's state; the error name."""
        sp = held.partition
        batches = [StateBatch(*b) for b in sp.state_batches()]
        request = WriteRequest(held.key, held.state_epoch, held.leader_epoch, sp.start_offset,
                               batches, sp.delivery_complete_count())  # fmt: skip
        async with held.writing:
            try:
                await self.persister.write(request)
            except ShareStateError as e:
                log.warning("Writing the state of share partition %s failed: %s",
                            held.key, e.error)  # fmt: skip
                return e.error
        return "NONE"

    # -- ShareFetch ------------------------------------------------------------------------

    async def fetch(
        self,
        group_id: str,
        member_id: str,
        partitions: Iterable[tuple[TopicPartition, uuid.UUID]],
        max_records: int,
        max_bytes: int,
        max_wait_ms: int,
        min_bytes: int,
        isolation_level: int,
        record_limit: bool = False,
    ) -> dict[TopicPartition, PartitionFetch]:
        from kt.broker.replication.replica_manager import FetchRequestPartition
        from kt.errors import KafkaError

        out: dict[TopicPartition, PartitionFetch] = {}
        held: dict[TopicPartition, _Held] = {}
        for tp, topic_id in partitions:
            try:
                held[tp] = await self._share_partition(group_id, tp, topic_id)
            except KafkaError as e:
                out[tp] = PartitionFetch(e.name)
            except ShareStateError as e:
                log.error("Failed to initialize the share partition: %s-%s. Exception occurred: "
                          "%s.", group_id, tp, e.message or e.error)  # fmt: skip
                out[tp] = PartitionFetch(PERSISTER_ERRORS.get(e.error, "UNKNOWN_SERVER_ERROR"))
        requests = [FetchRequestPartition(tp, h.partition.next_fetch_offset(), max_bytes)
                    for tp, h in held.items()]  # fmt: skip
        if requests:
            read = await self.replica_manager.fetch_messages(
                -1, max_wait_ms, min_bytes, max_bytes, isolation_level, requests
            )
        else:
            read = {}
        budget = max_records
        for tp, h in held.items():
            result = read[tp]
            if result.error_code:
                out[tp] = PartitionFetch(KafkaError(result.error_code).name)
                continue
            data = result.records
            data = data if isinstance(data, bytes | bytearray) else data.read_bytes()
            log_batches = list(iter_batches(data))
            batches = [(b.base_offset, b.last_offset, b.position, b.size) for b in log_batches]
            acquired = h.partition.acquire(member_id, [(f, last) for f, last, _, _ in batches],
                                           budget, record_limit) if budget > 0 else []  # fmt: skip
            if acquired and result.aborted_transactions:  # read_committed: never delivered
                aborted = aborted_batches(log_batches, result.aborted_transactions)
                if aborted:
                    acquired = h.partition.archive_acquired(member_id, aborted, acquired)
                    self._tasks.spawn(self._persist(h))
            budget -= sum(a.last - a.first + 1 for a in acquired)
            kept = [bytes(data[at : at + size]) for f, last, at, size in batches
                    if any(a.first <= last and f <= a.last for a in acquired)]  # fmt: skip
            out[tp] = PartitionFetch("NONE", b"".join(kept), acquired)
        return out

    # -- ShareAcknowledge ----------------------------------------------------------------

    async def acknowledge(
        self,
        group_id: str,
        member_id: str,
        tp: TopicPartition,
        batches: list[tuple[int, int, list[int]]],
    ) -> tuple[str, str | None]:
        """(error name, message) of applying and writing the member's acknowledgements."""
        held = self._held.get((group_id, tp))
        if held is None:
            return "INVALID_RECORD_STATE", "The share partition holds no records of the member."
        held.partition.config = self.settings(group_id).partition  # the group's configs now
        try:
            held.partition.acknowledge(member_id, batches)
        except ShareAcknowledgeError as e:
            return e.error, e.message
        if all(t == AcknowledgeType.RENEW for _, _, types in batches for t in types):
            return "NONE", None  # renewals only: nothing durable changed
        return await self._persist(held), None

    def release_member(self, group_id: str, member_id: str) -> None:
        """The member's share session ended: what it holds goes back, persisted."""
        for (group, _), held in list(self._held.items()):
            if group == group_id:
                before = held.partition.state_batches()
                held.partition.release_acquired(member_id)
                if held.partition.state_batches() != before:
                    self._tasks.spawn(self._persist(held))

    def forget_group(self, group_id: str) -> None:
        """The group has no share session here any more (onGroupEmpty): its share
        partitions leave the cache, to be read again from the share coordinator when a
        member fetches (their offsets may have been altered or deleted meanwhile)."""
        for key in [k for k in self._held if k[0] == group_id]:
            del self._held[key]

    def shutdown(self) -> None:
        self._tasks.cancel_all()
