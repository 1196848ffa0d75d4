"""RecordBatch v2, records, legacy messages and control records: literal bytes first."""

from __future__ import annotations

import struct
import zlib

import pytest
from crc32c import crc32c

from kt.errors import CorruptRecordError
from kt.storage import compression
from kt.storage.control_records import (
    ABORT,
    COMMIT,
    EndTransactionMarker,
    build_end_txn_marker_batch,
    control_type_name,
    parse_control_type,
)
from kt.storage.legacy_records import LegacyRecordBatch, build_legacy_batch, encode_message
from kt.storage.record_batch import (
    LOG_APPEND_TIME,
    Record,
    RecordBatch,
    build_batch,
    decode_batch,
    encode_record,
    read_zigzag_varint,
    zigzag_varint,
)
from kt.storage.records import batch_at, iter_batches, iter_records

T0 = 1_700_000_000_000  # 0x0000018BCFE56800

# One record, key b"k", value b"v", offset 0 at T0, leader epoch 0, no producer.
ONE_RECORD_BATCH = bytes.fromhex(
    "0000000000000000"  # baseOffset 0
    "0000003a"  # batchLength 58 = 70 - 12
    "00000000"  # partitionLeaderEpoch 0
    "02"  # magic 2
    "e99b8dd8"  # crc: CRC-32C of bytes 21..70
    "0000"  # attributes: no codec, CreateTime, not transactional, not control
    "00000000"  # lastOffsetDelta 0
    "0000018bcfe56800"  # baseTimestamp T0
    "0000018bcfe56800"  # maxTimestamp T0
    "ffffffffffffffff"  # producerId -1
    "ffff"  # producerEpoch -1
    "ffffffff"  # baseSequence -1
    "00000001"  # recordsCount 1
    # record: length 8 (zigzag 0x10), attributes 0, timestampDelta 0, offsetDelta 0,
    # key length 1 (zigzag 0x02) "k", value length 1 "v", 0 headers
    "10" "00" "00" "00" "026b" "0276" "00"
)  # fmt: skip


def test_v2_batch_literal_bytes() -> None:
    assert crc32c(ONE_RECORD_BATCH[21:]) == 0xE99B8DD8  # the CRC field is what the spec says
    built = build_batch([Record(0, T0, b"k", b"v")], partition_leader_epoch=0)
    assert built == ONE_RECORD_BATCH


def test_v2_batch_literal_decodes() -> None:
    header, records = decode_batch(ONE_RECORD_BATCH)
    assert (header.base_offset, header.last_offset, header.records_count) == (0, 0, 1)
    assert records == [Record(0, T0, b"k", b"v", [], -1)]


def test_record_literal_bytes_with_null_key_headers_and_negative_delta() -> None:
    encoded = encode_record(1, -1, None, b"", [("a", None), ("b", b"\x00")])
    assert encoded == bytes.fromhex(
        "1a"  # length 13
        "00"  # attributes
        "01"  # timestampDelta -1
        "02"  # offsetDelta 1
        "01"  # key length -1: null
        "00"  # value length 0: empty, not null
        "04"  # 2 headers
        "0261" "01"  # "a" -> null
        "0262" "0200"  # "b" -> b"\x00"
    )  # fmt: skip


@pytest.mark.parametrize(
    ("n", "encoded"),
    [
        (0, "00"),
        (-1, "01"),
        (1, "02"),
        (63, "7e"),
        (-64, "7f"),
        (64, "8001"),
        (300, "d804"),
        (2**31 - 1, "feffffff0f"),
        (-(2**31), "ffffffff0f"),
        (-(2**63), "ffffffffffffffffff01"),
    ],
)
def test_zigzag_varints(n: int, encoded: str) -> None:
    assert zigzag_varint(n).hex() == encoded
    assert read_zigzag_varint(bytes.fromhex(encoded) + b"\xaa", 0) == (n, len(encoded) // 2)


def test_every_header_field_round_trips() -> None:
    records = [
        Record(100, T0 + 5, b"k0", b"v0", [("trace", b"1")]),
        Record(103, T0, None, None, [("x", None), ("", b"")]),  # offset gap, earlier time
    ]
    batch = build_batch(
        records,
        base_offset=100,
        compression_type=compression.GZIP,
        producer_id=4242,
        producer_epoch=3,
        base_sequence=2**31 - 2,
        is_transactional=True,
        partition_leader_epoch=9,
    )
    view = RecordBatch(batch)
    assert view.is_valid()
    assert (view.base_offset, view.last_offset, view.count) == (100, 103, 2)
    assert (view.producer_id, view.producer_epoch, view.base_sequence) == (4242, 3, 2**31 - 2)
    assert view.last_sequence == 1  # 2^31-2 + 3 wraps past int32 max to 1
    assert (view.partition_leader_epoch, view.is_transactional, view.is_control) == (9, True, False)
    assert (view.compression_type, view.max_timestamp, view.delete_horizon_ms) == (1, T0 + 5, None)
    assert view.records() == [
        Record(100, T0 + 5, b"k0", b"v0", [("trace", b"1")], 2**31 - 2),
        Record(103, T0, None, None, [("x", None), ("", b"")], 1),
    ]


def test_log_append_time_gives_every_record_max_timestamp() -> None:
    batch = build_batch(
        [Record(None, T0, b"a", b"1"), Record(None, T0 + 1, b"b", b"2")],
        timestamp_type=LOG_APPEND_TIME,
    )
    view = RecordBatch(batch)
    assert view.timestamp_type == LOG_APPEND_TIME
    assert [r.timestamp for r in view.records()] == [T0 + 1, T0 + 1]


def test_delete_horizon_is_held_in_base_timestamp() -> None:
    batch = build_batch([Record(0, T0, b"k", None)], delete_horizon_ms=T0 + 86_400_000)
    view = RecordBatch(batch)
    assert view.delete_horizon_ms == T0 + 86_400_000
    assert struct.unpack_from(">q", batch, 27)[0] == T0 + 86_400_000  # baseTimestamp
    assert view.records()[0].timestamp == T0  # the delta is relative to the horizon


def test_control_record_literal_bytes() -> None:
    marker = EndTransactionMarker(COMMIT, coordinator_epoch=7)
    assert marker.key() == b"\x00\x00\x00\x01"  # version 0, type 1 (COMMIT)
    assert marker.value() == b"\x00\x00\x00\x00\x00\x07"  # version 0, coordinatorEpoch 7
    assert EndTransactionMarker(ABORT, 0).key() == b"\x00\x00\x00\x00"


def test_end_txn_marker_batch() -> None:
    batch = build_end_txn_marker_batch(
        EndTransactionMarker(ABORT, 3), producer_id=77, producer_epoch=2, timestamp=T0,
        base_offset=15,
    )  # fmt: skip
    view = RecordBatch(batch)
    assert view.is_control and view.is_transactional and view.is_valid()
    assert (view.producer_id, view.producer_epoch, view.base_offset) == (77, 2, 15)
    [record] = view.records()
    assert EndTransactionMarker.from_record(record) == EndTransactionMarker(ABORT, 3)
    assert control_type_name(parse_control_type(record.key)) == "ABORT"
    assert control_type_name(parse_control_type(b"\x00\x01\x00\x05")) == "KRAFT_VERSION"
    assert control_type_name(parse_control_type(b"\x00\x00\x00\x63")) == "UNKNOWN"
    with pytest.raises(CorruptRecordError):
        parse_control_type(b"\x00\x00\x00")


def test_empty_batch() -> None:
    view = RecordBatch(build_batch([], base_offset=8))
    assert (view.count, view.last_offset, view.max_timestamp, view.records()) == (0, 8, -1, [])


# --- legacy message sets -----------------------------------------------------------------


def test_legacy_v1_message_literal_bytes() -> None:
    expected = bytes.fromhex(
        "0000000000000005"  # offset 5
        "00000018"  # size 24
        "dba4e6e2"  # CRC-32 (IEEE) of magic..end
        "01"  # magic 1
        "00"  # attributes: no codec, CreateTime
        "0000018bcfe56800"  # timestamp T0
        "ffffffff"  # key: null
        "00000002" "6869"  # value b"hi"
    )  # fmt: skip
    assert zlib.crc32(expected[16:]) == 0xDBA4E6E2
    assert encode_message(5, 1, 0, T0, None, b"hi") == expected
    batch = LegacyRecordBatch(expected)
    assert (batch.magic, batch.last_offset, batch.max_timestamp, batch.is_valid()) == (
        1, 5, T0, True,
    )  # fmt: skip
    [record] = batch.records()
    assert (record.offset, record.timestamp, record.key, record.value) == (5, T0, None, b"hi")


def test_legacy_v0_message_literal_bytes() -> None:
    expected = bytes.fromhex(
        "0000000000000005" "00000011" "d0a1b23e" "00" "00"
        "00000001" "6b" "00000002" "6869"
    )  # fmt: skip
    assert zlib.crc32(expected[16:]) == 0xD0A1B23E
    assert encode_message(5, 0, 0, -1, b"k", b"hi") == expected
    batch = LegacyRecordBatch(expected)
    assert (batch.timestamp_type, batch.max_timestamp) == (-1, -1)


@pytest.mark.parametrize("codec", [0, 1, 2, 3])
@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_wrappers_offsets(magic: int, codec: int) -> None:
    records = [Record(None, T0 + i, b"k%d" % i, b"v%d" % i) for i in range(4)]
    data = build_legacy_batch(records, magic=magic, compression_type=codec, base_offset=20)
    batches = list(iter_batches(data))
    assert len(batches) == (4 if codec == 0 else 1)
    assert batches[-1].last_offset == 23
    got = [r for b in batches for r in b.records()]
    assert [r.offset for r in got] == [20, 21, 22, 23]
    assert [r.timestamp for r in got] == ([-1] * 4 if magic == 0 else [T0 + i for i in range(4)])
    assert all(r.is_valid for r in got)
    if codec:
        inner_offsets = _inner_offsets(batches[0], codec, magic)
        assert inner_offsets == ([20, 21, 22, 23] if magic == 0 else [0, 1, 2, 3])


def _inner_offsets(batch: LegacyRecordBatch, codec: int, magic: int) -> list[int]:
    value = batch._outer.value
    inner = compression.decompress(codec, value, magic)
    return [b.last_offset for b in iter_batches(inner)]


def test_legacy_log_append_time_wrapper_stamps_inner_records() -> None:
    records = [Record(None, T0 + i, None, b"x") for i in range(3)]
    data = build_legacy_batch(
        records, magic=1, compression_type=compression.GZIP, timestamp_type=LOG_APPEND_TIME,
        log_append_time=T0 + 999,
    )  # fmt: skip
    [batch] = iter_batches(data)
    assert batch.timestamp_type == LOG_APPEND_TIME
    assert [r.timestamp for r in batch.records()] == [T0 + 999] * 3


def test_iter_batches_mixes_magics_and_stops_before_a_partial_batch() -> None:
    legacy = build_legacy_batch([Record(None, T0, None, b"old")], magic=1)
    v2 = build_batch([Record(1, T0, None, b"new")], base_offset=1)
    data = legacy + v2 + v2[:30]
    batches = list(iter_batches(data))
    assert [b.magic for b in batches] == [1, 2]
    assert [r.value for r in iter_records(data)] == [b"old", b"new"]


# --- corrupt input: CorruptRecordError and nothing else ----------------------------------


def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes((data[at] ^ 0x40,)) + data[at + 1 :]


def test_bad_crc_is_detected() -> None:
    bad = _flip(ONE_RECORD_BATCH, 65)
    assert not RecordBatch(bad).is_valid()
    with pytest.raises(CorruptRecordError):
        decode_batch(bad)
    legacy = _flip(encode_message(0, 1, 0, T0, None, b"hello"), 36)  # inside the value
    assert not LegacyRecordBatch(legacy).is_valid()
    with pytest.raises(CorruptRecordError):
        list(iter_records(legacy))


@pytest.mark.parametrize("cut", [0, 10, 17, 60, 61, 69])
def test_truncated_batch(cut: int) -> None:
    with pytest.raises(CorruptRecordError):
        decode_batch(ONE_RECORD_BATCH[:cut])
    with pytest.raises(CorruptRecordError):
        batch_at(ONE_RECORD_BATCH[:cut]).records()


def test_garbage_size_raises_corrupt() -> None:
    with pytest.raises(CorruptRecordError):
        list(iter_batches(b"\x00" * 8 + b"\x00\x00\x00\x05" + b"\x00" * 20))
    with pytest.raises(CorruptRecordError):
        list(iter_batches(b"\x00" * 8 + b"\x00\x00\x00\x20" + b"\x00\x00\x00\x00\x07" + b"\0" * 40))


def _fuzz_decode(data: bytes) -> None:
    try:
        for batch in iter_batches(data):
            batch.records()
    except CorruptRecordError:
        pass


def test_every_single_byte_corruption_raises_only_corrupt_record_error() -> None:
    records = [Record(None, T0 + i, b"key", b"value" * i, [("h", b"v")]) for i in range(3)]
    samples = [build_batch(records, compression_type=c) for c in range(5)]
    samples += [build_legacy_batch(records, magic=m, compression_type=c)
                for m in (0, 1) for c in range(4)]  # fmt: skip
    for sample in samples:
        for at in range(len(sample)):
            for mask in (0x01, 0x80, 0xFF):
                data = sample[:at] + bytes((sample[at] ^ mask,)) + sample[at + 1 :]
                _fuzz_decode(data)  # anything but CorruptRecordError fails the test
        for cut in range(len(sample)):
            _fuzz_decode(sample[:cut])
