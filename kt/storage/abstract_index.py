"""What the offset and time indexes share (Kafka's AbstractIndex): a memory-mapped file
of fixed-size entries, preallocated, binary-searched, trimmed when the segment stops
being active.
"""

from __future__ import annotations

import errno
import logging
import mmap
import os
from collections.abc import Callable

log = logging.getLogger(__name__)

# Lookups start in the last 8 KiB of entries, the pages appends keep warm (KAFKA-6432).
WARM_SECTION_BYTES = 8192
# Disk blocks are reserved for the entries ahead of the map's writes this much at a time.
RESERVE_STEP_BYTES = 64 * 1024


class CorruptIndexError(Exception):
    """An index file that fails its sanity check; the loader rebuilds it from the log."""


class IndexOffsetOverflowError(Exception):
    """An offset that does not fit in 32 bits relative to the segment's base offset."""


class AbstractIndex:
    """A memory-mapped file of `entry_size`-byte entries for the segment at `base_offset`.

    Invariants: a new file is preallocated to `max_index_size` rounded down to whole
    entries; the first `entries` entries are valid and the rest is unwritten; an index
    opened from disk is taken to be full of valid entries up to its length (the loader
    sanity-checks it, and trimming on close makes that true); `max_entries` is the file
    length over the entry size; the file's first `_reserved` bytes have disk blocks, and
    no entry is written through the map past them.
    """

    entry_size = 8
    # Slots an append's fast path leaves free at the end (the time index keeps one for
    # the entry written on roll or close).
    free_slots = 0

    def __init__(self, path: str, base_offset: int, max_index_size: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        newly_created = not os.path.exists(path)
        if newly_created and max_index_size < self.entry_size:
            raise ValueError(f"Invalid max index size: {max_index_size}")
        # The file is open only while it is sized or mapped, as Kafka's AbstractIndex
        # opens a RandomAccessFile for each resize: the map keeps what it needs (in
        # CPython, a descriptor of its own), so an index costs one descriptor, not two.
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if newly_created:
                os.ftruncate(fd, self._round(max_index_size))
            self.length = os.fstat(fd).st_size
            self.max_entries = self.length // self.entry_size
            self.entries = 0 if newly_created else self.max_entries
            self._reserved = self.entries * self.entry_size
            self._room_changed()
            self._mm: mmap.mmap | None = self._map(fd, self.length)
        finally:
            os.close(fd)
        self._closed = False

    def _round(self, size: int) -> int:
        return self.entry_size * (size // self.entry_size)

    def _map(self, fd: int, length: int) -> mmap.mmap | None:
        """Map the file's first `length` bytes, with readahead off. Lookups are binary
        searches; appends write past the entries of a sparse, preallocated file; and an
        index left by a crash is opened at its preallocated length, its last entry read
        from a hole. With readahead each first touch reads up to read_ahead_kb around it
        into the page cache (holes, in the last two cases): with an 8 MiB setting that
        stalled every new segment's first append, and every crashed segment's opening,
        for milliseconds."""
        if length <= 0:
            return None
        mapped = mmap.mmap(fd, length)
        mapped.madvise(mmap.MADV_RANDOM)
        return mapped

    def _reserve(self, end: int) -> None:
        """Give the file disk blocks up to `end` (and on to the next step) before entries
        are written there. The preallocated file is sparse, and a write through the map
        into a hole that the file system cannot fill (a full disk) is a SIGBUS, which
        kills the broker; posix_fallocate answers ENOSPC instead, an OSError that takes
        the log dir offline like any failed append."""
        stop = min(self.length, max(end, self._reserved + RESERVE_STEP_BYTES))
        fd = os.open(self.path, os.O_RDWR)
        try:
            os.posix_fallocate(fd, self._reserved, stop - self._reserved)
        except OSError as e:
            if e.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                raise
            stop = self.length  # a file system that cannot reserve: the map writes as it is
        finally:
            os.close(fd)
        self._reserved = stop
        self._room_changed()

    def _room_changed(self) -> None:
        """`writable_entries`: how many entries an append may hold without a look at the
        file: within the reserved bytes, and short of the slots kept free. One compare
        with it is the whole room test of an append's fast path."""
        self.writable_entries = min(
            self.max_entries - self.free_slots, self._reserved // self.entry_size
        )

    @property
    def mm(self) -> mmap.mmap:
        assert self._mm is not None, "index has no mapped entries"
        return self._mm

    def is_full(self) -> bool:
        return self.entries >= self.max_entries

    def size_in_bytes(self) -> int:
        return self.entries * self.entry_size

    def relative_offset(self, offset: int) -> int:
        relative = offset - self.base_offset
        if relative < 0 or relative > 0x7FFFFFFF:
            raise IndexOffsetOverflowError(f"Integer overflow for offset: {offset} ({self.path})")
        return relative

    def can_append_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= 0x7FFFFFFF

    def resize(self, new_size: int) -> bool:
        """Set the file (and mapping) to `new_size` rounded down to whole entries."""
        rounded = self._round(new_size)
        if rounded == self.length:
            return False
        if self._mm is not None:
            self._mm.close()
            self._mm = None
        fd = os.open(self.path, os.O_RDWR)
        try:
            os.ftruncate(fd, rounded)
            self._mm = self._map(fd, rounded)
        finally:
            os.close(fd)
        self.length = rounded
        self._reserved = min(self._reserved, rounded)
        self.max_entries = rounded // self.entry_size
        self.entries = min(self.entries, self.max_entries)
        self._room_changed()
        return True

    def trim_to_valid_size(self) -> None:
        self.resize(self.entry_size * self.entries)

    def reset(self) -> None:
        """Remove every entry and give the file back its full preallocated size."""
        self.truncate_to_entries(0)
        self.resize(self.max_index_size)

    def truncate_to_entries(self, entries: int) -> None:
        self.entries = entries

    def flush(self) -> None:
        if self._mm is not None:
            self._mm.flush()

    def rename(self, new_path: str) -> None:
        os.replace(self.path, new_path)
        self.path = new_path

    def close_handler(self) -> None:
        if self._mm is not None:
            self._mm.close()
            self._mm = None
        self._closed = True

    def close(self) -> None:
        if not self._closed:
            self.trim_to_valid_size()
        self.close_handler()

    def delete_if_exists(self) -> bool:
        self.close_handler()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            return False
        return True

    # -- search -------------------------------------------------------------------

    def _largest_lower_bound(self, target: int, key: Callable[[int], int]) -> int:
        """Slot of the largest entry whose key is <= target, or -1 (indexSlotRangeFor)."""
        entries = self.entries
        if entries == 0:
            return -1
        first_hot = max(0, entries - 1 - WARM_SECTION_BYTES // self.entry_size)
        if key(first_hot) < target:
            return self._binary_search(target, key, first_hot, entries - 1)
        if key(0) > target:
            return -1
        return self._binary_search(target, key, 0, first_hot)

    @staticmethod
    def _binary_search(target: int, key: Callable[[int], int], lo: int, hi: int) -> int:
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            found = key(mid)
            if found > target:
                hi = mid - 1
            elif found < target:
                lo = mid
            else:
                return mid
        return lo
