"""Retention and deletion of a partition's segments (the retention half of Kafka's
UnifiedLog: deleteOldSegments, maybeIncrementLogStartOffset, deleteSegmentFiles).

Segments go from the oldest, never past the high watermark: those wholly before the
log start offset, then (cleanup.policy=delete) those beyond retention.bytes and those
older than retention.ms. A deleted segment's files are renamed `.deleted` at once and
unlinked after `file.delete.delay.ms`, since reads in flight may hold their slices.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from kt.config import LogConfig
from kt.errors import KafkaError
from kt.storage import names
from kt.storage.leader_epoch import LeaderEpochFileCache
from kt.storage.log_dir_failure_channel import maybe_handle_io_exception
from kt.storage.log_segment import LogSegment
from kt.storage.producer_state import ProducerStateManager

log = logging.getLogger("kt.storage.log")


class LogRetention:
    """The retention methods of `Log`, which it inherits.

    Invariants: the log keeps at least one segment (deleting them all rolls a new one
    first); the log start offset only moves up, and never past the high watermark;
    every segment removed from `segments` is in `_pending_deletes` until its files go.
    """

    # Provided by Log.
    name: str
    config: LogConfig
    clock: Callable[[], int]
    segments: list[LogSegment]
    log_start_offset: int
    log_end_offset: int
    _high_watermark: int
    _pending_deletes: list[tuple[int, LogSegment]]
    leader_epoch_cache: LeaderEpochFileCache
    producer_state: ProducerStateManager

    if TYPE_CHECKING:

        @property
        def size(self) -> int: ...

        def roll(self, expected_next_offset: int | None = None) -> LogSegment: ...

        def _reindex(self) -> None: ...

    @maybe_handle_io_exception("incrementing the log start offset of")
    def maybe_increment_log_start_offset(self, new_log_start_offset: int) -> bool:
        """DeleteRecords: move the log start offset up (never past the high watermark)."""
        if new_log_start_offset > self._high_watermark:
            raise KafkaError(
                "OFFSET_OUT_OF_RANGE",
                f"Cannot increment the log start offset to {new_log_start_offset} "
                f"of partition {self.name} since it is larger than the high "
                f"watermark {self._high_watermark}",
            )
        if new_log_start_offset <= self.log_start_offset:
            return False
        self.log_start_offset = new_log_start_offset
        log.info("Incremented log start offset of %s to %d", self.name, new_log_start_offset)
        self.leader_epoch_cache.truncate_from_start(new_log_start_offset)
        self.producer_state.on_log_start_offset_incremented(new_log_start_offset)
        return True

    @maybe_handle_io_exception("deleting segments of")
    def delete_old_segments(self, now_ms: int | None = None) -> int:
        """Retention: segments before the log start offset, then (cleanup.policy=delete)
        beyond retention.bytes and older than retention.ms. Returns segments deleted."""
        now = self.clock() if now_ms is None else now_ms
        deleted = self._delete_while(
            lambda s, nxt: nxt is not None and nxt.base_offset <= self.log_start_offset
        )  # noqa: E501
        if self.config.delete:
            deleted += self._delete_retention_size_breached()
            if self.config.retention_ms >= 0:
                ms = self.config.retention_ms
                deleted += self._delete_while(lambda s, _: now - s.largest_timestamp() > ms)
        self.delete_pending_segments(now)
        return deleted

    def _delete_retention_size_breached(self) -> int:
        retention = self.config.retention_bytes
        if retention < 0 or self.size < retention:
            return 0
        excess = self.size - retention

        def breached(segment: LogSegment, _: LogSegment | None) -> bool:
            nonlocal excess
            if excess - segment.size < 0:
                return False
            excess -= segment.size
            return True

        return self._delete_while(breached)

    def _delete_while(self, predicate: Callable[[LogSegment, LogSegment | None], bool]) -> int:
        """Delete segments from the oldest while `predicate` holds, never past the HW."""
        deletable = []
        for i, segment in enumerate(self.segments):
            nxt = self.segments[i + 1] if i + 1 < len(self.segments) else None
            upper = nxt.base_offset if nxt is not None else self.log_end_offset
            last_and_empty = nxt is None and segment.size == 0
            if self._high_watermark < upper or not predicate(segment, nxt) or last_and_empty:
                break
            deletable.append(segment)
        if not deletable:
            return 0
        if len(deletable) == len(self.segments):
            self.roll()  # a log always keeps one segment
        new_start = self.segments[len(deletable)].base_offset
        if new_start > self.log_start_offset:
            self.maybe_increment_log_start_offset(new_start)
        self._remove_and_delete_segments(deletable)
        return len(deletable)

    def _remove_and_delete_segments(self, doomed: list[LogSegment]) -> None:
        """Take segments out of the log, rename their files `.deleted`, delete them after
        `file.delete.delay.ms` (reads in flight may still hold their file slices)."""
        if not doomed:
            return
        due = self.clock() + self.config.file_delete_delay_ms
        for segment in doomed:
            self.segments.remove(segment)
            segment.change_file_suffixes("", names.DELETED_FILE_SUFFIX)
            self.producer_state.delete_snapshot(segment.base_offset)
            self._pending_deletes.append((due, segment))
        self._reindex()
        self.delete_pending_segments(self.clock())

    def replace_segments(self, cleaned: LogSegment, old: list[LogSegment]) -> None:
        """Swap the cleaner's `cleaned` segment in for `old` (UnifiedLog.replaceSegments):
        `.cleaned` -> `.swap`, the old files -> `.deleted` (removed after
        file.delete.delay.ms), then `.swap` -> the final name. A crash at any step leaves
        files that recovery finishes or undoes."""
        cleaned.change_file_suffixes(names.CLEANED_FILE_SUFFIX, names.SWAP_FILE_SUFFIX)
        due = self.clock() + self.config.file_delete_delay_ms
        for segment in old:
            self.segments.remove(segment)
            segment.change_file_suffixes("", names.DELETED_FILE_SUFFIX)
            self._pending_deletes.append((due, segment))
        cleaned.change_file_suffixes(names.SWAP_FILE_SUFFIX, "")
        self.segments.append(cleaned)
        self.segments.sort(key=lambda s: s.base_offset)
        self._reindex()
        self.delete_pending_segments(self.clock())

    @maybe_handle_io_exception("deleting segments of")
    def delete_pending_segments(self, now_ms: int) -> None:
        keep = []
        for due, segment in self._pending_deletes:
            if due <= now_ms:
                log.info("Deleting segment files %s", segment)
                segment.delete_if_exists()
            else:
                keep.append((due, segment))
        self._pending_deletes = keep
