"""The column decoder against kt.storage's record-by-record decoder, and on broken batches.

kt.spark.columns reads v2 records a column at a time (kt.spark.record_arrays); its
oracle is RecordBatch.records(), which decodes one Record at a time. Every field of
every row must agree, for every codec, null keys, values and header values, varints of
every width, LogAppendTime batches, ranges that cut batches, and legacy batches mixed in.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kt.errors import CorruptRecordError
from kt.spark.columns import ColumnBuilder  # the spark extra: without it this fails, not skips
from kt.spark.schema import arrow_schema
from kt.storage import compression
from kt.storage.batch_header import HEADER_SIZE
from kt.storage.legacy_records import build_legacy_batch
from kt.storage.record_batch import LOG_APPEND_TIME, Record, build_batch, zigzag_varint
from kt.storage.records import Batch, batch_at

SCHEMA = arrow_schema(include_headers=True)
TS = 1_700_000_000_000
CODECS = (compression.NONE, compression.GZIP, compression.SNAPPY, compression.LZ4, compression.ZSTD)

payloads = st.one_of(st.none(), st.binary(max_size=40), st.binary(min_size=100, max_size=300))
header_lists = st.lists(
    st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=20))), max_size=4
)
# Timestamps as deltas from the batch's first: varints of one to six bytes, both signs.
timestamp_steps = st.one_of(
    st.sampled_from([0, 1, -1, 63, -64, 64, 8191, 8192, -(10**9), 10**10, 2**40]),
    st.integers(-(10**12), 10**12),
)
record_lists = st.lists(
    st.tuples(payloads, payloads, header_lists, timestamp_steps),
    min_size=1,
    max_size=30,
)


def expected_rows(batch: Batch, start: int, end: int) -> list[dict]:
    kind = LOG_APPEND_TIME if batch.magic == 2 and batch.header.is_log_append_time else None
    kind = batch.timestamp_type if kind is None else kind
    return [
        {
            "key": r.key,
            "value": r.value,
            "topic": "t",
            "partition": 3,
            "offset": r.offset,
            "timestamp": r.timestamp * 1000,
            "timestampType": kind,
            "headers": [{"key": k, "value": v} for k, v in r.headers] or None,
        }  # fmt: skip
        for r in batch.records()
        if start <= r.offset < end
    ]


def decoded_rows(builder: ColumnBuilder) -> list[dict]:
    rows = []
    for batch in builder.flush():
        assert batch.schema.equals(SCHEMA)
        for row in batch.to_pylist():
            stamp = row["timestamp"]
            row["timestamp"] = round(stamp.timestamp() * 1_000_000) if stamp is not None else None
            rows.append(row)
    return rows


def make_batch(records: list[tuple], base: int, codec: int, log_append: bool) -> Batch:
    built = [Record(None, TS + ts, key, value, headers) for key, value, headers, ts in records]
    kind = LOG_APPEND_TIME if log_append else 0
    return batch_at(build_batch(built, base_offset=base, compression_type=codec,
                                timestamp_type=kind))  # fmt: skip


@settings(max_examples=100, deadline=None)
@given(
    batches=st.lists(
        st.tuples(record_lists, st.sampled_from(CODECS), st.booleans()), min_size=1, max_size=5
    ),  # fmt: skip
    cut=st.tuples(st.integers(0, 40), st.integers(0, 40)),
)
def test_rows_equal_the_record_by_record_decoder(batches, cut):
    built, base = [], 1000
    for records, codec, log_append in batches:
        built.append(make_batch(records, base, codec, log_append))
        base += len(records)
    start, end = 1000 + cut[0], base - cut[1]
    builder = ColumnBuilder("t", 3, start, end, SCHEMA)
    for batch in built:
        builder.add(batch)
    expected = [row for batch in built for row in expected_rows(batch, start, end)]
    assert decoded_rows(builder) == expected
    assert builder.flush() == []  # a flush takes everything


def test_records_of_several_kilobytes_have_long_length_varints():
    big = [(b"k" * 20_000, b"v" * 70_000, [("h", b"x" * 9000)], 0), (None, b"", [], -5)]
    batch = make_batch(big, 0, compression.NONE, False)
    builder = ColumnBuilder("t", 3, 0, 2, SCHEMA)
    builder.add(batch)
    assert decoded_rows(builder) == expected_rows(batch, 0, 2)


def test_legacy_batches_between_v2_batches_keep_their_place():
    first = make_batch([(b"a", b"1", [], 0)], 0, compression.LZ4, False)
    legacy = batch_at(build_legacy_batch([Record(1, TS, b"b", b"2")], magic=1, base_offset=1))
    last = make_batch([(b"c", b"3", [("k", None)], 2)], 2, compression.NONE, True)
    builder = ColumnBuilder("t", 3, 0, 3, SCHEMA)
    for batch in (first, legacy, last):
        builder.add(batch)
    [out] = builder.flush()
    assert out.column("offset").to_pylist() == [0, 1, 2]
    assert out.column("key").to_pylist() == [b"a", b"b", b"c"]
    assert out.column("timestampType").to_pylist() == [0, 0, 1]


def test_without_headers_the_column_is_left_out():
    schema = arrow_schema(include_headers=False)
    builder = ColumnBuilder("t", 3, 0, 1, schema)
    builder.add(make_batch([(b"a", b"1", [("k", b"v")], 0)], 0, compression.NONE, False))
    [out] = builder.flush()
    assert out.schema.equals(schema)
    assert out.num_rows == 1


def test_a_builder_is_full_at_its_row_limit(monkeypatch):
    monkeypatch.setattr("kt.spark.columns.ROWS_PER_ARROW_BATCH", 3)
    builder = ColumnBuilder("t", 3, 0, 10, SCHEMA)
    builder.add(make_batch([(b"a", b"1", [], 0)] * 2, 0, compression.NONE, False))
    assert not builder.full
    builder.add(make_batch([(b"a", b"1", [], 0)], 2, compression.NONE, False))
    assert builder.full
    assert [b.num_rows for b in builder.flush()] == [3]
    assert not builder.full


def with_records(records: bytes, count: int) -> Batch:
    """An uncompressed batch whose records section is `records` (the CRC is not checked)."""
    header = bytearray(build_batch([Record(None, TS, None, b"")])[:HEADER_SIZE])
    header[8:12] = (HEADER_SIZE - 12 + len(records)).to_bytes(4, "big")
    header[57:61] = count.to_bytes(4, "big")
    return batch_at(bytes(header) + records)


def record_bytes(body: bytes, length: int | None = None) -> bytes:
    return zigzag_varint(len(body) if length is None else length) + body


# attributes, timestamp delta, offset delta, key "ab", value "cd", no headers
GOOD_BODY = b"\x00\x00\x00\x04ab\x04cd\x00"


@pytest.mark.parametrize(
    ("records", "count"),
    [
        (record_bytes(GOOD_BODY), 2),  # the batch says two records, holds one
        (record_bytes(GOOD_BODY) + b"\x00\x00", 1),  # bytes after the last record
        (record_bytes(GOOD_BODY, len(GOOD_BODY) + 3), 1),  # the length runs past the batch
        (record_bytes(GOOD_BODY[:-1], len(GOOD_BODY) - 1) + b"\x00", 2),  # fields overrun
        (record_bytes(b"\x00\x00\x00\x7eab\x04cd\x00"), 1),  # a key length past everything
        (record_bytes(b"\x00\x00\x00\x04ab\x04cd\x01"), 1),  # a negative header count
        (record_bytes(b"\x00\x00\x00\x04ab\x04cd\x02\x01"), 1),  # a negative header key length
        (record_bytes(b"\x00" + b"\xff" * 11), 1),  # a varint of more than ten bytes
        (record_bytes(b"", -2) + record_bytes(GOOD_BODY), 2),  # a negative record length
    ],
)
def test_broken_records_raise_corrupt_record_error(records, count):
    builder = ColumnBuilder("t", 3, 0, 10, SCHEMA)
    builder.add(with_records(records, count))
    with pytest.raises(CorruptRecordError):
        builder.flush()


def test_a_well_formed_hand_made_record_decodes():
    """The broken records above differ from this one only where the comment says."""
    builder = ColumnBuilder("t", 3, 0, 10, SCHEMA)
    builder.add(with_records(record_bytes(GOOD_BODY), 1))
    [out] = builder.flush()
    assert [(r["key"], r["value"], r["offset"], r["headers"]) for r in out.to_pylist()] == [
        (b"ab", b"cd", 0, None)
    ]
