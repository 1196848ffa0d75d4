"""The column encoder (kt.spark.record_encoder) against kt.storage's record-by-record one.

ArrowRecords encodes a batch's share of records at once from Arrow columns; its oracle is
MemoryRecordsBuilder.append, one record at a time, given the same batch (offset deltas
from the records already in it, timestamp deltas from its base). Every byte must agree,
for null and empty keys and values, varints of every width (records over 8 KiB, offset
deltas past 8191, timestamps before the batch's base), and the records taken must be
exactly those that fit. murmur2_column must give kt.client.partitioner.murmur2 of each key.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from kt.client.partitioner import murmur2, partition_for_key
from kt.spark.record_encoder import ArrowRecords, murmur2_column, partitions_for_keys
from kt.storage.record_batch import MemoryRecordsBuilder

TS = 1_700_000_000_000
payloads = st.one_of(st.none(), st.binary(max_size=40), st.binary(min_size=100, max_size=300))


def encode_all(records: ArrowRecords, keys, values, stamps, room: int, now_ms: int,
               first_index: int = 0, headers=None) -> None:  # fmt: skip
    """Fill batches of `room` bytes with every record, each checked against append()."""
    start = 0
    while start < records.count:
        built = MemoryRecordsBuilder()
        oracle = MemoryRecordsBuilder()
        for _ in range(first_index):  # a batch that holds records already
            built.append(now_ms, b"k", b"v")
            oracle.append(now_ms, b"k", b"v")
        while start < records.count:
            base = built.base_timestamp if built.count else None
            data, n, first, latest = records.encode(start, built.count, base,
                                                    room - len(built.buf), now_ms)  # fmt: skip
            if n == 0:
                assert built.count > 0, "an empty batch takes a record"
                break
            for i in range(start, start + n):
                oracle.append(now_ms if stamps is None else stamps[i], keys[i], values[i],
                              _pairs(headers[i]) if headers else ())  # fmt: skip
            built.extend(data, n, first, latest)
            assert bytes(built.buf) == bytes(oracle.buf)
            assert (built.base_timestamp, built.max_timestamp, built.count) == (
                oracle.base_timestamp, oracle.max_timestamp, oracle.count)  # fmt: skip
            start += n
            if start < records.count:  # the next record did not fit
                break
        added = built.count - first_index
        assert len(built.buf) <= room or added == 0 or (first_index == 0 and added == 1)
        first_index = 0


def _pairs(headers: list[dict] | None) -> list[tuple[str, bytes | None]]:
    return [(h["key"], h["value"]) for h in headers or ()]


HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
header_lists = st.one_of(
    st.none(),
    st.lists(st.fixed_dictionaries({"key": st.text(max_size=8),
                                    "value": st.one_of(st.none(), st.binary(max_size=30))}),
             max_size=4),
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(st.tuples(payloads, payloads), min_size=1, max_size=120),
    offsets=st.lists(st.integers(-100_000, 10**10), min_size=120, max_size=120),
    room=st.sampled_from([64, 1024, 16384, 1 << 20]),
    stamped=st.booleans(),
    first_index=st.sampled_from([0, 3, 8190]),
)
def test_records_encoded_by_column_are_the_records_appended_one_by_one(
    rows, offsets, room: int, stamped: bool, first_index: int
) -> None:
    keys, values = [k for k, _ in rows], [v for _, v in rows]
    stamps = np.array([TS + o for o in offsets[: len(rows)]], np.int64) if stamped else None
    records = ArrowRecords(pa.array(keys, pa.binary()), pa.array(values, pa.binary()), stamps)
    encode_all(records, keys, values, stamps, room, TS + 5, first_index)


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(st.tuples(payloads, header_lists), min_size=1, max_size=60),
       room=st.sampled_from([64, 16384]), sliced=st.booleans())  # fmt: skip
def test_headers_are_encoded_as_append_encodes_them(rows, room: int, sliced: bool) -> None:
    values = [v for v, _ in rows]
    headers = [h for _, h in rows]
    keys = [None] * len(rows)
    column = pa.array([None, *headers], HEADERS_TYPE)
    column = column.slice(1) if sliced else pa.array(headers, HEADERS_TYPE)  # an offset
    records = ArrowRecords(None, pa.array(values, pa.binary()), None, column)
    encode_all(records, keys, values, None, room, TS, headers=headers)


def test_long_records_and_many_of_them_take_wide_varints() -> None:
    values = [b"x" * 9000, None, b"", b"y" * 70000] * 3 + [b"z"] * 9000
    keys = [None, b"", b"key"] * (len(values) // 3)
    stamps = np.array([TS - 10**6 + 7 * i for i in range(len(values))], np.int64)
    for stamped in (stamps, None):
        records = ArrowRecords(pa.array(keys, pa.binary()), pa.array(values, pa.binary()),
                               stamped)  # fmt: skip
        encode_all(records, keys, values, stamped, 1 << 20, TS)


def test_without_a_key_column_every_key_is_null() -> None:
    records = ArrowRecords(None, pa.array(["a", "bc"]))
    built = MemoryRecordsBuilder()
    built.extend(*records.encode(0, 0, None, 1000, TS))
    oracle = MemoryRecordsBuilder()
    oracle.append(TS, None, b"a")
    oracle.append(TS, None, b"bc")
    assert bytes(built.buf) == bytes(oracle.buf)


@settings(max_examples=60, deadline=None)
@given(keys=st.lists(st.one_of(st.none(), st.binary(max_size=40)), min_size=1, max_size=200),
       partitions=st.integers(1, 50))  # fmt: skip
def test_murmur2_of_a_column_is_kafkas_murmur2_of_each_key(keys, partitions: int) -> None:
    column = pa.array(keys, pa.binary())
    hashes = murmur2_column(column)
    chosen = partitions_for_keys(column, partitions)
    for i, key in enumerate(keys):
        if key is None:
            assert chosen[i] == -1
        else:
            assert int(hashes[i]) == murmur2(key) & 0xFFFFFFFF, key
            assert chosen[i] == partition_for_key(key, partitions), key
    # A slice of a column (an Arrow offset) hashes its own keys.
    if len(keys) > 2:
        assert list(murmur2_column(column.slice(1))) == list(hashes[1:])
