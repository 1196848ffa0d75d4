"""Iterate the batches of a buffer of any magic, as Kafka's FileRecords/MemoryRecords do.

A log segment, a Produce request's `records` and a Fetch response's `records` are all
the same thing: batches back to back. Every batch starts with offset int64 and a
length int32 (bytes after it), and has its magic at byte 16, whatever its version, so
a reader frames a batch from its first 17 bytes and then decodes it by magic:
magic 2 -> kt.storage.record_batch.RecordBatch, magic 0/1 ->
kt.storage.legacy_records.LegacyRecordBatch. A partial batch at the end (a torn
write, or a fetch cut at its byte limit) ends the iteration.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from kt.errors import CorruptRecordError
from kt.storage.legacy_records import RECORD_OVERHEAD_V0, LegacyRecordBatch
from kt.storage.record_batch import Record, RecordBatch

HEADER_SIZE_UP_TO_MAGIC = 17
_FRAME = struct.Struct(">qi4xb")  # offset, size, (crc or epoch), magic

Batch = RecordBatch | LegacyRecordBatch


def batch_at(buf: bytes | bytearray | memoryview, position: int = 0) -> Batch:
    """The batch (any magic) at `position`; CorruptRecordError unless it is all there."""
    if len(buf) - position < HEADER_SIZE_UP_TO_MAGIC:
        raise CorruptRecordError(f"no batch header at position {position}")
    _, size, magic = _FRAME.unpack_from(buf, position)
    if magic == 2:
        return RecordBatch(buf, position)
    if magic in (0, 1):
        return LegacyRecordBatch(buf, position)
    raise CorruptRecordError(f"unknown magic {magic} at position {position}")


def iter_batches(
    buf: bytes | bytearray | memoryview, position: int = 0, *, max_batch_size: int | None = None
) -> Iterator[Batch]:
    """Yield each whole batch from `position` on, stopping before a partial one.

    As FileLogInputStream.nextBatch: a size below the smallest message, above
    `max_batch_size`, or an unknown magic raises CorruptRecordError (the bytes cannot
    be framed); a batch that runs past the buffer ends the iteration quietly. CRCs are
    not checked here: call `is_valid()` on each batch.
    """
    end = len(buf)
    while end - position >= HEADER_SIZE_UP_TO_MAGIC:
        _, size, magic = _FRAME.unpack_from(buf, position)
        if size < RECORD_OVERHEAD_V0:
            raise CorruptRecordError(
                f"Record size {size} at position {position} is less than the minimum "
                f"record overhead ({RECORD_OVERHEAD_V0})"
            )
        if max_batch_size is not None and size > max_batch_size:
            raise CorruptRecordError(
                f"Record size {size} at position {position} exceeds the largest "
                f"allowable message size ({max_batch_size})"
            )
        if position + 12 + size > end:
            return
        yield batch_at(buf, position)
        position += 12 + size


def iter_records(buf: bytes | bytearray | memoryview) -> Iterator[Record]:
    """Every record of every whole batch in `buf`, CRCs checked (deep iteration)."""
    for batch in iter_batches(buf):
        batch.ensure_valid()
        yield from batch.records()
