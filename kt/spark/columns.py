"""Decode record batches column by column into Arrow record batches for Spark.

kt.storage's RecordBatch.records() builds one Record object per record, which the
broker's tools want. Spark wants columns, so this module parses the v2 record format
(laid out in kt/storage/record_batch.py) straight into per-column lists: one
decompression and one loop per batch, no object per record, then one Arrow array per
column. Legacy (magic 0/1) batches are rare and go through their Record objects.

Varints are zigzag-encoded, 7 bits a byte, low group first; the one-byte case, by far
the most common for lengths and counts, is decoded inline.
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
        self.header_keys: list[str] = []
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
        """Parse `count` records of `data` into the columns; returns the position reached."""
        rd = read_zigzag_varint
        lo, hi = self.start - base_offset, self.end - base_offset
        offsets, timestamps, keys, values = self.offsets, self.timestamps, self.keys, self.values
        headers = self.include_headers
        pos = 0
        for _ in range(count):
            b = data[pos]
            if b < 0x80:
                length, pos = (b >> 1) ^ -(b & 1), pos + 1
            else:
                length, pos = rd(data, pos)
            record_end = pos + length
            ts_delta, pos = rd(data, pos + 1)  # + 1: the unused attributes byte
            b = data[pos]
            if b < 0x80:
                delta, pos = (b >> 1) ^ -(b & 1), pos + 1
            else:
                delta, pos = rd(data, pos)
            if not lo <= delta < hi:
                pos = record_end
                continue
            b = data[pos]
            if b < 0x80:
                size, pos = (b >> 1) ^ -(b & 1), pos + 1
            else:
                size, pos = rd(data, pos)
            if size >= 0:
                keys.append(data[pos : pos + size])
                pos += size
            else:
                keys.append(None)
            b = data[pos]
            if b < 0x80:
                size, pos = (b >> 1) ^ -(b & 1), pos + 1
            else:
                size, pos = rd(data, pos)
            if size >= 0:
                values.append(data[pos : pos + size])
                pos += size
            else:
                values.append(None)
            offsets.append(base_offset + delta)
            timestamps.append(append_time if append_time is not None else base_ts + ts_delta)
            if headers:
                pos = self._parse_headers(data, pos)
            if pos > record_end:
                raise CorruptRecordError(f"record at offset {base_offset + delta} overruns")
            pos = record_end
        return pos

    def _parse_headers(self, data: bytes, pos: int) -> int:
        rd = read_zigzag_varint
        count, pos = rd(data, pos)
        for _ in range(count):
            size, pos = rd(data, pos)
            self.header_keys.append(data[pos : pos + size].decode())
            pos += size
            size, pos = rd(data, pos)
            if size >= 0:
                self.header_values.append(data[pos : pos + size])
                pos += size
            else:
                self.header_values.append(None)
        self.header_offsets.append(len(self.header_keys))
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

        struct_type = list_type.value_type
        items = pa.StructArray.from_arrays(
            [pa.array(self.header_keys, pa.string()), pa.array(self.header_values, pa.binary())],
            fields=list(struct_type),
        )
        ends = self.header_offsets
        empty = pa.array([ends[i] == ends[i + 1] for i in range(len(ends) - 1)], pa.bool_())
        return pa.ListArray.from_arrays(
            pa.array(ends, pa.int32()), items, type=list_type, mask=empty
        )


def _millis_to_timestamp(millis: pa.Array, timestamp_type: pa.DataType) -> pa.Array:
    import pyarrow.compute as pc

    return pc.multiply(millis, 1000).cast(timestamp_type)
