"""A partition's log (the local part of Kafka's UnifiedLog): segments, offsets, appends, reads.

A directory `<topic>-<partition>/` holds the segments (log_segment.py), the
`leader-epoch-checkpoint` and the producer `.snapshot` files. The log assigns offsets on
the leader by patching each batch header in place (batch_header.py), validates batches
without decoding records, rolls segments, reads file slices for sendfile, truncates,
and deletes old segments by retention. It starts no threads: the LogManager's periodic
methods drive flushing and deferred file deletion.
"""

from __future__ import annotations

import bisect
import logging
import os
import shutil
import time
from collections.abc import Callable

from kt.config import LogConfig
from kt.errors import KafkaError, KafkaStorageError
from kt.storage import names
from kt.storage.checkpoints import LeaderEpochCheckpointFile
from kt.storage.leader_epoch import LeaderEpochFileCache
from kt.storage.log_dir_failure_channel import LogDirFailureChannel, maybe_handle_io_exception
from kt.storage.log_flush_stats import LOG_FLUSH_TIMER
from kt.storage.log_loader import LogLoader, rebuild_producer_state
from kt.storage.log_offsets import LogOffsetLookups
from kt.storage.log_retention import LogRetention
from kt.storage.log_segment import (
    FetchDataInfo,
    LogOffsetMetadata,
    LogSegment,
)
from kt.storage.log_transactions import LogTransactionReads
from kt.storage.log_validator import (
    LogAppendInfo,
    analyze_follower_batches,
    assign_offsets_to_client_batch,
    recompressed,
    validate_and_assign_offsets,
    validate_batches,
    validate_records,
)
from kt.storage.producer_append import analyze_and_validate_producer_state
from kt.storage.producer_state import (
    ORIGIN_CLIENT,
    ORIGIN_REPLICATION,
    ProducerAppendInfo,
    ProducerStateManager,
)

log = logging.getLogger(__name__)


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


class Log(LogRetention, LogOffsetLookups, LogTransactionReads):
    """One partition's log.

    Invariants: log_start_offset <= high_watermark <= log_end_offset; recovery_point <=
    log_end_offset and everything before it is on disk; segments are sorted, contiguous,
    and the last one is the active segment, the only one appended to.
    """

    def __init__(
        self,
        directory: str,
        config: LogConfig,
        *,
        log_start_offset: int = 0,
        recovery_point: int = 0,
        high_watermark: int = 0,
        had_clean_shutdown: bool = False,
        clock: Callable[[], int] = wall_clock_ms,
        failure_channel: LogDirFailureChannel | None = None,
    ) -> None:
        os.makedirs(directory, exist_ok=True)
        self.dir = directory
        self.failure_channel = failure_channel
        self.config = config
        self.clock = clock
        self.name = os.path.basename(directory)
        checkpoint = LeaderEpochCheckpointFile(
            os.path.join(directory, names.LEADER_EPOCH_CHECKPOINT_FILE)
        )
        self.leader_epoch_cache = LeaderEpochFileCache(checkpoint)
        self.producer_state = ProducerStateManager(directory)
        loaded = LogLoader(
            directory,
            config,
            clock(),
            had_clean_shutdown,
            log_start_offset,
            recovery_point,
            self.leader_epoch_cache,
            self.producer_state,
        ).load()
        self.segments: list[LogSegment] = loaded.segments
        self._bases = [s.base_offset for s in self.segments]
        self.log_start_offset = loaded.log_start_offset
        if self.leader_epoch_cache.corrupt_checkpoint is not None:
            self._rebuild_leader_epoch_cache()
        self.recovery_point = loaded.recovery_point
        self.log_end_offset = loaded.next_offset
        self.last_flush_time = clock()
        self._high_watermark = self.log_start_offset
        self.high_watermark = high_watermark
        self._pending_flush_offset: int | None = None
        self._pending_deletes: list[tuple[int, LogSegment]] = []
        self._max_position: tuple[int, int, int] | None = None  # (offset, base, position)
        self._closed = False

    # -- offsets ----------------------------------------------------------------------

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @high_watermark.setter
    def high_watermark(self, offset: int) -> None:
        """Set the HW, bounded to [log start offset, log end offset] as Kafka bounds it;
        transactions whose markers it passed become stable."""
        self._high_watermark = hw = min(max(offset, self.log_start_offset), self.log_end_offset)
        self.producer_state.on_high_watermark_updated(hw)

    @property
    def last_stable_offset(self) -> int:
        first_unstable = self.producer_state.first_unstable_offset()
        if first_unstable is None:
            return self._high_watermark
        return min(max(first_unstable, self.log_start_offset), self._high_watermark)

    @property
    def active_segment(self) -> LogSegment:
        return self.segments[-1]

    @property
    def size(self) -> int:
        return sum(s.size for s in self.segments)

    @property
    def number_of_segments(self) -> int:
        return len(self.segments)

    def _floor_index(self, offset: int) -> int:
        return bisect.bisect_right(self._bases, offset) - 1

    def _reindex(self) -> None:
        self._bases = [s.base_offset for s in self.segments]
        self._max_position = None

    # -- append -----------------------------------------------------------------------

    def append_as_leader(
        self,
        records: bytes | bytearray | memoryview,
        leader_epoch: int,
        origin: str = ORIGIN_CLIENT,
        now_ms: int | None = None,
    ) -> LogAppendInfo:
        """Validate, assign offsets (patching each header in place) and append.

        The common case, one plain client batch that the active segment takes without a
        roll, goes in one pass (assign_offsets_to_client_batch, LogSegment.append_batch):
        for large batches the Python calls and list passes of the general way
        (validate_and_assign_offsets, _append) are a sizeable part of an append's time.
        Everything else goes the general way, which tests/storage/test_log_fast_append.py
        holds the one pass to: both give the same log, byte for byte.

        Raises KafkaError: CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, INVALID_RECORD,
        INVALID_TIMESTAMP, RECORD_LIST_TOO_LARGE, INVALID_PRODUCER_EPOCH,
        OUT_OF_ORDER_SEQUENCE_NUMBER.
        """
        if self._closed:
            raise self._offline_error()
        try:
            view = records  # the broker's request buffer: a writable memoryview of its own
            if type(view) is not memoryview or view.readonly:
                # Headers are patched in place: a copy of a caller's own bytes.
                view = memoryview(view if type(view) is bytearray else bytearray(view))
            config = self.config
            if config.target_codec is not None and origin == ORIGIN_CLIENT:
                view = recompressed(view, config.target_codec, config.target_level, self.name)
            info = None
            plain = not (config.log_append_time or config.validates_records)
            if origin == ORIGIN_CLIENT and plain:
                # The common case, one plain client batch, checked and patched in one pass.
                info = assign_offsets_to_client_batch(
                    view, config.max_message_bytes, self.log_end_offset, leader_epoch
                )
            if info is None:
                entries, producer_batches, info = self._validate(view, leader_epoch, origin, now_ms)
                if not entries:
                    return info
            else:
                entries = producer_batches = None
            # As Kafka orders an append: the epoch cache first, then the size check and roll.
            # (maybe_assign_epoch_start_offset, with the cache's own "update needed" test
            # inlined for the common case: every append runs it.)
            if leader_epoch >= 0 and self.leader_epoch_cache.latest_epoch != leader_epoch:
                self.leader_epoch_cache.assign(leader_epoch, info.first_offset)
            if entries is None:
                # One batch, which the active segment takes in one call unless it must roll.
                if self.segments[-1].append_batch(
                    view,
                    info.last_offset,
                    info.max_timestamp,
                    config.segment_ms,
                    config.segment_bytes,
                ):
                    return self._appended(info, None)
                entries = [(0, info.valid_bytes, info.last_offset, info.max_timestamp)]
                producer_batches = []
            return self._append(view, entries, producer_batches, info, origin)
        except OSError as e:
            raise self.storage_error(e, f"appending records to {self.name}") from e

    def _validate(
        self, view: memoryview, leader_epoch: int, origin: str, now_ms: int | None
    ) -> tuple[list, list, LogAppendInfo]:
        """The leader's checks and offset assignment for any append (entries, producer
        batches, info, as validate_and_assign_offsets gives them), with the per-record
        rules of a topic that has them; no entries for an empty append."""
        config = self.config
        entries, producer_batches, info = validate_and_assign_offsets(
            view,
            self.name,
            config.max_message_bytes,
            origin == ORIGIN_CLIENT,
            self.log_end_offset,
            leader_epoch,
            # The clock is read for LogAppendTime only (the roll check reads it if it must).
            (self.clock() if now_ms is None else now_ms) if config.log_append_time else None,
        )
        if not entries:
            info = LogAppendInfo(
                self.log_end_offset, self.log_end_offset - 1, log_start_offset=self.log_start_offset
            )
        elif config.validates_records and origin == ORIGIN_CLIENT:
            now = self.clock() if now_ms is None else now_ms
            validate_records(view, entries, self.name, config, now)
        return entries, producer_batches, info

    @maybe_handle_io_exception("appending records as a follower to")
    def append_as_follower(self, records: bytes | bytearray | memoryview) -> LogAppendInfo:
        """Append batches fetched from the leader, keeping their offsets and epochs."""
        if self._closed:
            raise self._offline_error()
        view = memoryview(records)
        batches = validate_batches(view, self.name)
        if not batches:
            return LogAppendInfo(-1, -1, log_start_offset=self.log_start_offset)
        entries, producer_batches, epochs, info = analyze_follower_batches(view, batches, self.name)
        if info.first_offset < self.log_end_offset:
            raise KafkaError(
                "UNKNOWN_SERVER_ERROR",
                f"Unexpected offset in append to {self.name}. First offset {info.first_offset} "
                f"is less than the next offset {self.log_end_offset}.",
            )
        for epoch, start_offset in epochs:
            self.maybe_assign_epoch_start_offset(epoch, start_offset)
        return self._append(view, entries, producer_batches, info, ORIGIN_REPLICATION)

    def _append(
        self,
        view: memoryview,
        entries: list,
        producer_batches: list,
        info: LogAppendInfo,
        origin: str,
    ) -> LogAppendInfo:
        """Roll if needed, check producer state, write the batches of `view` with one
        write. `producer_batches` lists (index in `entries`, header tuple) of batches with
        a producer id or control flag. The caller has updated the leader epoch cache."""
        config = self.config
        valid_bytes = info.valid_bytes
        if valid_bytes > config.segment_bytes:
            raise KafkaError(
                "RECORD_LIST_TOO_LARGE",
                f"Message batch size is {valid_bytes} bytes in append to "
                f"partition {self.name}, which exceeds the maximum configured "
                f"segment size of {config.segment_bytes}.",
            )
        segment = self.segments[-1]
        if segment.needs_roll(
            valid_bytes,
            info.max_timestamp,
            info.last_offset,
            self.clock,
            config.segment_ms,
            config.segment_bytes,
        ):
            log.debug(
                "Rolling new log segment in %s (log_size = %d/%d)",
                self.name,
                segment.size,
                config.segment_bytes,
            )
            segment = self.roll(info.first_offset)
        producers = None
        if producer_batches:  # idempotent, transactional or control batches
            producers = analyze_and_validate_producer_state(
                self.producer_state,
                view,
                entries,
                producer_batches,
                origin,
                self.log_start_offset,
            )
            if isinstance(producers, LogAppendInfo):
                return producers  # a retried batch, already in the log
        segment.append(view, entries)
        return self._appended(info, producers)

    def _appended(
        self, info: LogAppendInfo, producers: dict[int, ProducerAppendInfo] | None
    ) -> LogAppendInfo:
        """The log's state after a write: log end offset, producer state, flush policy."""
        self.log_end_offset = end = info.last_offset + 1
        if producers:
            state = self.producer_state
            for append_info in producers.values():
                state.update(append_info)
            for append_info in producers.values():
                if append_info.completed_txns:
                    # Markers: the aborted transactions go to the transaction index of
                    # the segment written to, with the LSO at their end.
                    for txn in state.complete_txns(append_info.completed_txns):
                        self.segments[-1].txn_index.append(txn)
        self.producer_state.map_end_offset = end
        info.log_start_offset = self.log_start_offset
        if end - self.recovery_point >= self.config.flush_messages:
            self.flush()
        return info

    # -- rolling ------------------------------------------------------------------------

    @maybe_handle_io_exception("rolling a new segment of")
    def roll(self, expected_next_offset: int | None = None) -> LogSegment:
        """Start a new active segment at max(expected_next_offset, log end offset)."""
        new_offset = max(expected_next_offset or 0, self.log_end_offset)
        active = self.active_segment
        if new_offset in self._bases:
            if active.base_offset != new_offset or active.size != 0:
                raise KafkaError(
                    "UNKNOWN_SERVER_ERROR",
                    f"Trying to roll a new log segment for {self.name} with start "
                    f"offset {new_offset} while it already exists.",
                )
            # KAFKA-6388: an empty active segment whose index was "full": recreate it.
            self.segments.pop()
            active.delete_if_exists()
        elif new_offset < active.base_offset:
            raise KafkaError(
                "UNKNOWN_SERVER_ERROR",
                f"Trying to roll a new log segment for {self.name} with start offset "
                f"{new_offset} lower than the active segment's {active.base_offset}",
            )
        else:
            for suffix_name in (
                names.log_file_name,
                names.offset_index_file_name,
                names.time_index_file_name,
                names.txn_index_file_name,
            ):
                path = os.path.join(self.dir, suffix_name(new_offset))
                if os.path.exists(path):
                    log.warning("Newly rolled segment file %s already exists; deleting it", path)
                    os.unlink(path)
            active.on_become_inactive()
        segment = LogSegment.open(self.dir, new_offset, self.config, self.clock())
        self.segments.append(segment)
        self._reindex()
        self.producer_state.update_map_end_offset(new_offset)
        self.producer_state.take_snapshot(sync=False)
        # Kafka flushes the rolled segment asynchronously; flush_dirty() does it here.
        self._pending_flush_offset = new_offset
        log.info("Rolled new log segment at offset %d in %s", new_offset, self.name)
        return segment

    # -- read -------------------------------------------------------------------------

    def read(
        self,
        start_offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        min_one_message: bool = True,
    ) -> FetchDataInfo:
        """Batches from `start_offset`: at most `max_bytes` (but one whole batch if
        `min_one_message`), none at or past `max_offset` (default the log end offset).

        Raises KafkaError OFFSET_OUT_OF_RANGE outside [log start offset, log end offset].
        """
        end = self.log_end_offset
        if start_offset < self.log_start_offset or start_offset > end:
            raise KafkaError(
                "OFFSET_OUT_OF_RANGE",
                f"Received request for offset {start_offset} for partition "
                f"{self.name}, but we only have log segments in the range "
                f"{self.log_start_offset} to {end}.",
            )
        limit = end if max_offset is None else min(max_offset, end)
        if start_offset >= limit:
            return FetchDataInfo(LogOffsetMetadata(start_offset), b"")
        if self._closed:
            raise self._offline_error()
        i = max(0, self._floor_index(start_offset))
        try:
            while i < len(self.segments):
                segment = self.segments[i]
                info = segment.read(
                    start_offset, max_bytes, self._max_position_in(segment, limit), min_one_message
                )
                if info is not None:
                    return info
                i += 1
        except OSError as e:
            raise self.storage_error(e, f"reading {self.name}") from e
        return FetchDataInfo(LogOffsetMetadata(end), b"")

    def _max_position_in(self, segment: LogSegment, max_offset: int) -> int | None:
        """The byte position in `segment` where `max_offset` starts (None: no limit)."""
        if max_offset >= self.log_end_offset:
            return None
        cached = self._max_position
        if cached is None or cached[0] != max_offset:
            holder = self.segments[max(0, self._floor_index(max_offset))]
            found = holder.translate_offset(max_offset)
            position = found[1] if found is not None else holder.size
            cached = self._max_position = (max_offset, holder.base_offset, position)
        if segment.base_offset < cached[1]:
            return None
        return cached[2] if segment.base_offset == cached[1] else 0

    # -- flush ------------------------------------------------------------------------

    @maybe_handle_io_exception("flushing")
    def flush(self, offset: int | None = None) -> None:
        """fsync every segment holding offsets in [recovery point, offset) and move the
        recovery point to `offset` (default: the log end offset)."""
        if self._closed:
            raise self._offline_error()
        offset = self.log_end_offset if offset is None else min(offset, self.log_end_offset)
        if offset <= self.recovery_point:
            return
        started = time.monotonic()
        first = max(0, self._floor_index(self.recovery_point))
        for segment in self.segments[first:]:
            if segment.base_offset >= offset and segment is not self.segments[first]:
                break
            segment.flush()
        self.recovery_point = offset
        self.last_flush_time = self.clock()
        LOG_FLUSH_TIMER.update((time.monotonic() - started) * 1000)

    @maybe_handle_io_exception("flushing")
    def flush_dirty(self, now_ms: int | None = None) -> None:
        """The periodic flush: a rolled segment awaiting its flush, and `flush.ms`."""
        now = self.clock() if now_ms is None else now_ms
        if self._pending_flush_offset is not None:
            self.flush(self._pending_flush_offset)
            self._pending_flush_offset = None
        if now - self.last_flush_time >= self.config.flush_ms:
            self.flush()

    # -- truncation -------------------------------------------------------------------

    @maybe_handle_io_exception("truncating")
    def truncate_to(self, target_offset: int) -> bool:
        """Drop every offset >= target_offset (a follower diverged). True if anything went."""
        if target_offset < 0:
            raise ValueError(f"Cannot truncate partition {self.name} to a negative offset")
        if target_offset >= self.log_end_offset:
            self.leader_epoch_cache.truncate_from_end(self.log_end_offset)
            return False
        log.info("Truncating %s to offset %d", self.name, target_offset)
        if self.segments[0].base_offset > target_offset:
            self.truncate_fully_and_start_at(target_offset)
            return True
        doomed = [s for s in self.segments if s.base_offset > target_offset]
        self._remove_and_delete_segments(doomed)
        self.active_segment.truncate_to(target_offset, self.clock())
        self.log_end_offset = target_offset
        self.recovery_point = min(self.recovery_point, target_offset)
        self.leader_epoch_cache.truncate_from_end(target_offset)
        self.log_start_offset = min(target_offset, self.log_start_offset)
        self._rebuild_producer_state()
        self.high_watermark = min(self._high_watermark, self.log_end_offset)
        self._reindex()
        return True

    @maybe_handle_io_exception("truncating")
    def truncate_fully_and_start_at(
        self, new_offset: int, log_start_offset: int | None = None
    ) -> None:  # noqa: E501
        """Delete all data; the log continues empty at `new_offset`."""
        log.info("Truncating %s fully and starting at offset %d", self.name, new_offset)
        self._remove_and_delete_segments(self.segments[:])
        self.segments = [LogSegment.open(self.dir, new_offset, self.config, self.clock())]
        self._reindex()
        self.log_end_offset = self.recovery_point = new_offset
        self.leader_epoch_cache.clear_and_flush()
        self.producer_state.truncate_fully_and_start_at(new_offset)
        self.log_start_offset = new_offset if log_start_offset is None else log_start_offset
        self._rebuild_producer_state()
        self.high_watermark = self.log_end_offset

    def _rebuild_producer_state(self) -> None:
        rebuild_producer_state(
            self.producer_state,
            self.segments,
            self.log_start_offset,
            self.log_end_offset,
            False,
            self.clock(),
        )

    # -- I/O errors -------------------------------------------------------------------

    @property
    def parent_dir(self) -> str:
        """The log dir that holds this log's directory."""
        return os.path.dirname(self.dir)

    def storage_error(self, error: OSError, action: str) -> KafkaStorageError:
        """KAFKA_STORAGE_ERROR for an I/O error while `action`; the log dir goes offline."""
        message = f"Error while {action} in dir {self.parent_dir}"
        if self.failure_channel is not None:
            self.failure_channel.maybe_add_offline_log_dir(self.parent_dir, message, error)
        return KafkaStorageError(message)

    def _offline_error(self) -> KafkaStorageError:
        return KafkaStorageError(f"The log of {self.name} in dir {self.parent_dir} is closed")

    # -- life cycle -------------------------------------------------------------------

    def close(self) -> None:
        """Snapshot producer state at the log end, trim indexes, close files."""
        if self._closed:
            return
        self._closed = True
        self.producer_state.update_map_end_offset(self.log_end_offset)
        self.producer_state.take_snapshot()
        for segment in self.segments:
            segment.close()
        for _, segment in self._pending_deletes:
            segment.delete_if_exists()
        self._pending_deletes = []

    def close_handlers(self) -> None:
        self._closed = True
        for segment in self.segments:
            segment.close_handlers()

    def delete(self) -> None:
        """Close and remove the whole directory."""
        self.close_handlers()
        for _, segment in self._pending_deletes:
            segment.close_handlers()
        shutil.rmtree(self.dir, ignore_errors=True)

    def rename_dir(self, new_dir: str) -> None:
        os.replace(self.dir, new_dir)
        self.dir = new_dir

    def __repr__(self) -> str:
        return (
            f"Log(dir={self.dir}, logStartOffset={self.log_start_offset}, "
            f"logEndOffset={self.log_end_offset}, highWatermark={self._high_watermark})"
        )
