"""The leader epoch cache of one partition (Kafka's LeaderEpochFileCache).

Each entry (epoch, start offset) says that leader epoch `epoch` wrote its first
record at `start offset`. A follower asks the leader for the end offset of its latest
epoch (OffsetForLeaderEpoch) to learn where its log diverges; the cache persists in the
partition directory's `leader-epoch-checkpoint` (checkpoints.py).
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Iterable

from kt.storage.checkpoints import CheckpointError, LeaderEpochCheckpointFile

log = logging.getLogger(__name__)

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class LeaderEpochFileCache:
    """Epoch -> start offset, persisted on every change.

    Invariants: epochs and start offsets both strictly increase from one entry to the
    next; assigning an entry removes any later entries that would break that.
    `latest_epoch` is the last entry's epoch (None when empty), kept by every change:
    the leader compares it on each append.
    """

    def __init__(self, checkpoint: LeaderEpochCheckpointFile) -> None:
        self.checkpoint = checkpoint
        self._epochs: list[int] = []
        self._offsets: list[int] = []
        self.latest_epoch: int | None = None
        # A checkpoint that cannot be read: the log rebuilds the cache from its batches.
        self.corrupt_checkpoint: CheckpointError | None = None
        try:
            entries = checkpoint.read()
        except CheckpointError as e:
            self.corrupt_checkpoint = e
            entries = []
        for epoch, offset in entries:
            self._assign(epoch, offset)
        # What the checkpoint file holds (None: unreadable, so the next flush writes).
        self._persisted: list[tuple[int, int]] | None = (
            None if self.corrupt_checkpoint else self.entries
        )

    @property
    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._epochs, self._offsets, strict=True))

    def latest_entry(self) -> tuple[int, int] | None:
        return (self._epochs[-1], self._offsets[-1]) if self._epochs else None

    def earliest_entry(self) -> tuple[int, int] | None:
        return (self._epochs[0], self._offsets[0]) if self._epochs else None

    def _is_update_needed(self, epoch: int, start_offset: int) -> bool:
        latest = self.latest_entry()
        return latest is None or epoch != latest[0] or start_offset < latest[1]

    def _assign(self, epoch: int, start_offset: int) -> bool:
        if epoch < 0 or start_offset < 0:
            raise ValueError(
                f"Received invalid partition leader epoch entry ({epoch}, {start_offset})"
            )
        if not self._is_update_needed(epoch, start_offset):
            return False
        removed = []
        while self._epochs and (self._epochs[-1] >= epoch or self._offsets[-1] >= start_offset):
            removed.append((self._epochs.pop(), self._offsets.pop()))
        if len(removed) > 1 or (removed and removed[0][1] != start_offset):
            log.warning(
                "New epoch entry (%d, %d) caused truncation of conflicting entries %s",
                epoch,
                start_offset,
                removed,
            )
        self._epochs.append(epoch)
        self._offsets.append(start_offset)
        self.latest_epoch = epoch
        return True

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that `epoch` starts at `start_offset` (and persist it)."""
        if self._assign(epoch, start_offset):
            self.flush()

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch, as LeaderEpochFileCache.endOffsetFor."""
        if requested_epoch == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if self._epochs and self._epochs[-1] == requested_epoch:
            return requested_epoch, log_end_offset
        higher = bisect.bisect_right(self._epochs, requested_epoch)
        if higher == len(self._epochs):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if higher == 0:
            return requested_epoch, self._offsets[0]
        return self._epochs[higher - 1], self._offsets[higher]

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch whose range holds `offset`."""
        i = bisect.bisect_right(self._offsets, offset)
        return self._epochs[i - 1] if i else None

    def truncate_from_end(self, end_offset: int, flush: bool = True) -> None:
        """Drop entries starting at or after `end_offset` (the log was truncated there).
        `flush=False` leaves the file for the next change to write, as Kafka's loader
        flushes this truncation in the background: a crash before then loads the old
        entries, and the same truncation happens again."""
        if end_offset < 0 or not self._offsets or self._offsets[-1] < end_offset:
            return
        while self._offsets and self._offsets[-1] >= end_offset:
            self._epochs.pop()
            self._offsets.pop()
        self.latest_epoch = self._epochs[-1] if self._epochs else None
        if flush:
            self.flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """Drop entries wholly before `start_offset`; the last one dropped restarts there."""
        i = bisect.bisect_right(self._offsets, start_offset)
        if i == 0 or (i == 1 and self._offsets[0] == start_offset):
            return  # nothing changes: no checkpoint rewrite (and fsync) on every open
        epoch = self._epochs[i - 1]
        del self._epochs[:i], self._offsets[:i]
        self._epochs.insert(0, epoch)
        self._offsets.insert(0, start_offset)
        self.flush()

    def rebuild(self, epochs: Iterable[tuple[int, int]]) -> None:
        """Replace every entry with the (epoch, first offset) of each batch, in offset
        order (the epochs the batches of a log carry), and persist the result."""
        self._epochs.clear()
        self._offsets.clear()
        self.latest_epoch = None
        for epoch, start_offset in epochs:
            if epoch >= 0:
                self._assign(epoch, start_offset)
        self.corrupt_checkpoint = None
        self.flush()

    def clear_and_flush(self) -> None:
        self._epochs.clear()
        self._offsets.clear()
        self.latest_epoch = None
        self.flush()

    def flush(self) -> None:
        """Write the checkpoint (with fsync) unless it already holds these entries: an
        empty log's loader drops its (epoch, 0) entry and becoming leader assigns it
        again, which would otherwise cost a write per partition at every start."""
        entries = self.entries
        if entries == self._persisted:
            return
        self.checkpoint.write(entries)
        self._persisted = entries
