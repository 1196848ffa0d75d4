"""Round trips for every codec x attribute combination, with generated records."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kt.storage.legacy_records import build_legacy_batch
from kt.storage.record_batch import CREATE_TIME, LOG_APPEND_TIME, Record, build_batch
from kt.storage.records import iter_batches

T0 = 1_700_000_000_000
INT32 = 2**31 - 1

blobs = st.one_of(st.none(), st.binary(max_size=300))
headers = st.lists(st.tuples(st.text(max_size=10), blobs), max_size=3)
records = st.lists(
    st.builds(
        lambda ts, k, v, h: Record(None, ts, k, v, h),
        st.integers(0, 2**50), blobs, blobs, headers,
    ),
    min_size=1,
    max_size=20,
)  # fmt: skip

ATTRIBUTES = list(
    itertools.product(
        range(5),  # codec
        (CREATE_TIME, LOG_APPEND_TIME),
        (False, True),  # transactional
        (False, True),  # control
        (None, T0 + 1),  # delete horizon
    )
)


@pytest.mark.parametrize(("codec", "ts_type", "txn", "control", "horizon"), ATTRIBUTES)
def test_every_attribute_combination_round_trips(
    codec: int, ts_type: int, txn: bool, control: bool, horizon: int | None
) -> None:
    recs = [Record(None, T0 + i, b"k%d" % i, b"v" * i, [("h", b"%d" % i)]) for i in range(3)]
    data = build_batch(
        recs, base_offset=7, compression_type=codec, timestamp_type=ts_type,
        producer_id=5 if txn else -1, producer_epoch=0 if txn else -1,
        base_sequence=0 if txn else -1, is_transactional=txn, is_control=control,
        partition_leader_epoch=2, delete_horizon_ms=horizon,
    )  # fmt: skip
    [batch] = iter_batches(data)
    assert batch.is_valid()
    assert (batch.compression_type, batch.timestamp_type) == (codec, ts_type)
    assert (batch.is_transactional, batch.is_control, batch.delete_horizon_ms) == (
        txn, control, horizon,
    )  # fmt: skip
    expected_ts = [T0 + 2] * 3 if ts_type == LOG_APPEND_TIME else [T0, T0 + 1, T0 + 2]
    assert batch.records() == [
        Record(7 + i, expected_ts[i], r.key, r.value, r.headers, i if txn else -1)
        for i, r in enumerate(recs)
    ]


@settings(max_examples=60, deadline=None)
@given(
    records,
    st.integers(0, 4),
    st.integers(0, 2**40),
    st.integers(-1, INT32),
    st.integers(-1, 2**40),
)
def test_generated_v2_batches_round_trip(
    recs: list[Record], codec: int, base_offset: int, base_sequence: int, producer_id: int
) -> None:
    data = build_batch(recs, base_offset=base_offset, compression_type=codec,
                       producer_id=producer_id, base_sequence=base_sequence)  # fmt: skip
    [batch] = iter_batches(data)
    assert batch.is_valid() and batch.count == len(recs)
    assert batch.max_timestamp == max(r.timestamp for r in recs)
    for i, (got, sent) in enumerate(zip(batch.records(), recs, strict=True)):
        sequence = -1 if base_sequence < 0 else (base_sequence + i) % 2**31
        assert got == Record(base_offset + i, sent.timestamp, sent.key, sent.value,
                             sent.headers, sequence)  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(records, st.integers(0, 3), st.sampled_from([0, 1]), st.integers(0, 2**40))
def test_generated_legacy_batches_round_trip(
    recs: list[Record], codec: int, magic: int, base_offset: int
) -> None:
    data = build_legacy_batch(recs, magic=magic, compression_type=codec, base_offset=base_offset)
    got = [r for batch in iter_batches(data) for r in batch.records()]
    assert [(r.offset, r.timestamp, r.key, r.value, r.is_valid) for r in got] == [
        (base_offset + i, s.timestamp if magic else -1, s.key, s.value, True)
        for i, s in enumerate(recs)
    ]
