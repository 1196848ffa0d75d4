"""The `__consumer_offsets` record formats (Kafka's group-coordinator message schemas).

Every key and value starts with an int16 version; strings are int16 length + UTF-8
(-1 = null), bytes are int32 length + data. Version 4 values are flexible (compact
lengths as unsigned varint length+1, a tagged-field section after every struct).

  OffsetCommitKey   v0/v1 (Kafka writes 1) => group string, topic string, partition int32
  GroupMetadataKey  v2                     => group string
  OffsetCommitValue v0 => offset int64, metadata string, commitTimestamp int64
                    v1 => ... commitTimestamp int64, expireTimestamp int64
                    v2 => as v0
                    v3 => offset int64, leaderEpoch int32, metadata, commitTimestamp int64
                    v4 => v3, flexible
  GroupMetadataValue v0 => protocolType string, generation int32, protocol string?,
                           leader string?, members [memberId, clientId, clientHost,
                           sessionTimeout int32, subscription bytes, assignment bytes]
                     v1 => members gain rebalanceTimeout int32 before sessionTimeout
                     v2 => currentStateTimestamp int64 after leader
                     v3 => members gain groupInstanceId string? after memberId
                     v4 => v3, flexible

Kafka writes OffsetCommitValue v3 (v1 when the commit carries an expire timestamp) and
GroupMetadataValue v3. A record with a null value is a tombstone: the key is deleted.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from kt.protocol.schema_reader import SchemaReader

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY = 1
GROUP_METADATA_VALUE_VERSION = 3

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


@dataclass(frozen=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True)
class GroupMetadataKey:
    group: str


@dataclass
class OffsetAndMetadata:
    """A committed offset. `expire_timestamp` is set only by OffsetCommit v1-v4 with a
    retention time; -1 leader epoch means unknown."""

    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = 0
    expire_timestamp: int | None = None


@dataclass
class MemberRecord:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = -1
    members: list[MemberRecord] = field(default_factory=list)


# -- writing ----------------------------------------------------------------------------


def _string(s: str | None) -> bytes:
    if s is None:
        return _I16.pack(-1)
    data = s.encode()
    return _I16.pack(len(data)) + data


def _bytes(b: bytes) -> bytes:
    return _I32.pack(len(b)) + b


def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    return (
        _I16.pack(OFFSET_COMMIT_KEY_VERSION) + _string(group) + _string(topic)
        + _I32.pack(partition)
    )  # fmt: skip


def group_metadata_key(group: str) -> bytes:
    return _I16.pack(GROUP_METADATA_KEY_VERSION) + _string(group)


def offset_commit_value(o: OffsetAndMetadata) -> bytes:
    """v3, or v1 when the commit has an expire timestamp (as Kafka chooses)."""
    if o.expire_timestamp is not None:
        return b"".join((
            _I16.pack(OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY), _I64.pack(o.offset),
            _string(o.metadata), _I64.pack(o.commit_timestamp), _I64.pack(o.expire_timestamp),
        ))  # fmt: skip
    return b"".join((
        _I16.pack(OFFSET_COMMIT_VALUE_VERSION), _I64.pack(o.offset), _I32.pack(o.leader_epoch),
        _string(o.metadata), _I64.pack(o.commit_timestamp),
    ))  # fmt: skip


def group_metadata_value(v: GroupMetadataValue) -> bytes:
    """GroupMetadataValue v3."""
    parts = [
        _I16.pack(GROUP_METADATA_VALUE_VERSION), _string(v.protocol_type),
        _I32.pack(v.generation), _string(v.protocol), _string(v.leader),
        _I64.pack(v.current_state_timestamp), _I32.pack(len(v.members)),
    ]  # fmt: skip
    for m in v.members:
        parts += [
            _string(m.member_id), _string(m.group_instance_id), _string(m.client_id),
            _string(m.client_host), _I32.pack(m.rebalance_timeout),
            _I32.pack(m.session_timeout), _bytes(m.subscription), _bytes(m.assignment),
        ]  # fmt: skip
    return b"".join(parts)


# -- reading ----------------------------------------------------------------------------


def read_key(data: bytes) -> OffsetKey | GroupMetadataKey | None:
    """The key of a `__consumer_offsets` record; None for record types kt does not use
    (the consumer-group protocol's keys, version 3 and up)."""
    r = SchemaReader(data)
    version = r.int16()
    if version in (0, 1):
        group, topic = r.nullable_string() or "", r.nullable_string() or ""
        return OffsetKey(group, topic, r.int32())
    if version == 2:
        return GroupMetadataKey(r.nullable_string() or "")
    return None


def read_offset_value(data: bytes) -> OffsetAndMetadata:
    r = SchemaReader(data)
    version = r.int16()
    if not 0 <= version <= 4:
        raise ValueError(f"Unknown offset message version {version}")
    r.flexible = version >= 4
    offset = r.int64()
    epoch = r.int32() if version >= 3 else -1
    metadata = r.nullable_string() or ""
    commit_ts = r.int64()
    expire_ts = r.int64() if version == 1 else None
    return OffsetAndMetadata(offset, epoch, metadata, commit_ts, expire_ts)


def read_group_value(data: bytes) -> GroupMetadataValue:
    r = SchemaReader(data)
    version = r.int16()
    if not 0 <= version <= 4:
        raise ValueError(f"Unknown group metadata message version {version}")
    r.flexible = version >= 4
    value = GroupMetadataValue(
        r.nullable_string() or "", r.int32(), r.nullable_string(), r.nullable_string()
    )
    if version >= 2:
        value.current_state_timestamp = r.int64()
    for _ in range(max(0, r.array_length())):
        member_id = r.nullable_string() or ""
        instance_id = r.nullable_string() if version >= 3 else None
        client_id, client_host = r.nullable_string() or "", r.nullable_string() or ""
        rebalance_timeout = r.int32() if version >= 1 else -1
        session_timeout = r.int32()
        if version == 0:
            rebalance_timeout = session_timeout
        subscription, assignment = r.nullable_bytes() or b"", r.nullable_bytes() or b""
        r.tagged_fields()
        value.members.append(
            MemberRecord(
                member_id,
                instance_id,
                client_id,
                client_host,
                rebalance_timeout,
                session_timeout,
                subscription,
                assignment,
            )  # fmt: skip
        )
    r.tagged_fields()
    return value
