"""kafka-python as an independent oracle: it reads what kt writes, kt reads what it writes."""

from __future__ import annotations

import struct

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from kt.storage import compression
from kt.storage.legacy_records import build_legacy_batch
from kt.storage.record_batch import LOG_APPEND_TIME, Record, build_batch
from kt.storage.records import iter_batches

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # kafka-python

T0 = 1_700_000_000_000
CODECS = [compression.NONE, compression.GZIP, compression.SNAPPY, compression.LZ4,
          compression.ZSTD]  # fmt: skip
LEGACY_CODECS = CODECS[:4]


def _records() -> list[Record]:
    return [
        Record(None, T0 + i, None if i % 3 == 0 else b"key-%d" % i,
               None if i == 4 else b"value-%d " % i * (i * 50),
               [("trace", b"t%d" % i), ("empty", None)] if i % 2 else [])
        for i in range(8)
    ]  # fmt: skip


def _kafka_python_read(data: bytes) -> list[tuple]:
    records = MemoryRecords(data)
    out = []
    while records.has_next():
        batch = records.next_batch()
        assert batch.validate_crc()
        out += [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch]
    return out


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_reads_kt_v2_batches(codec: int) -> None:
    records = _records()
    data = build_batch(records, base_offset=50, compression_type=codec, producer_id=9,
                       producer_epoch=1, base_sequence=0, is_transactional=True)  # fmt: skip
    assert _kafka_python_read(data) == [
        (50 + i, r.timestamp, r.key, r.value, list(r.headers)) for i, r in enumerate(records)
    ]
    batch = MemoryRecords(data).next_batch()
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (9, 1, 0)
    assert (batch.is_transactional, batch.compression_type) == (True, codec)


def test_kafka_python_reads_kt_log_append_time_batch() -> None:
    data = build_batch(_records()[:2], timestamp_type=LOG_APPEND_TIME)
    assert [r[1] for r in _kafka_python_read(data)] == [T0 + 1, T0 + 1]


@pytest.mark.parametrize("codec", CODECS)
def test_kt_reads_kafka_python_v2_batches(codec: int) -> None:
    records = _records()
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=0, producer_id=-1,
        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20,
    )  # fmt: skip
    for i, r in enumerate(records):
        builder.append(i, r.timestamp, r.key, r.value, list(r.headers))
    [batch] = iter_batches(bytes(builder.build()))
    assert batch.is_valid() and batch.compression_type == codec
    assert batch.records() == [
        Record(i, r.timestamp, r.key, r.value, r.headers) for i, r in enumerate(records)
    ]


@pytest.mark.parametrize("codec", LEGACY_CODECS)
@pytest.mark.parametrize("magic", [0, 1])
def test_kafka_python_reads_kt_legacy_batches(magic: int, codec: int) -> None:
    records = _records()
    data = build_legacy_batch(records, magic=magic, compression_type=codec, base_offset=30)
    expected_ts = [r.timestamp if magic else None for r in records]
    assert [(o, t, k, v) for o, t, k, v, _ in _kafka_python_read(data)] == [
        (30 + i, expected_ts[i], r.key, r.value) for i, r in enumerate(records)
    ]


@pytest.mark.parametrize("codec", LEGACY_CODECS)
@pytest.mark.parametrize("magic", [0, 1])
def test_kt_reads_kafka_python_legacy_batches(magic: int, codec: int) -> None:
    records = _records()
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 20)
    for i, r in enumerate(records):
        builder.append(i, r.timestamp if magic else None, r.key, r.value)
    data = bytearray(builder.build())
    if codec and magic == 1:
        # A producer leaves the wrapper offset at 0; the broker stamps the last offset
        # there (outside the CRC), and relative inner offsets count back from it.
        struct.pack_into(">q", data, 0, len(records) - 1)
    batches = list(iter_batches(bytes(data)))
    assert all(b.is_valid() for b in batches)
    got = [(r.offset, r.timestamp, r.key, r.value, r.is_valid) for b in batches for r in b]
    assert got == [
        (i, r.timestamp if magic else -1, r.key, r.value, True) for i, r in enumerate(records)
    ]
