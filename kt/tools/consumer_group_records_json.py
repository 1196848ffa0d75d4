"""Kafka 4's consumer, share and streams group records of `__consumer_offsets` as
DumpLogSegments prints them (CoordinatorRecordJsonConverters): the key's fields and the
value's, in the schema's order and under its camelCase names, tagged fields only where
they hold other than their default, topic ids as Kafka's Uuid.toString (URL-safe base64).

The schemas are the group-coordinator message files' (Kafka 4.4), as field lists:
(name, type) with types int8 int16 uint16 int32 int64 string string? uuid bytes, `[]` +
a type, a nested field list for a struct array, ("struct?", fields) for a nullable
tagged struct and ("struct?int8", fields) for a nullable struct in place, and a trailing
tagged-fields map {tag: (name, type)}.
"""

from __future__ import annotations

import base64
import uuid
from typing import Any

from kt.protocol.schema_reader import SchemaReader

_TOPIC_PARTITIONS: list = [("topicId", "uuid"), ("partitions", "[]int32"),
                           {0: ("assignmentEpochs", "[]int32")}]  # fmt: skip

KEYS: dict[int, list[tuple[str, str]]] = {
    3: [("groupId", "string")],
    4: [("groupId", "string")],
    5: [("groupId", "string"), ("memberId", "string")],
    6: [("groupId", "string")],
    7: [("groupId", "string"), ("memberId", "string")],
    8: [("groupId", "string"), ("memberId", "string")],
    10: [("groupId", "string"), ("memberId", "string")],
    11: [("groupId", "string")],
    12: [("groupId", "string")],
    13: [("groupId", "string"), ("memberId", "string")],
    14: [("groupId", "string"), ("memberId", "string")],
    15: [("groupId", "string")],
    16: [("groupId", "string"), ("regularExpression", "string")],
    # streams groups (KIP-1071)
    17: [("groupId", "string")],
    19: [("groupId", "string"), ("memberId", "string")],
    20: [("groupId", "string")],
    21: [("groupId", "string"), ("memberId", "string")],
    22: [("groupId", "string"), ("memberId", "string")],
    23: [("groupId", "string")],
}
_SHARE_TOPICS: list = [("topicId", "uuid"), ("partitions", "[]int32"), {}]
_KEY_VALUE: list = [("key", "string"), ("value", "string"), {}]
_TASKS: list = [("subtopologyId", "string"), ("partitions", "[]int32"), {}]
_TASKS_WITH_EPOCHS: list = [("subtopologyId", "string"), ("partitions", "[]int32"),
                            {0: ("assignmentEpochs", "[]int32")}]  # fmt: skip
_TOPIC_INFO: list = [("name", "string"), ("partitions", "int32"), ("replicationFactor", "int16"),
                     ("topicConfigs", _KEY_VALUE), {}]  # fmt: skip
_SHARE_INIT: list = [("topicId", "uuid"), ("topicName", "string"), ("partitions", "[]int32"), {}]

VALUES: dict[int, list] = {
    3: [("epoch", "int32"), {0: ("metadataHash", "int64")}],
    4: [("topics", [("topicId", "uuid"), ("topicName", "string"), ("numPartitions", "int32"),
                    ("partitionMetadata", [("partition", "int32"), ("racks", "[]string"), {}]),
                    {}]), {}],
    5: [("instanceId", "string?"), ("rackId", "string?"), ("clientId", "string"),
        ("clientHost", "string"), ("subscribedTopicNames", "[]string"),
        ("subscribedTopicRegex", "string?"), ("rebalanceTimeoutMs", "int32"),
        ("serverAssignor", "string?"),
        {0: ("classicMemberMetadata", ("struct?", [
            ("sessionTimeoutMs", "int32"),
            ("supportedProtocols", [("name", "string"), ("metadata", "bytes"), {}]), {}]))}],
    6: [("assignmentEpoch", "int32"), {0: ("assignmentTimestamp", "int64")}],
    7: [("topicPartitions", [("topicId", "uuid"), ("partitions", "[]int32"), {}]), {}],
    8: [("memberEpoch", "int32"), ("previousMemberEpoch", "int32"), ("state", "int8"),
        ("assignedPartitions", _TOPIC_PARTITIONS),
        ("partitionsPendingRevocation", _TOPIC_PARTITIONS), {}],
    # share groups (KIP-932)
    10: [("rackId", "string?"), ("clientId", "string"), ("clientHost", "string"),
         ("subscribedTopicNames", "[]string"), {}],
    11: [("epoch", "int32"), ("metadataHash", "int64"), {}],
    12: [("assignmentEpoch", "int32"), {0: ("assignmentTimestamp", "int64")}],
    13: [("topicPartitions", _SHARE_TOPICS), {}],
    14: [("memberEpoch", "int32"), ("previousMemberEpoch", "int32"), ("state", "int8"),
         ("assignedPartitions", _SHARE_TOPICS), {}],
    15: [("initializingTopics", _SHARE_INIT), ("initializedTopics", _SHARE_INIT),
         ("deletingTopics", [("topicId", "uuid"), ("topicName", "string"), {}]), {}],
    16: [("topics", "[]string"), ("version", "int64"), ("timestamp", "int64"), {}],
    # streams groups (KIP-1071)
    17: [("epoch", "int32"), ("metadataHash", "int64"), {
        0: ("validatedTopologyEpoch", "int32"),
        1: ("lastAssignmentConfigs", _KEY_VALUE),
        2: ("storedDescriptionTopologyEpoch", "int32"),
        3: ("failedDescriptionTopologyEpoch", "int32")}],
    19: [("instanceId", "string?"), ("rackId", "string?"), ("clientId", "string"),
         ("clientHost", "string"), ("rebalanceTimeoutMs", "int32"), ("topologyEpoch", "int32"),
         ("processId", "string"),
         ("userEndpoint", ("struct?int8", [("host", "string"), ("port", "uint16"), {}])),
         ("clientTags", _KEY_VALUE), {}],
    20: [("assignmentEpoch", "int32"), {0: ("assignmentTimestamp", "int64")}],
    21: [("activeTasks", _TASKS), ("standbyTasks", _TASKS), ("warmupTasks", _TASKS), {}],
    22: [("memberEpoch", "int32"), ("previousMemberEpoch", "int32"), ("state", "int8"),
         ("activeTasks", _TASKS_WITH_EPOCHS), ("standbyTasks", _TASKS_WITH_EPOCHS),
         ("warmupTasks", _TASKS_WITH_EPOCHS),
         ("activeTasksPendingRevocation", _TASKS_WITH_EPOCHS),
         ("standbyTasksPendingRevocation", _TASKS_WITH_EPOCHS),
         ("warmupTasksPendingRevocation", _TASKS_WITH_EPOCHS), {}],
    23: [("epoch", "int32"), ("subtopologies", [
        ("subtopologyId", "string"), ("sourceTopics", "[]string"),
        ("sourceTopicRegex", "[]string"), ("stateChangelogTopics", _TOPIC_INFO),
        ("repartitionSinkTopics", "[]string"), ("repartitionSourceTopics", _TOPIC_INFO),
        ("copartitionGroups", [("sourceTopics", "[]int16"), ("sourceTopicRegex", "[]int16"),
                               ("repartitionSourceTopics", "[]int16"), {}]), {}]), {}],
}  # fmt: skip


def read_key(key_type: int, r: SchemaReader) -> dict:
    return {name: r.string() for name, _ in KEYS[key_type]}


def read_value(key_type: int, r: SchemaReader) -> dict:
    """The value after its version, as a flexible struct."""
    r.flexible = True
    return _struct(r, VALUES[key_type])


def _struct(r: SchemaReader, fields: list) -> dict:
    out: dict[str, Any] = {}
    tagged: dict[int, tuple[str, Any]] = {}
    for field in fields:
        if isinstance(field, dict):
            tagged = field
            continue
        name, kind = field
        out[name] = _read(r, kind)
    for _ in range(r.uvarint()):
        tag, size = r.uvarint(), r.uvarint()
        end = r.pos + size
        if tag in tagged:
            name, kind = tagged[tag]
            out[name] = _read(r, kind)
        r.pos = end
    return out


def _read(r: SchemaReader, kind: Any) -> Any:
    if isinstance(kind, tuple):  # ("struct?", fields): a nullable struct (its int8 marker
        # -1 or 1; "struct?" reads a tagged one's as an unsigned varint: 0 or 1)
        present = r.int8() >= 0 if kind[0] == "struct?int8" else r.uvarint()
        return _struct(r, kind[1]) if present else None
    if isinstance(kind, list):
        return r.array(lambda: _struct(r, kind))
    if kind.startswith("[]"):
        element = kind[2:]
        return r.array(lambda: _read(r, element))
    if kind == "uuid":
        raw = bytes(r.data[r.pos : r.pos + 16])
        r.pos += 16
        return base64.urlsafe_b64encode(uuid.UUID(bytes=raw).bytes).rstrip(b"=").decode()
    if kind == "bytes":
        data = r.nullable_bytes()
        return None if data is None else base64.b64encode(data).decode()
    if kind == "string?":
        return r.nullable_string()
    if kind == "uint16":
        return r.int16() & 0xFFFF
    return getattr(r, kind)()
