"""Decode record batches into Arrow record batches for Spark, whole columns at a time.

kt.storage's RecordBatch.records() builds one Record object per record, which the
broker's tools want. Spark wants columns, so a ColumnBuilder keeps the decompressed
records of many v2 batches side by side in one buffer and reads them all at once with
kt.spark.record_arrays: one short Python step per record finds where each record
starts, numpy reads every other field for all records together, and Arrow copies keys,
values and headers out of the buffer by (start, length) with one `take` per column.
Legacy (magic 0/1) batches are rare and go through their Record objects.

The Arrow batches hold up to ROWS_PER_ARROW_BATCH rows: big enough that the fixed cost
per batch (a few numpy and Arrow calls, one Arrow IPC message to the JVM) is small
beside the rows, small enough that the JVM starts on the first batch while the next one
is decoded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from kt.storage import compression
from kt.storage.batch_header import HEADER_SIZE
from kt.storage.record_batch import CREATE_TIME, LOG_APPEND_TIME

if TYPE_CHECKING:
    import pyarrow as pa

    from kt.spark.record_arrays import RecordArrays
    from kt.storage.records import Batch

ROWS_PER_ARROW_BATCH = 65_536
BYTES_PER_ARROW_BATCH = 64 << 20  # decompressed records held before a flush

# What a pending v2 batch keeps: one row of int64 per batch, these columns.
SIZE, COUNT, BASE_OFFSET, TIMESTAMP, KIND, START, END = range(7)


class ColumnBuilder:
    """The rows of one topic-partition's offset range, gathered as columns.

    Invariants: only records with `start <= offset < end` (the bounds when their batch
    was added) come out; rows come out in the order their batches were added; pending
    v2 batches are decoded together by flush(), so len() counts records, some of which
    the bounds may still drop.
    """

    def __init__(self, topic: str, partition: int, start: int, end: int, schema: pa.Schema) -> None:
        self.topic = topic
        self.partition = partition
        self.start = start
        self.end = end
        self.schema = schema
        self.include_headers = "headers" in schema.names
        self._parts: list[pa.RecordBatch] = []  # decoded, waiting for flush()
        self._pending: list[bytes | memoryview] = []  # each v2 batch's records
        self._batches: list[tuple[int, ...]] = []  # SIZE, COUNT, ... END of each
        self._records = 0
        self._bytes = 0

    def __len__(self) -> int:
        return self._records

    @property
    def full(self) -> bool:
        """Enough is gathered for one Arrow batch: time to flush()."""
        return self._records >= ROWS_PER_ARROW_BATCH or self._bytes >= BYTES_PER_ARROW_BATCH

    def add(self, batch: Batch) -> None:
        """Take the records of `batch` that fall in [start, end)."""
        if batch.magic != 2:
            self._decode_pending()
            self._parts.append(self._legacy(batch))
            return
        h = batch.header
        records = memoryview(h.buf)[h.position + HEADER_SIZE : h.position + h.size]
        if h.compression != compression.NONE:
            records = compression.decompress(h.compression, records)
        if h.is_log_append_time:  # every record takes the batch's max timestamp
            timestamp, kind = h.max_timestamp, LOG_APPEND_TIME
        else:
            timestamp, kind = h.base_timestamp, CREATE_TIME
        self._batches.append((len(records), h.records_count, h.base_offset, timestamp, kind,
                              self.start, self.end))  # fmt: skip
        self._pending.append(records)
        self._records += h.records_count
        self._bytes += len(records)

    def flush(self) -> list[pa.RecordBatch]:
        """What was added since the last flush, as one Arrow batch (none if no rows)."""
        self._decode_pending()
        parts = [p for p in self._parts if p.num_rows]
        self._parts = []
        self._records = 0
        if len(parts) > 1:
            import pyarrow as pa

            parts = pa.Table.from_batches(parts, self.schema).combine_chunks().to_batches()
        return parts

    # -- v2 ---------------------------------------------------------------------------

    def _decode_pending(self) -> None:
        if not self._pending:
            return
        from kt.spark.record_arrays import PADDING, frame, parse

        data = b"".join([*self._pending, PADDING])
        meta = np.array(self._batches, np.int64).reshape(-1, END + 1)
        self._pending, self._batches, self._bytes = [], [], 0
        sizes, counts = meta[:, SIZE], meta[:, COUNT]
        begins = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        spans = zip(begins.tolist(), sizes.tolist(), counts.tolist(), strict=True)
        heads = frame(data, list(spans))
        buf = np.frombuffer(data, np.uint8)
        rec = parse(buf, heads, self.include_headers)

        def per_record(column: int) -> np.ndarray:
            return np.repeat(meta[:, column], counts)

        offsets = per_record(BASE_OFFSET) + rec.offset_deltas
        kinds = per_record(KIND)
        stamps = per_record(TIMESTAMP)
        timestamps = np.where(kinds == LOG_APPEND_TIME, stamps, stamps + rec.timestamp_deltas)
        keep = (offsets >= per_record(START)) & (offsets < per_record(END))
        import pyarrow as pa

        data_buffer = pa.py_buffer(data)
        keys, values = _slices(data_buffer, [(rec.key_starts, rec.key_lengths),
                                             (rec.value_starts, rec.value_lengths)])  # fmt: skip
        headers = self._headers(data_buffer, rec) if self.include_headers else None
        batch = self._assemble(keys, values, offsets, timestamps, kinds, headers)
        if not keep.all():
            batch = batch.filter(pa.array(keep))
        self._parts.append(batch)

    def _headers(self, data: pa.Buffer, rec: RecordArrays) -> pa.Array:
        """Spark's headers column: a list of (key, value) structs, null for no headers."""
        import pyarrow as pa

        list_type = self.schema.field("headers").type
        keys, values = _slices(data, [
            (rec.header_key_starts, rec.header_key_lengths),
            (rec.header_value_starts, rec.header_value_lengths),
        ])  # fmt: skip
        items = pa.StructArray.from_arrays(
            [keys.cast(pa.string()), values], fields=list(list_type.value_type)
        )
        offsets = rec.header_offsets
        empty = offsets[1:] == offsets[:-1]
        return pa.ListArray.from_arrays(
            pa.array(offsets.astype(np.int32)), items, type=list_type, mask=pa.array(empty)
        )

    # -- both -------------------------------------------------------------------------

    def _assemble(
        self,
        keys: pa.Array,
        values: pa.Array,
        offsets: np.ndarray,
        timestamps_ms: np.ndarray,
        kinds: np.ndarray,
        headers: pa.Array | None,
    ) -> pa.RecordBatch:
        import pyarrow as pa

        n = len(offsets)
        timestamp_type = self.schema.field("timestamp").type
        micros = pa.py_buffer(np.ascontiguousarray(timestamps_ms * 1000, np.int64))
        columns = [
            keys,
            values,
            pa.repeat(pa.scalar(self.topic, pa.string()), n),
            pa.repeat(pa.scalar(self.partition, pa.int32()), n),
            pa.array(np.ascontiguousarray(offsets, np.int64)),
            pa.Array.from_buffers(timestamp_type, n, [None, micros]),
            pa.array(kinds.astype(np.int32)),
        ]
        if self.include_headers:
            columns.append(headers)
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)

    # -- legacy -----------------------------------------------------------------------

    def _legacy(self, batch: Batch) -> pa.RecordBatch:
        import pyarrow as pa

        records = [r for r in batch.records() if self.start <= r.offset < self.end]
        n = len(records)
        headers = None
        if self.include_headers:
            headers = pa.nulls(n, self.schema.field("headers").type)
        return self._assemble(
            pa.array([r.key for r in records], pa.binary()),
            pa.array([r.value for r in records], pa.binary()),
            np.array([r.offset for r in records], np.int64),
            np.array([r.timestamp for r in records], np.int64),
            np.full(n, batch.timestamp_type, np.int64),
            headers,
        )


def _slices(data: pa.Buffer, fields: list[tuple[np.ndarray, np.ndarray]]) -> list[pa.Array]:
    """One binary array per (starts, lengths) field: data[start:start + length], null where
    the length is negative.

    The fields of all rows, taken in row order, must lie in ascending order in `data`:
    then their bounds are the offsets of one binary array over `data` (the gaps between
    fields are elements too), and each field is one Arrow `take` of its elements.
    """
    import pyarrow as pa

    n, width = len(fields[0][0]), 2 * len(fields)
    if n == 0:
        return [pa.array([], pa.binary()) for _ in fields]
    bounds = np.empty((n, width), np.int64)
    for i, (starts, lengths) in enumerate(fields):
        bounds[:, 2 * i] = starts
        bounds[:, 2 * i + 1] = starts + np.maximum(lengths, 0)
    large = int(bounds[-1, -1]) >= 1 << 31
    bounds = bounds.ravel().astype(np.int64 if large else np.int32)
    elements = pa.Array.from_buffers(
        pa.large_binary() if large else pa.binary(), n * width - 1,
        [None, pa.py_buffer(bounds), data],
    )  # fmt: skip
    out = []
    for i, (_, lengths) in enumerate(fields):
        where = np.arange(2 * i, n * width, width)
        nulls = lengths < 0
        taken = elements.take(pa.array(where, mask=nulls) if nulls.any() else pa.array(where))
        out.append(taken.cast(pa.binary()) if large else taken)
    return out
