"""The streams group records of `__consumer_offsets` (KIP-1071; Kafka 4.4's
CoordinatorRecordType 17 and 19-23), as its group coordinator writes them.

A key is the int16 record type, then the group id and, for a member's records, the
member id (strings in the classic encoding); a value is the int16 version 0 and a
flexible struct, null for a tombstone:

  17 StreamsGroupMetadata                 key group          value Epoch int32,
      MetadataHash int64, tag 0 ValidatedTopologyEpoch int32 (-1), tag 1
      LastAssignmentConfigs [Key, Value]? (empty), tag 2 StoredDescriptionTopologyEpoch
      int32 (-1), tag 3 FailedDescriptionTopologyEpoch int32 (-1)
  19 StreamsGroupMemberMetadata           key group, member  value InstanceId string?,
      RackId string?, ClientId, ClientHost, RebalanceTimeoutMs int32, TopologyEpoch int32,
      ProcessId, UserEndpoint (Host, Port uint16)?, ClientTags [Key, Value]
  20 StreamsGroupTargetAssignmentMetadata key group          value AssignmentEpoch int32,
      tag 0 AssignmentTimestamp int64
  21 StreamsGroupTargetAssignmentMember   key group, member  value ActiveTasks,
      StandbyTasks, WarmupTasks: each [SubtopologyId string, Partitions [int32]]
  22 StreamsGroupCurrentMemberAssignment  key group, member  value MemberEpoch int32,
      PreviousMemberEpoch int32, State int8, the tasks of 21 and each of them pending
      revocation, each task list's entries with tag 0 AssignmentEpochs [int32]?
  23 StreamsGroupTopology                 key group          value Epoch int32,
      Subtopologies [SubtopologyId, SourceTopics [string], SourceTopicRegex [string],
      StateChangelogTopics [TopicInfo], RepartitionSinkTopics [string],
      RepartitionSourceTopics [TopicInfo], CopartitionGroups [SourceTopics [int16],
      SourceTopicRegex [int16], RepartitionSourceTopics [int16]]]; TopicInfo: Name,
      Partitions int32, ReplicationFactor int16, TopicConfigs [Key, Value]

(Type 18, StreamsGroupPartitionMetadata, was never released.) The values are data
messages in kt's schema table format, written and read by kt's protocol codec, so a
field's default decides whether a tagged field is written, as Kafka's generated code does.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from kt.protocol.codec import decode_body, encode_body
from kt.protocol.messages import data_message
from kt.protocol.schema import Field as F
from kt.protocol.schema import MessageSchema as M
from kt.protocol.types import write_string

GROUP_METADATA = 17
MEMBER_METADATA = 19
TARGET_ASSIGNMENT_METADATA = 20
TARGET_ASSIGNMENT_MEMBER = 21
CURRENT_MEMBER_ASSIGNMENT = 22
TOPOLOGY = 23
RECORD_TYPES = frozenset((GROUP_METADATA, MEMBER_METADATA, TARGET_ASSIGNMENT_METADATA,
                          TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT,
                          TOPOLOGY))  # fmt: skip
_WITH_MEMBER = frozenset((MEMBER_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT))
_I16 = struct.Struct(">h")
_ALL = (0, None)  # every version (there is one, 0, flexible)

_KEY_VALUE = (F("key", "Key", "string", _ALL, default=""),
              F("value", "Value", "string", _ALL, default=""))  # fmt: skip


def _tasks(name: str, kafka_name: str) -> F:
    return F(name, kafka_name, "[]TaskIds", _ALL, default=())


def _topic_info(name: str, kafka_name: str) -> F:
    return F(name, kafka_name, "[]TopicInfo", _ALL, default=())


_SCHEMAS = {
    GROUP_METADATA: M("StreamsGroupMetadataValue", GROUP_METADATA, "data", (0, 0), _ALL, fields=(
        F("epoch", "Epoch", "int32", _ALL, default=0),
        F("metadata_hash", "MetadataHash", "int64", _ALL, default=0),
        F("validated_topology_epoch", "ValidatedTopologyEpoch", "int32", _ALL, default=-1,
          tag=0, tagged=_ALL),
        F("last_assignment_configs", "LastAssignmentConfigs", "[]LastAssignmentConfig", _ALL,
          nullable=_ALL, default=(), tag=1, tagged=_ALL),
        F("stored_description_topology_epoch", "StoredDescriptionTopologyEpoch", "int32",
          _ALL, default=-1, tag=2, tagged=_ALL),
        F("failed_description_topology_epoch", "FailedDescriptionTopologyEpoch", "int32",
          _ALL, default=-1, tag=3, tagged=_ALL),
    ), structs={"LastAssignmentConfig": _KEY_VALUE}),
    MEMBER_METADATA: M("StreamsGroupMemberMetadataValue", MEMBER_METADATA, "data", (0, 0), _ALL,
                       fields=(
        F("instance_id", "InstanceId", "string", _ALL, nullable=_ALL, default=""),
        F("rack_id", "RackId", "string", _ALL, nullable=_ALL, default=""),
        F("client_id", "ClientId", "string", _ALL, default=""),
        F("client_host", "ClientHost", "string", _ALL, default=""),
        F("rebalance_timeout_ms", "RebalanceTimeoutMs", "int32", _ALL, default=-1),
        F("topology_epoch", "TopologyEpoch", "int32", _ALL, default=0),
        F("process_id", "ProcessId", "string", _ALL, default=""),
        F("user_endpoint", "UserEndpoint", "Endpoint", _ALL, nullable=_ALL, default=None),
        F("client_tags", "ClientTags", "[]KeyValue", _ALL, default=()),
    ), structs={
        "Endpoint": (F("host", "Host", "string", _ALL, default=""),
                     F("port", "Port", "uint16", _ALL, default=0)),
        "KeyValue": _KEY_VALUE,
    }),
    TARGET_ASSIGNMENT_METADATA: M("StreamsGroupTargetAssignmentMetadataValue",
                                  TARGET_ASSIGNMENT_METADATA, "data", (0, 0), _ALL, fields=(
        F("assignment_epoch", "AssignmentEpoch", "int32", _ALL, default=0),
        F("assignment_timestamp", "AssignmentTimestamp", "int64", _ALL, default=0, tag=0,
          tagged=_ALL),
    ), structs={}),
    TARGET_ASSIGNMENT_MEMBER: M("StreamsGroupTargetAssignmentMemberValue",
                                TARGET_ASSIGNMENT_MEMBER, "data", (0, 0), _ALL, fields=(
        _tasks("active_tasks", "ActiveTasks"),
        _tasks("standby_tasks", "StandbyTasks"),
        _tasks("warmup_tasks", "WarmupTasks"),
    ), structs={"TaskIds": (F("subtopology_id", "SubtopologyId", "string", _ALL, default=""),
                            F("partitions", "Partitions", "[]int32", _ALL, default=()))}),
    CURRENT_MEMBER_ASSIGNMENT: M("StreamsGroupCurrentMemberAssignmentValue",
                                 CURRENT_MEMBER_ASSIGNMENT, "data", (0, 0), _ALL, fields=(
        F("member_epoch", "MemberEpoch", "int32", _ALL, default=0),
        F("previous_member_epoch", "PreviousMemberEpoch", "int32", _ALL, default=0),
        F("state", "State", "int8", _ALL, default=0),
        _tasks("active_tasks", "ActiveTasks"),
        _tasks("standby_tasks", "StandbyTasks"),
        _tasks("warmup_tasks", "WarmupTasks"),
        _tasks("active_tasks_pending_revocation", "ActiveTasksPendingRevocation"),
        _tasks("standby_tasks_pending_revocation", "StandbyTasksPendingRevocation"),
        _tasks("warmup_tasks_pending_revocation", "WarmupTasksPendingRevocation"),
    ), structs={"TaskIds": (
        F("subtopology_id", "SubtopologyId", "string", _ALL, default=""),
        F("partitions", "Partitions", "[]int32", _ALL, default=()),
        F("assignment_epochs", "AssignmentEpochs", "[]int32", _ALL, nullable=_ALL, default=(),
          tag=0, tagged=_ALL),
    )}),
    TOPOLOGY: M("StreamsGroupTopologyValue", TOPOLOGY, "data", (0, 0), _ALL, fields=(
        F("epoch", "Epoch", "int32", _ALL, default=0),
        F("subtopologies", "Subtopologies", "[]Subtopology", _ALL, default=()),
    ), structs={
        "Subtopology": (
            F("subtopology_id", "SubtopologyId", "string", _ALL, default=""),
            F("source_topics", "SourceTopics", "[]string", _ALL, default=()),
            F("source_topic_regex", "SourceTopicRegex", "[]string", _ALL, default=()),
            _topic_info("state_changelog_topics", "StateChangelogTopics"),
            F("repartition_sink_topics", "RepartitionSinkTopics", "[]string", _ALL, default=()),
            _topic_info("repartition_source_topics", "RepartitionSourceTopics"),
            F("copartition_groups", "CopartitionGroups", "[]CopartitionGroup", _ALL,
              default=()),
        ),
        "CopartitionGroup": (
            F("source_topics", "SourceTopics", "[]int16", _ALL, default=()),
            F("source_topic_regex", "SourceTopicRegex", "[]int16", _ALL, default=()),
            F("repartition_source_topics", "RepartitionSourceTopics", "[]int16", _ALL,
              default=()),
        ),
        "TopicInfo": (
            F("name", "Name", "string", _ALL, default=""),
            F("partitions", "Partitions", "int32", _ALL, default=0),
            F("replication_factor", "ReplicationFactor", "int16", _ALL, default=0),
            F("topic_configs", "TopicConfigs", "[]TopicConfig", _ALL, default=()),
        ),
        "TopicConfig": _KEY_VALUE,
    }),
}  # fmt: skip
VALUE_CLASSES: dict[int, type] = {kind: data_message(s) for kind, s in _SCHEMAS.items()}
GroupMetadataValue = VALUE_CLASSES[GROUP_METADATA]
MemberMetadataValue = VALUE_CLASSES[MEMBER_METADATA]
TargetAssignmentMetadataValue = VALUE_CLASSES[TARGET_ASSIGNMENT_METADATA]
TargetAssignmentMemberValue = VALUE_CLASSES[TARGET_ASSIGNMENT_MEMBER]
CurrentMemberAssignmentValue = VALUE_CLASSES[CURRENT_MEMBER_ASSIGNMENT]
TopologyValue = VALUE_CLASSES[TOPOLOGY]


@dataclass(frozen=True)
class StreamsRecord:
    """One record: its type, group, member id (`member`, for 19, 21 and 22) and value
    (an instance of VALUE_CLASSES[type], or None: a tombstone)."""

    type: int
    group_id: str
    member: str | None
    value: Any

    def key(self) -> bytes:
        parts = [_I16.pack(self.type), write_string(self.group_id)]
        if self.type in _WITH_MEMBER:
            parts.append(write_string(self.member or ""))
        return b"".join(parts)

    def value_bytes(self) -> bytes | None:
        if self.value is None:
            return None
        out: list = [_I16.pack(0)]
        encode_body(self.value, 0, out)
        return b"".join(out)


def read_record(kind: int, key: bytes, value: bytes | None) -> StreamsRecord:
    """A streams group record from its key (past the int16 type) and value bytes.
    ProtocolError (kt.errors) on malformed bytes."""
    view = memoryview(key)
    group_id, pos = _read_string(view, 0)
    member = _read_string(view, pos)[0] if kind in _WITH_MEMBER else None
    if value is None:
        return StreamsRecord(kind, group_id, member, None)
    body, _ = decode_body(VALUE_CLASSES[kind], 0, memoryview(value), 2)
    return StreamsRecord(kind, group_id, member, body)


def read_group_record(key: bytes, value: bytes | None) -> StreamsRecord | None:
    """The streams group record of a `__consumer_offsets` key and value; None for a record
    of another type."""
    kind = _I16.unpack_from(key, 0)[0]
    if kind not in RECORD_TYPES:
        return None
    return read_record(kind, key[2:], value)


def _read_string(view: memoryview, pos: int) -> tuple[str, int]:
    (length,) = _I16.unpack_from(view, pos)
    end = pos + 2 + length
    return bytes(view[pos + 2 : end]).decode(), end
