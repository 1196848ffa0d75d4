"""Record parsers for `kt dump-log`: how a record's key and value are shown.

Each parser maps a record to (key text or None, payload text or None), as
DumpLogSegments' MessageParser does. Decoders for plain topics: `string` (UTF-8, the
default, like Kafka's StringDecoder), `hex`, `json` (re-serialised compactly, or the
UTF-8 text when it is not JSON).

`--offsets-decoder` reads `__consumer_offsets` records (group-coordinator schemas):
  key   => version int16: 0/1 OffsetCommitKey (group, topic, partition int32),
           2 GroupMetadataKey (group); 3-8 and 16 the consumer groups' records of Kafka
           4's protocol (consumer_group_records_json.py)
  value => version int16 then OffsetCommitValue v0-4 (offset int64, leaderEpoch int32 v3+,
           metadata, commitTimestamp int64, expireTimestamp int64 v1 only), or
           GroupMetadataValue v0-4 (protocolType, generation int32, protocol?, leader?,
           currentStateTimestamp int64 v2+, members [memberId, groupInstanceId? v3+,
           clientId, clientHost, rebalanceTimeout int32 v1+, sessionTimeout int32,
           subscription bytes, assignment bytes]); v4 is flexible (compact lengths, tags).
  Output is Kafka's JSON: {"type":"<key version>","data":{...}} and
  {"version":"<value version>","data":{...}}, bytes as base64; consumer-protocol
  subscriptions and assignments are decoded; a null value prints <DELETE>.

`--transaction-log-decoder` reads `__transaction_state` (Kafka 3.9's text form):
  key   => version int16 (0), transactionalId
  value => version int16 (0, 1 flexible), producerId int64, producerEpoch int16,
           transactionTimeoutMs int32, transactionStatus int8, partitions? [topic,
           partitionIds [int32]], lastUpdateTimestamp int64, startTimestamp int64
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Callable

from kt.errors import ProtocolError
from kt.protocol.schema_reader import SchemaReader
from kt.storage.record_batch import Record
from kt.tools import consumer_group_records_json as consumer_groups

Parsed = tuple[str | None, str | None]


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def _json(obj: object) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


# --- plain decoders ------------------------------------------------------------------


def _decode_json(data: bytes) -> str:
    text = data.decode(errors="replace")
    try:
        return _json(json.loads(text))
    except ValueError:
        return text


DECODERS: dict[str, Callable[[bytes], str]] = {
    "string": lambda data: data.decode(errors="replace"),
    "hex": bytes.hex,
    "json": _decode_json,
}


def decoder_parser(key_decoder: str = "string", value_decoder: str = "string"):
    """A parser that shows the key and value with the named decoders."""
    decode_key, decode_value = DECODERS[key_decoder], DECODERS[value_decoder]

    def parse(record: Record) -> Parsed:
        key = None if record.key is None else decode_key(record.key)
        value = None if record.value is None else decode_value(record.value)
        return key, value

    return parse


# --- __consumer_offsets ----------------------------------------------------------------


def _partitions(r: SchemaReader) -> dict:
    topic = r.string()
    partitions = r.array(r.int32)
    r.tagged_fields()
    return {"topic": topic, "partitions": partitions}


def consumer_subscription_json(data: bytes) -> dict:
    """ConsumerProtocolSubscription v0-3 (version-prefixed), as Kafka's JSON converter."""
    r = SchemaReader(data)
    version = r.int16()
    out: dict = {"topics": r.array(r.string), "userData": _b64(r.nullable_bytes())}
    if version >= 1:
        out["ownedPartitions"] = r.array(lambda: _partitions(r))
    if version >= 2:
        out["generationId"] = r.int32()
    if version >= 3:
        out["rackId"] = r.nullable_string()
    return out


def consumer_assignment_json(data: bytes) -> dict:
    """ConsumerProtocolAssignment v0-3 (version-prefixed)."""
    r = SchemaReader(data)
    r.int16()
    return {"assignedPartitions": r.array(lambda: _partitions(r)),
            "userData": _b64(r.nullable_bytes())}  # fmt: skip


def _offset_commit_value(r: SchemaReader, version: int) -> dict:
    out: dict = {"offset": r.int64()}
    if version >= 3:
        out["leaderEpoch"] = r.int32()
    out["metadata"] = r.string()
    out["commitTimestamp"] = r.int64()
    if version == 1:
        out["expireTimestamp"] = r.int64()
    r.tagged_fields()
    return out


def _member(r: SchemaReader, version: int, consumer: bool) -> dict:
    out: dict = {"memberId": r.string()}
    if version >= 3:
        out["groupInstanceId"] = r.nullable_string()
    out["clientId"] = r.string()
    out["clientHost"] = r.string()
    if version >= 1:
        out["rebalanceTimeout"] = r.int32()
    out["sessionTimeout"] = r.int32()
    for field, decode in (("subscription", consumer_subscription_json),
                          ("assignment", consumer_assignment_json)):  # fmt: skip
        data = r.bytes_()
        out[field] = _b64(data)
        if consumer:
            try:
                out[field] = decode(data)
            except (ValueError, IndexError, struct.error):
                pass  # as Kafka: keep the original bytes
    r.tagged_fields()
    return out


def _group_metadata_value(r: SchemaReader, version: int) -> dict:
    out: dict = {"protocolType": r.string(), "generation": r.int32(),
                 "protocol": r.nullable_string(), "leader": r.nullable_string()}  # fmt: skip
    if version >= 2:
        out["currentStateTimestamp"] = r.int64()
    consumer = out["protocolType"] == "consumer"
    out["members"] = r.array(lambda: _member(r, version, consumer))
    r.tagged_fields()
    return out


def _offsets_key(data: bytes) -> tuple[int, dict]:
    r = SchemaReader(data)
    key_type = r.int16()
    if key_type in (0, 1):
        return key_type, {"group": r.string(), "topic": r.string(), "partition": r.int32()}
    if key_type == 2:
        return key_type, {"group": r.string()}
    if key_type in consumer_groups.KEYS:
        return key_type, consumer_groups.read_key(key_type, r)
    raise _UnknownRecordType(key_type)


class _UnknownRecordType(Exception):
    """A `__consumer_offsets` key version kt does not know (newer group protocols)."""


def offsets_parser(record: Record) -> Parsed:
    """`__consumer_offsets` records as DumpLogSegments' OffsetsMessageParser shows them."""
    if record.key is None:
        return (f"Failed to decode message at offset {record.offset} using offset topic "
                "decoder (message had a missing key)", None)  # fmt: skip
    try:
        key_type, key = _offsets_key(record.key)
        key_text = _json({"type": str(key_type), "data": key})
        if record.value is None:
            return key_text, "<DELETE>"
        r = SchemaReader(record.value)
        version = r.int16()
        if consumer_groups.has_value(key_type):
            if version != 0:
                raise ValueError(f"Unknown value version {version}")
            value = consumer_groups.read_value(key_type, r)
            return key_text, _json({"version": str(version), "data": value})
        if not 0 <= version <= 4:
            raise ValueError(f"Unknown value version {version}")
        r.flexible = version >= 4
        value = (_offset_commit_value if key_type < 2 else _group_metadata_value)(r, version)
        return key_text, _json({"version": str(version), "data": value})
    except _UnknownRecordType as e:
        return f"Unknown record type {e.args[0]} at offset {record.offset}, skipping.", None
    except (ValueError, IndexError, struct.error, ProtocolError) as e:
        return f"Error at offset {record.offset}, skipping. {e}", None


# --- __transaction_state -----------------------------------------------------------------

TRANSACTION_STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit",
                      "CompleteAbort", "Dead", "PrepareEpochFence")  # fmt: skip


def _txn_value_text(data: bytes) -> str:
    r = SchemaReader(data)
    version = r.int16()
    if version not in (0, 1):
        raise ValueError(f"Unknown version {version} from the transaction log message value")
    r.flexible = version == 1
    producer_id, epoch, timeout, status = r.int64(), r.int16(), r.int32(), r.int8()

    def partitions() -> list[str]:
        topic = r.string()
        ids = r.array(r.int32) or []
        r.tagged_fields()
        return [f"{topic}-{p}" for p in ids]

    groups = r.array(partitions) or []
    last_update = r.int64()
    r.int64()  # start timestamp: not shown
    state = TRANSACTION_STATES[status] if 0 <= status < len(TRANSACTION_STATES) else status
    listed = [] if state == "Empty" else [tp for group in groups for tp in group]
    return (f"producerId:{producer_id},producerEpoch:{epoch},state={state},"
            f"partitions=[{','.join(listed)}],txnLastUpdateTimestamp={last_update},"
            f"txnTimeoutMs={timeout}")  # fmt: skip


def transaction_log_parser(record: Record) -> Parsed:
    """`__transaction_state` records in the text form of Kafka 3.9's TransactionLog."""
    try:
        r = SchemaReader(record.key or b"")
        version = r.int16()
        if version != 0:
            return f"unknown::version={version}", None
        key = f"transaction_metadata::transactionalId={r.string()}"
        value = "<DELETE>" if record.value is None else _txn_value_text(record.value)
        return key, value
    except (ValueError, IndexError, struct.error, ProtocolError) as e:
        return f"Error at offset {record.offset}, skipping. {e}", None
