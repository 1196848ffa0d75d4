"""Offsets, timestamps and key lengths of the records inside one batch.

ListOffsets by timestamp and the leader's per-record rules (timestamp bounds, keys on
compacted topics) need per-record facts, so this walks just the first fields of each v2
record (decompressing the batch first if it must):

  Record => length: varint, attributes: int8, timestampDelta: varlong,
            offsetDelta: varint, keyLength: varint, ... (the rest is skipped using `length`)

A LogAppendTime batch gives every record the batch's maxTimestamp. Legacy (magic 0/1)
batches are reported as one entry: the wrapper's offset and timestamp.
"""

from __future__ import annotations

from collections.abc import Iterator

from kt.errors import CorruptRecordError
from kt.storage.batch_header import HEADER, RECORDS_OFFSET, TIMESTAMP_TYPE_MASK
from kt.storage.file_records import frame_at
from kt.storage.record_batch import read_zigzag_varint


def record_timestamps(batch: bytes | memoryview) -> Iterator[tuple[int, int]]:
    """Yield (offset, timestamp) for each record of the whole batch `batch`."""
    for offset, timestamp, _ in walk_records(batch):
        yield offset, timestamp


def walk_records(batch: bytes | memoryview) -> Iterator[tuple[int, int, int | None]]:
    """Yield (offset, timestamp, key length, -1 for a null key) for each record of the
    whole batch `batch`; the key length is None for a legacy batch's one entry."""
    magic = batch[16]
    if magic < 2:
        frame = frame_at(batch, 0, 0, len(batch))
        yield frame.last_offset, frame.max_timestamp, None
        return
    h = HEADER.unpack_from(batch, 0)
    base_offset, attributes, base_ts, max_ts, count = h[0], h[5], h[7], h[8], h[12]
    body: bytes | memoryview = memoryview(batch)[RECORDS_OFFSET:]
    codec = attributes & 0x07
    if codec:
        from kt.storage.compression import decompress  # imported only when needed

        body = decompress(codec, body)
    log_append_time = bool(attributes & TIMESTAMP_TYPE_MASK)
    pos = 0
    for _ in range(count):
        try:
            length, start = read_zigzag_varint(body, pos)
            ts_delta, p = read_zigzag_varint(body, start + 1)  # skip attributes
            offset_delta, p = read_zigzag_varint(body, p)
            key_length, _ = read_zigzag_varint(body, p)
        except IndexError:
            raise CorruptRecordError("varint runs past the end of the records") from None
        timestamp = max_ts if log_append_time else base_ts + ts_delta
        yield base_offset + offset_delta, timestamp, key_length
        pos = start + length
