"""The time index of a segment (Kafka's TimeIndex): `<base offset>.timeindex`.

File format, one 12-byte entry, big-endian, no header:

  TimeIndexEntry =>
    timestamp: int64        (the largest timestamp seen up to this offset)
    relativeOffset: int32   (offset - segment base offset)

An entry (T, O) says: any record with a timestamp greater than T comes after offset O.
Timestamps and offsets never decrease from one entry to the next. The last slot is
reserved for the entry written when the segment is rolled or closed.
"""

from __future__ import annotations

import struct

from kt.storage.abstract_index import AbstractIndex, CorruptIndexError

ENTRY = struct.Struct(">qi")
_pack_entry = ENTRY.pack_into  # bound once: every index entry takes it
ENTRY_SIZE = ENTRY.size  # 12
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
NO_TIMESTAMP = -1


class TimeIndex(AbstractIndex):
    """Timestamp -> offset for one segment.

    Invariants: an entry is appended only when its timestamp is greater than the last
    one's; a lookup returns the largest entry with timestamp <= target, or
    (NO_TIMESTAMP, base offset) when there is none.
    """

    entry_size = ENTRY_SIZE
    free_slots = 1  # is_full() leaves one for the entry written on roll or close

    def __init__(self, path: str, base_offset: int, max_index_size: int = 10_485_760) -> None:
        super().__init__(path, base_offset, max_index_size)
        self.last_entry = self._last_entry_from_file()

    def _timestamp(self, n: int) -> int:
        return _I64.unpack_from(self.mm, n * ENTRY_SIZE)[0]

    def _relative(self, n: int) -> int:
        return _I32.unpack_from(self.mm, n * ENTRY_SIZE + 8)[0]

    def entry(self, n: int) -> tuple[int, int]:
        """(timestamp, offset) of entry `n`."""
        if n >= self.entries:
            raise IndexError(
                f"Attempt to fetch the {n}th entry from time index {self.path} "
                f"which has size {self.entries}"
            )
        timestamp, relative = ENTRY.unpack_from(self.mm, n * ENTRY_SIZE)
        return timestamp, self.base_offset + relative

    def _last_entry_from_file(self) -> tuple[int, int]:
        if self.entries == 0:
            return NO_TIMESTAMP, self.base_offset
        return self.entry(self.entries - 1)

    def is_full(self) -> bool:
        # One slot stays free for the entry written on roll or close.
        return self.entries >= self.max_entries - 1

    def lookup(self, target_timestamp: int) -> tuple[int, int]:
        """(timestamp, offset) of the largest entry with timestamp <= target."""
        slot = self._largest_lower_bound(target_timestamp, self._timestamp)
        if slot == -1:
            return NO_TIMESTAMP, self.base_offset
        return self.entry(slot)

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Append (timestamp, offset) if the timestamp is greater than the last entry's."""
        last_timestamp, last_offset = self.last_entry
        entries = self.entries
        relative = offset - self.base_offset
        if offset >= last_offset and entries < self.writable_entries:
            # The common cases, which none of the checks below refuses (within the room
            # reserved on disk, and short of the slot kept for the roll's entry).
            if timestamp == last_timestamp:
                return
            if timestamp > last_timestamp and 0 <= relative <= 0x7FFFFFFF:
                _pack_entry(self._mm, entries * ENTRY_SIZE, timestamp, relative)  # type: ignore[arg-type]
                self.entries = entries + 1
                self.last_entry = (timestamp, offset)
                return
        if not skip_full_check and self.is_full():
            raise ValueError(f"Attempt to append to a full time index (size = {self.entries}).")
        if self.entries and offset < last_offset:
            raise ValueError(
                f"Attempt to append an offset ({offset}) to slot {self.entries} no larger than "
                f"the last offset appended ({last_offset}) to {self.path}."
            )
        if self.entries and timestamp < last_timestamp:
            raise ValueError(
                f"Attempt to append a timestamp ({timestamp}) to slot {self.entries} no larger "
                f"than the last timestamp appended ({last_timestamp}) to {self.path}."
            )
        if timestamp > last_timestamp:
            if self.entries >= self.max_entries:
                return  # no slot left at all: the next roll starts a fresh index
            at = self.entries * ENTRY_SIZE
            if at + ENTRY_SIZE > self._reserved:
                self._reserve(at + ENTRY_SIZE)
            _pack_entry(self.mm, at, timestamp, self.relative_offset(offset))
            self.entries += 1
            self.last_entry = (timestamp, offset)

    def append_entries(self, entries: list[tuple[int, int]]) -> None:
        """Append many (timestamp, offset) entries, timestamps ascending, with one copy into
        the map (recovery). Anything `maybe_append` would skip or refuse makes the entries
        go one by one through it instead, with its exact outcome."""
        if not entries:
            return
        base = self.base_offset
        last_timestamp, last_offset = self.last_entry
        flat: list[int] = []
        for timestamp, offset in entries:
            if timestamp <= last_timestamp or offset < last_offset:
                break
            flat += (timestamp, offset - base)
            last_timestamp, last_offset = timestamp, offset
        else:
            count = len(entries)
            if self.entries + count < self.max_entries and flat[1] >= 0 and flat[-1] <= 0x7FFFFFFF:
                end = (self.entries + count) * ENTRY_SIZE
                if end > self._reserved:
                    self._reserve(end)
                struct.pack_into(">" + "qi" * count, self._mm, self.entries * ENTRY_SIZE, *flat)  # type: ignore[arg-type]
                self.entries += count
                self.last_entry = (last_timestamp, last_offset)
                return
        for timestamp, offset in entries:
            self.maybe_append(timestamp, offset)

    def truncate_to(self, offset: int) -> None:
        """Remove every entry with an offset >= `offset`."""
        slot = self._largest_lower_bound(offset - self.base_offset, self._relative)
        if slot < 0:
            entries = 0
        elif self._relative(slot) == offset - self.base_offset:
            entries = slot
        else:
            entries = slot + 1
        self.truncate_to_entries(entries)

    def truncate_to_entries(self, entries: int) -> None:
        super().truncate_to_entries(entries)
        self.last_entry = self._last_entry_from_file()

    def resize(self, new_size: int) -> bool:
        changed = super().resize(new_size)
        self.last_entry = self._last_entry_from_file()
        return changed

    def sanity_check(self, strict: bool = True) -> None:
        """Kafka's checks, plus ours when `strict`: the last two entries must not go
        backwards (the log loader is strict; dump-log's --index-sanity-check is Kafka's)."""
        if self.length % ENTRY_SIZE != 0:
            raise CorruptIndexError(
                f"Time index file {self.path} is corrupt, found {self.length} bytes which is "
                f"neither positive nor a multiple of {ENTRY_SIZE}"
            )
        if not self.entries:
            return
        last_timestamp, last_offset = self.last_entry
        if last_timestamp < self._timestamp(0):
            raise CorruptIndexError(
                f"Corrupt time index found, time index file ({self.path}) has non-zero size "
                f"but the last timestamp is {last_timestamp} which is less than the first "
                f"timestamp {self._timestamp(0)}"
            )
        if last_offset < self.base_offset:
            raise CorruptIndexError(
                f"Corrupt time index found, time index file ({self.path}) has non-zero size "
                f"but the last offset is {last_offset} which is less than the first offset "
                f"{self.base_offset}"
            )
        if strict and self.entries >= 2:
            t1, o1 = self.entry(self.entries - 2)
            if last_timestamp <= t1 or last_offset < o1:
                raise CorruptIndexError(
                    f"Corrupt time index found, time index file ({self.path}) ends in entries "
                    f"({t1}, {o1}), ({last_timestamp}, {last_offset}) that are not ascending"
                )
