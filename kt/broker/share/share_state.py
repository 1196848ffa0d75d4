"""The durable state of share partitions (KIP-932; Kafka's share coordinator): what
`__share_group_state` holds for each (share group, topic id, partition).

A share partition's state is its start offset (SPSO, -1 while the group has not decided
where to start), epochs, and its state batches: offset ranges with their delivery state
and count (what is acknowledged, archived, or was delivered and is available again).
A snapshot (record type 0, ShareSnapshot) holds it whole; an update (type 1, ShareUpdate)
holds what one write changed, merged into the state as Kafka's PersisterStateBatchCombiner
does: batches below the start offset dropped, overlapping offsets taking the batch with
the higher delivery count (then the higher state), neighbours of one kind joined. After
`updates_per_snapshot` updates the next write is a snapshot again.

Records (key: int16 type, GroupId string, TopicId uuid, Partition int32; value: int16
version 0 and a flexible struct):
  0 ShareSnapshot  SnapshotEpoch int32, StateEpoch int32, LeaderEpoch int32,
                   StartOffset int64, tag 0 DeliveryCompleteCount int32 (-1 default),
                   CreateTimestamp int64, WriteTimestamp int64, StateBatches [FirstOffset
                   int64, LastOffset int64, DeliveryState int8, DeliveryCount int16]
  1 ShareUpdate    SnapshotEpoch int32, LeaderEpoch int32, StartOffset int64,
                   tag 0 DeliveryCompleteCount int32, StateBatches (as above)
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from kt.broker.group.java_collections import java_string_hash
from kt.protocol.schema_reader import SchemaReader
from kt.protocol.types import compact_length, write_uuid, write_uvarint

SNAPSHOT, UPDATE = 0, 1
UNINITIALIZED_START_OFFSET = -1
_I8, _I16, _I32, _I64 = (struct.Struct(f) for f in (">b", ">h", ">i", ">q"))
_NO_TAGS = b"\x00"


@dataclass(frozen=True)
class StateBatch:
    first: int
    last: int
    delivery_state: int
    delivery_count: int


@dataclass(frozen=True)
class SharePartitionKey:
    group_id: str
    topic_id: uuid.UUID
    partition: int

    def coordinator_partition(self, partitions: int) -> int:
        """The `__share_group_state` partition: "group:topicId:partition" hashed as
        Java's String.hashCode (SharePartitionKey.asCoordinatorKey)."""
        text = f"{self.group_id}:{_uuid_text(self.topic_id)}:{self.partition}"
        return abs(java_string_hash(text)) % partitions


@dataclass(frozen=True)
class ShareGroupOffset:
    """A share partition's state (Kafka's ShareGroupOffset)."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int = -1
    create_timestamp: int = 0
    write_timestamp: int = 0
    state_batches: tuple[StateBatch, ...] = ()


# (record type, key, state; None for a tombstone)
StateRecord = tuple[int, SharePartitionKey, ShareGroupOffset | None]


def combine(so_far: Sequence[StateBatch], new: Sequence[StateBatch],
            start_offset: int) -> tuple[StateBatch, ...]:  # fmt: skip
    """PersisterStateBatchCombiner.combineStateBatches."""
    pruned = []
    for b in (*so_far, *new):
        if start_offset != -1 and b.last < start_offset:
            continue
        if start_offset != -1 and b.first < start_offset:
            b = replace(b, first=start_offset)
        pruned.append(b)
    if len(pruned) <= 1:
        return tuple(pruned)
    cuts = sorted({b.first for b in pruned} | {b.last + 1 for b in pruned})
    out: list[StateBatch] = []
    for start, stop in zip(cuts, cuts[1:], strict=False):
        covering = [b for b in pruned if b.first <= start and stop - 1 <= b.last]
        if not covering:
            continue
        win = max(covering, key=lambda b: (b.delivery_count, b.delivery_state))
        if (out and out[-1].last + 1 == start and out[-1].delivery_state == win.delivery_state
                and out[-1].delivery_count == win.delivery_count):  # fmt: skip
            out[-1] = replace(out[-1], last=stop - 1)
        else:
            out.append(StateBatch(start, stop - 1, win.delivery_state, win.delivery_count))
    return tuple(out)


def merged(so_far: ShareGroupOffset, update: ShareGroupOffset) -> ShareGroupOffset:
    """ShareCoordinatorShard.merge: an update applied to the state."""
    start = so_far.start_offset if update.start_offset == -1 else update.start_offset
    leader = so_far.leader_epoch if update.leader_epoch == -1 else update.leader_epoch
    batches = combine(so_far.state_batches, update.state_batches, start)
    return replace(so_far, start_offset=start, leader_epoch=leader, state_batches=batches,
                   delivery_complete_count=update.delivery_complete_count)  # fmt: skip


# -- records ---------------------------------------------------------------------------------


def key_bytes(record_type: int, key: SharePartitionKey) -> bytes:
    group = key.group_id.encode()
    return b"".join((_I16.pack(record_type), _I16.pack(len(group)), group,
                     write_uuid(key.topic_id), _I32.pack(key.partition)))  # fmt: skip


def value_bytes(record_type: int, v: ShareGroupOffset) -> bytes:
    batches = compact_length(len(v.state_batches)) + b"".join(
        _I64.pack(b.first) + _I64.pack(b.last) + _I8.pack(b.delivery_state)
        + _I16.pack(b.delivery_count) + _NO_TAGS for b in v.state_batches
    )  # fmt: skip
    tags = _NO_TAGS
    if v.delivery_complete_count != -1:
        tags = write_uvarint(1) + write_uvarint(0) + write_uvarint(4) + _I32.pack(
            v.delivery_complete_count)  # fmt: skip
    if record_type == SNAPSHOT:
        head = (_I32.pack(v.snapshot_epoch) + _I32.pack(v.state_epoch) + _I32.pack(v.leader_epoch)
                + _I64.pack(v.start_offset) + _I64.pack(v.create_timestamp)
                + _I64.pack(v.write_timestamp))  # fmt: skip
    else:
        head = _I32.pack(v.snapshot_epoch) + _I32.pack(v.leader_epoch) + _I64.pack(v.start_offset)
    return _I16.pack(0) + head + batches + tags


def read_record(key: bytes, value: bytes | None) -> StateRecord:
    """(record type, key, state or None for a tombstone); ValueError, IndexError or
    struct.error on bytes that do not parse."""
    r = SchemaReader(key)
    record_type = r.int16()
    if record_type not in (SNAPSHOT, UPDATE):
        raise ValueError(f"Unknown share state record type {record_type}")
    group = r.string()
    topic_id = r.uuid()
    spk = SharePartitionKey(group, topic_id, r.int32())
    if value is None:
        return record_type, spk, None
    v = SchemaReader(value, flexible=True)
    if v.int16() != 0:
        raise ValueError("Unknown share state value version")
    if record_type == SNAPSHOT:
        snapshot_epoch, state_epoch, leader_epoch = v.int32(), v.int32(), v.int32()
        start, created, written = v.int64(), v.int64(), v.int64()
    else:
        snapshot_epoch, state_epoch, leader_epoch = v.int32(), 0, v.int32()
        start, created, written = v.int64(), 0, 0

    def batch() -> StateBatch:
        b = StateBatch(v.int64(), v.int64(), v.int8(), v.int16())
        v.tagged_fields()
        return b

    batches = tuple(v.array(batch) or ())
    complete = -1
    for _ in range(v.uvarint()):
        tag, size = v.uvarint(), v.uvarint()
        if tag == 0:
            complete = _I32.unpack_from(v.data, v.pos)[0]
        v.pos += size
    return record_type, spk, ShareGroupOffset(snapshot_epoch, state_epoch, leader_epoch, start,
                                              complete, created, written, batches)  # fmt: skip


def _uuid_text(topic_id: uuid.UUID) -> str:
    """Kafka's Uuid.toString: URL-safe base64 without padding."""
    import base64

    return base64.urlsafe_b64encode(topic_id.bytes).rstrip(b"=").decode()


def replay_all(records: Iterable[StateRecord]) -> dict[SharePartitionKey, ShareGroupOffset]:
    """The state a sequence of records leaves (ShareCoordinatorShard.replay)."""
    state: dict[SharePartitionKey, ShareGroupOffset] = {}
    for record_type, key, value in records:
        if value is None:
            state.pop(key, None)
        elif record_type == SNAPSHOT or key not in state:
            state[key] = value
        else:
            state[key] = merged(state[key], value)
    return state
