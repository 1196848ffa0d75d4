"""Kafka 4's consumer, share and streams group records of `__consumer_offsets` as
DumpLogSegments prints them (CoordinatorRecordJsonConverters): the key's fields and the
value's, in the schema's order and under its camelCase names, tagged fields only where
they hold other than their default, topic ids as Kafka's Uuid.toString (URL-safe base64).

The consumer and share groups' schemas are the group-coordinator message files' (Kafka
4.4), as field lists: (name, type) with types int8 int32 int64 string string? uuid bytes,
`[]` + a type, a nested field list for a struct array, ("struct?", fields) for a nullable
struct, and a trailing tagged-fields map {tag: (name, type)}. The streams groups' records
are decoded with their own schema tables (kt.broker.group.streams_group_records) and
printed from them (`schema_json`).
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
}  # fmt: skip


def read_key(key_type: int, r: SchemaReader) -> dict:
    return {name: r.string() for name, _ in KEYS[key_type]}


def has_value(key_type: int) -> bool:
    """Whether values of this record type are known here."""
    from kt.broker.group import streams_group_records as sr

    return key_type in VALUES or key_type in sr.VALUE_CLASSES


def read_value(key_type: int, r: SchemaReader) -> dict:
    """The value after its version, as a flexible struct."""
    from kt.broker.group import streams_group_records as sr
    from kt.protocol.codec import decode_body

    if key_type in sr.VALUE_CLASSES:
        cls = sr.VALUE_CLASSES[key_type]
        value, _ = decode_body(cls, 0, memoryview(bytes(r.data)), r.pos)
        return schema_json(value, cls.SCHEMA.fields, cls.SCHEMA.structs)
    r.flexible = True
    return _struct(r, VALUES[key_type])


def schema_json(value: Any, fields: Any, structs: dict) -> dict:
    """A message of kt's schema tables as Kafka's generated JSON converter writes it:
    camelCase names in the schema's order, tagged fields only where they differ from
    their defaults."""
    out: dict[str, Any] = {}
    for f in fields:
        v = getattr(value, f.name)
        if f.tag is not None and v == ([] if f.is_array and f.default is not None else f.default):
            continue
        name = f.kafka_name[0].lower() + f.kafka_name[1:]
        if v is None or not f.is_struct:
            out[name] = list(v) if f.is_array and v is not None else v
        elif f.is_array:
            out[name] = [schema_json(x, structs[f.element_type], structs) for x in v]
        else:
            out[name] = schema_json(v, structs[f.type], structs)
    return out


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
    if isinstance(kind, tuple):  # ("struct?", fields): a nullable struct
        return _struct(r, kind[1]) if r.uvarint() else None
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
    return getattr(r, kind)()
