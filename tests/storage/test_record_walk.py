"""key_value_bytes, the consumer perf tool's count, against the sum of key and value
lengths of records decoded by kafka-python (an independent reader), for batches that
kafka-python's builder wrote: any codec, null and long keys and values (one- to
three-byte varints), headers, gaps in the offsets, and a range of records."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from kt.errors import CorruptRecordError
from kt.storage.record_walk import key_value_bytes
from kt.storage.records import batch_at, iter_batches
from tests.storage._batches import TS

CODECS = [0, 1, 2, 3, 4]  # none, gzip, snappy, lz4, zstd

large = st.builds(
    lambda size, byte: bytes([byte]) * size, st.integers(16000, 17000), st.integers(0, 255)
)
payload = st.one_of(st.none(), st.binary(max_size=300), large)
header = st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=20)))
record = st.tuples(
    payload, payload, st.lists(header, max_size=3), st.integers(0, 100), st.integers(0, 10**7)
)


def build(records: list, codec: int) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=False, producer_id=-1,
        producer_epoch=-1, base_sequence=-1, batch_size=1 << 24,
    )  # fmt: skip
    offset = 0
    for key, value, headers, gap, ts_delta in records:
        offset += gap
        builder.append(offset, timestamp=TS + ts_delta, key=key, value=value, headers=headers)
        offset += 1
    return bytes(builder.build())


def reference(data: bytes, first: int, stop: int) -> int:
    decoded = list(DefaultRecordBatch(data))[first:stop]
    return sum(len(r.key or b"") + len(r.value or b"") for r in decoded)


@settings(max_examples=150, deadline=None)
@given(
    records=st.lists(record, min_size=1, max_size=40),
    codec=st.sampled_from(CODECS),
    data=st.data(),
)
def test_key_value_bytes_match_an_independent_reader(records: list, codec: int, data) -> None:
    batch = build(records, codec)
    first = data.draw(st.integers(0, len(records)))
    stop = data.draw(st.integers(first, len(records)))
    assert key_value_bytes(batch_at(batch), first, stop) == reference(batch, first, stop)
    assert key_value_bytes(batch_at(batch)) == reference(batch, 0, len(records))


def test_a_legacy_message_set_counts_its_keys_and_values() -> None:
    builder = LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 20)
    builder.append(0, TS, b"key", b"value")
    builder.append(1, TS, None, b"v" * 200)
    first, second = iter_batches(bytes(builder.build()))  # a legacy message each
    assert key_value_bytes(first) == 3 + 5
    assert key_value_bytes(second) == 200


@pytest.mark.parametrize(
    ("count", "message"),
    [(3, "a record runs past the end of its batch"), (1, "8 bytes of records follow record 1")],
)
def test_a_record_count_that_does_not_fit_the_records_is_corrupt(count: int, message: str) -> None:
    batch = bytearray(build([(None, b"a", [], 0, 0), (None, b"b", [], 0, 0)], 0))
    batch[57:61] = count.to_bytes(4, "big")  # recordCount, the header's last field
    with pytest.raises(CorruptRecordError, match=message):
        key_value_bytes(batch_at(bytes(batch)))
