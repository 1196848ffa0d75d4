"""One segment of a partition's log (Kafka's LogSegment): a `.log` file and its indexes.

  <base offset, 20 digits>.log        the batches (file_records.py)
  <base offset, 20 digits>.index      offset -> position (offset_index.py)
  <base offset, 20 digits>.timeindex  timestamp -> offset (time_index.py)

Every batch appended is framed and checksummed by its producer (or by recovery); the
segment only decides where index entries go: after more than `index.interval.bytes`
of batches since the last entry, an entry for the next batch goes into both indexes.
Recovery rebuilds both indexes in the same way, so a rebuilt index equals the written
one byte for byte.
"""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Callable, Sequence

from kt.config import LogConfig
from kt.storage import names
from kt.storage.abstract_index import CorruptIndexError, IndexOffsetOverflowError
from kt.storage.file_records import (
    FileRecords,
    frame_at,
)
from kt.storage.offset_index import OffsetIndex
from kt.storage.record_walk import record_timestamps
from kt.storage.segment_recovery import IndexRebuild, walk_segment
from kt.storage.segment_values import (
    FetchDataInfo,
    LogOffsetMetadata,
    RollParams,
    TimestampAndOffset,
)
from kt.storage.time_index import TimeIndex
from kt.storage.transaction_index import TransactionIndex

log = logging.getLogger(__name__)


class LogSegmentOffsetOverflowError(Exception):
    """A batch whose offsets do not fit the segment's 32-bit relative offsets."""


class LogSegment:
    """A `.log` file with its offset and time indexes, starting at `base_offset`.

    Invariants: every offset in the segment is in [base_offset, base_offset + 2^31);
    the indexes only point at batch starts inside the file; the time index's last entry
    never exceeds the segment's max timestamp. The indexes open lazily on first use.
    """

    def __init__(
        self,
        directory: str,
        base_offset: int,
        config: LogConfig,
        now_ms: int,
        suffix: str = "",
        roll_jitter_ms: int = 0,
    ) -> None:
        self.dir = directory
        self.base_offset = base_offset
        self.index_interval_bytes = config.index_interval_bytes
        self.max_index_size = config.max_index_size
        self.roll_jitter_ms = roll_jitter_ms
        self.suffix = suffix
        self.log = FileRecords.open(self._path(names.log_file_name))
        # The indexes are mapped when first used (Kafka's LazyIndex): a broker with many
        # idle partitions maps none of theirs at start-up, and holds no descriptor for them.
        self._offset_index: OffsetIndex | None = None
        self._time_index: TimeIndex | None = None
        self.txn_index = TransactionIndex(base_offset, self._path(names.txn_index_file_name))
        self._size_on_load: int | None = None  # resize_indexes before they were loaded
        self._check_on_load = False  # sanity_check_when_loaded was called
        self.created = now_ms
        self.rolling_based_timestamp: int | None = None
        self._max_timestamp_and_offset: tuple[int, int] | None = None
        self.bytes_since_last_index_entry = 0

    @classmethod
    def open(
        cls, directory: str, base_offset: int, config: LogConfig, now_ms: int, suffix: str = ""
    ) -> LogSegment:
        jitter = random.randrange(config.segment_jitter_ms) if config.segment_jitter_ms else 0
        return cls(directory, base_offset, config, now_ms, suffix, min(jitter, config.segment_ms))

    def _path(self, name_for) -> str:  # type: ignore[no-untyped-def]
        return os.path.join(self.dir, name_for(self.base_offset, self.suffix))

    @property
    def offset_index_path(self) -> str:
        return self._path(names.offset_index_file_name)

    @property
    def time_index_path(self) -> str:
        return self._path(names.time_index_file_name)

    @property
    def offset_index(self) -> OffsetIndex:
        if self._offset_index is None:
            self._load_indexes()
        return self._offset_index  # type: ignore[return-value]

    @property
    def time_index(self) -> TimeIndex:
        if self._time_index is None:
            self._load_indexes()
        return self._time_index  # type: ignore[return-value]

    def _load_indexes(self) -> None:
        """Map both indexes; apply a resize asked for before, and the sanity check the
        loader deferred (a corrupt index is rebuilt from the log, as at load)."""
        if self._offset_index is None:
            self._offset_index = OffsetIndex(
                self.offset_index_path, self.base_offset, self.max_index_size
            )
        if self._time_index is None:
            self._time_index = TimeIndex(
                self.time_index_path, self.base_offset, self.max_index_size
            )
        if self._check_on_load:
            self._check_on_load = False
            try:
                self.sanity_check()
            except CorruptIndexError as e:
                log.warning("Found a corrupted index file corresponding to log file %s due "
                            "to %s, rebuilding index files...", self.log.path, e)  # fmt: skip
                self.recover()
        if self._size_on_load is not None:
            size, self._size_on_load = self._size_on_load, None
            self.resize_indexes(size)

    @property
    def size(self) -> int:
        return self.log.size

    def __repr__(self) -> str:
        return f"LogSegment(baseOffset={self.base_offset}, size={self.size})"

    # -- timestamps -----------------------------------------------------------------

    def max_timestamp_and_offset(self) -> tuple[int, int]:
        """(max timestamp so far, last offset of the batch that has it)."""
        if self._max_timestamp_and_offset is None:
            self._max_timestamp_and_offset = self.time_index.last_entry
        return self._max_timestamp_and_offset

    @property
    def max_timestamp_so_far(self) -> int:
        return self.max_timestamp_and_offset()[0]

    def largest_timestamp(self) -> int:
        """Max timestamp if any batch has one, else the file's mtime (retention by time)."""
        ts = self.max_timestamp_so_far
        return ts if ts >= 0 else self.last_modified()

    def last_modified(self) -> int:
        return int(os.stat(self.log.path).st_mtime * 1000)

    def _load_first_batch_timestamp(self) -> None:
        if self.rolling_based_timestamp is None:
            for frame in self.log.frames(0):
                self.rolling_based_timestamp = frame.max_timestamp
                break

    def time_waited_for_roll(self, now: int, message_timestamp: int) -> int:
        self._load_first_batch_timestamp()
        ts = self.rolling_based_timestamp if self.rolling_based_timestamp is not None else -1
        return message_timestamp - ts if ts >= 0 else now - self.created

    def should_roll(self, p: RollParams) -> bool:
        return self.needs_roll(
            p.messages_size,
            p.max_timestamp_in_messages,
            p.max_offset_in_messages,
            lambda: p.now,
            p.max_segment_ms,
            p.max_segment_bytes,
        )

    def needs_roll(
        self,
        messages_size: int,
        max_timestamp: int,
        max_offset: int,
        clock: Callable[[], int],
        max_segment_ms: int,
        max_segment_bytes: int,
    ) -> bool:
        """LogSegment.shouldRoll: the append would pass segment.bytes, the segment is older
        than segment.ms (less jitter), an index is full, or offsets would overflow. Its
        age counts from the first batch's max timestamp to `max_timestamp`, or from its
        creation to `clock()` when that batch has none: only then is the clock read."""
        size = self.log.size
        if size > max_segment_bytes - messages_size:
            return True
        if size:
            first = self.rolling_based_timestamp
            if first is None:
                self._load_first_batch_timestamp()
                first = -1 if self.rolling_based_timestamp is None else self.rolling_based_timestamp
            if (max_timestamp - first if first >= 0 else clock() - self.created) > (
                max_segment_ms - self.roll_jitter_ms
            ):
                return True
        offset_index = self._offset_index or self.offset_index
        time_index = self._time_index or self.time_index
        # A full offset index, a full time index (its last slot is kept for the entry
        # written on roll: TimeIndex.is_full), or offsets past 32 bits relative.
        return (
            offset_index.entries >= offset_index.max_entries
            or time_index.entries >= time_index.max_entries - 1
            or not 0 <= max_offset - self.base_offset <= 0x7FFFFFFF
        )

    # -- append ---------------------------------------------------------------------

    def append(
        self,
        records: bytes | bytearray | memoryview,
        batches: Sequence[tuple[int, int, int, int]],
    ) -> None:
        """Append whole batches with one write; `batches` lists (position in records,
        size, last offset, max timestamp) for each, in offset order, so that the segment
        indexes them without re-reading headers."""
        log_file = self.log
        physical = log_file.size
        largest_offset = batches[-1][2]
        if not 0 <= largest_offset - self.base_offset <= 0x7FFFFFFF:
            raise LogSegmentOffsetOverflowError(
                f"Detected offset overflow at offset {largest_offset} in segment {self}"
            )
        if not physical:
            self.rolling_based_timestamp = max(b[3] for b in batches)
        log_file.append(records)
        max_ts, max_ts_offset = self._max_timestamp_and_offset or self.max_timestamp_and_offset()
        since = self.bytes_since_last_index_entry
        try:
            for position, batch_size, last_offset, timestamp in batches:
                if timestamp > max_ts:
                    max_ts, max_ts_offset = timestamp, last_offset
                if since > self.index_interval_bytes:
                    # An index filled by an earlier batch of this append takes no more
                    # entries (the index is sparse, and the segment rolls before the next
                    # append); recovery's IndexRebuild skips the same ones.
                    offset_index = self._offset_index or self.offset_index
                    time_index = self._time_index or self.time_index
                    if not offset_index.is_full():
                        offset_index.append(last_offset, physical + position)
                    if not time_index.is_full():
                        time_index.maybe_append(max_ts, max_ts_offset)
                    since = 0
                since += batch_size
        except OSError:
            log_file.cut_back(physical)  # an append that cannot be indexed is not kept
            raise
        self.bytes_since_last_index_entry = since
        self._max_timestamp_and_offset = (max_ts, max_ts_offset)

    def append_batch(
        self,
        records: memoryview,
        last_offset: int,
        max_timestamp: int,
        max_segment_ms: int,
        max_segment_bytes: int,
    ) -> bool:
        """`records`, one whole batch, appended as `append` appends it, if this segment
        takes it without a roll; False, with nothing written, if it might not. The
        leader's common case in one call (Log.append_as_leader); a False sends it the
        general way (`needs_roll`, then `append`).

        The roll test is `needs_roll`'s for a segment in its steady state: both indexes
        loaded, a batch already in it, the first batch's timestamp known. In any other
        state it answers False rather than load or look anything up."""
        log_file = self.log
        physical = log_file.size
        size = len(records)
        offset_index, time_index = self._offset_index, self._time_index
        first = self.rolling_based_timestamp
        if (
            offset_index is None
            or time_index is None
            or not physical
            or first is None
            or first < 0
            or physical > max_segment_bytes - size
            or max_timestamp - first > max_segment_ms - self.roll_jitter_ms
            # is_full() of each index, written out as in needs_roll
            or offset_index.entries >= offset_index.max_entries
            or time_index.entries >= time_index.max_entries - 1
            or not 0 <= last_offset - self.base_offset <= 0x7FFFFFFF
        ):
            return False
        log_file.append(records)
        max_ts, max_ts_offset = self._max_timestamp_and_offset or self.max_timestamp_and_offset()
        if max_timestamp > max_ts:
            max_ts, max_ts_offset = self._max_timestamp_and_offset = (max_timestamp, last_offset)
        since = self.bytes_since_last_index_entry
        if since > self.index_interval_bytes:
            try:
                offset_index.append(last_offset, physical)
                time_index.maybe_append(max_ts, max_ts_offset)
            except OSError:
                log_file.cut_back(physical)  # an append that cannot be indexed is not kept
                raise
            since = 0
        self.bytes_since_last_index_entry = since + size
        return True

    # -- read -----------------------------------------------------------------------

    def translate_offset(
        self, offset: int, starting_position: int = 0
    ) -> tuple[int, int, int] | None:  # noqa: E501
        """(last offset, position, size) of the first batch holding an offset >= `offset`."""
        mapping_position = self.offset_index.lookup(offset)[1]
        return self.log.search_for_offset_with_size(
            offset, max(mapping_position, starting_position)
        )

    def read(
        self,
        start_offset: int,
        max_size: int,
        max_position: int | None = None,
        min_one_message: bool = False,
    ) -> FetchDataInfo | None:
        """Batches from the one holding `start_offset`, up to `max_size` bytes and never past
        `max_position`; None when no batch at or after the offset is in this segment."""
        if max_size < 0:
            raise ValueError(f"Invalid max size {max_size} for log read from segment {self}")
        found = self.translate_offset(start_offset)
        if found is None:
            return None
        _, start_position, batch_size = found
        metadata = LogOffsetMetadata(start_offset, self.base_offset, start_position)
        adjusted = max(max_size, batch_size) if min_one_message else max_size
        limit = self.size if max_position is None else max_position
        if adjusted == 0 or limit <= start_position:
            return FetchDataInfo(metadata, b"")
        fetch_size = min(limit - start_position, adjusted)
        end = start_position + fetch_size
        if batch_size < fetch_size and end < limit:
            # The cut falls after the first batch: end at the last whole batch before it,
            # found from the index entry at or before the cut. Kafka sends the partial
            # batch, which a consumer drops and fetches again next time (12-44 % of the
            # bytes of 1 MiB fetches of small records).
            from_position = max(start_position, self.offset_index.lookup_position(end)[1])
            fetch_size = self.log.last_batch_end(from_position, end) - start_position
        return FetchDataInfo(
            metadata, self.log.slice(start_position, fetch_size), adjusted < batch_size
        )

    def read_next_offset(self) -> int:
        """The offset after the last batch (base offset when empty)."""
        if self.size == 0:
            return self.base_offset  # no need to map the index of an empty segment
        start = self.offset_index.lookup(self.offset_index.last_offset)[1]
        next_offset = self.base_offset
        for frame in self.log.frames(start):
            next_offset = frame.next_offset
        return next_offset

    def find_offset_by_timestamp(
        self, timestamp: int, starting_offset: int
    ) -> TimestampAndOffset | None:  # noqa: E501
        """The first record with timestamp >= `timestamp` and offset >= `starting_offset`."""
        indexed_offset = self.time_index.lookup(timestamp)[1]
        position = self.offset_index.lookup(max(indexed_offset, starting_offset))[1]
        for buf, rel, _, size in self.log.scan(position, whole=True):
            frame = frame_at(buf, rel, 0, size)
            if frame.max_timestamp < timestamp:
                continue
            for offset, record_ts in record_timestamps(buf[rel : rel + size]):
                if record_ts >= timestamp and offset >= starting_offset:
                    epoch = frame.partition_leader_epoch
                    return TimestampAndOffset(record_ts, offset, epoch if epoch >= 0 else None)
        return None

    def offset_of_max_timestamp(self) -> TimestampAndOffset | None:
        """The first record carrying the segment's max timestamp (ListOffsets -3)."""
        max_ts, max_ts_offset = self.max_timestamp_and_offset()
        if max_ts < 0:
            return None
        position = self.offset_index.lookup(max_ts_offset)[1]
        for buf, rel, _, size in self.log.scan(position, whole=True):
            frame = frame_at(buf, rel, 0, size)
            if frame.max_timestamp == max_ts:
                for offset, ts in record_timestamps(buf[rel : rel + size]):
                    if ts == max_ts:
                        epoch = frame.partition_leader_epoch
                        return TimestampAndOffset(ts, offset, epoch if epoch >= 0 else None)
        return None

    # -- recovery -------------------------------------------------------------------

    def recover(self, producer_state=None, leader_epoch_cache=None) -> int:  # type: ignore[no-untyped-def]
        """Rebuild both indexes from the batches, stop at the first invalid one and cut
        the file there. Returns the number of bytes truncated (LogSegment.recover)."""
        offset_index, time_index = self.offset_index, self.time_index
        offset_index.reset()
        time_index.reset()
        self.txn_index.reset()
        index = IndexRebuild(offset_index, time_index)
        found = walk_segment(
            self.log.fd,
            self.log.size,
            self.base_offset,
            self.index_interval_bytes,
            index,
            producer_state,
            leader_epoch_cache,
        )
        index.flush()
        for txn in index.aborted_txns:
            self.txn_index.append(txn)
        valid_bytes = found.valid_bytes
        if producer_state is not None and valid_bytes:
            producer_state.update_map_end_offset(found.next_offset)
        truncated = self.log.size - valid_bytes
        if truncated > 0:
            log.warning(
                "Found invalid messages in log segment %s at byte offset %d: "
                "truncating %d invalid bytes",
                self.log.path,
                valid_bytes,
                truncated,
            )
        self.log.truncate_to(valid_bytes)
        offset_index.trim_to_valid_size()
        max_ts, max_ts_offset = found.max_timestamp, found.offset_of_max_timestamp
        self._max_timestamp_and_offset = (max_ts, max_ts_offset)
        time_index.maybe_append(max_ts, max_ts_offset, skip_full_check=True)
        time_index.trim_to_valid_size()
        self.bytes_since_last_index_entry = valid_bytes - found.last_index_position
        return truncated

    def sanity_check(self) -> None:
        """Raise FileNotFoundError if an index is missing, CorruptIndexError if one is
        inconsistent: the loader then rebuilds it with `recover`."""
        for path in (self.offset_index_path, self.time_index_path):
            if not os.path.exists(path):
                raise FileNotFoundError(f"Index file {path} does not exist")
        self.offset_index.sanity_check()
        self.time_index.sanity_check()
        self.txn_index.sanity_check()
        index = self.offset_index
        if index.entries:
            offset, position = index.entry(index.entries - 1)
            frame = next(self.log.frames(position), None) if position < self.size else None
            if frame is None or frame.base_offset > offset or frame.position != position:
                raise CorruptIndexError(
                    f"Index file {index.path} has entry ({offset}, {position}) that does not "
                    f"point at a batch in {self.log.path}"
                )

    def sanity_check_when_loaded(self) -> None:
        """What a loader checks of a segment it does not recover: its index files exist
        (FileNotFoundError if not) now, and their entries when they are first mapped."""
        for path in (self.offset_index_path, self.time_index_path):
            if not os.path.exists(path):
                raise FileNotFoundError(f"Index file {path} does not exist")
        if self._offset_index is None:
            self._check_on_load = True
        else:
            self.sanity_check()

    def has_overflow(self) -> bool:
        next_offset = self.read_next_offset()
        return next_offset > self.base_offset and not self.offset_index.can_append_offset(
            next_offset - 1
        )

    # -- truncation, life cycle -----------------------------------------------------

    def truncate_to(self, offset: int, now_ms: int) -> int:
        """Remove everything at or after `offset`; returns the bytes removed."""
        mapping = self.translate_offset(offset)
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        self.offset_index.resize(self.offset_index.max_index_size)
        self.time_index.resize(self.time_index.max_index_size)
        removed = 0 if mapping is None else self.log.truncate_to(mapping[1])
        if self.log.size == 0:
            self.created = now_ms
            self.rolling_based_timestamp = None
        self.bytes_since_last_index_entry = 0
        self._max_timestamp_and_offset = self._read_largest_timestamp()
        return removed

    def _read_largest_timestamp(self) -> tuple[int, int]:
        last_ts, last_offset = self.time_index.last_entry
        position = self.offset_index.lookup(last_offset)[1]
        after_ts, after_offset = self.log.largest_timestamp_after(position)
        return (after_ts, after_offset) if after_ts > last_ts else (last_ts, last_offset)

    def resize_indexes(self, size: int) -> None:
        if self._offset_index is None or self._time_index is None:
            self._size_on_load = size  # done when they are mapped
            return
        self.offset_index.resize(size)
        self.time_index.resize(size)

    def flush(self) -> None:
        self.log.flush()
        for index in (self._offset_index, self._time_index):
            if index is not None:  # an index never mapped has nothing to flush
                index.flush()
        self.txn_index.flush()

    def on_become_inactive(self) -> None:
        """The segment was rolled: final time index entry, indexes trimmed to their entries."""
        max_ts, max_ts_offset = self.max_timestamp_and_offset()
        self.time_index.maybe_append(max_ts, max_ts_offset, skip_full_check=True)
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()
        self.log.trim()

    def close(self) -> None:
        if self._max_timestamp_and_offset is not None:
            max_ts, max_ts_offset = self._max_timestamp_and_offset
            self.time_index.maybe_append(max_ts, max_ts_offset, skip_full_check=True)
        for index in (self._offset_index, self._time_index):
            if index is not None:
                index.close()
        if os.path.exists(self.log.path):
            for path in (self.offset_index_path, self.time_index_path):
                # An index never mapped may not exist yet: an empty file is its clean
                # state, and spares the next start a recovery of this segment.
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o644))
        self.log.close()

    def close_handlers(self) -> None:
        for index in (self._offset_index, self._time_index):
            if index is not None:
                index.close_handler()
        self.log.close()

    def _paths(self) -> list[str]:
        return [
            self._path(names.log_file_name),
            self.offset_index_path,
            self.time_index_path,
            self._path(names.txn_index_file_name),
        ]

    def delete_if_exists(self) -> None:
        self.txn_index.forget()
        self.close_handlers()
        for path in self._paths():
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass

    def change_file_suffixes(self, old_suffix: str, new_suffix: str) -> None:
        """Rename every file of the segment, e.g. "" -> ".deleted" before deletion."""
        assert old_suffix == self.suffix, (old_suffix, self.suffix)
        old_paths = self._paths()
        self.suffix = new_suffix
        for old, new in zip(old_paths, self._paths(), strict=True):
            if os.path.exists(old):
                os.replace(old, new)
        self.log.path = self._path(names.log_file_name)
        if self._offset_index is not None:
            self._offset_index.path = self.offset_index_path
        if self._time_index is not None:
            self._time_index.path = self.time_index_path
        self.txn_index.path = self._path(names.txn_index_file_name)


__all__ = [
    "FetchDataInfo",
    "IndexOffsetOverflowError",
    "LogOffsetMetadata",
    "LogSegment",
    "LogSegmentOffsetOverflowError",
    "RollParams",
    "TimestampAndOffset",
]
