"""The offset index of a segment (Kafka's OffsetIndex): `<base offset>.index`.

File format, one 8-byte entry per indexed batch, big-endian, no header:

  OffsetIndexEntry =>
    relativeOffset: int32   (offset - segment base offset; the batch's last offset)
    position: int32         (byte position of the batch in the .log file)

The index is sparse: an entry is added when more than `index.interval.bytes` of
batches were appended since the last one. No checksum: after a crash it is rebuilt
from the log.
"""

from __future__ import annotations

import struct

from kt.storage.abstract_index import AbstractIndex, CorruptIndexError

ENTRY = struct.Struct(">ii")
_pack_entry = ENTRY.pack_into  # bound once: every index entry takes it
ENTRY_SIZE = ENTRY.size  # 8
_I32 = struct.Struct(">i")


class OffsetIndex(AbstractIndex):
    """Offset -> file position for one segment.

    Invariants: entries are strictly increasing in offset and in position; a lookup
    returns the largest entry <= the target, or (base offset, 0) when there is none.
    """

    entry_size = ENTRY_SIZE

    def __init__(self, path: str, base_offset: int, max_index_size: int = 10_485_760) -> None:
        super().__init__(path, base_offset, max_index_size)
        self.last_offset = self._last_entry()[0]

    def _relative(self, n: int) -> int:
        return _I32.unpack_from(self.mm, n * ENTRY_SIZE)[0]

    def _position(self, n: int) -> int:
        return _I32.unpack_from(self.mm, n * ENTRY_SIZE + 4)[0]

    def entry(self, n: int) -> tuple[int, int]:
        """(offset, position) of entry `n`."""
        if n >= self.entries:
            raise IndexError(
                f"Attempt to fetch the {n}th entry from index {self.path}, "
                f"which has size {self.entries}"
            )
        relative, position = ENTRY.unpack_from(self.mm, n * ENTRY_SIZE)
        return self.base_offset + relative, position

    def _last_entry(self) -> tuple[int, int]:
        if self.entries == 0:
            return self.base_offset, 0
        return self.entry(self.entries - 1)

    def lookup(self, target_offset: int) -> tuple[int, int]:
        """(offset, position) of the largest entry <= target_offset, else (base, 0)."""
        return self._entry_or_base(
            self._largest_lower_bound(target_offset - self.base_offset, self._relative)
        )

    def lookup_position(self, position: int) -> tuple[int, int]:
        """(offset, position) of the last entry at a position <= `position`, else (base, 0)."""
        return self._entry_or_base(self._largest_lower_bound(position, self._position))

    def _entry_or_base(self, slot: int) -> tuple[int, int]:
        return (self.base_offset, 0) if slot == -1 else self.entry(slot)

    def append(self, offset: int, position: int) -> None:
        entries = self.entries
        relative = offset - self.base_offset
        if (
            entries >= self.writable_entries
            or (entries and offset <= self.last_offset)
            or not 0 <= relative <= 0x7FFFFFFF
        ):
            self._refuse_or_reserve(offset)
        _pack_entry(self._mm, entries * ENTRY_SIZE, relative, position)  # type: ignore[arg-type]
        self.entries = entries + 1
        self.last_offset = offset

    def append_entries(self, entries: list[tuple[int, int]]) -> None:
        """Append many (offset, position) entries with one copy into the map (recovery).

        The checks of `append` hold: if any entry would be refused, the entries go one by
        one through `append`, which raises at that entry.
        """
        if not entries:
            return
        base = self.base_offset
        last = self.last_offset if self.entries else base - 1
        flat: list[int] = []
        for offset, position in entries:
            if offset <= last:
                break
            flat += (offset - base, position)
            last = offset
        else:
            count = len(entries)
            if self.entries + count <= self.max_entries and flat[0] >= 0 and flat[-2] <= 0x7FFFFFFF:
                end = (self.entries + count) * ENTRY_SIZE
                if end > self._reserved:
                    self._reserve(end)
                struct.pack_into(f">{2 * count}i", self._mm, self.entries * ENTRY_SIZE, *flat)  # type: ignore[arg-type]
                self.entries += count
                self.last_offset = last
                return
        for offset, position in entries:
            self.append(offset, position)

    def _refuse_or_reserve(self, offset: int) -> None:
        """The entry for `offset` is past the reserved bytes, or refused: reserve room
        for it (OSError if the disk has none), or raise why it is refused."""
        entries = self.entries
        if (
            entries < self.max_entries
            and (not entries or offset > self.last_offset)
            and 0 <= offset - self.base_offset <= 0x7FFFFFFF
        ):
            self._reserve((entries + 1) * ENTRY_SIZE)
            return
        self._refuse(offset)

    def _refuse(self, offset: int) -> None:
        """Raise the error that stops `offset` from being appended."""
        if self.is_full():
            raise ValueError(f"Attempt to append to a full index (size = {self.entries}).")
        if self.entries and offset <= self.last_offset:
            raise ValueError(
                f"Attempt to append an offset {offset} to position {self.entries} no larger "
                f"than the last offset appended ({self.last_offset}) to {self.path}."
            )
        self.relative_offset(offset)  # raises IndexOffsetOverflowError

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
        self.last_offset = self._last_entry()[0]

    def resize(self, new_size: int) -> bool:
        changed = super().resize(new_size)
        self.last_offset = self._last_entry()[0]
        return changed

    def sanity_check(self, strict: bool = True) -> None:
        """Kafka's checks, plus ours when `strict`: the last two entries ascending.

        A file left preallocated by a crash, or zeroed, ends in zero entries; the
        ascending check catches that where Kafka's own check would let it pass. The log
        loader is strict (it rebuilds such an index); DumpLogSegments' --index-sanity-check
        is not, so that a live, preallocated active index passes there as in Kafka.
        """
        if self.length % ENTRY_SIZE != 0:
            raise CorruptIndexError(
                f"Index file {self.path} is corrupt, found {self.length} bytes which is "
                f"neither positive nor a multiple of {ENTRY_SIZE}"
            )
        if self.entries and self.last_offset < self.base_offset:
            raise CorruptIndexError(
                f"Corrupt index found, index file {self.path} has non-zero size but the last "
                f"offset is {self.last_offset} which is less than the base offset "
                f"{self.base_offset}"
            )
        if strict and self.entries >= 2:
            (o1, p1), (o2, p2) = self.entry(self.entries - 2), self.entry(self.entries - 1)
            if o2 <= o1 or p2 <= p1:
                raise CorruptIndexError(
                    f"Corrupt index found, index file {self.path} ends in entries "
                    f"({o1}, {p1}), ({o2}, {p2}) that are not ascending"
                )
