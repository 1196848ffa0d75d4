"""Log compaction for cleanup.policy=compact (Kafka's LogCleaner, Cleaner, OffsetMap).

A log splits at its "first dirty offset" (kept per partition in the log dir's
`cleaner-offset-checkpoint`, `<topic> <partition> <offset>` lines) into a clean head
and a dirty tail. One cleaning pass:

1. finds the cleanable range [first dirty, first uncleanable): it ends at the active
   segment, the last stable offset, and the first segment younger than
   min.compaction.lag.ms; the pass runs when dirty bytes / cleanable bytes reach
   min.cleanable.dirty.ratio;
2. builds the offset map: key -> offset of its last record in the dirty range;
3. rewrites every segment before the first uncleanable offset, grouped into new
   segments of at most segment.bytes, keeping a record only if no later record has
   its key. Records without a key go. A tombstone (null value) stays until its
   batch's delete horizon passes: the first pass that keeps it stamps the batch with
   deleteHorizonMs = now + delete.retention.ms, a later pass drops it;
4. swaps the new segments in: written as `.cleaned`, renamed `.swap`, the old
   segments renamed `.deleted` (deleted after file.delete.delay.ms), the swap files
   renamed to their final names. Recovery finishes an interrupted swap (log_loader).

Offsets never change: kept records keep their offsets, batches keep their base offset,
producer id, epoch and sequence. Batches whose records all stay are copied byte for
byte.

Transactions (kt/storage/cleaned_transactions.py): the batches of aborted transactions
count for no key in the offset map and are removed. A COMMIT or ABORT marker stays while
a pass still finds a batch of its transaction; the first pass that finds none stamps its
delete horizon, and a pass after the horizon removes it. An aborted transaction's entry
is carried into the cleaned segment's transaction index while its batches are there. The
last batch of a producer still active stays, emptied of its records if none is kept, so
that its sequence and epoch survive (BatchRetention.RETAIN_EMPTY). The cleanable range
never passes the last stable offset, so an open transaction is never cleaned.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kt.storage import compression, names
from kt.storage.checkpoints import CheckpointError, OffsetCheckpointFile
from kt.storage.cleaned_transactions import CleanedTransactionMetadata
from kt.storage.file_records import frame_at
from kt.storage.log_segment import LogSegment
from kt.storage.record_batch import RecordBatch, build_batch

log = logging.getLogger(__name__)

CLEANER_CHECKPOINT_FILE = "cleaner-offset-checkpoint"
MAX_SEGMENT_OFFSET_SPAN = 0x7FFFFFFF
# Retained batches are written in chunks of about this size, as Kafka's cleaner fills and
# writes its write buffer (a share of log.cleaner.io.buffer.size, 512 KiB by default).
WRITE_BUFFER_BYTES = 512 * 1024


@dataclass
class CleanerStats:
    """What one pass did (Kafka's CleanerStats, the figures its log line prints)."""

    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_retained: int = 0
    segments_before: int = 0
    segments_after: int = 0


@dataclass(frozen=True)
class CleanableRange:
    first_dirty: int
    first_uncleanable: int
    clean_bytes: int
    dirty_bytes: int

    @property
    def dirty_ratio(self) -> float:
        total = self.clean_bytes + self.dirty_bytes
        return self.dirty_bytes / total if total else 0.0


class LogCleaner:
    """Cleans compacted logs; `clock` gives wall-clock milliseconds.

    Invariants: a log's first dirty offset only moves forward while it exists; a pass
    never touches the active segment nor anything at or past the last stable offset.
    """

    def __init__(self, clock: Callable[[], int]) -> None:
        self.clock = clock

    # -- checkpoints ------------------------------------------------------------------

    @staticmethod
    def _checkpoint(log_: Any) -> tuple[OffsetCheckpointFile, tuple[str, int]]:
        path = os.path.join(os.path.dirname(log_.dir), CLEANER_CHECKPOINT_FILE)
        return OffsetCheckpointFile(path), names.parse_topic_partition_name(log_.name)

    @staticmethod
    def _read(checkpoint: OffsetCheckpointFile) -> dict[tuple[str, int], int]:
        """The cleaned offsets; an unreadable checkpoint is none (every log is cleaned from
        its start again, which gives the same result)."""
        try:
            return checkpoint.read()
        except CheckpointError as e:
            log.warning("Ignoring the cleaner checkpoint: %s", e)
            return {}

    def first_dirty_offset(self, log_: Any) -> int:
        checkpoint, tp = self._checkpoint(log_)
        offset = self._read(checkpoint).get(tp, log_.log_start_offset)
        if not log_.log_start_offset <= offset <= log_.log_end_offset:
            offset = log_.log_start_offset  # stale checkpoint: clean from the start
        return offset

    def _write_checkpoint(self, log_: Any, offset: int) -> None:
        checkpoint, tp = self._checkpoint(log_)
        entries = self._read(checkpoint)
        entries[tp] = offset
        checkpoint.write(entries)

    # -- choosing --------------------------------------------------------------------

    def cleanable_range(self, log_: Any, now_ms: int) -> CleanableRange:
        first_dirty = self.first_dirty_offset(log_)
        segments = log_.segments
        uncleanable = min(log_.active_segment.base_offset, log_.last_stable_offset)
        lag = log_.config.min_compaction_lag_ms
        if lag > 0:
            for segment in segments:
                if now_ms - segment.largest_timestamp() < lag:
                    uncleanable = min(uncleanable, segment.base_offset)
                    break
        # The range ends at a segment boundary: the last segment base <= uncleanable.
        bases = [s.base_offset for s in segments if s.base_offset <= uncleanable]
        uncleanable = max(bases[-1] if bases else first_dirty, first_dirty)
        clean = dirty = 0
        for i, segment in enumerate(segments):
            end = segments[i + 1].base_offset if i + 1 < len(segments) else log_.log_end_offset
            if end <= first_dirty:
                clean += segment.size
            elif segment.base_offset < uncleanable:
                dirty += segment.size
        return CleanableRange(first_dirty, uncleanable, clean, dirty)

    def clean_logs(self, logs: Iterable[Any]) -> list[CleanerStats]:
        """One round over `logs`: each compacted log dirty enough gets one pass."""
        done = []
        now = self.clock()
        for log_ in logs:
            if not log_.config.compact:
                continue
            r = self.cleanable_range(log_, now)
            if r.dirty_bytes and r.dirty_ratio >= log_.config.min_cleanable_dirty_ratio:
                done.append(self.clean(log_, r, now))
        return done

    # -- cleaning --------------------------------------------------------------------

    def clean(self, log_: Any, r: CleanableRange, now_ms: int) -> CleanerStats:
        stats = CleanerStats(segments_before=len(log_.segments))
        offset_map = build_offset_map(log_, r.first_dirty, r.first_uncleanable, stats)
        horizon = now_ms + log_.config.delete_retention_ms
        doomed = [s for s in log_.segments if s.base_offset < r.first_uncleanable]
        txns = CleanedTransactionMetadata()  # carried from one group to the next
        for group in group_segments_by_size(doomed, log_.config.segment_bytes):
            cleaned = self._clean_segments(log_, group, offset_map, now_ms, horizon, stats, txns)
            log_.replace_segments(cleaned, group)
        stats.segments_after = len(log_.segments)
        self._write_checkpoint(log_, r.first_uncleanable)
        log.info(
            "Cleaned log %s: %d/%d records retained, %d -> %d bytes, %d -> %d segments",
            log_.name, stats.records_retained, stats.records_read, stats.bytes_read,
            stats.bytes_written, stats.segments_before, stats.segments_after,
        )  # fmt: skip
        return stats

    def _clean_segments(
        self,
        log_: Any,
        group: list[LogSegment],
        offset_map: dict[bytes, int],
        now_ms: int,
        horizon: int,
        stats: CleanerStats,
        txns: CleanedTransactionMetadata,
    ) -> LogSegment:
        base = group[0].base_offset
        path = os.path.join(log_.dir, names.log_file_name(base, names.CLEANED_FILE_SUFFIX))
        if os.path.exists(path):
            os.unlink(path)  # left by an interrupted pass
        cleaned = LogSegment.open(log_.dir, base, log_.config, now_ms, names.CLEANED_FILE_SUFFIX)
        txns.cleaned_index = cleaned.txn_index
        filter_ = BatchFilter(offset_map, now_ms, horizon, stats, txns, last_records(log_))
        for i, segment in enumerate(group):
            # All of the segment's aborted transactions, those begun before it included:
            # the cleaned segment's transaction index is rebuilt from them.
            upper = group[i + 1].base_offset if i + 1 < len(group) else segment.read_next_offset()
            txns.add_aborted_transactions(
                log_.collect_aborted_transactions(segment.base_offset, upper)
            )
            buffer, entries = bytearray(), []
            for batch, raw in segment.log.batches():
                stats.bytes_read += len(raw)
                kept = filter_.retained(batch, raw)
                if kept:  # indexed by what is written, as recovery would index it
                    frame = frame_at(kept, 0, 0, len(kept))
                    entries.append((len(buffer), len(kept), frame.last_offset, frame.max_timestamp))
                    buffer += kept
                    if len(buffer) >= WRITE_BUFFER_BYTES:
                        _write_retained(cleaned, buffer, entries, stats)
            _write_retained(cleaned, buffer, entries, stats)
        cleaned.on_become_inactive()
        cleaned.flush()
        return cleaned


def _write_retained(
    cleaned: LogSegment, buffer: bytearray, entries: list, stats: CleanerStats
) -> None:
    """Append the buffered retained batches to the cleaned segment and empty the buffer."""
    if entries:
        cleaned.append(buffer, entries)
        stats.bytes_written += len(buffer)
        buffer.clear()
        entries.clear()


def last_records(log_: Any) -> dict[int, tuple[int, int]]:
    """producer id -> (last data offset or -1, epoch) of each active producer
    (UnifiedLog.lastRecordsOfActiveProducers)."""
    return {
        pid: (entry.last_data_offset, entry.producer_epoch)
        for pid, entry in log_.producer_state.producers.items()
    }


def build_offset_map(log_: Any, start: int, end: int, stats: CleanerStats) -> dict[bytes, int]:
    """Key -> offset of the key's last record in [start, end), aborted batches aside."""
    txns = CleanedTransactionMetadata()
    txns.add_aborted_transactions(log_.collect_aborted_transactions(start, end))
    offset_map: dict[bytes, int] = {}
    for segment in log_.segments:
        if segment.base_offset >= end:
            break
        for batch, _ in segment.log.batches():
            if batch.last_offset < start:
                continue
            if batch.base_offset >= end:
                break
            if getattr(batch, "is_control", False):
                txns.on_control_batch_read(batch)
                continue
            if txns.on_batch_read(batch):
                continue  # an aborted transaction's batch counts for no key
            for record in batch.records():
                if start <= record.offset < end and record.key is not None:
                    offset_map[record.key] = record.offset
    return offset_map


class BatchFilter:
    """Which records of each batch a pass keeps (Kafka's cleaner RecordFilter over
    MemoryRecords.filterTo): a batch of an aborted transaction goes; a marker whose
    transaction has no batch left goes once its delete horizon has passed (the first pass
    that finds it so stamps the horizon); the last batch of an active producer stays,
    emptied of its records if none is kept, so that its sequence and epoch survive."""

    def __init__(
        self,
        offset_map: dict[bytes, int],
        now_ms: int,
        horizon: int,
        stats: CleanerStats,
        txns: CleanedTransactionMetadata,
        last_records: dict[int, tuple[int, int]],
    ) -> None:
        self.offset_map = offset_map
        self.now_ms = now_ms
        self.horizon = horizon
        self.stats = stats
        self.txns = txns
        self.last_records = last_records

    def _is_last_of_active_producer(self, batch: Any) -> bool:
        last = self.last_records.get(getattr(batch, "producer_id", -1))
        if last is None:
            return False
        last_data_offset, epoch = last
        if last_data_offset >= 0:
            return batch.last_offset == last_data_offset
        return batch.is_control and batch.producer_epoch == epoch

    def retained(self, batch: Any, data: bytes | memoryview) -> bytes:
        """The bytes to keep of `batch`: itself, a rebuilt batch of the kept records, an
        empty batch, or b""."""
        raw = data[batch.position : batch.position + batch.size]
        control = getattr(batch, "is_control", False)
        if control:
            can_discard = self.txns.on_control_batch_read(batch)
            batch_horizon = batch.delete_horizon_ms
            discard = can_discard and batch_horizon is not None and batch_horizon <= self.now_ms
        else:
            can_discard = discard = self.txns.on_batch_read(batch)
        keep_empty = getattr(batch, "producer_id", -1) >= 0 and self._is_last_of_active_producer(
            batch
        )
        records = batch.records()
        if not control:
            self.stats.records_read += len(records)
        if discard and not keep_empty:
            return b""
        if discard:
            kept = []
        elif control:
            kept = records
        else:
            kept = [r for r in records if self._retains(batch, r)]
            self.stats.records_retained += len(kept)
        if not isinstance(batch, RecordBatch):
            return raw if kept else b""  # magic 0/1 batches are kept whole while any record stays
        needs_horizon = batch.delete_horizon_ms is None and (
            (control and can_discard) or any(r.value is None for r in kept)
        )
        if kept and len(kept) == len(records) and not needs_horizon:
            return raw
        if not kept and not keep_empty:
            return b""
        return build_batch(
            kept,
            base_offset=batch.base_offset,
            compression_type=batch.compression_type if kept else compression.NONE,
            timestamp_type=batch.timestamp_type,
            producer_id=batch.producer_id,
            producer_epoch=batch.producer_epoch,
            base_sequence=batch.base_sequence,
            is_transactional=batch.is_transactional,
            is_control=control,
            partition_leader_epoch=batch.partition_leader_epoch,
            delete_horizon_ms=(self.horizon if needs_horizon else batch.delete_horizon_ms)
            if kept else None,
            last_offset=batch.last_offset,
            max_timestamp=None if kept else batch.max_timestamp,
        )  # fmt: skip

    def _retains(self, batch: Any, record: Any) -> bool:
        """A data record stays if no later record has its key, and, as a tombstone, while
        its batch's delete horizon has not passed."""
        if record.key is None:
            return False
        if record.offset < self.offset_map.get(record.key, -1):
            return False  # a later record has this key
        horizon = getattr(batch, "delete_horizon_ms", None)
        return record.value is not None or horizon is None or self.now_ms < horizon


def group_segments_by_size(segments: list[LogSegment], max_size: int) -> list[list[LogSegment]]:
    """Consecutive segments whose total size fits `max_size` and whose offsets fit one
    segment's 32-bit relative range (Cleaner.groupSegmentsBySize)."""
    groups: list[list[LogSegment]] = []
    i = 0
    while i < len(segments):
        group = [segments[i]]
        size = segments[i].size
        i += 1
        while i < len(segments):
            nxt = segments[i]
            span_end = segments[i + 1].base_offset if i + 1 < len(segments) else None
            too_far = span_end is not None and span_end - group[0].base_offset > (
                MAX_SEGMENT_OFFSET_SPAN
            )
            if size + nxt.size > max_size or too_far:
                break
            group.append(nxt)
            size += nxt.size
            i += 1
        groups.append(group)
    return groups
