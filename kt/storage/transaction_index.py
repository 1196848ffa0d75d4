"""The aborted-transaction index of a segment, `<base offset>.txnindex` (Kafka's
TransactionIndex and AbortedTxn).

One 34-byte entry per transaction aborted in the segment, in the order of their markers,
big-endian:

  version: int16 (= 0)
  producerId: int64
  firstOffset: int64        the transaction's first record in this partition
  lastOffset: int64         its ABORT marker
  lastStableOffset: int64   the LSO once the marker was written

A read_committed Fetch lists the aborted transactions that overlap the fetched offsets
(collect_aborted_txns); the consumer drops their records. The file is created with its
first entry (a segment without aborted transactions has none), rebuilt by segment
recovery, truncated with the segment and deleted with it. The entries are small and few:
they are read once and kept in memory.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass

from kt.storage.abstract_index import CorruptIndexError

CURRENT_VERSION = 0
ENTRY = struct.Struct(">hqqqq")


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = CURRENT_VERSION

    def encode(self) -> bytes:
        return ENTRY.pack(
            self.version,
            self.producer_id,
            self.first_offset,
            self.last_offset,
            self.last_stable_offset,
        )

    def __str__(self) -> str:
        return (
            f"AbortedTxn(version={self.version}, producerId={self.producer_id}, "
            f"firstOffset={self.first_offset}, lastOffset={self.last_offset}, "
            f"lastStableOffset={self.last_stable_offset})"
        )


class TransactionIndex:
    """The aborted transactions of one segment.

    Invariants: the entries' last offsets increase; `_entries`, once read, is the file's
    content (this object is the file's only writer)."""

    def __init__(self, start_offset: int, path: str) -> None:
        self.start_offset = start_offset
        self.path = path
        self._entries: list[AbortedTxn] | None = None
        self._dirty = False

    @property
    def entries(self) -> list[AbortedTxn]:
        if self._entries is None:
            self._entries = self._read()
        return self._entries

    def _read(self) -> list[AbortedTxn]:
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return []
        usable = len(data) - len(data) % ENTRY.size  # a torn last entry is not one
        entries = []
        for version, pid, first, last, lso in ENTRY.iter_unpack(data[:usable]):
            if version > CURRENT_VERSION:
                raise CorruptIndexError(
                    f"Unexpected aborted transaction version {version} in transaction index "
                    f"{os.path.abspath(self.path)}, current version is {CURRENT_VERSION}"
                )
            entries.append(AbortedTxn(pid, first, last, lso, version))
        return entries

    def append(self, txn: AbortedTxn) -> None:
        entries = self.entries
        if entries and entries[-1].last_offset >= txn.last_offset:
            raise ValueError(
                "The last offset of appended transactions must increase sequentially, but "
                f"{txn.last_offset} is not greater than current last offset "
                f"{entries[-1].last_offset} of index {os.path.abspath(self.path)}"
            )
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, txn.encode())
        finally:
            os.close(fd)
        entries.append(txn)
        self._dirty = True

    def flush(self) -> None:
        if not self._dirty:
            return
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        self._dirty = False

    def reset(self) -> None:
        """Empty the index (segment recovery rebuilds it)."""
        if os.path.exists(self.path):
            os.truncate(self.path, 0)
        self._entries = []

    def truncate_to(self, offset: int) -> None:
        """Drop the transactions whose marker is at or after `offset`."""
        entries = self.entries
        keep = 0
        while keep < len(entries) and entries[keep].last_offset < offset:
            keep += 1
        if keep < len(entries):
            os.truncate(self.path, keep * ENTRY.size)
            del entries[keep:]

    def collect_aborted_txns(
        self, fetch_offset: int, upper_bound_offset: int
    ) -> tuple[list[AbortedTxn], bool]:
        """The transactions overlapping [fetch_offset, upper_bound_offset), and whether the
        search is complete (a later segment cannot hold more: an entry's LSO reached the
        upper bound)."""
        found = []
        for txn in self.entries:
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                return found, True
        return found, False

    def sanity_check(self) -> None:
        for txn in self.entries:
            if txn.last_offset < self.start_offset:
                raise CorruptIndexError(
                    f"Last offset of aborted transaction {txn} in index "
                    f"{os.path.abspath(self.path)} is less than start offset {self.start_offset}"
                )

    def forget(self) -> None:
        """Drop the cached entries (the file was renamed or deleted under this object)."""
        self._entries = None
        self._dirty = False
