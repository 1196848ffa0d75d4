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
byte; control batches are kept as they are.

Transactions: the batches of aborted transactions (found in the segments' transaction
indexes) count for no key in the offset map and are removed; their markers stay, and
so do the cleaned segment's transaction index entries. The cleanable range never
passes the last stable offset, so an open transaction is never cleaned.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kt.storage import names
from kt.storage.checkpoints import CheckpointError, OffsetCheckpointFile
from kt.storage.file_records import frame_at
from kt.storage.log_segment import LogSegment
from kt.storage.record_batch import RecordBatch, build_batch
from kt.storage.transaction_index import AbortedTxn

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
        aborted = AbortedBatches(
            log_.collect_aborted_transactions(log_.log_start_offset, r.first_uncleanable)
        )
        offset_map = build_offset_map(log_, r.first_dirty, r.first_uncleanable, stats, aborted)
        horizon = now_ms + log_.config.delete_retention_ms
        doomed = [s for s in log_.segments if s.base_offset < r.first_uncleanable]
        for group in group_segments_by_size(doomed, log_.config.segment_bytes):
            cleaned = self._clean_segments(log_, group, offset_map, now_ms, horizon, stats, aborted)
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
        aborted: AbortedBatches,
    ) -> LogSegment:
        base = group[0].base_offset
        path = os.path.join(log_.dir, names.log_file_name(base, names.CLEANED_FILE_SUFFIX))
        if os.path.exists(path):
            os.unlink(path)  # left by an interrupted pass
        cleaned = LogSegment.open(log_.dir, base, log_.config, now_ms, names.CLEANED_FILE_SUFFIX)
        for segment in group:
            buffer, entries = bytearray(), []
            for batch, raw in segment.log.batches():
                stats.bytes_read += len(raw)
                if aborted.contains(batch):
                    stats.records_read += batch.last_offset - batch.base_offset + 1
                    continue  # a batch of an aborted transaction
                kept = retained_batch(batch, raw, offset_map, now_ms, horizon, stats)
                if kept:  # indexed by what is written, as recovery would index it
                    frame = frame_at(kept, 0, 0, len(kept))
                    entries.append((len(buffer), len(kept), frame.last_offset, frame.max_timestamp))
                    buffer += kept
                    if len(buffer) >= WRITE_BUFFER_BYTES:
                        _write_retained(cleaned, buffer, entries, stats)
            _write_retained(cleaned, buffer, entries, stats)
            for txn in segment.txn_index.entries:  # their markers stay
                cleaned.txn_index.append(txn)
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


class AbortedBatches:
    """Which transactional batches belong to aborted transactions: those of a producer
    between a transaction's first offset and its ABORT marker."""

    def __init__(self, aborted: list[AbortedTxn]) -> None:
        self.ranges: dict[int, list[tuple[int, int]]] = {}
        for txn in aborted:
            self.ranges.setdefault(txn.producer_id, []).append((txn.first_offset, txn.last_offset))

    def contains(self, batch: Any) -> bool:
        if not self.ranges or not getattr(batch, "is_transactional", False):
            return False
        if getattr(batch, "is_control", False):
            return False
        offset = batch.base_offset
        return any(
            first <= offset <= last for first, last in self.ranges.get(batch.producer_id, ())
        )


def build_offset_map(
    log_: Any, start: int, end: int, stats: CleanerStats, aborted: AbortedBatches
) -> dict[bytes, int]:
    """Key -> offset of the key's last record in [start, end), aborted batches aside."""
    offset_map: dict[bytes, int] = {}
    for segment in log_.segments:
        if segment.base_offset >= end:
            break
        for batch, _ in segment.log.batches():
            if batch.last_offset < start or getattr(batch, "is_control", False):
                continue
            if aborted.contains(batch):
                continue
            if batch.base_offset >= end:
                break
            for record in batch.records():
                if start <= record.offset < end and record.key is not None:
                    offset_map[record.key] = record.offset
    return offset_map


def retained_batch(
    batch: Any,
    data: bytes | memoryview,
    offset_map: dict[bytes, int],
    now_ms: int,
    horizon: int,
    stats: CleanerStats,
) -> bytes:
    """The bytes to keep of `batch`: itself, a rebuilt batch of the kept records, or b""."""
    raw = data[batch.position : batch.position + batch.size]
    if getattr(batch, "is_control", False):
        return raw
    batch_horizon = getattr(batch, "delete_horizon_ms", None)
    records = batch.records()
    stats.records_read += len(records)
    kept = []
    for record in records:
        if record.key is None:
            continue
        latest = offset_map.get(record.key, -1)
        if record.offset < latest:
            continue  # a later record has this key
        if record.value is None and batch_horizon is not None and now_ms >= batch_horizon:
            continue  # a tombstone past its delete horizon
        kept.append(record)
    stats.records_retained += len(kept)
    if not kept:
        return b""
    stamp = batch_horizon is None and any(r.value is None for r in kept)
    if len(kept) == len(records) and not stamp:
        return raw
    if not isinstance(batch, RecordBatch):
        return raw  # magic 0/1 batches are kept whole while any record stays
    return build_batch(
        kept,
        base_offset=batch.base_offset,
        compression_type=batch.compression_type,
        timestamp_type=batch.timestamp_type,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        is_transactional=batch.is_transactional,
        partition_leader_epoch=batch.partition_leader_epoch,
        delete_horizon_ms=horizon if stamp else batch_horizon,
        last_offset=batch.last_offset,
    )


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
