"""v2 records encoded from Arrow columns, per column: what the `kt` sink hands the producer.

The mirror of kt/spark/record_arrays.py (which parses records into columns). A record is

  length: varint  attributes: int8  timestampDelta: varlong  offsetDelta: varint
  keyLength: varint  key  valueLength: varint  value
  headersCount: varint  [headerKeyLength: varint  headerKey  headerValueLength: varint  value]

(kt/storage/record_batch.py). Its offset and timestamp deltas depend on the batch it lands
in, so `ArrowRecords.encode` encodes a window of records for one batch at a time: every
varint of the window computed at once with numpy (zigzag, then 7 bits a byte), the
sizes summed to find how many records fit the room left in the batch, and the fields
joined record by record by Arrow (binary_join_element_wise), whose data buffer is then
the records' bytes, back to back.

`partitions_for_keys` is Kafka's default partitioner over a column of keys: murmur2
(kt.client.partitioner) computed for all keys of one length at once.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kt.storage.record_batch import zigzag_varint

_EMPTY = pa.scalar(b"", pa.binary())
_ZERO = pa.scalar(b"\x00", pa.binary())  # attributes, and a headers count of 0
_M = np.uint64(0x5BD1E995)
_MASK = np.uint64(0xFFFFFFFF)


def _zigzag(n: np.ndarray) -> np.ndarray:
    n = n.astype(np.int64)
    return ((n << 1) ^ (n >> 63)).view(np.uint64)


def _varint_sizes(z: np.ndarray) -> np.ndarray:
    size = np.ones(len(z), np.int64)
    for bits in (7, 14, 21, 28, 35, 42, 49, 56, 63):
        size += z >= np.uint64(1 << bits)
    return size


def _varints(z: np.ndarray, sizes: np.ndarray) -> pa.BinaryArray:
    """Each unsigned value as a varint, an Arrow binary array of them."""
    width = int(sizes.max()) if len(sizes) else 1
    shifts = np.arange(width, dtype=np.uint64) * np.uint64(7)
    groups = ((z[:, None] >> shifts) & np.uint64(0x7F)).astype(np.uint8)
    columns = np.arange(width)
    groups[columns < (sizes - 1)[:, None]] |= 0x80  # more to come
    data = groups[columns < sizes[:, None]]  # row by row: each varint's bytes in order
    offsets = np.zeros(len(z) + 1, np.int32)
    np.cumsum(sizes, out=offsets[1:])
    return pa.BinaryArray.from_buffers(
        pa.binary(), len(z), [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )


def _lengths(array: pa.BinaryArray) -> np.ndarray:
    """Each element's length, -1 where it is null (a record's null key or value)."""
    lengths = pc.fill_null(pc.binary_length(array), -1)
    return lengths.to_numpy(zero_copy_only=False).astype(np.int64)


# The varints of 0..8191 (one or two bytes), taken by index: most of a batch's varints.
_TABLE_SIZE = 1 << 13
_TABLE = pa.array([zigzag_varint(n) for n in range(_TABLE_SIZE)], pa.binary())
_TABLE_SIZES = np.array([len(zigzag_varint(n)) for n in range(_TABLE_SIZE)], np.int64)


def _varint_sizes_of(values: np.ndarray) -> np.ndarray:
    if len(values) and values.min() >= 0 and values.max() < _TABLE_SIZE:
        return _TABLE_SIZES[values]
    return _varint_sizes(_zigzag(values))


def _varints_of(values: np.ndarray) -> pa.BinaryArray:
    if len(values) and values.min() >= 0 and values.max() < _TABLE_SIZE:
        return _TABLE.take(values)
    z = _zigzag(values)
    return _varints(z, _varint_sizes(z))


def _index_varints(first: int, n: int) -> pa.BinaryArray:
    """The offset deltas first..first+n-1 as varints (a slice of the table when it can)."""
    if first + n <= _TABLE_SIZE:
        return _TABLE[first : first + n]
    return _varints_of(np.arange(first, first + n))


def _headers(headers: pa.ListArray) -> tuple[pa.BinaryArray, np.ndarray]:
    """Each record's headers as the record holds them (their count, then each header's
    key and value with their lengths, -1 for a null value), and their sizes. Header keys
    must not be null (Kafka refuses them; the sink sends such rows one by one)."""
    counts = pc.fill_null(pc.list_value_length(headers), 0).to_numpy().astype(np.int64)
    flat = pc.list_flatten(headers)
    header_keys = flat.field("key").cast(pa.binary())
    header_values = flat.field("value").cast(pa.binary())
    key_lengths, value_lengths = _lengths(header_keys), _lengths(header_values)
    each = pc.binary_join_element_wise(
        _varints_of(key_lengths), header_keys,
        _varints_of(value_lengths), pc.fill_null(header_values, _EMPTY), _EMPTY,
    )  # fmt: skip
    each_sizes = (_varint_sizes_of(key_lengths) + key_lengths
                  + _varint_sizes_of(value_lengths) + np.maximum(value_lengths, 0))  # fmt: skip
    offsets = np.zeros(len(counts) + 1, np.int32)
    np.cumsum(counts, out=offsets[1:])
    joined = pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets), each), _EMPTY)
    owner = np.repeat(np.arange(len(counts)), counts)
    sizes = np.bincount(owner, weights=each_sizes, minlength=len(counts)).astype(np.int64)
    part = pc.binary_join_element_wise(_varints_of(counts), joined, _EMPTY)
    return part, _varint_sizes_of(counts) + sizes


class ArrowRecords:
    """Records of one partition (binary keys, which may be absent or null, and values),
    stamped `timestamps` (milliseconds, one per record) or at encoding time."""

    def __init__(self, keys: pa.Array | None, values: pa.Array,
                 timestamps: np.ndarray | None = None,
                 headers: pa.ListArray | None = None) -> None:  # fmt: skip
        self.count = len(values)
        values = values.cast(pa.binary())
        keys = pa.nulls(self.count, pa.binary()) if keys is None else keys.cast(pa.binary())
        self.timestamps = None if timestamps is None else timestamps.astype(np.int64)
        key_lengths, value_lengths = _lengths(keys), _lengths(values)
        if headers is None:
            header_part, header_sizes = _ZERO, np.ones(self.count, np.int64)  # none
        else:
            header_part, header_sizes = _headers(headers)
        # the key and the value with their lengths, and the headers: the part of a record
        # that does not depend on its batch
        self._tail = pc.binary_join_element_wise(
            _varints_of(key_lengths), pc.fill_null(keys, _EMPTY),
            _varints_of(value_lengths), pc.fill_null(values, _EMPTY), header_part, _EMPTY,
        )  # fmt: skip
        self._tail_sizes = (
            _varint_sizes_of(key_lengths) + np.maximum(key_lengths, 0)
            + _varint_sizes_of(value_lengths) + np.maximum(value_lengths, 0) + header_sizes
        )  # fmt: skip
        self._average = int(self._tail_sizes.mean()) + 4 if self.count else 1

    def encode(self, start: int, first_index: int, base_timestamp: int | None, room: int,
               now_ms: int) -> tuple[bytes, int, int, int]:  # fmt: skip
        """Records from `start` with offset deltas from `first_index` and timestamp deltas
        from `base_timestamp` (None: the first record's), as many as fit in `room` bytes
        (at least one when `first_index` is 0: an empty batch takes any record). Returns
        (their bytes, how many, the first's timestamp, the greatest timestamp)."""
        stamps = self.timestamps
        first = now_ms if stamps is None else int(stamps[start])
        base = first if base_timestamp is None else base_timestamp
        rest = self.count - start
        window = max(1, min(rest, room // self._average + 8))
        while True:
            end = start + window
            if stamps is None:  # every record stamped now: one delta
                deltas = None
                delta_sizes: np.ndarray | int = len(zigzag_varint(now_ms - base))
            else:
                deltas = stamps[start:end] - base
                delta_sizes = _varint_sizes_of(deltas)
            index_sizes = _varint_sizes_of(np.arange(first_index, first_index + window))
            body = 1 + delta_sizes + index_sizes + self._tail_sizes[start:end]
            sizes = _varint_sizes_of(body) + body
            total = np.cumsum(sizes)
            n = int(np.searchsorted(total, room, side="right"))
            if n < window or end == self.count:
                break
            window = min(rest, window * 2)
        if n == 0:
            if first_index:
                return b"", 0, base, base
            n = 1
        if deltas is None:
            head = pa.scalar(b"\x00" + zigzag_varint(now_ms - base), pa.binary())
            latest = now_ms
        else:
            head = pc.binary_join_element_wise(_ZERO, _varints_of(deltas[:n]), _EMPTY)
            latest = int(stamps[start : start + n].max())  # type: ignore[index]
        joined = pc.binary_join_element_wise(
            _varints_of(body[:n]), head, _index_varints(first_index, n),
            self._tail[start : start + n], _EMPTY,
        )  # fmt: skip
        offsets = np.frombuffer(joined.buffers()[1], np.int32, n + 1, joined.offset * 4)
        data = joined.buffers()[2][int(offsets[0]) : int(offsets[n])].to_pybytes()
        return data, n, first, latest


def murmur2_column(keys: pa.BinaryArray) -> np.ndarray:
    """Kafka's murmur2 (kt.client.partitioner.murmur2) of each non-null key, as uint32;
    the keys of one length are hashed together."""
    keys = keys.cast(pa.binary())
    n = len(keys)
    hashes = np.zeros(n, np.uint64)
    offsets = np.frombuffer(keys.buffers()[1], np.int32, n + 1, keys.offset * 4).astype(np.int64)
    data = (
        np.frombuffer(keys.buffers()[2], np.uint8) if keys.buffers()[2] else np.zeros(0, np.uint8)
    )
    lengths = offsets[1:] - offsets[:-1]
    valid = keys.is_valid().to_numpy(zero_copy_only=False)
    for length in np.unique(lengths[valid]):
        rows = np.flatnonzero(valid & (lengths == length))
        length = int(length)
        matrix = data[offsets[rows][:, None] + np.arange(length)] if length else None
        h = np.full(len(rows), (0x9747B28C ^ length) & 0xFFFFFFFF, np.uint64)
        n4 = length // 4
        if n4:
            words = np.ascontiguousarray(matrix[:, : n4 * 4]).view("<u4").astype(np.uint64)
            for i in range(n4):
                k = (words[:, i] * _M) & _MASK
                k ^= k >> np.uint64(24)
                k = (k * _M) & _MASK
                h = (h * _M) & _MASK
                h ^= k
        tail = length % 4
        if tail == 3:
            h ^= matrix[:, n4 * 4 + 2].astype(np.uint64) << np.uint64(16)
        if tail >= 2:
            h ^= matrix[:, n4 * 4 + 1].astype(np.uint64) << np.uint64(8)
        if tail >= 1:
            h ^= matrix[:, n4 * 4].astype(np.uint64)
            h = (h * _M) & _MASK
        h ^= h >> np.uint64(13)
        h = (h * _M) & _MASK
        h ^= h >> np.uint64(15)
        hashes[rows] = h
    return hashes.astype(np.uint32)


def partitions_for_keys(keys: pa.BinaryArray, num_partitions: int) -> np.ndarray:
    """Each non-null key's partition as the Java producer picks it:
    toPositive(murmur2(key)) % numPartitions (nulls get -1)."""
    parts = (murmur2_column(keys).astype(np.int64) & 0x7FFFFFFF) % num_partitions
    parts[~keys.is_valid().to_numpy(zero_copy_only=False)] = -1
    return parts
