"""`__consumer_offsets` keys and values as Kafka writes them, and the group -> partition
hash (Utils.abs(String.hashCode()) % partitions)."""

from __future__ import annotations

import json

from kt.broker.group import offsets_records as rec
from kt.broker.group.group_metadata_manager import partition_for
from kt.broker.group.java_collections import java_string_hash
from kt.storage.record_batch import Record
from kt.tools.dump_log_parsers import offsets_parser


def test_offset_commit_key_v1():
    assert rec.offset_commit_key("g", "t", 3) == (b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x03")
    assert rec.read_key(rec.offset_commit_key("g", "t", 3)) == rec.OffsetKey("g", "t", 3)


def test_group_metadata_key_v2():
    assert rec.group_metadata_key("grp") == b"\x00\x02\x00\x03grp"
    assert rec.read_key(b"\x00\x02\x00\x03grp") == rec.GroupMetadataKey("grp")


def test_offset_commit_value_v3_and_v1_with_expiry():
    v3 = rec.offset_commit_value(rec.OffsetAndMetadata(42, 5, "m", 1000))
    assert v3 == (
        b"\x00\x03"
        b"\x00\x00\x00\x00\x00\x00\x00\x2a"
        b"\x00\x00\x00\x05"
        b"\x00\x01m"
        b"\x00\x00\x00\x00\x00\x00\x03\xe8"
    )
    v1 = rec.offset_commit_value(rec.OffsetAndMetadata(42, -1, "", 1000, 2000))
    assert v1 == (
        b"\x00\x01"
        b"\x00\x00\x00\x00\x00\x00\x00\x2a"
        b"\x00\x00"
        b"\x00\x00\x00\x00\x00\x00\x03\xe8"
        b"\x00\x00\x00\x00\x00\x00\x07\xd0"
    )
    assert rec.read_offset_value(v3) == rec.OffsetAndMetadata(42, 5, "m", 1000, None)
    assert rec.read_offset_value(v1) == rec.OffsetAndMetadata(42, -1, "", 1000, 2000)


def test_group_metadata_value_v3_round_trip_and_dump_log_reads_it():
    member = rec.MemberRecord("c-1", "i-1", "c", "/127.0.0.1", 300000, 10000,
                              b"\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff",
                              b"\x00\x00\x00\x00\x00\x01\x00\x01t\x00\x00\x00\x01"
                              b"\x00\x00\x00\x00\xff\xff\xff\xff")  # fmt: skip
    value = rec.GroupMetadataValue("consumer", 7, "range", "c-1", 123, [member])
    data = rec.group_metadata_value(value)
    assert data[:2] == b"\x00\x03"
    assert rec.read_group_value(data) == value
    key = rec.group_metadata_key("g")
    key_text, value_text = offsets_parser(Record(0, 0, key, data))
    assert json.loads(key_text) == {"type": "2", "data": {"group": "g"}}
    shown = json.loads(value_text)
    assert shown["version"] == "3" and shown["data"]["generation"] == 7
    assert shown["data"]["members"][0]["assignment"]["assignedPartitions"] == [
        {"topic": "t", "partitions": [0]}
    ]
    assert offsets_parser(Record(1, 0, key, None))[1] == "<DELETE>"


def test_java_string_hash_and_partition():
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    # U+1F600 is the UTF-16 pair D83D DE00: 31 * 0xD83D + 0xDE00.
    assert java_string_hash("\U0001f600") == 31 * 0xD83D + 0xDE00 == 1772899
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE: Utils.abs maps it to 0.
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert partition_for("polygenelubricants", 50) == 0
    assert partition_for("my-group", 50) == abs(java_string_hash("my-group")) % 50
