"""A segment's `.log` file as a sequence of batches (Kafka's FileRecords), and FileSlice.

The file is the batches back to back, each framed by its first 12 bytes (offset int64,
length int32 = bytes after the length field), whatever its magic (see batch_header.py).
FileRecords appends whole batches, reads byte ranges with pread, and scans batch frames
from a position without decoding records. Writes go through an O_APPEND descriptor and
reads through pread, so nothing here depends on a shared file position: a FileSlice
handed to `loop.sendfile` (which seeks the file object) cannot disturb an append.
"""

from __future__ import annotations

import logging
import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

from crc32c_rs import crc32c

from kt.storage.batch_header import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    HEADER,
    HEADER_SIZE,
    LEGACY_MIN_SIZE,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
)
from kt.storage.records import Batch, batch_at

log = logging.getLogger(__name__)

_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U32 = struct.Struct(">I")
# Legacy (magic 0/1) message: offset, size, crc, magic, attributes[, timestamp (v1)].
LEGACY_HEADER = struct.Struct(">qiIbb")
_LEGACY_TIMESTAMP = struct.Struct(">q")
LEGACY_TIMESTAMP_OFFSET = 18
NO_TIMESTAMP = -1

SCAN_CHUNK_BYTES = 1 << 20
# Reads that need only batch headers (an offset search, the last whole batch of a fetch)
# take small chunks: a 1 MiB read to find two headers cost a Fetch 100 us.
SEARCH_CHUNK_BYTES = 16 * 1024


@dataclass(frozen=True, slots=True)
class FileSlice:
    """`size` bytes of `file` from `position`: what a fetch response sends with sendfile.

    `file` is a binary, unbuffered file object over the segment's descriptor; it is
    only ever used with explicit offsets (sendfile, pread), never its file position.
    """

    file: IO[bytes]
    position: int
    size: int

    def __len__(self) -> int:
        return self.size

    def fileno(self) -> int:
        return self.file.fileno()

    def read_bytes(self) -> bytes:
        """The slice's bytes (for tests, tools and non-sendfile transports)."""
        return os.pread(self.file.fileno(), self.size, self.position)


@dataclass(frozen=True, slots=True)
class BatchFrame:
    """Where one batch sits and the header facts every scan needs, for any magic."""

    position: int
    size: int
    magic: int
    base_offset: int  # legacy: the wrapper's offset, which is its last offset
    last_offset: int
    max_timestamp: int
    partition_leader_epoch: int  # -1 for legacy

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


def frame_at(buf: bytes | memoryview, rel: int, position: int, size: int) -> BatchFrame:
    """Read a BatchFrame from the header at `rel` in `buf` (at least its header present)."""
    magic = buf[rel + MAGIC_OFFSET]
    if magic >= 2:
        h = HEADER.unpack_from(buf, rel)
        return BatchFrame(position, size, magic, h[0], h[0] + h[6], h[8], h[2])
    offset = _I64.unpack_from(buf, rel)[0]
    timestamp = NO_TIMESTAMP
    if magic == 1 and len(buf) - rel >= LEGACY_TIMESTAMP_OFFSET + 8:
        timestamp = _LEGACY_TIMESTAMP.unpack_from(buf, rel + LEGACY_TIMESTAMP_OFFSET)[0]
    return BatchFrame(position, size, magic, offset, offset, timestamp, -1)


def batch_is_valid(buf: bytes | memoryview, rel: int, size: int) -> bool:
    """Size and checksum of the whole batch at `rel`: CRC-32C for v2, CRC-32 for v0/v1."""
    magic = buf[rel + MAGIC_OFFSET]
    if magic == 2:
        if size < HEADER_SIZE:
            return False
        stored = _U32.unpack_from(buf, rel + CRC_OFFSET)[0]
        return crc32c(buf[rel + ATTRIBUTES_OFFSET : rel + size]) == stored
    if magic in (0, 1):
        if size < LEGACY_MIN_SIZE:
            return False
        stored = _U32.unpack_from(buf, rel + LOG_OVERHEAD)[0]
        return zlib.crc32(buf[rel + MAGIC_OFFSET : rel + size]) == stored
    return False


class FileRecords:
    """The `.log` file of one segment.

    Invariants: `size` is the number of bytes of whole batches the file holds (appends
    are whole batches; recovery truncates anything else); the descriptor is O_APPEND,
    so an append always lands at `size`.
    """

    def __init__(self, path: str, fd: int, size: int) -> None:
        self.path = path
        self.fd = fd
        self.size = size
        self._file: IO[bytes] | None = None

    @classmethod
    def open(cls, path: str) -> FileRecords:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        return cls(path, fd, os.fstat(fd).st_size)

    @property
    def file(self) -> IO[bytes]:
        """An unbuffered file object over the descriptor, for sendfile."""
        if self._file is None:
            self._file = open(self.fd, "rb", buffering=0, closefd=False)  # noqa: SIM115
        return self._file

    def append(self, data: bytes | bytearray | memoryview) -> int:
        """Write `data` at the end of the file (one write, unless the kernel takes less).

        All or nothing: a write that fails partway (ENOSPC, EIO) is cut off again, so that
        the file ends at `size`, after the last whole batch, and the error is raised.
        """
        try:
            written = os.write(self.fd, data)
            if written < len(data):
                view = memoryview(data)
                while written < len(view):
                    written += os.write(self.fd, view[written:])
        except OSError:
            self.cut_back()
            raise
        self.size += written
        return written

    def cut_back(self, size: int | None = None) -> None:
        """Cut the file back to `size` (default: the bytes of whole batches it had) after
        an append that failed. Freeing blocks works on a full disk; if even that fails,
        recovery cuts the torn tail at the next start (the log dir is offline by then, so
        nothing is appended behind it)."""
        if size is not None:
            self.size = size
        try:
            os.ftruncate(self.fd, self.size)
        except OSError as e:
            log.error("Could not cut %s back to %d bytes: %s", self.path, self.size, e)

    def read(self, position: int, size: int) -> bytes:
        return os.pread(self.fd, max(0, min(size, self.size - position)), position)

    def slice(self, position: int, size: int) -> FileSlice:
        return FileSlice(self.file, position, max(0, min(size, self.size - position)))

    def flush(self) -> None:
        os.fsync(self.fd)

    def truncate_to(self, target_size: int) -> int:
        """Cut the file to `target_size`; returns the bytes removed."""
        if target_size > self.size or target_size < 0:
            raise ValueError(
                f"Attempt to truncate log segment {self.path} to {target_size} bytes failed, "
                f"size of this log segment is {self.size} bytes."
            )
        removed = self.size - target_size
        if removed or os.fstat(self.fd).st_size != target_size:
            os.ftruncate(self.fd, target_size)
            self.size = target_size
        return removed

    def trim(self) -> None:
        """Drop any bytes past `size` (a preallocated or torn tail)."""
        if os.fstat(self.fd).st_size != self.size:
            os.ftruncate(self.fd, self.size)

    def rename(self, new_path: str) -> None:
        os.replace(self.path, new_path)
        self.path = new_path

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def delete_if_exists(self) -> bool:
        self.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            return False
        return True

    # -- scanning -------------------------------------------------------------------

    def scan(
        self,
        start: int = 0,
        end: int | None = None,
        whole: bool = False,
        chunk: int = SCAN_CHUNK_BYTES,
    ) -> Iterator[tuple[memoryview, int, int, int]]:
        """Yield (buf, rel, position, size) for each batch from `start` that fits before `end`.

        `buf[rel:]` holds the batch's header, and its whole bytes when `whole` is set;
        the file is read `chunk` bytes at a time (more when one batch needs it). Stops at
        the first frame that is cut short or too small to be a batch: the caller compares
        its last position with `end` to find a torn tail.
        """
        end = self.size if end is None else min(end, self.size)
        buf = memoryview(b"")
        buf_start = start
        position = start
        while end - position >= LOG_OVERHEAD:
            rel = position - buf_start
            if rel + HEADER_SIZE > len(buf) and buf_start + len(buf) < end:
                buf, buf_start, rel = self._refill(position, end, HEADER_SIZE, chunk), position, 0
            if len(buf) - rel < LOG_OVERHEAD:
                return
            size = _I32.unpack_from(buf, rel + LENGTH_OFFSET)[0] + LOG_OVERHEAD
            if size < LEGACY_MIN_SIZE or position + size > end:
                return
            if whole and rel + size > len(buf):
                buf, buf_start, rel = self._refill(position, end, size, chunk), position, 0
            elif len(buf) - rel < min(HEADER_SIZE, size):
                buf, buf_start, rel = self._refill(position, end, HEADER_SIZE, chunk), position, 0
            yield buf, rel, position, size
            position += size

    def _refill(self, position: int, end: int, need: int, chunk: int) -> memoryview:
        length = min(max(chunk, need), end - position)
        return memoryview(os.pread(self.fd, length, position))

    def frames(
        self, start: int = 0, end: int | None = None, chunk: int = SCAN_CHUNK_BYTES
    ) -> Iterator[BatchFrame]:
        """The BatchFrame of each whole batch from `start`."""
        for buf, rel, position, size in self.scan(start, end, chunk=chunk):
            yield frame_at(buf, rel, position, size)

    def batches(self, start: int = 0) -> Iterator[tuple[Batch, memoryview]]:
        """Each whole batch from `start` with its bytes (Kafka's FileRecords.batches),
        read a chunk at a time rather than the file at once."""
        for buf, rel, _, size in self.scan(start, whole=True):
            raw = buf[rel : rel + size]
            yield batch_at(raw), raw

    def last_batch_end(self, start: int, end: int) -> int:
        """The end of the last whole batch between `start` (a batch boundary) and `end`."""
        boundary = start
        for _, _, position, size in self.scan(start, end, chunk=SEARCH_CHUNK_BYTES):
            boundary = position + size
        return boundary

    def search_for_offset_with_size(
        self, target_offset: int, start_position: int
    ) -> tuple[int, int, int] | None:
        """(last offset, position, size) of the first batch from `start_position` whose last
        offset is >= `target_offset`, or None (FileRecords.searchForOffsetWithSize)."""
        for frame in self.frames(start_position, chunk=SEARCH_CHUNK_BYTES):
            if frame.last_offset >= target_offset:
                return frame.last_offset, frame.position, frame.size
        return None

    def largest_timestamp_after(self, start_position: int) -> tuple[int, int]:
        """(max timestamp, last offset of its batch) over the batches from `start_position`."""
        best = (NO_TIMESTAMP, -1)
        for frame in self.frames(start_position):
            if frame.max_timestamp > best[0]:
                best = (frame.max_timestamp, frame.last_offset)
        return best

    def __repr__(self) -> str:
        return f"FileRecords(path={self.path!r}, size={self.size})"
