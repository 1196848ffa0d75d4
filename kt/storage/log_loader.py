"""Opening a partition directory (Kafka's LogLoader): leftovers, segments, recovery.

In order:
1. `.deleted` files go; `.cleaned` files go; a `.swap` file (a compaction or split that
   was interrupted after its output was complete) replaces the segments it covers;
2. every `.log` opens as a segment; an index without its `.log` is deleted; a missing
   or inconsistent index makes the segment be recovered (indexes rebuilt from the log);
3. without the clean-shutdown marker, every segment from the one holding the recovery
   point on is recovered: each batch's size and CRC is checked, the first bad batch and
   everything after it (in that segment and the later ones) is cut, and that is logged;
4. the leader epoch cache and the producer table are brought in line with the result.
"""

from __future__ import annotations

import bisect
import logging
import os
from dataclasses import dataclass

from kt.config import LogConfig
from kt.storage import names
from kt.storage.abstract_index import CorruptIndexError
from kt.storage.batch_header import CONTROL_MASK, HEADER
from kt.storage.leader_epoch import LeaderEpochFileCache
from kt.storage.log_segment import LogSegment
from kt.storage.producer_state import ProducerStateManager

log = logging.getLogger(__name__)


@dataclass
class LoadedLog:
    segments: list[LogSegment]
    log_start_offset: int
    recovery_point: int
    next_offset: int


class LogLoader:
    """Loads one partition directory into segments, recovering what needs it.

    Invariants on return: at least one segment; segments are sorted by base offset and
    contiguous in offsets; every segment at or after the recovery point passed recovery
    unless the last shutdown was clean.
    """

    def __init__(
        self,
        directory: str,
        config: LogConfig,
        now_ms: int,
        had_clean_shutdown: bool,
        log_start_offset_checkpoint: int,
        recovery_point_checkpoint: int,
        leader_epoch_cache: LeaderEpochFileCache,
        producer_state: ProducerStateManager,
    ) -> None:
        self.dir = directory
        self.config = config
        self.now_ms = now_ms
        self.had_clean_shutdown = had_clean_shutdown
        self.log_start_offset_checkpoint = log_start_offset_checkpoint
        self.recovery_point_checkpoint = recovery_point_checkpoint
        self.leader_epoch_cache = leader_epoch_cache
        self.producer_state = producer_state
        self.segments: list[LogSegment] = []
        self.prefix = f"[LogLoader dir={directory}] "

    def load(self) -> LoadedLog:
        swap_files = self._remove_temp_files_and_collect_swap_files()
        self._complete_swaps(swap_files)
        self._load_segment_files()
        if self.dir.endswith(names.DELETE_DIR_SUFFIX):
            if not self.segments:
                self.segments.append(self._open(0))
            recovery_point = next_offset = 0
        else:
            recovery_point, next_offset = self._recover_log()
            self.segments[-1].resize_indexes(self.config.max_index_size)
        self.leader_epoch_cache.truncate_from_end(next_offset, flush=False)
        log_start = max(self.log_start_offset_checkpoint, self.segments[0].base_offset)
        self.leader_epoch_cache.truncate_from_start(self.log_start_offset_checkpoint)
        self.producer_state.remove_stray_snapshots(s.base_offset for s in self.segments)
        rebuild_producer_state(
            self.producer_state,
            self.segments,
            log_start,
            next_offset,
            self.had_clean_shutdown,
            self.now_ms,
        )
        return LoadedLog(self.segments, log_start, recovery_point, next_offset)

    def _open(self, base_offset: int, suffix: str = "") -> LogSegment:
        return LogSegment.open(self.dir, base_offset, self.config, self.now_ms, suffix)

    def _files(self) -> list[str]:
        """The directory's files, by name (scandir's types: no stat per file)."""
        with os.scandir(self.dir) as entries:
            return sorted(entry.name for entry in entries if entry.is_file())

    def _remove_temp_files_and_collect_swap_files(self) -> list[str]:
        swaps, cleaned = [], []
        for name in self._files():
            path = os.path.join(self.dir, name)
            if name.endswith(names.DELETED_FILE_SUFFIX):
                log.debug("%sDeleting stray temporary file %s", self.prefix, path)
                os.unlink(path)
            elif name.endswith(names.CLEANED_FILE_SUFFIX):
                cleaned.append(name)
            elif name.endswith(names.SWAP_FILE_SUFFIX):
                swaps.append(name)
        min_cleaned = min((names.offset_from_file_name(n) for n in cleaned), default=None)
        valid = []
        for name in swaps:
            # A .swap above the smallest .cleaned belongs to an unfinished split: drop it.
            if min_cleaned is not None and names.offset_from_file_name(name) >= min_cleaned:
                os.unlink(os.path.join(self.dir, name))
            else:
                valid.append(name)
        for name in cleaned:
            os.unlink(os.path.join(self.dir, name))
        return valid

    def _complete_swaps(self, swap_files: list[str]) -> None:
        min_offset, max_offset = None, None
        for name in swap_files:
            if not name.endswith(names.LOG_FILE_SUFFIX + names.SWAP_FILE_SUFFIX):
                continue
            segment = self._open(names.offset_from_file_name(name), names.SWAP_FILE_SUFFIX)
            log.info(
                "%sFound log file %s from interrupted swap operation, which is recoverable "
                "from .swap files by renaming.",
                self.prefix,
                name,
            )
            next_offset = segment.read_next_offset()
            segment.close_handlers()
            min_offset = (
                segment.base_offset if min_offset is None else min(min_offset, segment.base_offset)
            )  # noqa: E501
            max_offset = next_offset if max_offset is None else max(max_offset, next_offset)
        if min_offset is not None and max_offset is not None:
            for name in self._files():
                if name.endswith(names.SWAP_FILE_SUFFIX):
                    continue
                try:
                    offset = names.offset_from_file_name(name)
                except ValueError:
                    continue
                if min_offset <= offset < max_offset:
                    log.info(
                        "%sDeleting segment file %s that was compacted but not yet deleted",
                        self.prefix,
                        name,
                    )
                    os.unlink(os.path.join(self.dir, name))
        for name in self._files() if swap_files else ():
            if name.endswith(names.SWAP_FILE_SUFFIX):
                log.info("%sRecovering file %s by renaming from .swap files.", self.prefix, name)
                path = os.path.join(self.dir, name)
                os.replace(path, path[: -len(names.SWAP_FILE_SUFFIX)])

    def _load_segment_files(self) -> None:
        for name in self._files():
            path = os.path.join(self.dir, name)
            if names.is_index_file_name(name):
                offset = names.offset_from_file_name(name)
                if not os.path.exists(os.path.join(self.dir, names.log_file_name(offset))):
                    log.warning(
                        "%sFound an orphaned index file %s, with no corresponding log file.",
                        self.prefix,
                        path,
                    )
                    os.unlink(path)
            elif name.endswith(names.LOG_FILE_SUFFIX):
                self.segments.append(self._open(names.offset_from_file_name(name)))
        # Segments that _recover_log will recover anyway are not checked here (as Kafka):
        # after a crash the active segment's index is legitimately untrimmed.
        for segment in self.segments[: self._first_unflushed()]:
            try:
                segment.sanity_check_when_loaded()
            except FileNotFoundError as e:
                log.error("%s%s: recovering segment and rebuilding index files...", self.prefix, e)
                self._recover_segment(segment)
            except CorruptIndexError as e:
                log.warning(
                    "%sFound a corrupted index file corresponding to log file %s due "
                    "to %s, recovering segment and rebuilding index files...",
                    self.prefix,
                    segment.log.path,
                    e,
                )
                self._recover_segment(segment)

    def _first_unflushed(self) -> int:
        """Index of the first segment recovery will scan (len(segments) if none)."""
        if self.had_clean_shutdown or self.dir.endswith(names.DELETE_DIR_SUFFIX):
            return len(self.segments)
        bases = [s.base_offset for s in self.segments]
        return max(0, bisect.bisect_right(bases, self.recovery_point_checkpoint) - 1)

    def _recover_segment(self, segment: LogSegment) -> int:
        state = ProducerStateManager(self.dir)
        earlier = [s for s in self.segments if s.base_offset < segment.base_offset]
        rebuild_producer_state(
            state,
            earlier,
            self.log_start_offset_checkpoint,
            segment.base_offset,
            False,
            self.now_ms,
        )
        truncated = segment.recover(state, self.leader_epoch_cache)
        state.take_snapshot(sync=False)
        return truncated

    def _recover_log(self) -> tuple[int, int]:
        if not self.had_clean_shutdown:
            unflushed = self.segments[self._first_unflushed() :]
            for i, segment in enumerate(unflushed):
                log.info("%sRecovering unflushed segment %d", self.prefix, segment.base_offset)
                truncated = self._recover_segment(segment)
                if truncated > 0:
                    log.warning(
                        "%sCorruption found in segment %d, truncating to offset %d",
                        self.prefix,
                        segment.base_offset,
                        segment.read_next_offset(),
                    )
                    for dead in unflushed[i + 1 :]:
                        self.segments.remove(dead)
                        log.warning("%sDeleting segment %s after the corruption", self.prefix, dead)
                        dead.delete_if_exists()
                        self.producer_state.delete_snapshot(dead.base_offset)
                    break
        log_end = self._delete_segments_if_log_start_greater_than_log_end()
        if not self.segments:
            self.segments.append(self._open(self.log_start_offset_checkpoint))
        if self.had_clean_shutdown and log_end is not None:
            return log_end, log_end
        if log_end is None:
            log_end = self.segments[-1].read_next_offset()
        return min(self.recovery_point_checkpoint, log_end), log_end

    def _delete_segments_if_log_start_greater_than_log_end(self) -> int | None:
        if not self.segments:
            return None
        log_end = self.segments[-1].read_next_offset()
        if log_end >= self.log_start_offset_checkpoint:
            return log_end
        log.warning(
            "%sDeleting all segments because logEndOffset (%d) is smaller than logStartOffset %d",
            self.prefix,
            log_end,
            self.log_start_offset_checkpoint,
        )
        for segment in self.segments:
            segment.delete_if_exists()
        self.segments.clear()
        self.leader_epoch_cache.clear_and_flush()
        self.producer_state.truncate_fully_and_start_at(self.log_start_offset_checkpoint)
        return None


def rebuild_producer_state(
    state: ProducerStateManager,
    segments: list[LogSegment],
    log_start_offset: int,
    last_offset: int,
    reload_from_clean_shutdown: bool,
    now_ms: int,
) -> None:
    """Bring `state` to `last_offset`: latest snapshot, then the batches after it
    (UnifiedLog.rebuildProducerState)."""
    to_snapshot = {s.base_offset for s in segments[-2:]} | {last_offset}
    if state.latest_snapshot_offset() is None and reload_from_clean_shutdown:
        # A clean shutdown with no snapshot means no producer state: take empty ones.
        for offset in sorted(to_snapshot):
            state.update_map_end_offset(offset)
            state.take_snapshot(sync=False)
        return
    empty_before = state.is_empty and state.map_end_offset >= last_offset
    state.truncate_and_reload(log_start_offset, last_offset, now_ms)
    if last_offset > state.map_end_offset and not empty_before:
        for i, segment in enumerate(segments):
            upper = segments[i + 1].base_offset if i + 1 < len(segments) else None
            if (
                upper is not None and upper <= state.map_end_offset
            ) or segment.base_offset >= last_offset:  # noqa: E501
                continue
            start = max(segment.base_offset, state.map_end_offset, log_start_offset)
            state.update_map_end_offset(start)
            if segment.base_offset in to_snapshot:
                state.take_snapshot(sync=False)
            _replay_segment(state, segment, start, last_offset)
    state.update_map_end_offset(last_offset)
    state.take_snapshot(sync=False)


def _replay_segment(state: ProducerStateManager, segment: LogSegment, start: int, end: int) -> None:
    found = segment.translate_offset(start)
    if found is None:
        return
    for buf, rel, position, size in segment.log.scan(found[1]):
        if buf[rel + 16] != 2:
            continue
        h = HEADER.unpack_from(buf, rel)
        if h[0] >= end:
            break
        control = segment.log.read(position, size) if h[5] & CONTROL_MASK else None
        state.replay_batch(h, control)
