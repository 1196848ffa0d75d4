"""The groups cache and `__consumer_offsets` (Kafka's GroupMetadataManager).

A group lives in partition abs(javaHashCode(group)) % partitions of `__consumer_offsets`
(Utils.abs: Integer.MIN_VALUE maps to 0). This broker coordinates the groups of the
partitions it leads: on becoming leader it replays the partition from its log start
(the last record per key wins, a null value deletes) while answering
COORDINATOR_LOAD_IN_PROGRESS for those groups; on losing leadership it drops them.

Writes are record batches appended to the partition with acks=all, keys and values in
the formats of offsets_records.py; a write error becomes the error the clients expect
(Kafka's GroupMetadataManager.storeGroup / storeOffsets mappings).
"""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Callable, Sequence
from typing import Any

from kt.broker.coordinator_errors import APPEND_ERRORS
from kt.broker.coordinator_loader import log_batches
from kt.broker.group import consumer_group_records as cr
from kt.broker.group import offsets_records as rec
from kt.broker.group import share_group_records as sr
from kt.broker.group import streams_group as stg
from kt.broker.group import streams_group_records as streams_records
from kt.broker.group.group_metadata import GroupMetadata, GroupState, PendingOffset
from kt.broker.group.java_collections import java_string_hash
from kt.broker.group.offsets_records import GroupMetadataKey, OffsetAndMetadata, OffsetKey
from kt.broker.replication.partition import TopicPartition
from kt.errors import CorruptRecordError, ProtocolError
from kt.storage.control_records import COMMIT, parse_control_type
from kt.storage.producer_state import ORIGIN_COORDINATOR
from kt.storage.record_batch import Record, build_batch

log = logging.getLogger(__name__)

GROUP_METADATA_TOPIC = "__consumer_offsets"
# a consumer, share or streams group's record
GroupRecord = cr.CoordinatorRecord | sr.ShareRecord | streams_records.StreamsRecord
TRANSACTION_STATE_TOPIC = "__transaction_state"

# storeGroup / storeOffsets: append errors -> what JoinGroup/SyncGroup/OffsetCommit answer.
_STORE_GROUP_ERRORS = {
    "UNKNOWN_TOPIC_OR_PARTITION": "COORDINATOR_NOT_AVAILABLE",
    "NOT_ENOUGH_REPLICAS": "COORDINATOR_NOT_AVAILABLE",
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND": "COORDINATOR_NOT_AVAILABLE",
    "NOT_LEADER_OR_FOLLOWER": "NOT_COORDINATOR",
    "KAFKA_STORAGE_ERROR": "NOT_COORDINATOR",
    "REQUEST_TIMED_OUT": "REBALANCE_IN_PROGRESS",
    "MESSAGE_TOO_LARGE": "UNKNOWN_SERVER_ERROR",
    "RECORD_LIST_TOO_LARGE": "UNKNOWN_SERVER_ERROR",
    "INVALID_FETCH_SIZE": "UNKNOWN_SERVER_ERROR",
}
_STORE_OFFSETS_ERRORS = {
    **_STORE_GROUP_ERRORS,
    "REQUEST_TIMED_OUT": "REQUEST_TIMED_OUT",
    "MESSAGE_TOO_LARGE": "INVALID_COMMIT_OFFSET_SIZE",
    "RECORD_LIST_TOO_LARGE": "INVALID_COMMIT_OFFSET_SIZE",
    "INVALID_FETCH_SIZE": "INVALID_COMMIT_OFFSET_SIZE",
}


def partition_for(key: str, partitions: int) -> int:
    """Utils.abs(key.hashCode()) % partitions (Utils.abs(MIN_VALUE) is 0, not 2^31)."""
    h = java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def now_ms() -> int:
    return int(time.time() * 1000)


class GroupMetadataManager:
    """Groups of the `__consumer_offsets` partitions this broker leads.

    Invariants: `groups` only holds groups of partitions in `owned`; a partition is in
    `loading` from the moment leadership arrives until its replay finished.
    """

    def __init__(
        self,
        replica_manager: Any,
        partition_count: Callable[[], int],
        *,
        commit_timeout_ms: int = 5000,
        load_buffer_size: int = 5 * 1024 * 1024,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.replica_manager = replica_manager
        self.partition_count = partition_count
        self.commit_timeout_ms = commit_timeout_ms
        self.load_buffer_size = load_buffer_size
        self.clock = clock
        self.groups: dict[str, GroupMetadata] = {}
        self.owned: set[int] = set()
        self.loading: set[int] = set()
        self._epochs: dict[int, int] = {}

    # -- lookup -----------------------------------------------------------------------

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.partition_count())

    def group_status(self, group_id: str) -> str:
        """NONE, NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS for `group_id`."""
        partition = self.partition_for(group_id)
        if partition in self.loading:
            return "COORDINATOR_LOAD_IN_PROGRESS"
        if partition not in self.owned:
            return "NOT_COORDINATOR"
        return "NONE"

    def get_group(self, group_id: str) -> GroupMetadata | None:
        return self.groups.get(group_id)

    def add_group(self, group: GroupMetadata) -> GroupMetadata:
        return self.groups.setdefault(group.group_id, group)

    def remove_group(self, group: GroupMetadata) -> None:
        if self.groups.get(group.group_id) is group:
            del self.groups[group.group_id]

    @property
    def any_loading(self) -> bool:
        return bool(self.loading)

    # -- writes -----------------------------------------------------------------------

    async def append(
        self,
        group_id: str,
        entries: list[tuple[bytes, bytes | None]],
        producer: tuple[int, int] | None = None,
    ) -> str:
        """Append (key, value) records for `group_id` with acks=all; the error name."""
        return (await self.append_batch(group_id, entries, producer))[0]

    async def write(self, group_id: str, records: Sequence[GroupRecord]) -> str:
        """Append a consumer or share group's coordinator records with acks=all; the
        error the answer carries (CoordinatorOperationExceptionHelper's mapping)."""
        if not records:
            return "NONE"
        error = await self.append(group_id, [(r.key(), r.value_bytes()) for r in records])
        if error != "NONE":
            log.warning("[GroupId %s] Writing %d records failed: %s",
                        group_id, len(records), error)  # fmt: skip
        return APPEND_ERRORS.get(error, error)

    async def append_batch(
        self,
        group_id: str,
        entries: list[tuple[bytes, bytes | None]],
        producer: tuple[int, int] | None = None,
    ) -> tuple[str, int]:
        """(error name, the batch's base offset): `entries` appended as one batch with
        acks=all. With `producer` (id, epoch) the batch is transactional (TxnOffsetCommit)."""
        if not entries:
            return "NONE", -1
        tp = TopicPartition(GROUP_METADATA_TOPIC, self.partition_for(group_id))
        ts = self.clock()
        records = [Record(None, ts, k, v) for k, v in entries]
        if producer is None:
            batch = bytearray(build_batch(records))
        else:
            batch = bytearray(build_batch(
                records, producer_id=producer[0], producer_epoch=producer[1], base_sequence=0,
                is_transactional=True,
            ))  # fmt: skip
        results = await self.replica_manager.append_records(
            self.commit_timeout_ms, -1, {tp: batch}, ORIGIN_COORDINATOR
        )
        code = results[tp].error_code
        if code:
            from kt.errors import error_for

            return error_for(code).name, -1
        return "NONE", results[tp].base_offset

    async def store_group(self, group: GroupMetadata, assignment: dict[str, bytes]) -> str:
        """Write the group's metadata and member assignments (SyncGroup, rebalance end)."""
        value = rec.group_metadata_value(group.to_record(assignment))
        error = await self.append(group.group_id, [(rec.group_metadata_key(group.group_id), value)])
        return _STORE_GROUP_ERRORS.get(error, error)

    async def store_offsets(
        self, group: GroupMetadata, offsets: dict[tuple[str, int], OffsetAndMetadata]
    ) -> str:
        """Write commits; on success they become the group's committed offsets."""
        entries = [
            (rec.offset_commit_key(group.group_id, t, p), rec.offset_commit_value(o))
            for (t, p), o in offsets.items()
        ]
        error, batch = await self.append_batch(group.group_id, entries)
        if error == "NONE":
            group.commit_offsets(offsets, batch)
        return _STORE_OFFSETS_ERRORS.get(error, error)

    async def store_txn_offsets(
        self,
        group: GroupMetadata,
        offsets: dict[tuple[str, int], OffsetAndMetadata],
        producer_id: int,
        producer_epoch: int,
    ) -> str:
        """Write commits in a producer's transaction; they stay pending until its marker."""
        entries = [
            (rec.offset_commit_key(group.group_id, t, p), rec.offset_commit_value(o))
            for (t, p), o in offsets.items()
        ]
        error, batch = await self.append_batch(
            group.group_id, entries, (producer_id, producer_epoch)
        )
        if error == "NONE":
            pending = group.pending_txn_offsets.setdefault(producer_id, {})
            pending.update((tp, (batch, o)) for tp, o in offsets.items())
        return _STORE_OFFSETS_ERRORS.get(error, error)

    def complete_txn_offsets(self, producer_id: int, partition: int, commit: bool) -> None:
        """The producer's marker reached `__consumer_offsets` partition `partition`: its
        pending offsets there become committed offsets, or are dropped."""
        for group in self.groups.values():
            if self.partition_for(group.group_id) != partition:
                continue
            group.complete_pending_txn_offsets(producer_id, commit)

    async def delete_offsets(self, group: GroupMetadata, tps: list[tuple[str, int]]) -> str:
        """Tombstones for committed offsets that exist; they leave the cache at once."""
        present = [tp for tp in tps if tp in group.offsets]
        group.remove_offsets(present)
        entries = [(rec.offset_commit_key(group.group_id, t, p), None) for t, p in present]
        return await self.append(group.group_id, entries)

    async def delete_group(self, group: GroupMetadata) -> str:
        """Tombstones for the group's metadata (a consumer or share group's records too) and
        all its offsets; the group is Dead."""
        group.transition_to(GroupState.DEAD, self.clock())
        self.remove_group(group)
        entries = [(rec.offset_commit_key(group.group_id, t, p), None) for t, p in group.offsets]
        group.remove_offsets(list(group.offsets))
        if group.consumer is not None:
            entries += self.drop_consumer_group(group)
        if group.share is not None:  # a share group has no classic metadata to delete
            entries += [(r.key(), None) for r in sr.group_removal(group.share)]
            group.share = None
            return await self.append(group.group_id, entries)
        if group.streams is not None:  # nor has a streams group
            entries += [(r.key(), None) for r in stg.group_removal(group.streams)]
            group.streams = None
            return await self.append(group.group_id, entries)
        entries.append((rec.group_metadata_key(group.group_id), None))
        return await self.append(group.group_id, entries)

    def drop_consumer_group(self, group: GroupMetadata) -> list[tuple[bytes, None]]:
        """An empty consumer group gives way to a classic one (getOrMaybeCreateClassicGroup):
        it leaves the cache at once, its offsets stay; the tombstones to append."""
        assert group.consumer is not None
        entries = [(r.key(), None) for r in cr.group_removal(group.consumer)]
        group.consumer = None
        return entries

    async def cleanup_expired_offsets(self, retention_ms: int) -> int:
        """Drop offsets past retention; Empty groups left without offsets die (but share
        groups: ShareGroup.shouldExpire). Returns the number of offsets removed."""
        removed = 0
        now = self.clock()
        for group in list(self.groups.values()):
            if self.group_status(group.group_id) != "NONE":
                continue
            expired = group.expired_offsets(now, retention_ms)
            if expired:
                await self.delete_offsets(group, expired)
                removed += len(expired)
            if not group.offsets and _should_expire(group):
                log.info("Group %s transitioned to Dead in generation %s",
                         group.group_id, group.generation_id)  # fmt: skip
                await self.delete_group(group)
        if removed:
            log.info("Removed %d expired offsets", removed)
        return removed

    # -- loading ----------------------------------------------------------------------

    def begin_loading(self, partition: int, epoch: int) -> bool:
        """Leadership of `partition` arrived; False if this epoch is already loaded."""
        if self._epochs.get(partition) == epoch and partition in self.owned:
            return False
        self._epochs[partition] = epoch
        self.owned.add(partition)
        self.loading.add(partition)
        return True

    async def load(self, partition: int, epoch: int) -> list[GroupMetadata]:
        """Replay the partition; the loaded groups (None if leadership moved meanwhile)."""
        started = time.monotonic()
        consumer: dict[str, list[GroupRecord]] = {}
        try:
            offsets, metadata, pending = await self._replay(partition, epoch, consumer)
        except Exception:
            log.exception("Error loading offsets from %s-%d", GROUP_METADATA_TOPIC, partition)
            offsets, metadata, pending, consumer = {}, {}, {}, {}
        if self._epochs.get(partition) != epoch:
            return []
        now = self.clock()
        loaded: dict[str, GroupMetadata] = {}
        for group_id, value in metadata.items():
            if value is not None:
                loaded[group_id] = GroupMetadata.from_record(group_id, value, now)
        for key, (batch, o) in offsets.items():
            group = loaded.get(key.group)
            if group is None:
                group = loaded[key.group] = GroupMetadata(key.group, GroupState.EMPTY, now)
            group.commit_offsets({(key.topic, key.partition): o}, batch)
        for producer_id, txn_offsets in pending.items():
            for key, pending_offset in txn_offsets.items():
                group = loaded.get(key.group)
                if group is None:
                    group = loaded[key.group] = GroupMetadata(key.group, GroupState.EMPTY, now)
                group.pending_txn_offsets.setdefault(producer_id, {})[
                    (key.topic, key.partition)
                ] = pending_offset
        for group_id, records in consumer.items():
            group = loaded.get(group_id)
            if group is None:
                group = loaded[group_id] = GroupMetadata(group_id, GroupState.EMPTY, now)
            for record in records:
                if isinstance(record, sr.ShareRecord):
                    sr.apply(group, record)
                elif isinstance(record, streams_records.StreamsRecord):
                    stg.apply(group, record)
                else:
                    cr.apply(group, record)
            if (
                group.consumer is None
                and group.share is None
                and group.streams is None
                and not group.offsets
                and group.protocol_type is None
                and not group.pending_txn_offsets
            ):
                del loaded[group_id]
        for group_id, group in loaded.items():
            self.groups[group_id] = group
        self.loading.discard(partition)
        log.info("Finished loading offsets and group metadata from %s-%d in %d milliseconds "
                 "(%d groups)", GROUP_METADATA_TOPIC, partition,
                 (time.monotonic() - started) * 1000, len(loaded))  # fmt: skip
        return list(loaded.values())

    async def _replay(
        self, partition: int, epoch: int, consumer: dict[str, list[GroupRecord]]
    ) -> tuple[dict, dict, dict]:
        """(offsets, group metadata, pending transactional offsets by producer id): the
        offsets of a transaction count once its COMMIT marker is read, and not at all
        after its ABORT marker; those of open transactions stay pending. The consumer
        and share group records go to `consumer`, per group, in log order."""
        offsets: dict[OffsetKey, PendingOffset] = {}
        metadata: dict[str, rec.GroupMetadataValue | None] = {}
        pending: dict[int, dict[OffsetKey, PendingOffset]] = {}
        tp = TopicPartition(GROUP_METADATA_TOPIC, partition)
        async for batch in log_batches(self.replica_manager, tp, self.load_buffer_size,
                                       lambda: self._epochs.get(partition) == epoch):  # fmt: skip
            if getattr(batch, "is_control", False):
                _apply_marker(batch, offsets, pending)
            elif getattr(batch, "is_transactional", False):
                txn_offsets = pending.setdefault(batch.producer_id, {})
                for record in batch.records():
                    _apply(record, batch.base_offset, txn_offsets, metadata, consumer)
            else:
                for record in batch.records():
                    _apply(record, batch.base_offset, offsets, metadata, consumer)
        return offsets, metadata, pending

    def unload(self, partition: int) -> list[GroupMetadata]:
        """Leadership of `partition` went elsewhere: forget its groups, return them."""
        self.owned.discard(partition)
        self.loading.discard(partition)
        self._epochs.pop(partition, None)
        gone = [g for g in self.groups.values() if self.partition_for(g.group_id) == partition]
        for group in gone:
            del self.groups[group.group_id]
        return gone


def _should_expire(group: GroupMetadata) -> bool:
    """An empty group of any kind but share (ShareGroup.shouldExpire is false)."""
    if group.share is not None:
        return False
    if group.streams is not None:
        return not group.streams.members
    if group.consumer is not None and group.consumer.members:
        return False
    return group.is_(GroupState.EMPTY) and not group.members


def _apply_marker(batch: Any, offsets: dict, pending: dict) -> None:
    """A COMMIT marker moves its producer's pending offsets into `offsets` where no offset
    written after them is there; ABORT drops them."""
    for record in batch.records():
        try:
            control_type = parse_control_type(record.key)
        except (CorruptRecordError, ValueError, IndexError, struct.error):
            continue
        txn_offsets = pending.pop(batch.producer_id, None)
        if control_type == COMMIT and txn_offsets:
            for key, (at, o) in txn_offsets.items():
                if key not in offsets or offsets[key][0] < at:
                    offsets[key] = (at, o)


def _apply(
    record: Record, batch_offset: int, offsets: dict, metadata: dict, consumer: dict
) -> None:
    """One record of a batch at `batch_offset`: an offset (a tombstone removes it), a
    classic group's metadata, or a consumer group's record."""
    if record.key is None:
        return
    try:
        key, value = record.key, record.value
        found = (cr.read_record(key, value) or sr.read_record(key, value)
                 or streams_records.read_group_record(key, value))  # fmt: skip
        if found is not None:
            consumer.setdefault(found.group_id, []).append(found)
            return
        key = rec.read_key(record.key)
        if isinstance(key, OffsetKey):
            if record.value is None:
                offsets.pop(key, None)
            else:
                offsets[key] = (batch_offset, rec.read_offset_value(record.value))
        elif isinstance(key, GroupMetadataKey):
            value = record.value
            metadata[key.group] = None if value is None else rec.read_group_value(value)
    except (ValueError, IndexError, struct.error, ProtocolError) as e:
        log.warning("Skipping unreadable %s record at offset %s: %s",
                    GROUP_METADATA_TOPIC, record.offset, e)  # fmt: skip
