"""The consumer's embedded protocol of classic groups (Kafka's ConsumerProtocol): the
subscription a member sends in JoinGroup and the assignment it gets in SyncGroup, in
the classic encoding, versions 0-3 (ConsumerProtocolSubscription.json,
ConsumerProtocolAssignment.json):

  Subscription  version int16, Topics [string], UserData bytes?,
                v1+ OwnedPartitions [Topic string, Partitions [int32]],
                v2+ GenerationId int32, v3+ RackId string?
  Assignment    version int16, AssignedPartitions [Topic string, Partitions [int32]],
                UserData bytes?

A version above 3 is read as version 3 (a newer client's extra fields come last), as
ConsumerProtocol.checkSubscriptionVersion does. The coordinator reads both when a
classic group becomes a consumer group, and writes assignments for the classic members
of a consumer group (KIP-848's online migration).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from kt.protocol.schema_reader import SchemaReader

HIGHEST_VERSION = 3
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


@dataclass(frozen=True)
class Subscription:
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned: tuple[tuple[str, tuple[int, ...]], ...] = ()
    generation_id: int = -1
    rack_id: str | None = None


@dataclass(frozen=True)
class Assignment:
    partitions: dict[str, tuple[int, ...]] = field(default_factory=dict)
    user_data: bytes | None = None


def version_of(data: bytes) -> int:
    """The version a subscription or assignment is written in (deserializeVersion);
    ValueError when `data` is too short or the version negative."""
    if len(data) < 2:
        raise ValueError("no version in the embedded consumer protocol")
    (version,) = _I16.unpack_from(data)
    if version < 0:
        raise ValueError(f"Unsupported consumer protocol version {version}")
    return version


def decode_subscription(data: bytes) -> Subscription:
    """ValueError (or struct.error, IndexError) on bytes that do not parse."""
    r = SchemaReader(data)
    version = min(version_of(data), HIGHEST_VERSION)
    r.int16()
    topics = tuple(r.array(r.string) or ())
    user_data = r.nullable_bytes()
    owned: tuple = ()
    generation_id, rack_id = -1, None
    if version >= 1:
        owned = tuple(r.array(lambda: (r.string(), tuple(r.array(r.int32) or ()))) or ())
    if version >= 2:
        generation_id = r.int32()
    if version >= 3:
        rack_id = r.nullable_string()
    return Subscription(topics, user_data, owned, generation_id, rack_id)


def decode_assignment(data: bytes) -> Assignment:
    """An empty `data` is the empty assignment (a member that has none yet)."""
    if not data:
        return Assignment()
    r = SchemaReader(data)
    version_of(data)
    r.int16()
    partitions = dict(r.array(lambda: (r.string(), tuple(r.array(r.int32) or ()))) or ())
    return Assignment(partitions, r.nullable_bytes())


def encode_assignment(partitions: dict[str, list[int]], version: int) -> bytes:
    """serializeAssignment at the member's subscription version (at most 3)."""
    parts = [_I16.pack(min(version, HIGHEST_VERSION)), _I32.pack(len(partitions))]
    for topic, ps in sorted(partitions.items()):
        name = topic.encode()
        parts += [_I16.pack(len(name)), name, _I32.pack(len(ps))]
        parts += [_I32.pack(p) for p in sorted(ps)]
    parts.append(_I32.pack(-1))  # no user data
    return b"".join(parts)
