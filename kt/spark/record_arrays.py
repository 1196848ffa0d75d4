"""v2 records parsed into numpy arrays: one Python step per record, the rest per column.

The record format is written out in kt/storage/record_batch.py:

Record =>
  length: varint   attributes: int8   timestampDelta: varlong   offsetDelta: varint
  keyLength: varint  key   valueLength: varint  value
  headersCount: varint  [headerKeyLength: varint  headerKey  headerValueLength: varint  value]

Only `length` has to be read record after record: it says where the next record starts
(`frame`, a short Python loop). Every other field is then read for all records at once
(`parse`): a varint is gathered from every record's position in one numpy operation, and
positions move on by the sizes just read. Keys, values and header fields come out as
(start, length) pairs into the buffer, so nothing is copied until Arrow takes them.

Invariants of the result: positions are ascending in buffer order (key start <= key end
<= value start <= value end <= next record's key start, and the same for headers), and
no field of a record reaches past the record's `length`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kt.errors import CorruptRecordError
from kt.storage.record_batch import read_zigzag_varint

PADDING = bytes(10)  # the longest varint: gathers past the last record stay in the buffer


def frame(data: bytes | bytearray | memoryview, spans: Sequence[tuple[int, int, int]]) -> list[int]:
    """The position of every record's `length`, for `spans` of (begin, size, count) in `data`.

    Each span is one batch's records; they must fill it exactly. Lengths of one and two
    bytes (records under 8 KiB) are decoded inline: a call per record would cost more
    than the rest of this loop.
    """
    heads: list[int] = []
    append = heads.append
    for begin, size, count in spans:
        pos, stop = begin, begin + size
        try:
            for _ in range(count):
                append(pos)
                b = data[pos]
                if b < 0x80:
                    pos += ((b >> 1) ^ -(b & 1)) + 1
                elif data[pos + 1] < 0x80:
                    u = (b & 0x7F) | data[pos + 1] << 7
                    pos += ((u >> 1) ^ -(u & 1)) + 2
                else:
                    length, after = read_zigzag_varint(data, pos)
                    pos = after + length
                if pos < begin:
                    break  # a negative length, which parse() reports
        except IndexError:
            pos = stop + 1
        if pos > stop:
            raise CorruptRecordError(f"record batch at {begin} ends inside a record")
        if pos != stop:
            raise CorruptRecordError(f"record batch at {begin}: bytes left after records")
    return heads


def varints(buf: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(values, sizes) of the zigzag varints starting at each of `pos` in `buf` (uint8).

    One gather for the first byte of all of them, then one more per extra byte, over
    only the varints that still continue.
    """
    b = buf[pos]
    raw = (b & 0x7F).astype(np.uint64)
    sizes = np.ones(len(pos), np.int64)
    more = np.flatnonzero(b & 0x80)
    shift = 7
    while more.size:
        if shift > 63:
            raise CorruptRecordError("varint longer than 10 bytes")
        b = buf[pos[more] + sizes[more]]
        raw[more] |= (b & 0x7F).astype(np.uint64) << np.uint64(shift)
        sizes[more] += 1
        more = more[(b & 0x80) != 0]
        shift += 7
    values = (raw >> np.uint64(1)).astype(np.int64) ^ -(raw & np.uint64(1)).astype(np.int64)
    return values, sizes


@dataclass
class RecordArrays:
    """Every field of n records, as arrays of n (headers: of the n records' headers).

    A null key or value has a negative length (and an empty range at its start);
    `header_counts[i]` headers of record i sit at header_offsets[i]:header_offsets[i + 1].
    """

    timestamp_deltas: np.ndarray
    offset_deltas: np.ndarray
    key_starts: np.ndarray
    key_lengths: np.ndarray
    value_starts: np.ndarray
    value_lengths: np.ndarray
    header_offsets: np.ndarray | None = None
    header_key_starts: np.ndarray | None = None
    header_key_lengths: np.ndarray | None = None
    header_value_starts: np.ndarray | None = None
    header_value_lengths: np.ndarray | None = None


def parse(buf: np.ndarray, heads: list[int], include_headers: bool) -> RecordArrays:
    """Read the records whose `length` fields are at `heads` (from `frame`) in `buf`.

    `buf` must end with PADDING. Raises CorruptRecordError when a field runs past its
    record, a length or count is negative where Kafka forbids it, or a varint is too long.
    """
    try:
        return _parse(buf, np.array(heads, np.int64), include_headers)
    except IndexError as e:  # a length that points far past the buffer
        raise CorruptRecordError("a record field points past its batch") from e


def _parse(buf: np.ndarray, heads: np.ndarray, include_headers: bool) -> RecordArrays:
    lengths, sizes = varints(buf, heads)
    if (lengths < 0).any():
        raise CorruptRecordError("a record has a negative length")
    pos = heads + sizes
    ends = pos + lengths
    ts_deltas, sizes = varints(buf, pos + 1)  # + 1: the unused attributes byte
    pos += 1 + sizes
    offset_deltas, sizes = varints(buf, pos)
    pos += sizes
    key_lengths, sizes = varints(buf, pos)
    key_starts = pos + sizes
    pos = key_starts + np.maximum(key_lengths, 0)
    value_lengths, sizes = varints(buf, pos)
    value_starts = pos + sizes
    pos = value_starts + np.maximum(value_lengths, 0)
    out = RecordArrays(ts_deltas, offset_deltas, key_starts, key_lengths, value_starts,
                       value_lengths)  # fmt: skip
    if include_headers:
        pos = _parse_headers(buf, pos, out)
    if (pos > ends).any():
        first = int(np.argmax(pos > ends))
        raise CorruptRecordError(f"record at position {int(heads[first])} overruns its length")
    return out


def _parse_headers(buf: np.ndarray, pos: np.ndarray, out: RecordArrays) -> np.ndarray:
    """Fill out's header arrays; returns the position after each record's headers.

    Header j of every record that has more than j headers is read in one step, so the
    number of steps is the largest header count, not the number of headers.
    """
    counts, sizes = varints(buf, pos)
    if (counts < 0).any():
        raise CorruptRecordError("a record has a negative header count")
    pos = pos + sizes
    offsets = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    total = int(offsets[-1])
    key_starts, key_lengths = np.empty(total, np.int64), np.empty(total, np.int64)
    value_starts, value_lengths = np.empty(total, np.int64), np.empty(total, np.int64)
    active = np.flatnonzero(counts)
    at = pos[active]
    j = 0
    while active.size:
        slot = offsets[active] + j
        lengths, sizes = varints(buf, at)
        if (lengths < 0).any():
            raise CorruptRecordError("a header has a negative key length")
        key_starts[slot], key_lengths[slot] = at + sizes, lengths
        at = at + sizes + lengths
        lengths, sizes = varints(buf, at)
        value_starts[slot], value_lengths[slot] = at + sizes, lengths
        at = at + sizes + np.maximum(lengths, 0)
        pos[active] = at
        j += 1
        left = counts[active] > j
        active, at = active[left], at[left]
    out.header_offsets = offsets
    out.header_key_starts, out.header_key_lengths = key_starts, key_lengths
    out.header_value_starts, out.header_value_lengths = value_starts, value_lengths
    return pos
