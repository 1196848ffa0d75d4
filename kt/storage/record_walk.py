"""Offsets, timestamps and key lengths of the records inside one batch.

ListOffsets by timestamp and the leader's per-record rules (timestamp bounds, keys on
compacted topics) need per-record facts, so this walks just the first fields of each v2
record (decompressing the batch first if it must):

  Record => length: varint, attributes: int8, timestampDelta: varlong,
            offsetDelta: varint, keyLength: varint, ... (the rest is skipped using `length`)

A LogAppendTime batch gives every record the batch's maxTimestamp. Legacy (magic 0/1)
batches are reported as one entry: the wrapper's offset and timestamp.

`key_value_bytes` is the consumer perf tool's count (key length + value length per
record, as ConsumerPerformance adds them), walked without a Python object per record.
"""

from __future__ import annotations

from collections.abc import Iterator

from kt.errors import CorruptRecordError
from kt.storage.batch_header import HEADER, RECORDS_OFFSET, TIMESTAMP_TYPE_MASK
from kt.storage.file_records import frame_at
from kt.storage.record_batch import RecordBatch, read_zigzag_varint
from kt.storage.records import Batch


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


def key_value_bytes(batch: Batch, first: int = 0, stop: int | None = None) -> int:
    """The key and value bytes of records first..stop-1 (by index) of a whole batch."""
    counter = KeyValueCounter(batch)
    counter.count(first)
    return counter.count((counter.records if stop is None else stop) - first)


class KeyValueCounter:
    """The key and value bytes of a batch's records, counted a run of records at a time
    from the first on: the batch is decompressed (or copied) and walked once."""

    def __init__(self, batch: Batch) -> None:
        self.done = 0  # records counted (or skipped) so far
        self._pos = 0
        self._legacy: list | None = None
        if not isinstance(batch, RecordBatch):
            self._legacy = batch.records()
            self.records = len(self._legacy)
            return
        header = batch.header
        self.records = max(header.records_count, 0)
        start = header.position + RECORDS_OFFSET
        data = memoryview(header.buf)[start : header.position + header.size]
        if header.compression:
            from kt.storage.compression import decompress  # imported only when needed

            self._body = decompress(header.compression, data)
        else:
            self._body = bytes(data)

    def count(self, n: int) -> int:
        """Count the next `n` records (fewer if the batch ends first); their bytes."""
        n = min(n, self.records - self.done)
        if n <= 0:
            return 0
        self.done += n
        if self._legacy is not None:
            chosen = self._legacy[self.done - n : self.done]
            return sum(len(r.key or b"") + len(r.value or b"") for r in chosen)
        try:
            total, self._pos = _key_value_bytes(self._body, self._pos, n)
        except IndexError:
            raise CorruptRecordError("a record runs past the end of its batch") from None
        if self.done == self.records and self._pos != len(self._body):
            raise CorruptRecordError(
                f"{len(self._body) - self._pos} bytes of records follow record {self.records}"
            )
        return total


def _key_value_bytes(body: bytes, pos: int, count: int) -> tuple[int, int]:
    """One loop over `count` records from `pos`: each length, skipping attributes,
    timestampDelta and offsetDelta, then keyLength and valueLength (zigzag; -1 is null).
    One- and two-byte varints, nearly all of them, are read inline. Returns the sum and
    where the walk ended."""
    total = 0
    for _ in range(count):
        b = body[pos]
        if b < 0x80:
            pos += 1
            end = pos + (b >> 1)  # a length is never negative
        else:
            c = body[pos + 1]
            if c < 0x80:
                pos += 2
                end = pos + (((b & 0x7F) | (c << 7)) >> 1)
            else:
                length, pos = read_zigzag_varint(body, pos)
                end = pos + length
        p = pos + 1  # attributes
        if body[p] < 0x80:  # timestampDelta
            p += 1
        else:
            p += 1
            while body[p] & 0x80:
                p += 1
            p += 1
        if body[p] < 0x80:  # offsetDelta
            p += 1
        else:
            p += 1
            while body[p] & 0x80:
                p += 1
            p += 1
        b = body[p]
        if b == 1:  # a null key
            p += 1
        elif b < 0x80:
            total += b >> 1
            p += 1 + (b >> 1)
        else:
            key, p = read_zigzag_varint(body, p)
            if key > 0:
                total += key
                p += key
        b = body[p]
        if b < 0x80:
            if not b & 1:
                total += b >> 1
        else:
            c = body[p + 1]
            if c < 0x80:
                z = (b & 0x7F) | (c << 7)
                if not z & 1:
                    total += z >> 1
            else:
                value, _ = read_zigzag_varint(body, p)
                if value > 0:
                    total += value
        pos = end
    return total, pos
