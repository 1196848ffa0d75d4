"""Offsets by timestamp and by leader epoch (the ListOffsets and OffsetForLeaderEpoch
half of Kafka's UnifiedLog), and the leader epoch cache's upkeep: what `Log` inherits.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kt.storage.file_records import NO_TIMESTAMP
from kt.storage.leader_epoch import UNDEFINED_EPOCH_OFFSET, LeaderEpochFileCache
from kt.storage.log_dir_failure_channel import maybe_handle_io_exception
from kt.storage.log_segment import LogSegment, TimestampAndOffset

if TYPE_CHECKING:
    from kt.errors import KafkaStorageError

log = logging.getLogger("kt.storage.log")

# ListOffsets' special timestamps (ListOffsetsRequest.EARLIEST_TIMESTAMP and friends).
EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3


class LogOffsetLookups:
    """The offset lookups of `Log`, which it inherits.

    Invariant: the leader epoch cache's entries are the epochs of the log's batches, in
    offset order (a rebuild from the batches restores them when the checkpoint is lost).
    """

    # Provided by Log.
    name: str
    segments: list[LogSegment]
    log_start_offset: int
    log_end_offset: int
    leader_epoch_cache: LeaderEpochFileCache

    if TYPE_CHECKING:

        def storage_error(self, error: OSError, action: str) -> KafkaStorageError: ...

    def fetch_offset_by_timestamp(self, target: int) -> TimestampAndOffset | None:
        """ListOffsets: -2 earliest, -1 latest, -3 the max timestamp's offset, else the first
        record with timestamp >= target (None if there is none)."""
        if target == EARLIEST_TIMESTAMP:
            earliest = self.leader_epoch_cache.earliest_entry()
            epoch = earliest[0] if earliest and earliest[1] <= self.log_start_offset else None
            return TimestampAndOffset(NO_TIMESTAMP, self.log_start_offset, epoch)
        if target == LATEST_TIMESTAMP:
            return TimestampAndOffset(
                NO_TIMESTAMP, self.log_end_offset, self.leader_epoch_cache.latest_epoch
            )
        if target == MAX_TIMESTAMP:
            segment = max(self.segments, key=lambda s: s.max_timestamp_so_far)
            return segment.offset_of_max_timestamp()
        for segment in self.segments:
            if segment.largest_timestamp() >= target:
                found = segment.find_offset_by_timestamp(target, self.log_start_offset)
                if found is not None:
                    return found
        return None

    offset_for_timestamp = fetch_offset_by_timestamp

    @maybe_handle_io_exception("assigning a leader epoch of")
    def assign_epoch_start_offset(self, leader_epoch: int, start_offset: int) -> None:
        """A new leader epoch starts at `start_offset` (Partition.makeLeader)."""
        self.leader_epoch_cache.assign(leader_epoch, start_offset)

    # Kafka's UnifiedLog.maybeAssignEpochStartOffset: the cache's assign records only an
    # epoch (or an earlier start offset) it does not have yet.
    maybe_assign_epoch_start_offset = assign_epoch_start_offset

    def _rebuild_leader_epoch_cache(self) -> None:
        """The leader epoch checkpoint was unreadable: read each batch's epoch instead."""
        log.warning(
            "%s; rebuilding the leader epoch cache of %s from its batches",
            self.leader_epoch_cache.corrupt_checkpoint,
            self.name,
        )
        self.leader_epoch_cache.rebuild(
            (frame.partition_leader_epoch, frame.base_offset)
            for segment in self.segments
            for frame in segment.log.frames()
            if frame.magic >= 2 and frame.last_offset >= self.log_start_offset
        )

    def latest_epoch(self) -> int | None:
        return self.leader_epoch_cache.latest_epoch

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int] | None:
        """(epoch, end offset) answering OffsetForLeaderEpoch, or None if undefined."""
        epoch, offset = self.leader_epoch_cache.end_offset_for(leader_epoch, self.log_end_offset)
        return None if offset == UNDEFINED_EPOCH_OFFSET else (epoch, offset)
