"""RecordBatch v2 (magic 2): encode, and decode per batch (DefaultRecordBatch/DefaultRecord).

The 61-byte header is laid out in kt/storage/batch_header.py. After it, `recordsCount`
records, compressed as one block when the codec bits are set:

Record =>
  length: varint            (bytes after this field)
  attributes: int8          (unused, 0)
  timestampDelta: varlong   (timestamp - baseTimestamp)
  offsetDelta: varint       (offset - baseOffset)
  keyLength: varint         (-1 = null key)
  key: bytes
  valueLength: varint       (-1 = null value)
  value: bytes
  headersCount: varint
  Header => keyLength varint, key UTF-8 (never null), valueLength varint (-1 = null), value

varint/varlong are zigzag-encoded then written 7 bits at a time, low group first, high
bit set on every byte but the last (protobuf's encoding). A LogAppendTime batch gives
every record its maxTimestamp; a record's sequence is baseSequence + offsetDelta,
wrapping at 2^31. With the delete-horizon attribute, baseTimestamp holds the horizon
and timestamp deltas are relative to it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from crc32c_rs import crc32c

from kt.errors import CorruptRecordError
from kt.storage import compression
from kt.storage.batch_header import (
    ATTRIBUTES_OFFSET,
    CONTROL_MASK,
    DELETE_HORIZON_MASK,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    NO_SEQUENCE,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    BatchHeader,
)

MAGIC = 2
NO_TIMESTAMP = -1

NO_TIMESTAMP_TYPE = -1
CREATE_TIME = 0
LOG_APPEND_TIME = 1
TIMESTAMP_TYPE_NAMES = {
    NO_TIMESTAMP_TYPE: "NoTimestampType",
    CREATE_TIME: "CreateTime",
    LOG_APPEND_TIME: "LogAppendTime",
}

_INT32_LIMIT = 1 << 31
_ONE_BYTE = [bytes((z,)) for z in range(128)]

Header = tuple[str, bytes | None]


class Record:
    """One record as readers see it: absolute offset and timestamp, key/value as bytes or None.

    `headers` is a sequence of (key, value) pairs: str keys, bytes-or-None values.
    `sequence` is -1 outside idempotent batches. When building a batch, `offset` None means
    "the next offset after the previous record".
    """

    __slots__ = ("offset", "timestamp", "key", "value", "headers", "sequence")

    def __init__(
        self,
        offset: int | None,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[Header] = (),
        sequence: int = NO_SEQUENCE,
    ) -> None:
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.headers = headers
        self.sequence = sequence

    @property
    def key_size(self) -> int:
        return -1 if self.key is None else len(self.key)

    @property
    def value_size(self) -> int:
        return -1 if self.value is None else len(self.value)

    def _fields(self) -> tuple:
        headers = tuple((k, v) for k, v in self.headers)
        return (self.offset, self.timestamp, self.key, self.value, headers, self.sequence)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Record):
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"Record(offset={self.offset}, timestamp={self.timestamp}, key={self.key!r}, "
            f"value={self.value!r}, headers={list(self.headers)!r}, sequence={self.sequence})"
        )


def zigzag_varint(n: int) -> bytes:
    """The zigzag varint (or varlong) encoding of `n`."""
    z = (n << 1) ^ (n >> 63)
    if z < 0x80:
        return _ONE_BYTE[z]
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def read_zigzag_varint(buf: bytes, position: int) -> tuple[int, int]:
    """Decode the zigzag varint at `position`; returns (value, position after it)."""
    result = 0
    shift = 0
    while True:
        b = buf[position]
        position += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), position
        shift += 7
        if shift > 63:
            raise CorruptRecordError(f"varint longer than 10 bytes at {position - 10}")


def encode_record(
    offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None,
    headers: Iterable[Header] = (),
) -> bytes:  # fmt: skip
    """One record's bytes, its length prefix included."""
    v = zigzag_varint
    parts = [b"\x00", v(timestamp_delta), v(offset_delta)]
    if key is None:
        parts.append(b"\x01")  # zigzag(-1)
    else:
        parts += (v(len(key)), key)
    if value is None:
        parts.append(b"\x01")
    else:
        parts += (v(len(value)), value)
    headers = list(headers)
    parts.append(v(len(headers)))
    for hkey, hvalue in headers:
        encoded = hkey.encode()
        parts += (v(len(encoded)), encoded)
        if hvalue is None:
            parts.append(b"\x01")
        else:
            parts += (v(len(hvalue)), hvalue)
    body = b"".join(parts)
    return v(len(body)) + body


def build_batch(
    records: Sequence[Record],
    *,
    base_offset: int = 0,
    compression_type: int = compression.NONE,
    timestamp_type: int = CREATE_TIME,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    is_control: bool = False,
    partition_leader_epoch: int = -1,
    delete_horizon_ms: int | None = None,
    last_offset: int | None = None,
    max_timestamp: int | None = None,
    compression_level: int | None = None,
) -> bytes:
    """Encode `records` as one v2 batch, the way Kafka's MemoryRecordsBuilder lays it out.

    baseTimestamp is the first record's timestamp (or `delete_horizon_ms` when given),
    maxTimestamp the largest record timestamp; offsets default to consecutive from
    `base_offset`. `last_offset` keeps the offset range of a batch this one replaces
    (MemoryRecordsBuilder.overrideLastOffset: the cleaner's rebuilt batches end where
    the originals did, so a producer's last sequence number stays valid). `max_timestamp`
    is given for a batch emptied of its records (DefaultRecordBatch.writeEmptyHeader).
    """
    if delete_horizon_ms is not None:
        base_timestamp = delete_horizon_ms
    else:
        base_timestamp = records[0].timestamp if records else NO_TIMESTAMP
    if max_timestamp is None:
        max_timestamp = max((r.timestamp for r in records), default=NO_TIMESTAMP)
    encoded = []
    offset_delta = -1
    for record in records:
        offset_delta = offset_delta + 1 if record.offset is None else record.offset - base_offset
        encoded.append(
            encode_record(
                offset_delta, record.timestamp - base_timestamp, record.key, record.value,
                record.headers,
            )
        )  # fmt: skip
    body = compression.compress(compression_type, b"".join(encoded), level=compression_level)
    attributes = (
        compression_type
        | (TIMESTAMP_TYPE_MASK if timestamp_type == LOG_APPEND_TIME else 0)
        | (TRANSACTIONAL_MASK if is_transactional else 0)
        | (CONTROL_MASK if is_control else 0)
        | (DELETE_HORIZON_MASK if delete_horizon_ms is not None else 0)
    )
    last_delta = max(offset_delta, 0) if last_offset is None else last_offset - base_offset
    return _with_header(body, base_offset, partition_leader_epoch, attributes, last_delta,
                        base_timestamp, max_timestamp, producer_id, producer_epoch,
                        base_sequence, len(records))  # fmt: skip


def _with_header(
    body: bytes | bytearray, base_offset: int, partition_leader_epoch: int, attributes: int,
    last_offset_delta: int, base_timestamp: int, max_timestamp: int, producer_id: int,
    producer_epoch: int, base_sequence: int, count: int,
) -> bytes:  # fmt: skip
    """The batch: its header before the (compressed) records, the CRC over both."""
    out = bytearray(HEADER_SIZE + len(body))
    HEADER.pack_into(
        out, 0, base_offset, len(out) - LOG_OVERHEAD, partition_leader_epoch, MAGIC, 0,
        attributes, last_offset_delta, base_timestamp, max_timestamp, producer_id,
        producer_epoch, base_sequence, count,
    )  # fmt: skip
    out[HEADER_SIZE:] = body
    crc = crc32c(memoryview(out)[ATTRIBUTES_OFFSET:])
    out[17:21] = crc.to_bytes(4, "big")
    return bytes(out)


# zigzag varints of 0..16383: one lookup instead of a call on the producer's path
_ZIGZAG = [zigzag_varint(n) for n in range(1 << 14)]
_ZIGZAG_LIMIT = 1 << 14


class MemoryRecordsBuilder:
    """A producer's open batch: each record is encoded into
    one buffer as it is appended, with no object per record; `build` adds the header,
    compression and CRC once. Offsets are consecutive from 0; the first record's
    timestamp is the batch's base."""

    __slots__ = ("buf", "count", "base_timestamp", "max_timestamp")

    def __init__(self) -> None:
        self.buf = bytearray()
        self.count = 0
        self.base_timestamp = NO_TIMESTAMP
        self.max_timestamp = NO_TIMESTAMP

    def append(self, timestamp: int, key: bytes | None, value: bytes | None,
               headers: Sequence[Header] = ()) -> int:  # fmt: skip
        """Encode one record at the end; the batch's size in bytes after it."""
        index = self.count
        if index == 0:
            self.base_timestamp = timestamp
        if timestamp > self.max_timestamp:
            self.max_timestamp = timestamp
        delta, limit = timestamp - self.base_timestamp, _ZIGZAG_LIMIT
        key_size = -1 if key is None else len(key)
        value_size = -1 if value is None else len(value)
        buf = self.buf
        if (headers or not 0 <= delta < limit or index >= limit or key_size >= limit
                or value_size >= limit):  # fmt: skip
            buf += encode_record(index, delta, key, value, headers)
        else:  # attributes, deltas, key, value, no headers: joined once
            table = _ZIGZAG
            body = b"".join((
                b"\x00", table[delta], table[index],
                b"\x01" if key is None else table[key_size], key or b"",
                b"\x01" if value is None else table[value_size], value or b"", b"\x00",
            ))  # fmt: skip
            size = len(body)
            buf += table[size] if size < limit else zigzag_varint(size)
            buf += body
        self.count = index + 1
        return len(buf)

    def extend(self, records: bytes, count: int, first_timestamp: int, max_timestamp: int) -> int:
        """Append `count` records encoded elsewhere (kt.spark.record_encoder), their offset
        deltas from `self.count` and timestamp deltas from the batch's base timestamp
        (`first_timestamp` when the batch is empty); the batch's size after them."""
        if self.count == 0:
            self.base_timestamp = first_timestamp
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
        self.buf += records
        self.count += count
        return len(self.buf)

    def build(self, *, compression_type: int = compression.NONE, producer_id: int = -1,
              producer_epoch: int = -1, base_sequence: int = NO_SEQUENCE,
              is_transactional: bool = False) -> bytes:  # fmt: skip
        """The batch's bytes (base offset 0: the leader assigns the offsets)."""
        body = compression.compress(compression_type, self.buf)
        attributes = compression_type | (TRANSACTIONAL_MASK if is_transactional else 0)
        return _with_header(body, 0, -1, attributes, max(self.count - 1, 0),
                            self.base_timestamp, self.max_timestamp, producer_id,
                            producer_epoch, base_sequence, self.count)  # fmt: skip


class RecordBatch:
    """One magic-2 batch at `position` in a buffer; records are decoded on first use.

    Invariants: the header is whole (else CorruptRecordError at construction); the
    records are decompressed once per batch and parsed in one loop; `records()` checks
    nothing about the CRC, callers wanting that call `ensure_valid()` first (as
    Kafka's consumers do with check.crcs).
    """

    __slots__ = ("header", "_records")

    magic = MAGIC

    def __init__(self, buf: bytes | bytearray | memoryview, position: int = 0) -> None:
        self.header = BatchHeader(buf, position)
        self._records: list[Record] | None = None

    # The batch-level view DumpLogSegments and the log read.
    @property
    def position(self) -> int:
        return self.header.position

    @property
    def size(self) -> int:
        return self.header.size

    @property
    def base_offset(self) -> int:
        return self.header.base_offset

    @property
    def last_offset(self) -> int:
        return self.header.last_offset

    @property
    def next_offset(self) -> int:
        return self.header.next_offset

    @property
    def count(self) -> int:
        return self.header.records_count

    @property
    def crc(self) -> int:
        return self.header.crc

    @property
    def compression_type(self) -> int:
        return self.header.compression

    @property
    def timestamp_type(self) -> int:
        return LOG_APPEND_TIME if self.header.is_log_append_time else CREATE_TIME

    @property
    def max_timestamp(self) -> int:
        return self.header.max_timestamp

    @property
    def base_sequence(self) -> int:
        return self.header.base_sequence

    @property
    def last_sequence(self) -> int:
        return self.header.last_sequence

    @property
    def producer_id(self) -> int:
        return self.header.producer_id

    @property
    def producer_epoch(self) -> int:
        return self.header.producer_epoch

    @property
    def partition_leader_epoch(self) -> int:
        return self.header.partition_leader_epoch

    @property
    def is_transactional(self) -> bool:
        return self.header.is_transactional

    @property
    def is_control(self) -> bool:
        return self.header.is_control

    @property
    def delete_horizon_ms(self) -> int | None:
        return self.header.base_timestamp if self.header.has_delete_horizon else None

    def is_valid(self) -> bool:
        return self.header.is_valid()

    def ensure_valid(self) -> None:
        self.header.ensure_valid()

    def records(self) -> list[Record]:
        """Every record of the batch (deep iteration), decoded once and kept."""
        if self._records is None:
            self._records = _decode_records(self.header)
        return self._records

    def __iter__(self):
        return iter(self.records())

    def __repr__(self) -> str:
        return (
            f"RecordBatch(base_offset={self.base_offset}, last_offset={self.last_offset}, "
            f"count={self.count}, position={self.position}, size={self.size})"
        )


def decode_batch(
    buf: bytes | bytearray | memoryview, position: int = 0, *, verify_crc: bool = True
) -> tuple[BatchHeader, list[Record]]:
    """Decode the v2 batch at `position`: its header and its records.

    Raises CorruptRecordError for a short buffer, a bad CRC (unless verify_crc is
    False), bad compressed data or malformed records, and for nothing else.
    """
    header = BatchHeader(buf, position)
    if verify_crc:
        header.ensure_valid()
    elif header.magic != MAGIC or position + header.size > len(buf):
        raise CorruptRecordError(f"no whole v2 batch at position {position}")
    return header, _decode_records(header)


def _decode_records(header: BatchHeader) -> list[Record]:
    start = header.position + HEADER_SIZE
    end = header.position + header.size
    if header.batch_length < HEADER_SIZE - LOG_OVERHEAD or end > len(header.buf):
        raise CorruptRecordError(f"record batch at {header.position} is truncated")
    if header.records_count < 0:
        raise CorruptRecordError(f"negative record count {header.records_count}")
    data = memoryview(header.buf)[start:end]
    try:
        body = compression.decompress(header.compression, data)
    finally:
        data.release()
    timestamp = header.max_timestamp if header.is_log_append_time else None
    return parse_records(
        body, header.records_count, header.base_offset, header.base_timestamp, timestamp,
        header.base_sequence,
    )  # fmt: skip


def parse_records(
    data: bytes,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
    base_sequence: int,
) -> list[Record]:
    """Parse `count` records filling `data` exactly; one tight loop for the whole batch."""
    records: list[Record] = []
    append = records.append
    rd = read_zigzag_varint
    pos = 0
    end = len(data)
    try:
        for _ in range(count):
            length, pos = rd(data, pos)
            record_end = pos + length
            pos += 1  # attributes: unused
            ts_delta, pos = rd(data, pos)
            offset_delta, pos = rd(data, pos)
            size, pos = rd(data, pos)
            if size >= 0:
                key = data[pos : pos + size]
                pos += size
            elif size == -1:
                key = None
            else:
                raise CorruptRecordError(f"invalid key length {size}")
            size, pos = rd(data, pos)
            if size >= 0:
                value = data[pos : pos + size]
                pos += size
            elif size == -1:
                value = None
            else:
                raise CorruptRecordError(f"invalid value length {size}")
            n_headers, pos = rd(data, pos)
            headers: list[Header] = []
            if n_headers:
                pos = _parse_headers(data, pos, n_headers, headers)
            if pos != record_end or pos > end:
                raise CorruptRecordError(
                    f"record length {length} does not match its contents ({pos - record_end})"
                )
            if base_sequence < 0:
                sequence = NO_SEQUENCE
            else:
                sequence = (base_sequence + offset_delta) % _INT32_LIMIT
            append(
                Record(
                    base_offset + offset_delta,
                    log_append_time if log_append_time is not None else base_timestamp + ts_delta,
                    key, value, headers, sequence,
                )
            )  # fmt: skip
    except IndexError as e:
        raise CorruptRecordError(f"record batch ends inside record {len(records)}") from e
    if pos != end:
        raise CorruptRecordError(f"{end - pos} bytes left after {count} records")
    return records


def _parse_headers(data: bytes, pos: int, count: int, out: list[Header]) -> int:
    rd = read_zigzag_varint
    if count < 0:
        raise CorruptRecordError(f"invalid header count {count}")
    for _ in range(count):
        size, pos = rd(data, pos)
        if size < 0:
            raise CorruptRecordError(f"invalid header key length {size}")
        try:
            key = data[pos : pos + size].decode()
        except UnicodeDecodeError as e:
            raise CorruptRecordError("header key is not UTF-8") from e
        pos += size
        size, pos = rd(data, pos)
        if size >= 0:
            value = data[pos : pos + size]
            pos += size
        elif size == -1:
            value = None
        else:
            raise CorruptRecordError(f"invalid header value length {size}")
        out.append((key, value))
    return pos
