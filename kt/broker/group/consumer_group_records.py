"""The consumer group records of `__consumer_offsets` (Kafka 4's CoordinatorRecordType).

A key is an int16 record type followed by the type's fields in the classic encoding; a
value is an int16 version (0 for all of these) followed by a flexible struct, as
Kafka's group-coordinator message files define them:

  3  ConsumerGroupMetadata           key group         value Epoch int32,
                                                        tag 0 MetadataHash int64
  4  ConsumerGroupPartitionMetadata  key group         (read and ignored; Kafka 4.1+
                                                        writes none, MetadataHash instead)
  5  ConsumerGroupMemberMetadata     key group, member value InstanceId string?,
      RackId string?, ClientId, ClientHost, SubscribedTopicNames [string],
      SubscribedTopicRegex string?, RebalanceTimeoutMs int32, ServerAssignor string?,
      tag 0 ClassicMemberMetadata (null for consumer-protocol members): SessionTimeoutMs
      int32, SupportedProtocols [Name string, Metadata bytes]
  6  ConsumerGroupTargetAssignmentMetadata  key group  value AssignmentEpoch int32,
                                                        tag 0 AssignmentTimestamp int64
  7  ConsumerGroupTargetAssignmentMember    key group, member
                                           value TopicPartitions [TopicId uuid,
                                                                  Partitions [int32]]
  8  ConsumerGroupCurrentMemberAssignment   key group, member
      value MemberEpoch int32, PreviousMemberEpoch int32, State int8,
      AssignedPartitions [TopicPartitions], PartitionsPendingRevocation [TopicPartitions]
      (TopicPartitions: TopicId uuid, Partitions [int32], tag 0 AssignmentEpochs [int32])
  16 ConsumerGroupRegularExpression  key group, regex  value Topics [string],
                                                        Version int64, Timestamp int64

A null value is a tombstone. `replay` applies one record to a group, for writes and for
loads alike.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field, replace

from kt.broker.group.consumer_group import (
    Assignment,
    ClassicMemberMetadata,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    ResolvedRegex,
)
from kt.broker.group.group_metadata import GroupMetadata, GroupState
from kt.protocol.schema_reader import SchemaReader
from kt.protocol.types import (
    compact_length,
    write_compact_bytes_prefix,
    write_compact_string,
    write_uuid,
    write_uvarint,
)

CLASSIC_GROUP_METADATA = 2  # a classic group giving way (tombstone) or coming back

GROUP_METADATA = 3
PARTITION_METADATA = 4
MEMBER_METADATA = 5
TARGET_ASSIGNMENT_METADATA = 6
TARGET_ASSIGNMENT_MEMBER = 7
CURRENT_MEMBER_ASSIGNMENT = 8
REGULAR_EXPRESSION = 16
RECORD_TYPES = frozenset((GROUP_METADATA, PARTITION_METADATA, MEMBER_METADATA,
                          TARGET_ASSIGNMENT_METADATA, TARGET_ASSIGNMENT_MEMBER,
                          CURRENT_MEMBER_ASSIGNMENT, REGULAR_EXPRESSION))  # fmt: skip
_WITH_SUBKEY = frozenset((MEMBER_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT,
                          REGULAR_EXPRESSION))  # fmt: skip

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_VALUE_VERSION = _I16.pack(0)
_NO_TAGS = b"\x00"
# ClassicMemberMetadata (tag 0) is null for a consumer-protocol member; Kafka writes the tag
# with its null value all the same: one tagged field, tag 0, one byte, null.
_CLASSIC_MEMBER_METADATA_NULL = b"\x01\x00\x01\x00"


@dataclass(frozen=True)
class GroupEpoch:
    epoch: int
    metadata_hash: int = 0


@dataclass(frozen=True)
class TargetEpoch:
    epoch: int
    timestamp: int = 0


@dataclass(frozen=True)
class CurrentAssignment:
    member_epoch: int
    previous_member_epoch: int
    state: MemberState
    assigned: Assignment
    pending_revocation: Assignment
    assignment_epochs: dict[tuple[uuid.UUID, int], int] = field(default_factory=dict)


@dataclass(frozen=True)
class CoordinatorRecord:
    """One record: its type, group, member id or regex (`sub`), and its value (None: a
    tombstone). Values: GroupEpoch, ConsumerGroupMember (its subscription part),
    TargetEpoch, an Assignment, CurrentAssignment, ResolvedRegex; a classic group's
    metadata (type 2) as its encoded bytes (offsets_records.group_metadata_value)."""

    type: int
    group_id: str
    sub: str | None
    value: object

    def key(self) -> bytes:
        parts = [_I16.pack(self.type), _string(self.group_id)]
        if self.type in _WITH_SUBKEY:
            parts.append(_string(self.sub or ""))
        return b"".join(parts)

    def value_bytes(self) -> bytes | None:
        if self.value is None or isinstance(self.value, bytes):
            return self.value  # a tombstone, or a classic group's metadata written apart
        return _VALUE_VERSION + _ENCODERS[self.type](self.value)


# -- builders (GroupCoordinatorRecordHelpers) ---------------------------------------------


def group_epoch(group_id: str, epoch: int, metadata_hash: int) -> CoordinatorRecord:
    return CoordinatorRecord(GROUP_METADATA, group_id, None, GroupEpoch(epoch, metadata_hash))


def member_subscription(group_id: str, member: ConsumerGroupMember) -> CoordinatorRecord:
    return CoordinatorRecord(MEMBER_METADATA, group_id, member.member_id, member)


def target_member(group_id: str, member_id: str, assignment: Assignment) -> CoordinatorRecord:
    return CoordinatorRecord(TARGET_ASSIGNMENT_MEMBER, group_id, member_id, assignment)


def target_epoch(group_id: str, epoch: int, timestamp: int) -> CoordinatorRecord:
    return CoordinatorRecord(TARGET_ASSIGNMENT_METADATA, group_id, None,
                             TargetEpoch(epoch, timestamp))  # fmt: skip


def current_assignment(group_id: str, member: ConsumerGroupMember) -> CoordinatorRecord:
    epochs = {(t, p): member.assignment_epoch(t, p) for t, ps in member.assigned.items()
              for p in ps}  # fmt: skip
    value = CurrentAssignment(member.member_epoch, member.previous_member_epoch, member.state,
                              member.assigned, member.pending_revocation, epochs)  # fmt: skip
    return CoordinatorRecord(CURRENT_MEMBER_ASSIGNMENT, group_id, member.member_id, value)


def regex(group_id: str, pattern: str, resolved: ResolvedRegex | None) -> CoordinatorRecord:
    return CoordinatorRecord(REGULAR_EXPRESSION, group_id, pattern, resolved)


def classic_group_removal(group_id: str) -> CoordinatorRecord:
    """The tombstone of an empty classic group's metadata (GroupMetadataKey)."""
    return CoordinatorRecord(CLASSIC_GROUP_METADATA, group_id, None, None)


def member_removal(group_id: str, member_id: str) -> list[CoordinatorRecord]:
    """removeMember's three tombstones, in Kafka's order."""
    return [
        CoordinatorRecord(CURRENT_MEMBER_ASSIGNMENT, group_id, member_id, None),
        CoordinatorRecord(TARGET_ASSIGNMENT_MEMBER, group_id, member_id, None),
        CoordinatorRecord(MEMBER_METADATA, group_id, member_id, None),
    ]


def group_removal(group: ConsumerGroup) -> list[CoordinatorRecord]:
    """The tombstones that delete an empty group (createGroupTombstoneRecords)."""
    records = [r for member_id in group.members for r in member_removal(group.group_id, member_id)]
    records += [regex(group.group_id, pattern, None) for pattern in group.regexes]
    records.append(CoordinatorRecord(TARGET_ASSIGNMENT_METADATA, group.group_id, None, None))
    records.append(CoordinatorRecord(GROUP_METADATA, group.group_id, None, None))
    return records


# -- replay -------------------------------------------------------------------------------


def apply(holder: GroupMetadata, record: CoordinatorRecord) -> None:
    """Replay one record into the group `holder` (its `.consumer`, created by the first
    record that is not a tombstone, dropped by the group's tombstone)."""
    if record.type == CLASSIC_GROUP_METADATA:
        if record.value is not None:
            return  # a downgrade's: the coordinator sets the classic state itself
        # The classic group gives way: its members' pending answers say to rejoin (an
        # upgrade, convertToConsumerGroup), its state is a consumer group's from here.
        holder.drop_members("REBALANCE_IN_PROGRESS")
        holder.state = GroupState.EMPTY
        holder.generation_id = 0
        holder.protocol_type = holder.protocol_name = None
        return
    if holder.consumer is None:
        if record.value is None:
            return  # a tombstone of a group already gone
        holder.consumer = ConsumerGroup(holder.group_id)
    if record.type == GROUP_METADATA and record.value is None:
        holder.consumer = None
        return
    replay(holder.consumer, record)


def replay(group: ConsumerGroup, record: CoordinatorRecord) -> None:
    """Apply `record` to `group` (GroupMetadataManager.replay for consumer groups). A
    group tombstone leaves the caller to drop the group."""
    value, sub = record.value, record.sub or ""
    if record.type == GROUP_METADATA:
        if isinstance(value, GroupEpoch):
            group.group_epoch, group.metadata_hash = value.epoch, value.metadata_hash
    elif record.type == MEMBER_METADATA:
        if value is None:
            group.remove_member(sub)
            return
        assert isinstance(value, ConsumerGroupMember)
        old = group.members.get(sub) or ConsumerGroupMember(sub)
        group.put_member(ConsumerGroupMember(
            sub, value.instance_id, value.rack_id, value.client_id, value.client_host,
            value.subscribed_topic_names, value.subscribed_topic_regex,
            value.rebalance_timeout_ms, value.server_assignor, old.member_epoch,
            old.previous_member_epoch, old.state, old.assigned, old.pending_revocation,
            old.assignment_epochs, value.classic,
        ))  # fmt: skip
    elif record.type == TARGET_ASSIGNMENT_MEMBER:
        if value is None:
            group.target.pop(sub, None)
        else:
            group.target[sub] = value  # type: ignore[assignment]
    elif record.type == TARGET_ASSIGNMENT_METADATA:
        if isinstance(value, TargetEpoch):
            group.assignment_epoch, group.assignment_timestamp = value.epoch, value.timestamp
    elif record.type == CURRENT_MEMBER_ASSIGNMENT:
        old = group.members.get(sub) or ConsumerGroupMember(sub)
        if value is None:
            new = _replace_assignment(old, CurrentAssignment(-1, -1, MemberState.STABLE, {}, {}))
        else:
            assert isinstance(value, CurrentAssignment)
            new = _replace_assignment(old, value)
        group.put_member(new)
    elif record.type == REGULAR_EXPRESSION:
        if value is None:
            group.regexes.pop(sub, None)
        else:
            group.regexes[sub] = value  # type: ignore[assignment]


def _replace_assignment(member: ConsumerGroupMember, a: CurrentAssignment) -> ConsumerGroupMember:
    return replace(member, member_epoch=a.member_epoch,
                   previous_member_epoch=a.previous_member_epoch, state=a.state,
                   assigned=a.assigned, pending_revocation=a.pending_revocation,
                   assignment_epochs=a.assignment_epochs)  # fmt: skip


# -- encoding -----------------------------------------------------------------------------


def _string(s: str) -> bytes:
    data = s.encode()
    return _I16.pack(len(data)) + data


def _compact_array(items: list[bytes]) -> bytes:
    return compact_length(len(items)) + b"".join(items)


def _int32s(values: list[int]) -> bytes:
    return _compact_array([_I32.pack(v) for v in values])


def _tags(fields: list[tuple[int, bytes]]) -> bytes:
    out = [write_uvarint(len(fields))]
    for tag, data in fields:
        out += [write_uvarint(tag), write_uvarint(len(data)), data]
    return b"".join(out)


def _topic_partitions(
    assignment: Assignment, epochs: dict[tuple[uuid.UUID, int], int] | None = None
) -> bytes:
    """[TopicId, Partitions, tag 0 AssignmentEpochs (when `epochs` is given)]."""
    items = []
    for topic_id, partitions in sorted(assignment.items(), key=lambda kv: str(kv[0])):
        ordered = sorted(partitions)
        tags = _NO_TAGS
        if epochs is not None and ordered:
            tags = _tags([(0, _int32s([epochs[(topic_id, p)] for p in ordered]))])
        items.append(write_uuid(topic_id) + _int32s(ordered) + tags)
    return _compact_array(items)


def _encode_group_epoch(v: GroupEpoch) -> bytes:
    tags = [(0, _I64.pack(v.metadata_hash))] if v.metadata_hash else []
    return _I32.pack(v.epoch) + _tags(tags)


def _encode_member(m: ConsumerGroupMember) -> bytes:
    return b"".join((
        write_compact_string(m.instance_id), write_compact_string(m.rack_id),
        write_compact_string(m.client_id), write_compact_string(m.client_host),
        _compact_array([write_compact_string(t) for t in m.subscribed_topic_names]),
        write_compact_string(m.subscribed_topic_regex), _I32.pack(m.rebalance_timeout_ms),
        write_compact_string(m.server_assignor),
        _CLASSIC_MEMBER_METADATA_NULL if m.classic is None
        else _tags([(0, b"\x01" + _encode_classic(m.classic))]),
    ))  # fmt: skip


def _encode_classic(c: ClassicMemberMetadata) -> bytes:
    """SessionTimeoutMs int32, SupportedProtocols [Name string, Metadata bytes]."""
    protocols = [write_compact_string(name) + write_compact_bytes_prefix(data) + data + _NO_TAGS
                 for name, data in c.protocols]  # fmt: skip
    return _I32.pack(c.session_timeout_ms) + _compact_array(protocols) + _NO_TAGS


def _encode_target_epoch(v: TargetEpoch) -> bytes:
    tags = [(0, _I64.pack(v.timestamp))] if v.timestamp else []
    return _I32.pack(v.epoch) + _tags(tags)


def _encode_current(v: CurrentAssignment) -> bytes:
    return b"".join((
        _I32.pack(v.member_epoch), _I32.pack(v.previous_member_epoch), _I8.pack(v.state),
        _topic_partitions(v.assigned, v.assignment_epochs), _topic_partitions(v.pending_revocation),
        _NO_TAGS,
    ))  # fmt: skip


def _encode_regex(v: ResolvedRegex) -> bytes:
    return b"".join((
        _compact_array([write_compact_string(t) for t in sorted(v.topics)]),
        _I64.pack(v.version), _I64.pack(v.timestamp), _NO_TAGS,
    ))  # fmt: skip


_ENCODERS = {
    GROUP_METADATA: _encode_group_epoch,
    MEMBER_METADATA: _encode_member,
    TARGET_ASSIGNMENT_METADATA: _encode_target_epoch,
    TARGET_ASSIGNMENT_MEMBER: lambda a: _topic_partitions(a) + _NO_TAGS,
    CURRENT_MEMBER_ASSIGNMENT: _encode_current,
    REGULAR_EXPRESSION: _encode_regex,
}


# -- decoding -----------------------------------------------------------------------------


def read_record(key: bytes, value: bytes | None) -> CoordinatorRecord | None:
    """The record of a `__consumer_offsets` key and value; None for a type that is not a
    consumer group's (offsets, classic groups, share and streams groups). Raises
    ValueError, IndexError or struct.error on bytes that do not parse."""
    r = SchemaReader(key)
    record_type = r.int16()
    if record_type not in RECORD_TYPES:
        return None
    group_id = r.nullable_string() or ""
    sub = r.nullable_string() or "" if record_type in _WITH_SUBKEY else None
    if value is None or record_type == PARTITION_METADATA:
        return CoordinatorRecord(record_type, group_id, sub, None)
    v = SchemaReader(value, flexible=True)
    version = v.int16()
    if version != 0:
        raise ValueError(f"Unknown version {version} of record type {record_type}")
    return CoordinatorRecord(record_type, group_id, sub, _DECODERS[record_type](v, sub or ""))


def _read_tags(r: SchemaReader) -> dict[int, bytes]:
    tags = {}
    for _ in range(r.uvarint()):
        tag, size = r.uvarint(), r.uvarint()
        tags[tag] = r.data[r.pos : r.pos + size]
        r.pos += size
    return tags


def _read_assignment(
    r: SchemaReader, epochs: dict[tuple[uuid.UUID, int], int] | None = None
) -> Assignment:
    """[TopicId, Partitions]; their AssignmentEpochs (tag 0) into `epochs` if given."""
    assignment: Assignment = {}
    for _ in range(max(0, r.array_length())):
        topic_id = r.uuid()
        partitions = r.array(r.int32) or []
        assignment[topic_id] = frozenset(partitions)
        tag = _read_tags(r).get(0)
        if tag is not None and epochs is not None:
            listed = SchemaReader(bytes(tag), flexible=True)
            found = listed.array(listed.int32) or []
            epochs.update(((topic_id, p), e) for p, e in zip(partitions, found, strict=False))
    return assignment


def _epoch_and_tag(r: SchemaReader) -> tuple[int, int]:
    """An int32 epoch and the int64 of tag 0 (0 when absent)."""
    epoch = r.int32()
    tag = _read_tags(r).get(0)
    return epoch, _I64.unpack(tag)[0] if tag else 0


def _decode_group_epoch(r: SchemaReader, _sub: str) -> GroupEpoch:
    return GroupEpoch(*_epoch_and_tag(r))


def _decode_member(r: SchemaReader, sub: str) -> ConsumerGroupMember:
    member = ConsumerGroupMember(
        sub, instance_id=r.nullable_string(), rack_id=r.nullable_string(),
        client_id=r.nullable_string() or "", client_host=r.nullable_string() or "",
        subscribed_topic_names=tuple(r.array(lambda: r.nullable_string() or "") or ()),
        subscribed_topic_regex=r.nullable_string(), rebalance_timeout_ms=r.int32(),
        server_assignor=r.nullable_string(),
    )  # fmt: skip
    tag = _read_tags(r).get(0)
    if tag is None or tag[:1] == b"\x00":
        return member
    c = SchemaReader(bytes(tag), flexible=True)
    c.uvarint()  # present
    session_timeout_ms = c.int32()

    def protocol() -> tuple[str, bytes]:
        name, data = c.string(), c.bytes_()
        _read_tags(c)
        return name, data

    protocols = tuple(c.array(protocol) or ())
    return replace(member, classic=ClassicMemberMetadata(session_timeout_ms, protocols))


def _decode_target_epoch(r: SchemaReader, _sub: str) -> TargetEpoch:
    return TargetEpoch(*_epoch_and_tag(r))


def _decode_target_member(r: SchemaReader, _sub: str) -> Assignment:
    assignment = _read_assignment(r)
    _read_tags(r)
    return assignment


def _decode_current(r: SchemaReader, _sub: str) -> CurrentAssignment:
    epoch, previous, state = r.int32(), r.int32(), r.int8()
    epochs: dict[tuple[uuid.UUID, int], int] = {}
    value = CurrentAssignment(
        epoch, previous,
        MemberState(state) if state in MemberState._value2member_map_ else MemberState.UNKNOWN,
        _read_assignment(r, epochs), _read_assignment(r), epochs,
    )  # fmt: skip
    _read_tags(r)
    return value


def _decode_regex(r: SchemaReader, _sub: str) -> ResolvedRegex:
    topics = frozenset(r.array(lambda: r.nullable_string() or "") or ())
    value = ResolvedRegex(topics, r.int64(), r.int64())
    _read_tags(r)
    return value


_DECODERS = {
    GROUP_METADATA: _decode_group_epoch,
    MEMBER_METADATA: _decode_member,
    TARGET_ASSIGNMENT_METADATA: _decode_target_epoch,
    TARGET_ASSIGNMENT_MEMBER: _decode_target_member,
    CURRENT_MEMBER_ASSIGNMENT: _decode_current,
    REGULAR_EXPRESSION: _decode_regex,
}
