"""Legacy message sets, magic 0 and 1 (LegacyRecord.java, AbstractLegacyRecordBatch.java).

Message =>                         byte offset
  offset: int64                    0
  size: int32 (bytes after this)   8
  crc: uint32 (CRC-32 IEEE over magic to end)   12
  magic: int8 (0 or 1)             16
  attributes: int8                 17   bits 0-2 codec (0 none, 1 gzip, 2 snappy, 3 lz4),
                                        bit 3 timestamp type (magic 1: 1 = LogAppendTime)
  timestamp: int64                 18   (magic 1 only)
  key: int32 length (-1 null), bytes
  value: int32 length (-1 null), bytes

An uncompressed message is a batch of one. A compressed one is a wrapper: null key,
value = the compressed bytes of an inner message set. Inner offsets are absolute in
magic 0; in magic 1 they are relative (0..n-1) and the wrapper's offset is the last
inner record's absolute offset, so inner absolute = wrapper - last relative + relative.
A magic-1 wrapper with LogAppendTime gives its timestamp to every inner record.
Wrappers never nest.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

from kt.errors import CorruptRecordError
from kt.storage import compression
from kt.storage.record_batch import (
    CREATE_TIME,
    LOG_APPEND_TIME,
    NO_TIMESTAMP,
    NO_TIMESTAMP_TYPE,
    Record,
)

_PREFIX = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_PREFIX_V1 = struct.Struct(">qiIbbq")

LOG_OVERHEAD = 12
CRC_OFFSET = 12
MAGIC_OFFSET = 16
RECORD_OVERHEAD_V0 = 14  # crc, magic, attributes, key length, value length
RECORD_OVERHEAD_V1 = 22  # + timestamp
CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08


class LegacyRecord(Record):
    """A record read from a magic 0/1 message: a Record plus that message's own CRC."""

    __slots__ = ("crc", "is_valid", "magic")

    def __init__(
        self, offset: int, timestamp: int, key: bytes | None, value: bytes | None,
        crc: int, is_valid: bool, magic: int,
    ) -> None:  # fmt: skip
        super().__init__(offset, timestamp, key, value)
        self.crc = crc
        self.is_valid = is_valid
        self.magic = magic


class _Message:
    """One parsed legacy message; `end` is the position after it."""

    __slots__ = ("offset", "crc", "magic", "attributes", "timestamp", "key", "value", "end",
                 "valid")  # fmt: skip

    def __init__(self, buf: bytes | bytearray | memoryview, position: int) -> None:
        available = len(buf) - position
        if available < LOG_OVERHEAD + RECORD_OVERHEAD_V0:
            raise CorruptRecordError(f"legacy message at {position} is truncated")
        self.offset, size, self.crc, self.magic, self.attributes = _PREFIX.unpack_from(
            buf, position
        )
        if self.magic not in (0, 1):
            raise CorruptRecordError(f"legacy message at {position} has magic {self.magic}")
        overhead = RECORD_OVERHEAD_V0 if self.magic == 0 else RECORD_OVERHEAD_V1
        self.end = position + LOG_OVERHEAD + size
        if size < overhead or self.end > len(buf):
            raise CorruptRecordError(f"legacy message at {position} has bad size {size}")
        view = memoryview(buf)
        self.valid = zlib.crc32(view[position + MAGIC_OFFSET : self.end]) == self.crc
        pos = position + MAGIC_OFFSET + 2
        if self.magic == 1:
            self.timestamp = _I64.unpack_from(buf, pos)[0]
            pos += 8
        else:
            self.timestamp = NO_TIMESTAMP
        self.key, pos = _read_bytes(view, pos, self.end)
        self.value, pos = _read_bytes(view, pos, self.end)
        view.release()
        if pos != self.end:
            raise CorruptRecordError(f"legacy message at {position}: size {size} mismatch")


def _read_bytes(view: memoryview, pos: int, end: int) -> tuple[bytes | None, int]:
    if pos + 4 > end:
        raise CorruptRecordError("legacy message ends inside a length field")
    (length,) = _I32.unpack_from(view, pos)
    pos += 4
    if length == -1:
        return None, pos
    if length < 0 or pos + length > end:
        raise CorruptRecordError(f"legacy message has bad length {length}")
    return bytes(view[pos : pos + length]), pos + length


class LegacyRecordBatch:
    """One outer legacy message at `position`: a plain message or a compressed wrapper.

    The batch's offset is the outer message's offset, which is the last offset of the
    records inside; its CRC and validity are the outer message's. Records are decoded
    (and decompressed) on first use.
    """

    __slots__ = ("position", "size", "_outer", "_records")

    count = None  # Kafka's countOrNull: legacy batches do not store it
    base_sequence = -1
    last_sequence = -1
    producer_id = -1
    producer_epoch = -1
    partition_leader_epoch = -1
    is_transactional = False
    is_control = False
    delete_horizon_ms = None

    def __init__(self, buf: bytes | bytearray | memoryview, position: int = 0) -> None:
        self._outer = _Message(buf, position)
        self.position = position
        self.size = self._outer.end - position
        self._records: list[LegacyRecord] | None = None

    @property
    def magic(self) -> int:
        return self._outer.magic

    @property
    def last_offset(self) -> int:
        return self._outer.offset

    @property
    def next_offset(self) -> int:
        return self._outer.offset + 1

    @property
    def base_offset(self) -> int:
        if self.compression_type == compression.NONE:
            return self._outer.offset
        records = self.records()
        return records[0].offset if records else self._outer.offset

    @property
    def crc(self) -> int:
        return self._outer.crc

    @property
    def compression_type(self) -> int:
        return self._outer.attributes & CODEC_MASK

    @property
    def timestamp_type(self) -> int:
        if self._outer.magic == 0:
            return NO_TIMESTAMP_TYPE
        return LOG_APPEND_TIME if self._outer.attributes & TIMESTAMP_TYPE_MASK else CREATE_TIME

    @property
    def max_timestamp(self) -> int:
        return self._outer.timestamp

    def is_valid(self) -> bool:
        return self._outer.valid

    def ensure_valid(self) -> None:
        if not self._outer.valid:
            raise CorruptRecordError(
                f"legacy message at position {self.position} is corrupt (stored crc = "
                f"{self._outer.crc}, size = {self.size})"
            )

    def records(self) -> list[LegacyRecord]:
        """The records inside: the message itself, or a wrapper's decompressed messages."""
        if self._records is None:
            self._records = self._decode()
        return self._records

    def __iter__(self):
        return iter(self.records())

    def _decode(self) -> list[LegacyRecord]:
        outer = self._outer
        codec = outer.attributes & CODEC_MASK
        if codec == compression.NONE:
            return [_to_record(outer, outer.offset, outer.timestamp)]
        if codec > compression.LZ4:
            raise CorruptRecordError(f"codec {codec} is not allowed in magic {outer.magic}")
        if outer.value is None:
            raise CorruptRecordError(f"compressed wrapper at {self.position} has no value")
        inner_buf = compression.decompress(codec, outer.value, outer.magic)
        inner = []
        position = 0
        while len(inner_buf) - position >= LOG_OVERHEAD + RECORD_OVERHEAD_V0:
            message = _Message(inner_buf, position)
            if message.magic != outer.magic:
                raise CorruptRecordError("inner message magic differs from its wrapper's")
            if message.attributes & CODEC_MASK:
                raise CorruptRecordError("compressed legacy messages must not nest")
            inner.append(message)
            position = message.end
        if not inner:
            raise CorruptRecordError(f"compressed wrapper at {self.position} holds no messages")
        shift = outer.offset - inner[-1].offset if outer.magic == 1 else 0
        log_append = self.timestamp_type == LOG_APPEND_TIME
        return [
            _to_record(m, m.offset + shift, outer.timestamp if log_append else m.timestamp)
            for m in inner
        ]


def _to_record(message: _Message, offset: int, timestamp: int) -> LegacyRecord:
    return LegacyRecord(
        offset, timestamp, message.key, message.value, message.crc, message.valid, message.magic
    )


def encode_message(
    offset: int, magic: int, attributes: int, timestamp: int, key: bytes | None,
    value: bytes | None,
) -> bytes:  # fmt: skip
    """One legacy message with its offset/size prefix and CRC-32."""
    parts = [bytes((magic, attributes & 0xFF))]
    if magic == 1:
        parts.append(_I64.pack(timestamp))
    for field in (key, value):
        if field is None:
            parts.append(_I32.pack(-1))
        else:
            parts += (_I32.pack(len(field)), field)
    body = b"".join(parts)
    crc = zlib.crc32(body)
    return _I64.pack(offset) + _I32.pack(len(body) + 4) + crc.to_bytes(4, "big") + body


def build_legacy_batch(
    records: Sequence[Record],
    *,
    magic: int,
    base_offset: int = 0,
    compression_type: int = compression.NONE,
    timestamp_type: int = CREATE_TIME,
    log_append_time: int | None = None,
) -> bytes:
    """Encode `records` as a magic 0/1 message set, the way old producers sent them.

    Uncompressed: one message per record. Compressed: one wrapper holding them all
    (offsets absolute in magic 0, relative in magic 1), its offset the last record's and
    its timestamp the largest (or `log_append_time` for a LogAppendTime wrapper).
    """
    if magic not in (0, 1):
        raise ValueError(f"legacy magic must be 0 or 1, not {magic}")
    ts_bit = TIMESTAMP_TYPE_MASK if magic == 1 and timestamp_type == LOG_APPEND_TIME else 0
    offsets = [base_offset + i if r.offset is None else r.offset for i, r in enumerate(records)]
    if compression_type == compression.NONE:
        return b"".join(
            encode_message(o, magic, ts_bit, r.timestamp, r.key, r.value)
            for o, r in zip(offsets, records, strict=True)
        )
    relative = magic == 1
    inner = b"".join(
        encode_message(o - base_offset if relative else o, magic, 0, r.timestamp, r.key, r.value)
        for o, r in zip(offsets, records, strict=True)
    )
    if log_append_time is not None and ts_bit:
        wrapper_ts = log_append_time
    else:
        wrapper_ts = max((r.timestamp for r in records), default=NO_TIMESTAMP)
    value = compression.compress(compression_type, inner, magic)
    return encode_message(offsets[-1], magic, compression_type | ts_bit, wrapper_ts, None, value)
