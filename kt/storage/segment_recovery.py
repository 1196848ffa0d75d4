"""Recovery of one segment (the body of Kafka's LogSegment.recover): check every batch of
the `.log` file, rebuild both indexes from them, replay producer state and leader
epochs, and find where the valid batches end.

The file is read in large chunks into one reused buffer (a batch cut by the end of a
chunk moves to the front of the buffer before the next read), and the batches are
walked in one loop that works on the 61-byte header only: size, magic and CRC-32C of
each batch, the sparse index entries every `index.interval.bytes`, the running max
timestamp. Batches with a producer id, a control flag or a new leader epoch (a few per
segment) and legacy (magic 0/1) batches leave the loop for the slower, general code.

A batch is valid when it is whole (its length fits in the file), its size is at least
the smallest message of its magic, and its checksum matches (CRC-32C for v2, CRC-32
for v0/v1); its offsets must also fit the segment's 32-bit relative offsets. The walk
stops at the first batch that is not: what follows is a torn or corrupt tail.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass

from crc32c_rs import crc32c

from kt.storage.batch_header import (
    ATTRIBUTES_OFFSET,
    CONTROL_MASK,
    HEADER,
    HEADER_SIZE,
    LEGACY_MIN_SIZE,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
)
from kt.storage.file_records import NO_TIMESTAMP, batch_is_valid, frame_at
from kt.storage.transaction_index import AbortedTxn

# Reads of 1 MiB: large enough that syscalls cost nothing, small enough to stay in L2.
RECOVERY_CHUNK_BYTES = 1 << 20
_I32 = struct.Struct(">i")
_NO_EPOCH_CACHE = 1 << 31  # above any leader epoch: the epoch branch is never taken


@dataclass
class RecoveredSegment:
    """What the walk found: where the valid batches end, the offset after them, the max
    timestamp and the offset of its batch, and the position of the last index entry."""

    valid_bytes: int
    next_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    last_index_position: int


class ChunkReader:
    """Reads `[0, end)` of a file into one reused buffer, `chunk` bytes at a time.

    Invariant: `view[:avail]` holds the file's bytes from `base`; `refill(keep)` keeps
    `view[keep:avail]` (the start of a batch cut by the chunk's end) at the front.
    """

    def __init__(self, fd: int, end: int, chunk: int | None = None) -> None:
        self.fd = fd
        self.end = end
        self.buf = bytearray(min(chunk or RECOVERY_CHUNK_BYTES, end))
        self.view = memoryview(self.buf)
        self.base = 0
        self.avail = 0

    def refill(self, keep: int, need: int) -> None:
        """Move `view[keep:avail]` to the front and read after it, `need` bytes at least
        (fewer only at the end of the file)."""
        tail = self.avail - keep
        if need > len(self.buf):  # a batch larger than the buffer: grow it
            grown = bytearray(need)
            grown[:tail] = self.view[keep : self.avail]
            self.buf, self.view = grown, memoryview(grown)
        elif tail:
            self.view[:tail] = bytes(self.view[keep : self.avail])
        self.base += keep
        self.avail = tail
        want = min(len(self.buf), self.end - self.base) - tail
        while want > 0:
            got = os.preadv(
                self.fd, [self.view[self.avail : self.avail + want]], self.base + self.avail
            )
            if got <= 0:
                break
            self.avail += got
            want -= got


class IndexRebuild:
    """The index entries of a recovery, kept in lists and appended in one copy each.

    Invariant: the pending entries are ones `OffsetIndex.append` and
    `TimeIndex.maybe_append` would accept in order after the indexes' own entries; an
    entry they might refuse, or one for an index without room, goes through
    `add_slowly` (after the pending ones), so a refusal raises the same error at the same
    batch as appending one by one would, and a full index skips what LogSegment.append
    skips.
    """

    def __init__(self, offset_index, time_index) -> None:  # type: ignore[no-untyped-def]
        self.offset_index = offset_index
        self.time_index = time_index
        self.offsets: list[tuple[int, int]] = []
        self.times: list[tuple[int, int]] = []
        self.offset_room = offset_index.max_entries - offset_index.entries
        self.time_room = time_index.max_entries - 1 - time_index.entries  # TimeIndex.is_full
        self.last_offset = offset_index.last_offset if offset_index.entries else -1
        self.last_time = time_index.last_entry  # (timestamp, offset)
        self.aborted_txns: list[AbortedTxn] = []  # for the transaction index

    def add_slowly(self, offset: int, position: int, max_ts: int, max_ts_offset: int) -> None:
        """One index point through the indexes' own checks; a full index takes none, as
        in LogSegment.append."""
        self.flush()
        if not self.offset_index.is_full():
            self.offset_index.append(offset, position)
        if not self.time_index.is_full():
            self.time_index.maybe_append(max_ts, max_ts_offset)
        self.offset_room = self.offset_index.max_entries - self.offset_index.entries
        self.time_room = self.time_index.max_entries - 1 - self.time_index.entries
        self.last_offset, self.last_time = offset, self.time_index.last_entry

    def flush(self) -> None:
        self.offset_index.append_entries(self.offsets)
        self.time_index.append_entries(self.times)
        self.offsets, self.times = [], []


def walk_segment(
    fd: int,
    size: int,
    base_offset: int,
    index_interval_bytes: int,
    index: IndexRebuild,
    producer_state,  # type: ignore[no-untyped-def]
    leader_epoch_cache,  # type: ignore[no-untyped-def]
) -> RecoveredSegment:
    """Walk the batches of the `.log` file `fd` (`size` bytes) from the start, adding
    index entries to `index` (flushed by the caller); see the module docstring."""
    reader = ChunkReader(fd, size)
    view, base, avail, pos = reader.view, 0, 0, 0
    limit = base_offset + 0x7FFFFFFF
    interval, last_index_entry = index_interval_bytes, 0
    next_offset, max_ts, max_ts_offset = base_offset, NO_TIMESTAMP, base_offset
    offsets, times = index.offsets, index.times
    latest_epoch = _latest_epoch(leader_epoch_cache)
    unpack = HEADER.unpack_from
    while True:
        h = unpack(view, pos) if pos + HEADER_SIZE <= avail else _NO_HEADER
        first, length, epoch, magic, crc, attributes, delta, _, timestamp, pid, _, _, _ = h
        end = pos + length + LOG_OVERHEAD
        if (
            magic == 2
            and pos + HEADER_SIZE <= end <= avail
            and crc32c(view[pos + ATTRIBUTES_OFFSET : end]) == crc
        ):
            last_offset = first + delta  # a whole, sound v2 batch
        else:
            step = _slow_step(view, pos, avail, base, size)
            if step is None:
                break  # the end of the file, or the first invalid batch
            if step[0]:  # a batch (or header) cut by the end of the buffer
                reader.refill(pos, step[0])
                view, base, avail, pos = reader.view, reader.base, reader.avail, 0
                continue
            _, end, last_offset, timestamp = step
            h, epoch, pid, attributes = _NO_HEADER, -1, -1, 0  # a legacy batch
        if last_offset > limit:
            break
        if timestamp > max_ts:
            max_ts, max_ts_offset = timestamp, last_offset
        if base + pos - last_index_entry > interval:
            last_index_entry = base + pos
            if (
                len(offsets) < index.offset_room
                and last_offset > index.last_offset
                and last_offset >= base_offset
                and len(times) < index.time_room
                and max_ts_offset >= index.last_time[1]
            ):
                offsets.append((last_offset, last_index_entry))
                index.last_offset = last_offset
                if max_ts > index.last_time[0]:
                    index.last_time = (max_ts, max_ts_offset)
                    times.append(index.last_time)
            else:
                index.add_slowly(last_offset, last_index_entry, max_ts, max_ts_offset)
                offsets, times = index.offsets, index.times
        next_offset = last_offset + 1
        if epoch > latest_epoch or pid >= 0 or attributes & CONTROL_MASK:
            batch = view[pos:end]
            latest_epoch = _replay(
                h, batch, latest_epoch, producer_state, leader_epoch_cache, index
            )
        pos = end
    return RecoveredSegment(base + pos, next_offset, max_ts, max_ts_offset, last_index_entry)


# Stands for the header of a legacy batch, or of none: no magic 2, no epoch, no producer.
_NO_HEADER = (0, -LOG_OVERHEAD, -1, 0, 0, 0, 0, 0, NO_TIMESTAMP, -1, -1, -1, 0)


def _slow_step(
    view: memoryview, pos: int, avail: int, base: int, size: int
) -> tuple[int, int, int, int] | tuple[int] | None:
    """What the batch at `pos` is when it is not a whole, sound v2 batch in the buffer:
    (bytes to read from `pos` first,), (0, end, last offset, max timestamp) for a valid
    legacy batch, or None where the valid batches end."""
    left = avail - pos
    if left < HEADER_SIZE and base + avail < size:
        return (HEADER_SIZE,)
    if left < LOG_OVERHEAD:
        return None
    batch_size = _I32.unpack_from(view, pos + LENGTH_OFFSET)[0] + LOG_OVERHEAD
    if batch_size < LEGACY_MIN_SIZE or base + pos + batch_size > size:
        return None  # too small to be a batch, or torn by the end of the file
    if batch_size > left:
        return (batch_size,)
    if view[pos + MAGIC_OFFSET] == 2 or not batch_is_valid(view, pos, batch_size):
        return None  # a v2 batch here failed its size or CRC check
    frame = frame_at(view, pos, base + pos, batch_size)
    return (0, pos + batch_size, frame.last_offset, frame.max_timestamp)


def _latest_epoch(leader_epoch_cache) -> int:  # type: ignore[no-untyped-def]
    if leader_epoch_cache is None:
        return _NO_EPOCH_CACHE
    latest = leader_epoch_cache.latest_epoch
    return -1 if latest is None else latest


def _replay(
    h: tuple,
    batch: memoryview,
    latest_epoch: int,
    producer_state,  # type: ignore[no-untyped-def]
    leader_epoch_cache,  # type: ignore[no-untyped-def]
    index: IndexRebuild,
) -> int:
    """A batch that starts a leader epoch or carries producer state; returns the latest
    epoch. The transactions its marker aborts go to the rebuilt transaction index."""
    if h[2] > latest_epoch:
        leader_epoch_cache.assign(h[2], h[0])
        latest_epoch = h[2]
    if producer_state is not None and (h[9] >= 0 or h[5] & CONTROL_MASK):
        aborted = producer_state.replay_batch(h, bytes(batch) if h[5] & CONTROL_MASK else None)
        index.aborted_txns.extend(aborted)
    return latest_epoch
