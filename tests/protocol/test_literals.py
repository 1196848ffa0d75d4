"""The tricky layouts, as literal bytes (Kafka's protocol guide and message schemas)."""

from __future__ import annotations

import pytest

from kt.errors import ProtocolError
from kt.protocol import (
    RequestHeader,
    UnsupportedVersion,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    encode_response_parts,
    unsupported_version_response,
)
from kt.protocol import messages as m
from kt.protocol.codec import decode_body, encode_body
from kt.protocol.types import read_compact_string, write_compact_string


def body_bytes(message, version: int) -> bytes:
    out: list = []
    encode_body(message, version, out)
    return b"".join(out)


# ------------------------------------------------------------------ ApiVersions

FLEXIBLE_API_VERSIONS_REQUEST = bytes.fromhex(
    "00000013"  # size 19
    "0012" "0003" "00000001"  # api_key 18, version 3, correlation id 1
    "0002" "6b74"  # client_id "kt": int16 length even in header v2
    "00"  # header tagged fields: none
    "03" "6b74"  # client_software_name "kt": compact, length + 1
    "02" "31"  # client_software_version "1"
    "00"  # body tagged fields: none
)  # fmt: skip


def test_flexible_api_versions_request():
    body = m.ApiVersionsRequest(client_software_name="kt", client_software_version="1")
    assert encode_request(18, 3, 1, "kt", body) == FLEXIBLE_API_VERSIONS_REQUEST
    header, decoded = decode_request(FLEXIBLE_API_VERSIONS_REQUEST[4:])
    assert header == RequestHeader(18, 3, 1, "kt")
    assert decoded == body


def test_api_versions_v3_response_uses_header_v0():
    header = RequestHeader(18, 3, 7, "kt")
    body = m.ApiVersionsResponse(
        error_code=0,
        api_keys=[m.ApiVersionsResponse.ApiVersion(api_key=18, min_version=0, max_version=4)],
        throttle_time_ms=0,
    )
    assert encode_response(header, body) == bytes.fromhex(
        "00000013"
        "00000007"  # response header v0: correlation id, no tagged-field byte
        "0000"  # error_code
        "02" "0012" "0000" "0004" "00"  # api_keys: compact count 1 + 1, one entry
        "00000000"  # throttle_time_ms
        "00"  # body tagged fields
    )  # fmt: skip
    # Metadata v9, flexible too, does get response header v1 (the tagged-field byte).
    metadata = encode_response(RequestHeader(3, 9, 7, "kt"), m.MetadataResponse())
    assert metadata[4:9] == bytes.fromhex("0000000700")


def test_api_versions_above_kt_max_gets_kafkas_v0_answer():
    frame = bytes.fromhex("0012" "0005" "0000002a" "0002" "6b74" "00" "ffff")  # fmt: skip
    with pytest.raises(UnsupportedVersion) as e:
        decode_request(frame)
    assert e.value.header == RequestHeader(18, 5, 42, "kt")
    assert unsupported_version_response(e.value.header) == bytes.fromhex(
        "00000010"
        "0000002a"  # header v0
        "0023"  # UNSUPPORTED_VERSION
        "00000001" "0012" "0000" "0004"  # v0 array: the ApiVersions range only
    )  # fmt: skip
    # kt's client, having asked v3, reads that answer in the v0 layout.
    correlation_id, body = decode_response(18, 3, unsupported_version_response(e.value.header)[4:])
    assert (correlation_id, body.error_code) == (42, 35)
    assert [(k.api_key, k.min_version, k.max_version) for k in body.api_keys] == [(18, 0, 4)]


def test_other_apis_above_kt_max_close_the_connection_as_kafka_does():
    frame = encode_request(20, 6, 5, "c", m.DeleteTopicsRequest())[4:]  # v6 names topics by id
    with pytest.raises(UnsupportedVersion) as e:
        decode_request(frame)
    assert e.value.header == RequestHeader(20, 6, 5, "c")
    with pytest.raises(ProtocolError):
        unsupported_version_response(e.value.header)


# ------------------------------------------------------------------ compact strings


def test_compact_nullable_string_null_vs_empty():
    assert write_compact_string(None) == b"\x00"
    assert write_compact_string("") == b"\x01"
    assert write_compact_string("ab") == b"\x03ab"
    assert read_compact_string(memoryview(b"\x00"), 0, True) == (None, 1)
    assert read_compact_string(memoryview(b"\x01"), 0, True) == ("", 1)
    with pytest.raises(ProtocolError):
        read_compact_string(memoryview(b"\x00"), 0, False)
    # FindCoordinator v3: throttle, error_code, error_message (compact nullable), ...
    null = m.FindCoordinatorResponse(error_message=None, node_id=1, host="h", port=9092)
    empty = m.FindCoordinatorResponse(error_message="", node_id=1, host="h", port=9092)
    # throttle, error_code, error_message, node_id 1, host "h", port 9092, tagged fields
    assert body_bytes(null, 3).hex() == "000000000000000000000102680000238400"
    assert body_bytes(empty, 3).hex() == "000000000000010000000102680000238400"
    assert decode_body(m.FindCoordinatorResponse, 3, memoryview(body_bytes(null, 3)), 0)[0] == null
    assert (
        decode_body(m.FindCoordinatorResponse, 3, memoryview(body_bytes(empty, 3)), 0)[0] == empty
    )


# ------------------------------------------------------------------ tagged fields

# FetchRequest v12 up to its tagged fields, defaults: replica_id -1, max_wait 0,
# min_bytes 0, max_bytes 0x7fffffff, isolation 0, session id 0, epoch -1, topics [], forgotten [],
# rack_id "".
FETCH_V12 = bytes.fromhex(
    "ffffffff" "00000000" "00000000" "7fffffff" "00" "00000000" "ffffffff" "01" "01" "01"
)  # fmt: skip


def test_tagged_field_absent_and_present():
    absent = m.FetchRequest(session_epoch=-1)
    assert body_bytes(absent, 12) == FETCH_V12 + b"\x00"  # no tagged fields
    present = m.FetchRequest(session_epoch=-1, cluster_id="c")
    # one tagged field: tag 0 (ClusterId), size 2, compact string "c"
    assert body_bytes(present, 12) == FETCH_V12 + bytes.fromhex("01" "00" "02" "0263")  # fmt: skip
    for message in (absent, present):
        data = body_bytes(message, 12)
        assert decode_body(m.FetchRequest, 12, memoryview(data), 0) == (message, len(data))


def test_unknown_tagged_fields_are_skipped():
    data = FETCH_V12 + bytes.fromhex("02" "00" "02" "0263" "07" "03" "aabbcc")  # fmt: skip
    decoded, end = decode_body(m.FetchRequest, 12, memoryview(data), 0)
    assert decoded.cluster_id == "c" and end == len(data)


# ------------------------------------------------------------------ Produce and records

PRODUCE_V3 = bytes.fromhex(
    "0000002b"
    "0000" "0003" "00000009" "0001" "63"  # Produce v3, correlation 9, client "c"
    "ffff"  # transactional_id null
    "ffff" "00007530"  # acks -1, timeout 30000
    "00000001" "0001" "74"  # one topic "t"
    "00000001" "00000002"  # one partition, index 2
    "00000005" "4241544348"  # records: int32 length, the batch bytes untouched
)  # fmt: skip


def test_produce_with_a_records_blob():
    partition = m.ProduceRequest.PartitionProduceData(index=2, records=b"BATCH")
    topic = m.ProduceRequest.TopicProduceData(name="t", partition_data=[partition])
    body = m.ProduceRequest(acks=-1, timeout_ms=30000, topic_data=[topic])
    assert encode_request(0, 3, 9, "c", body) == PRODUCE_V3
    frame = PRODUCE_V3[4:]
    header, decoded = decode_request(frame)
    assert decoded == body
    records = decoded.topic_data[0].partition_data[0].records
    assert isinstance(records, memoryview) and records.obj is frame  # zero copy
    # Flexible (v9): compact length 5 + 1
    assert body_bytes(body, 9).hex().endswith("064241544348000000")


class FileSlice:
    """Stands for the network layer's (file, position, size) slice: only len() is used."""

    def __init__(self, size: int) -> None:
        self.size = size

    def __len__(self) -> int:
        return self.size


def test_response_parts_keep_file_slices_for_sendfile():
    part = m.FetchResponse.PartitionData(
        partition_index=0, high_watermark=10, records=FileSlice(1000)
    )
    topic = m.FetchResponse.FetchableTopicResponse(topic="t", partitions=[part])
    header = RequestHeader(1, 12, 3, "c")
    parts = encode_response_parts(header, m.FetchResponse(responses=[topic]))
    assert [type(p) for p in parts] == [bytes, FileSlice, bytes]
    size = int.from_bytes(parts[0][:4], "big")
    assert size == sum(len(p) for p in parts) - 4
    assert parts[0].endswith(bytes.fromhex("e907"))  # compact length 1000 + 1, then the slice
    assert parts[2] == bytes.fromhex("000000")  # tagged fields: partition, topic, body
    with_bytes = m.FetchResponse.PartitionData(
        partition_index=0, high_watermark=10, records=b"x" * 1000
    )
    topic.partitions = [with_bytes]
    whole = encode_response(header, m.FetchResponse(responses=[topic]))
    assert whole == parts[0] + b"x" * 1000 + parts[2]
    assert encode_response_parts(header, m.FetchResponse(responses=[topic])) == [whole]
