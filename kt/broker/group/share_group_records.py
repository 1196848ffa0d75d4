"""The share group records of `__consumer_offsets` (Kafka 4's CoordinatorRecordType 10-14),
in the encoding of consumer_group_records.py (int16 type and fields in the key; int16
version 0 and a flexible struct in the value; a null value is a tombstone):

  10 ShareGroupMemberMetadata          key group, member  value RackId string?, ClientId,
                                                                ClientHost,
                                                                SubscribedTopicNames [string]
  11 ShareGroupMetadata                key group          value Epoch int32,
                                                                MetadataHash int64
  12 ShareGroupTargetAssignmentMetadata key group         value AssignmentEpoch int32,
                                                                tag 0 AssignmentTimestamp int64
  13 ShareGroupTargetAssignmentMember  key group, member  value TopicPartitions
                                                                [TopicId uuid, Partitions [int32]]
  14 ShareGroupCurrentMemberAssignment key group, member  value MemberEpoch int32,
      PreviousMemberEpoch int32, State int8, AssignedPartitions [TopicId, Partitions]
  15 ShareGroupStatePartitionMetadata  key group          value
      InitializingTopics [TopicId uuid, TopicName string, Partitions [int32]],
      InitializedTopics (the same), DeletingTopics [TopicId uuid, TopicName string]

`replay` applies one record to a share group, for writes and loads alike.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from kt.broker.group import consumer_group_records as cr
from kt.broker.group.consumer_group_records import (
    _I8,
    _I32,
    _I64,
    _NO_TAGS,
    _VALUE_VERSION,
    _compact_array,
    _decode_target_member,
    _encode_target_epoch,
    _epoch_and_tag,
    _read_assignment,
    _read_tags,
    _string,
    _topic_partitions,
)
from kt.broker.group.group_metadata import GroupMetadata
from kt.broker.group.share_group import Assignment, ShareGroup, ShareGroupMember
from kt.broker.group.share_partition_metadata import InitMap, InitTopic, SharePartitionMetadata
from kt.protocol.schema_reader import SchemaReader
from kt.protocol.types import write_compact_string, write_uuid

MEMBER_METADATA = 10
GROUP_METADATA = 11
TARGET_ASSIGNMENT_METADATA = 12
TARGET_ASSIGNMENT_MEMBER = 13
CURRENT_MEMBER_ASSIGNMENT = 14
STATE_PARTITION_METADATA = 15
RECORD_TYPES = frozenset(range(10, 16))
_WITH_SUBKEY = frozenset((MEMBER_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT))


@dataclass(frozen=True)
class CurrentAssignment:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned: Assignment


@dataclass(frozen=True)
class ShareRecord:
    """One record: type, group, member id (`sub`) and value (None: a tombstone). Values:
    cr.GroupEpoch, ShareGroupMember (its subscription part), cr.TargetEpoch, an
    Assignment, CurrentAssignment, SharePartitionMetadata."""

    type: int
    group_id: str
    sub: str | None
    value: object

    def key(self) -> bytes:
        parts = [cr._I16.pack(self.type), _string(self.group_id)]
        if self.type in _WITH_SUBKEY:
            parts.append(_string(self.sub or ""))
        return b"".join(parts)

    def value_bytes(self) -> bytes | None:
        if self.value is None:
            return None
        return _VALUE_VERSION + _ENCODERS[self.type](self.value)


# -- builders -------------------------------------------------------------------------------


def group_epoch(group_id: str, epoch: int, metadata_hash: int) -> ShareRecord:
    return ShareRecord(GROUP_METADATA, group_id, None, cr.GroupEpoch(epoch, metadata_hash))


def member_subscription(group_id: str, member: ShareGroupMember) -> ShareRecord:
    return ShareRecord(MEMBER_METADATA, group_id, member.member_id, member)


def target_member(group_id: str, member_id: str, assignment: Assignment) -> ShareRecord:
    return ShareRecord(TARGET_ASSIGNMENT_MEMBER, group_id, member_id, assignment)


def target_epoch(group_id: str, epoch: int, timestamp: int) -> ShareRecord:
    return ShareRecord(TARGET_ASSIGNMENT_METADATA, group_id, None, cr.TargetEpoch(epoch, timestamp))


def current_assignment(group_id: str, member: ShareGroupMember) -> ShareRecord:
    value = CurrentAssignment(member.member_epoch, member.previous_member_epoch, member.state,
                              member.assigned)  # fmt: skip
    return ShareRecord(CURRENT_MEMBER_ASSIGNMENT, group_id, member.member_id, value)


def partition_metadata(group_id: str, value: SharePartitionMetadata) -> ShareRecord:
    return ShareRecord(STATE_PARTITION_METADATA, group_id, None, value)


def member_removal(group_id: str, member_id: str) -> list[ShareRecord]:
    """removeMember's tombstones, in Kafka's order."""
    kinds = (CURRENT_MEMBER_ASSIGNMENT, TARGET_ASSIGNMENT_MEMBER, MEMBER_METADATA)
    return [ShareRecord(t, group_id, member_id, None) for t in kinds]


def group_removal(group: ShareGroup) -> list[ShareRecord]:
    """The tombstones that delete a group (ShareGroup.createGroupTombstoneRecords)."""
    group_id = group.group_id
    records = [ShareRecord(t, group_id, m, None) for t in (CURRENT_MEMBER_ASSIGNMENT,
               TARGET_ASSIGNMENT_MEMBER) for m in group.members]  # fmt: skip
    records.append(ShareRecord(TARGET_ASSIGNMENT_METADATA, group_id, None, None))
    records += [ShareRecord(MEMBER_METADATA, group_id, m, None) for m in group.members]
    records.append(ShareRecord(STATE_PARTITION_METADATA, group_id, None, None))
    records.append(ShareRecord(GROUP_METADATA, group_id, None, None))
    return records


# -- replay ---------------------------------------------------------------------------------


def apply(holder: GroupMetadata, record: ShareRecord) -> None:
    """Replay one record into `holder`'s share group (created by the first record that is
    not a tombstone, dropped by the group's tombstone)."""
    if holder.share is None:
        if record.value is None:
            return
        holder.share = ShareGroup(holder.group_id)
    if record.type == GROUP_METADATA and record.value is None:
        holder.share = None
        return
    replay(holder.share, record)


def replay(group: ShareGroup, record: ShareRecord) -> None:
    """Apply `record` to `group`; the group tombstone is the caller's to act on."""
    value, sub = record.value, record.sub or ""
    if record.type == GROUP_METADATA:
        if isinstance(value, cr.GroupEpoch):
            group.group_epoch, group.metadata_hash = value.epoch, value.metadata_hash
    elif record.type == MEMBER_METADATA:
        if value is None:
            group.members.pop(sub, None)
            return
        assert isinstance(value, ShareGroupMember)
        old = group.members.get(sub) or ShareGroupMember(sub)
        group.members[sub] = replace(
            old, rack_id=value.rack_id, client_id=value.client_id,
            client_host=value.client_host, subscribed_topic_names=value.subscribed_topic_names,
        )  # fmt: skip
    elif record.type == TARGET_ASSIGNMENT_MEMBER:
        if value is None:
            group.target.pop(sub, None)
        else:
            group.target[sub] = value  # type: ignore[assignment]
    elif record.type == TARGET_ASSIGNMENT_METADATA:
        if isinstance(value, cr.TargetEpoch):
            group.assignment_epoch, group.assignment_timestamp = value.epoch, value.timestamp
    elif record.type == STATE_PARTITION_METADATA:
        group.partition_metadata = value  # type: ignore[assignment]
    elif record.type == CURRENT_MEMBER_ASSIGNMENT:
        old = group.members.get(sub) or ShareGroupMember(sub)
        a = value if isinstance(value, CurrentAssignment) else CurrentAssignment(-1, -1, 0, {})
        group.members[sub] = replace(old, member_epoch=a.member_epoch,
                                     previous_member_epoch=a.previous_member_epoch,
                                     state=a.state, assigned=a.assigned)  # fmt: skip


# -- encoding and decoding ------------------------------------------------------------------


def _encode_member(m: ShareGroupMember) -> bytes:
    return b"".join((
        write_compact_string(m.rack_id), write_compact_string(m.client_id),
        write_compact_string(m.client_host),
        _compact_array([write_compact_string(t) for t in m.subscribed_topic_names]), _NO_TAGS,
    ))  # fmt: skip


def _encode_group_epoch(v: cr.GroupEpoch) -> bytes:
    return _I32.pack(v.epoch) + _I64.pack(v.metadata_hash) + _NO_TAGS


def _encode_current(v: CurrentAssignment) -> bytes:
    return b"".join((_I32.pack(v.member_epoch), _I32.pack(v.previous_member_epoch),
                     _I8.pack(v.state), _topic_partitions(v.assigned), _NO_TAGS))  # fmt: skip


def _encode_init_map(topics: InitMap) -> bytes:
    return _compact_array([
        write_uuid(t) + write_compact_string(v.name)
        + _compact_array([_I32.pack(p) for p in sorted(v.partitions)]) + _NO_TAGS
        for t, v in sorted(topics.items(), key=lambda kv: str(kv[0]))
    ])  # fmt: skip


def _encode_partition_metadata(v: SharePartitionMetadata) -> bytes:
    deleting = _compact_array([write_uuid(t) + write_compact_string(name) + _NO_TAGS
                               for t, name in sorted(v.deleting.items(),
                                                     key=lambda kv: str(kv[0]))])  # fmt: skip
    return _encode_init_map(v.initializing) + _encode_init_map(v.initialized) + deleting + _NO_TAGS


_ENCODERS = {
    MEMBER_METADATA: _encode_member,
    GROUP_METADATA: _encode_group_epoch,
    TARGET_ASSIGNMENT_METADATA: _encode_target_epoch,
    TARGET_ASSIGNMENT_MEMBER: lambda a: _topic_partitions(a) + _NO_TAGS,
    CURRENT_MEMBER_ASSIGNMENT: _encode_current,
    STATE_PARTITION_METADATA: _encode_partition_metadata,
}


def read_record(key: bytes, value: bytes | None) -> ShareRecord | None:
    """The share group record of a `__consumer_offsets` key and value; None for another
    type. Raises ValueError, IndexError or struct.error on bytes that do not parse."""
    r = SchemaReader(key)
    record_type = r.int16()
    if record_type not in RECORD_TYPES:
        return None
    group_id = r.nullable_string() or ""
    sub = r.nullable_string() or "" if record_type in _WITH_SUBKEY else None
    if value is None:
        return ShareRecord(record_type, group_id, sub, None)
    v = SchemaReader(value, flexible=True)
    version = v.int16()
    if version != 0:
        raise ValueError(f"Unknown version {version} of record type {record_type}")
    return ShareRecord(record_type, group_id, sub, _DECODERS[record_type](v, sub or ""))


def _decode_member(r: SchemaReader, sub: str) -> ShareGroupMember:
    member = ShareGroupMember(
        sub, rack_id=r.nullable_string(), client_id=r.nullable_string() or "",
        client_host=r.nullable_string() or "",
        subscribed_topic_names=tuple(r.array(lambda: r.nullable_string() or "") or ()),
    )  # fmt: skip
    _read_tags(r)
    return member


def _decode_group_epoch(r: SchemaReader, _sub: str) -> cr.GroupEpoch:
    value = cr.GroupEpoch(r.int32(), r.int64())
    _read_tags(r)
    return value


def _decode_current(r: SchemaReader, _sub: str) -> CurrentAssignment:
    value = CurrentAssignment(r.int32(), r.int32(), r.int8(), _read_assignment(r))
    _read_tags(r)
    return value


def _decode_init_map(r: SchemaReader, loaded_at: int) -> InitMap:
    out: InitMap = {}
    for _ in range(max(0, r.array_length())):
        topic_id = r.uuid()
        name = r.nullable_string() or ""
        out[topic_id] = InitTopic(name, frozenset(r.array(r.int32) or ()), loaded_at)
        _read_tags(r)
    return out


def _decode_partition_metadata(r: SchemaReader, _sub: str) -> SharePartitionMetadata:
    # A loaded record's topics are as recent as the load (Kafka's replay).
    now = int(time.time() * 1000)
    initializing, initialized = _decode_init_map(r, now), _decode_init_map(r, now)
    deleting = {}
    for _ in range(max(0, r.array_length())):
        topic_id = r.uuid()
        deleting[topic_id] = r.nullable_string() or ""
        _read_tags(r)
    _read_tags(r)
    return SharePartitionMetadata(initializing, initialized, deleting)


_DECODERS = {
    MEMBER_METADATA: _decode_member,
    GROUP_METADATA: _decode_group_epoch,
    TARGET_ASSIGNMENT_METADATA: lambda r, _sub: cr.TargetEpoch(*_epoch_and_tag(r)),
    TARGET_ASSIGNMENT_MEMBER: _decode_target_member,
    CURRENT_MEMBER_ASSIGNMENT: _decode_current,
    STATE_PARTITION_METADATA: _decode_partition_metadata,
}
