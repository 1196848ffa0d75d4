"""Decode record batches column by column into Arrow record batches for Spark.

kt.storage's RecordBatch.records() builds one Record object per record, which the
broker's tools want. Spark wants columns, so this module parses the v2 record format
(laid out in kt/storage/record_batch.py) straight into per-column lists: one
decompression and one loop per batch, no object per record, then one Arrow array per
column. Legacy (magic 0/1) batches are rare and go through their Record objects.

Varints are zigzag-encoded, 7 bits a byte, low group first; the one- and two-byte
cases, by far the most common for lengths and deltas, are decoded inline.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kt.errors import CorruptRecordError
from kt.storage import compression
from kt.storage.batch_header import HEADER_SIZE
from kt.storage.record_batch import CREATE_TIME, LOG_APPEND_TIME, read_zigzag_varint
from kt.storage.records import Batch

if TYPE_CHECKING:
    import pyarrow as pa

ROWS_PER_ARROW_BATCH = 32_768


class ColumnBuilder:
    """The rows of one topic-partition's offset range, accumulated as columns.

    Invariants: every column list has one entry per row added since the last build();
    only records with `start <= offset < end` are added; `header_offsets` has one more
    entry than there are rows (Arrow list offsets) when headers are included.
    """

    def __init__(self, topic: str, partition: int, start: int, end: int, schema: pa.Schema) -> None:
        self.topic = topic
        self.partition = partition
        self.start = start
        self.end = end
        self.schema = schema
        self.include_headers = "headers" in schema.names
        self._reset()

    def _reset(self) -> None:
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.timestamp_types: list[int] = []
        self.header_offsets: list[int] = [0]
        self.header_keys: list[bytes] = []
        self.header_values: list[bytes | None] = []

    def __len__(self) -> int:
        return len(self.offsets)

    def add(self, batch: Batch) -> None:
        """Append the records of `batch` that fall in [start, end)."""
        before = len(self.offsets)
        if batch.magic == 2:
            self._add_v2(batch)
            kind = LOG_APPEND_TIME if batch.header.is_log_append_time else CREATE_TIME
        else:
            self._add_legacy(batch)
            kind = batch.timestamp_type
        self.timestamp_types.extend([kind] * (len(self.offsets) - before))

    def _add_legacy(self, batch: Batch) -> None:
        for record in batch.records():
            if self.start <= record.offset < self.end:
                self.offsets.append(record.offset)
                self.timestamps.append(record.timestamp)
                self.keys.append(record.key)
                self.values.append(record.value)
                if self.include_headers:
                    self.header_offsets.append(self.header_offsets[-1])

    def _add_v2(self, batch: Batch) -> None:
        h = batch.header
        data = compression.decompress(
            h.compression, memoryview(h.buf)[h.position + HEADER_SIZE : h.position + h.size]
        )
        base_ts = h.base_timestamp
        append_time = h.max_timestamp if h.is_log_append_time else None
        try:
            end = self._parse(data, h.records_count, h.base_offset, base_ts, append_time)
        except IndexError as e:
            raise CorruptRecordError(f"record batch at {h.position} ends inside a record") from e
        if end != len(data):
            raise CorruptRecordError(f"record batch at {h.position}: bytes left after records")

    def _parse(
        self, data: bytes, count: int, base_offset: int, base_ts: int, append_time: int | None
    ) -> int:
        """Parse `count` records of `data` into the columns; returns the position reached.

        Varints of one and two bytes (lengths, small deltas) are decoded inline: a call
        per varint costs more than the rest of the record.
        """
        rd = read_zigzag_varint
        lo, hi = self.start - base_offset, self.end - base_offset
        offsets, timestamps, keys, values = self.offsets, self.timestamps, self.keys, self.values
        headers = self.include_headers
        pos = 0
        for _ in range(count):
            b = data[pos]
            if b < 0x80:
                length, pos = (b >> 1) ^ -(b & 1), pos + 1
            elif data[pos + 1] < 0x80:
                u = (b & 0x7F) | data[pos + 1] << 7
                length, pos = (u >> 1) ^ -(u & 1), pos + 2
            else:
                length, pos = rd(data, pos)
            record_end = pos + length
            ts_delta, pos = rd(data, pos + 1)  # + 1: the unused attributes byte
            b = data[pos]
            if b < 0x80:
                delta, pos = (b >> 1) ^ -(b & 1), pos + 1
            elif data[pos + 1] < 0x80:
                u = (b & 0x7F) | data[pos + 1] << 7
                delta, pos = (u >> 1) ^ -(u & 1), pos + 2
            else:
                delta, pos = rd(data, pos)
            if not lo <= delta < hi:
                pos = record_end
                continue
            for column in (keys, values):
                b = data[pos]
                if b < 0x80:
                    size, pos = (b >> 1) ^ -(b & 1), pos + 1
                elif data[pos + 1] < 0x80:
                    u = (b & 0x7F) | data[pos + 1] << 7
                    size, pos = (u >> 1) ^ -(u & 1), pos + 2
                else:
                    size, pos = rd(data, pos)
                if size >= 0:
                    column.append(data[pos : pos + size])
                    pos += size
                else:
                    column.append(None)
            offsets.append(base_offset + delta)
            timestamps.append(append_time if append_time is not None else base_ts + ts_delta)
            if headers:
                pos = self._parse_headers(data, pos)
            if pos > record_end:
                raise CorruptRecordError(f"record at offset {base_offset + delta} overruns")
            pos = record_end
        return pos

    def _parse_headers(self, data: bytes, pos: int) -> int:
        """One record's headers; keys stay bytes (Arrow checks their UTF-8 in bulk)."""
        rd = read_zigzag_varint
        keys, values = self.header_keys, self.header_values
        b = data[pos]
        if b == 0:  # no headers, the usual case: one byte
            self.header_offsets.append(len(keys))
            return pos + 1
        count, pos = rd(data, pos)
        for _ in range(count):
            b = data[pos]
            size, pos = ((b >> 1) ^ -(b & 1), pos + 1) if b < 0x80 else rd(data, pos)
            keys.append(data[pos : pos + size])
            pos += size
            b = data[pos]
            size, pos = ((b >> 1) ^ -(b & 1), pos + 1) if b < 0x80 else rd(data, pos)
            if size >= 0:
                values.append(data[pos : pos + size])
                pos += size
            else:
                values.append(None)
        self.header_offsets.append(len(keys))
        return pos

    def build(self) -> pa.RecordBatch:
        """The rows added so far as one Arrow record batch of `schema`; then starts over."""
        import pyarrow as pa

        n = len(self.offsets)
        schema = self.schema
        millis = pa.array(self.timestamps, pa.int64())
        columns = [
            pa.array(self.keys, pa.binary()),
            pa.array(self.values, pa.binary()),
            pa.repeat(pa.scalar(self.topic, pa.string()), n),
            pa.repeat(pa.scalar(self.partition, pa.int32()), n),
            pa.array(self.offsets, pa.int64()),
            _millis_to_timestamp(millis, schema.field("timestamp").type),
            pa.array(self.timestamp_types, pa.int32()),
        ]
        if self.include_headers:
            columns.append(self._headers_array(schema.field("headers").type))
        self._reset()
        return pa.RecordBatch.from_arrays(columns, schema=schema)

    def _headers_array(self, list_type: pa.DataType) -> pa.Array:
        """Spark's headers column: a list of (key, value) structs, null for no headers."""
        import pyarrow as pa
        import pyarrow.compute as pc

        struct_type = list_type.value_type
        items = pa.StructArray.from_arrays(
            [
                pa.array(self.header_keys, pa.binary()).cast(pa.string()),
                pa.array(self.header_values, pa.binary()),
            ],
            fields=list(struct_type),
        )
        ends = pa.array(self.header_offsets, pa.int32())
        empty = pc.equal(ends[1:], ends[:-1])
        return pa.ListArray.from_arrays(ends, items, type=list_type, mask=empty)


def _millis_to_timestamp(millis: pa.Array, timestamp_type: pa.DataType) -> pa.Array:
    import pyarrow.compute as pc

    return pc.multiply(millis, 1000).cast(timestamp_type)
