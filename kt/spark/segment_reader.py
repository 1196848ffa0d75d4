"""Read one partition's segment files directly, read-only: the `log.dirs` reader.

A partition directory `<topic>-<partition>/` holds segments named by base offset
(kt/storage/names.py): `<base>.log` with batches back to back, `<base>.index` (8-byte
entries: relativeOffset int32 = a batch's last offset - base, position int32) and
`<base>.timeindex` (12-byte entries: timestamp int64, relativeOffset int32). Both
indexes are sparse and ascending; the active segment's files are preallocated, so
their unwritten tail reads as zero entries.

This reader may run on the files of a live broker, on a stopped one, or on a copy: it
never creates, resizes, locks or recovers a file (kt.storage's Log and indexes open
their files read-write to do all of that). It maps files read-only, finds its place
with the indexes, and stops quietly at a torn batch at the end of the last segment.

Transactions are read as a read_committed consumer reads them: control batches never
come out, and a transactional batch comes out only if the first marker of its
producer after it is a COMMIT. Markers are found by walking the headers ahead of the
reader (no record decoding), so the end of a range must not pass the last stable
offset, which `end_offsets` computes.
"""

from __future__ import annotations

import bisect
import mmap
import os
import struct
from collections.abc import Iterator

from kt.errors import CorruptRecordError
from kt.spark.transactions import TransactionOutcomes, marker_type
from kt.storage import names
from kt.storage.control_records import ABORT, COMMIT
from kt.storage.records import Batch, iter_batches

OFFSET_ENTRY = struct.Struct(">ii")  # relative offset, position
TIME_ENTRY = struct.Struct(">qi")  # timestamp, relative offset


def map_read_only(path: str) -> mmap.mmap | None:
    """The whole file mapped read-only, or None if it is missing or empty."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            return mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ) if size else None
    except FileNotFoundError:
        return None


class SparseIndex:
    """A read-only view of an `.index` or `.timeindex` file.

    Invariants: entries [0, entries) are the written ones, ascending in both fields; an
    entry of all zero bytes past the first one is unwritten space (a preallocated file).
    """

    def __init__(self, path: str, entry: struct.Struct) -> None:
        self.entry = entry
        self.mm = map_read_only(path)
        self.entries = self._count_written()

    def _count_written(self) -> int:
        if self.mm is None:
            return 0
        size = self.entry.size
        zero = bytes(size)
        lo, hi = 1, len(self.mm) // size  # entry 0 counts as written if present
        if hi == 0:
            return 0
        while lo < hi:  # first unwritten slot in [1, hi]
            mid = (lo + hi) // 2
            if self.mm[mid * size : (mid + 1) * size] == zero:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def last(self) -> tuple[int, int] | None:
        """The last written entry, or None."""
        if not self.entries:
            return None
        return self.entry.unpack_from(self.mm, (self.entries - 1) * self.entry.size)

    def floor(self, target: int, field: int) -> tuple[int, int] | None:
        """The last entry whose `field` (0 or 1) is <= target, or None."""
        lo, hi, found = 0, self.entries - 1, None
        unpack, size = self.entry.unpack_from, self.entry.size
        while lo <= hi:
            mid = (lo + hi) // 2
            entry = unpack(self.mm, mid * size)
            if entry[field] <= target:
                found, lo = entry, mid + 1
            else:
                hi = mid - 1
        return found


class PartitionLog:
    """The segments of one partition directory, read-only.

    Invariants: `bases` are the segments' base offsets, ascending; a segment's batches
    hold offsets below the next segment's base; files are mapped once and kept until
    close().
    """

    def __init__(self, directory: str, log_start_offset: int | None = None) -> None:
        self.dir = directory
        self.topic, self.partition = names.parse_topic_partition_name(os.path.basename(directory))
        self.bases = sorted(
            names.offset_from_file_name(f)
            for f in os.listdir(directory)
            if f.endswith(names.LOG_FILE_SUFFIX) and f[:20].isdigit()
        )
        self._checkpointed_start = log_start_offset
        self._maps: dict[int, mmap.mmap | None] = {}

    def close(self) -> None:
        for mm in self._maps.values():
            if mm is not None:
                try:
                    mm.close()
                except BufferError:
                    pass  # a batch still refers to it; it goes with the last reference
        self._maps.clear()

    def __enter__(self) -> PartitionLog:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _segment(self, base: int) -> mmap.mmap | None:
        if base not in self._maps:
            self._maps[base] = map_read_only(os.path.join(self.dir, names.log_file_name(base)))
        return self._maps[base]

    def _index(self, base: int) -> SparseIndex:
        return SparseIndex(os.path.join(self.dir, names.offset_index_file_name(base)), OFFSET_ENTRY)

    # -- offsets ----------------------------------------------------------------------

    def earliest_offset(self) -> int:
        """The log start offset: the first segment's base, or the checkpointed start above it."""
        first = self.bases[0] if self.bases else 0
        return max(first, self._checkpointed_start or 0)

    def log_end_offset(self) -> int:
        """The offset after the last whole batch (the base of an empty active segment)."""
        if not self.bases:
            return self.earliest_offset()
        last = len(self.bases) - 1
        base = self.bases[last]
        entry = self._index(base).last()
        end = base
        for batch in self._segment_batches(last, entry[1] if entry else 0, True):
            end = batch.next_offset
        return max(end, self.earliest_offset())

    def end_offsets(self, from_offset: int | None = None) -> tuple[int, int]:
        """(log end offset, last stable offset), walking batch headers from `from_offset`.

        The last stable offset is the first offset of the earliest transaction still
        open at the end of the log (without its marker), else the log end offset. A
        transaction open before `from_offset` is not seen: callers start at an offset
        that was itself a last stable offset, or at the log start.
        """
        end = self.log_end_offset()
        start = self.earliest_offset() if from_offset is None else from_offset
        open_txns: dict[int, int] = {}
        for batch in self._walk(start, tolerate_torn_tail=True):
            if batch.magic != 2 or not batch.is_transactional:
                continue
            if batch.is_control:
                if marker_type(batch) in (ABORT, COMMIT):
                    open_txns.pop(batch.producer_id, None)
            else:
                open_txns.setdefault(batch.producer_id, batch.base_offset)
        return end, min(open_txns.values(), default=end)

    def offset_for_timestamp(self, timestamp: int) -> int | None:
        """The first offset whose record timestamp is >= `timestamp` (ListOffsets), or None.

        Per segment, as LogSegment.findOffsetByTimestamp: the time index gives an offset
        not after the answer, the offset index a position for it, then batch headers
        (max timestamps) are walked and only the batch holding the answer is decoded.
        """
        start = self.earliest_offset()
        for i, base in enumerate(self.bases):
            if i + 1 < len(self.bases) and self.bases[i + 1] <= start:
                continue
            path = os.path.join(self.dir, names.time_index_file_name(base))
            times = SparseIndex(path, TIME_ENTRY)
            entry = times.floor(timestamp, 0)
            from_offset = max(start, base + entry[1] if entry else base)
            limit = self.bases[i + 1] if i + 1 < len(self.bases) else None
            for batch in self._walk(from_offset, tolerate_torn_tail=True):
                if limit is not None and batch.last_offset >= limit:
                    break
                if batch.max_timestamp < timestamp or (batch.magic == 2 and batch.is_control):
                    continue
                for record in batch.records():
                    if record.offset >= from_offset and record.timestamp >= timestamp:
                        return record.offset
        return None

    # -- batches ----------------------------------------------------------------------

    def _segment_batches(self, i: int, position: int, tolerate_torn_tail: bool) -> Iterator[Batch]:
        mm = self._segment(self.bases[i])
        if mm is None:
            return
        batches = iter_batches(mm, position)
        while True:
            try:
                batch = next(batches, None)
            except CorruptRecordError:
                if tolerate_torn_tail and i == len(self.bases) - 1:
                    return
                raise
            if batch is None:
                return
            yield batch

    def _walk(self, start: int, tolerate_torn_tail: bool = False) -> Iterator[Batch]:
        """Every batch whose last offset is >= `start`, in offset order, across segments.

        A batch that cannot be framed raises CorruptRecordError, except at the end of
        the last segment when `tolerate_torn_tail` (a write in progress or a crash).
        """
        first = max(0, bisect.bisect_right(self.bases, start) - 1)
        for i in range(first, len(self.bases)):
            position = 0
            if i == first:
                entry = self._index(self.bases[i]).floor(start - self.bases[i], 0)
                position = entry[1] if entry else 0
            for batch in self._segment_batches(i, position, tolerate_torn_tail):
                if batch.last_offset >= start:
                    yield batch

    def batches(self, start: int, end: int, read_committed: bool = True) -> Iterator[Batch]:
        """The data batches holding offsets in [start, end), CRCs checked; at
        read_committed, only those of transactions that did not abort.

        A batch may hold offsets outside the range at either edge: callers keep only
        the records inside it.
        """
        outcomes = TransactionOutcomes(lambda offset: self._walk(offset, tolerate_torn_tail=True))
        for batch in self._walk(start):
            # A legacy compressed wrapper learns its base offset by decompressing:
            # ask only when the last offset cannot settle it.
            if batch.last_offset >= end and batch.base_offset >= end:
                return
            batch.ensure_valid()
            if batch.magic == 2:
                if batch.is_control:
                    continue
                if read_committed and batch.is_transactional and outcomes.aborted(batch):
                    continue
            yield batch
