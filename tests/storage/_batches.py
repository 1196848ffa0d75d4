"""Helpers for storage tests: v2 record batches built with kafka-python's builder (an
independent implementation of the format), and a clock the test sets."""

from __future__ import annotations

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

TS = 1_700_000_000_000


class Clock:
    """A log's clock (milliseconds) that stands still until the test moves `now`."""

    def __init__(self, now: int = TS) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def batch(
    count: int = 1,
    ts: int = TS,
    value_size: int = 10,
    pid: int = -1,
    epoch: int = -1,
    seq: int = -1,
    transactional: bool = False,
    compression: int = 0,
    ts_step: int = 1,
) -> bytes:
    """One v2 batch of `count` records with timestamps ts, ts+ts_step, ..."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=compression,
        is_transactional=transactional,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        batch_size=1 << 24,
    )
    for i in range(count):
        builder.append(i, timestamp=ts + i * ts_step, key=None, value=b"v" * value_size, headers=[])
    return bytes(builder.build())


def legacy_message_set(magic: int, count: int, first_offset: int) -> bytes:
    """`count` uncompressed magic 0 or 1 messages from `first_offset` (magic 0 has no
    timestamps; magic 1's are TS, TS+1, ...)."""
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=0, batch_size=1 << 20)
    for i in range(count):
        builder.append(first_offset + i, TS + i if magic else None, None, b"legacy-%d" % i)
    return bytes(builder.build())
