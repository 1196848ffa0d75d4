"""Kafka protocol primitive types (clients/.../protocol/types/Type.java), big-endian.

    INT8 INT16 INT32 INT64 UINT16 UINT32 FLOAT64   fixed width, two's complement / IEEE
    BOOLEAN          one byte, non-zero = true
    UUID             16 bytes: most significant int64, then least significant
    UNSIGNED_VARINT  7-bit groups, low group first, high bit set = more follow (<= 5 bytes)
    VARINT/VARLONG   zigzag ((n << 1) ^ (n >> 63)), then as UNSIGNED_VARINT (<= 10 bytes)
    STRING           int16 length + UTF-8        NULLABLE_STRING: length -1 = null
    BYTES            int32 length + bytes        NULLABLE_BYTES: length -1 = null
    COMPACT_*        UNSIGNED_VARINT length + 1, 0 = null, then the data
    ARRAY            int32 count (-1 = null)     COMPACT_ARRAY: UNSIGNED_VARINT count + 1
    RECORDS          NULLABLE_BYTES (compact when flexible) handed to storage untouched
    TAGGED_FIELDS    UNSIGNED_VARINT count, then per field: UNSIGNED_VARINT tag,
                     UNSIGNED_VARINT size, data; ends every struct of a flexible version

Readers take (buf, pos) and return (value, new_pos); `buf` is a memoryview over the
frame, so `records` come back as zero-copy memoryview slices. Readers raise
ProtocolError for short or inconsistent input; writers return bytes.
"""

from __future__ import annotations

import struct
import uuid

from kt.errors import ProtocolError

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")
UINT16 = struct.Struct(">H")
UINT32 = struct.Struct(">I")
FLOAT64 = struct.Struct(">d")
BOOL = struct.Struct(">?")

# struct format letter per fixed-width Kafka type; runs of them fuse into one Struct.
FIXED_FORMATS = {
    "int8": "b",
    "int16": "h",
    "int32": "i",
    "int64": "q",
    "uint16": "H",
    "uint32": "I",
    "float64": "d",
    "bool": "?",
}

ZERO_UUID = uuid.UUID(int=0)
_UVARINT_1 = [bytes((i,)) for i in range(128)]
# Compact lengths/counts: small ones are a single byte (value + 1 < 128).
_COMPACT_1 = [bytes((i + 1,)) for i in range(127)]
NULL_COMPACT = b"\x00"
NULL_INT16 = INT16.pack(-1)
NULL_INT32 = INT32.pack(-1)


def short(what: str, pos: int, need: int, have: int) -> ProtocolError:
    return ProtocolError(f"{what} at byte {pos}: needs {need} bytes, {have} left")


# ---------------------------------------------------------------- varints


def write_uvarint(n: int) -> bytes:
    if n < 128:
        if n < 0:
            raise ValueError(f"unsigned varint cannot be negative: {n}")
        return _UVARINT_1[n]
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def read_uvarint(buf: memoryview, pos: int, max_bytes: int = 5) -> tuple[int, int]:
    """An UNSIGNED_VARINT: at most 5 bytes (int32) or 10 (int64, max_bytes=10)."""
    if pos + 1 < len(buf):  # the common cases: one or two bytes
        b = buf[pos]
        if b < 0x80:
            return b, pos + 1
        b2 = buf[pos + 1]
        if b2 < 0x80:
            return (b & 0x7F) | (b2 << 7), pos + 2
    value = 0
    shift = 0
    end = len(buf)
    start = pos
    while True:
        if pos >= end:
            raise ProtocolError(f"varint at byte {start} runs past the end ({end} bytes)")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
        if pos - start >= max_bytes:
            raise ProtocolError(f"varint at byte {start} is longer than {max_bytes} bytes")


def write_varint(n: int) -> bytes:
    """VARINT (int32) zigzag-encoded."""
    return write_uvarint(((n << 1) ^ (n >> 31)) & 0xFFFFFFFF)


def read_varint(buf: memoryview, pos: int) -> tuple[int, int]:
    raw, pos = read_uvarint(buf, pos, 5)
    return (raw >> 1) ^ -(raw & 1), pos


def write_varlong(n: int) -> bytes:
    """VARLONG (int64) zigzag-encoded."""
    return write_uvarint(((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF)


def read_varlong(buf: memoryview, pos: int) -> tuple[int, int]:
    raw, pos = read_uvarint(buf, pos, 10)
    return (raw >> 1) ^ -(raw & 1), pos


def compact_length(n: int) -> bytes:
    """The length (or count) n of a compact non-null value: n + 1 as UNSIGNED_VARINT."""
    return _COMPACT_1[n] if n < 127 else write_uvarint(n + 1)


# ---------------------------------------------------------------- uuid


def read_uuid(buf: memoryview, pos: int) -> tuple[uuid.UUID, int]:
    end = pos + 16
    if end > len(buf):
        raise short("uuid", pos, 16, len(buf) - pos)
    return uuid.UUID(bytes=bytes(buf[pos:end])), end


def write_uuid(value: uuid.UUID) -> bytes:
    return value.bytes


# ---------------------------------------------------------------- strings and bytes


def _slice(buf: memoryview, pos: int, n: int, what: str) -> tuple[memoryview, int]:
    end = pos + n
    if end > len(buf):
        raise short(what, pos, n, len(buf) - pos)
    return buf[pos:end], end


def _utf8(data: memoryview, pos: int) -> str:
    try:
        return str(data, "utf-8")
    except UnicodeDecodeError as e:
        raise ProtocolError(f"string at byte {pos} is not UTF-8: {e.reason}") from None


def read_string(buf: memoryview, pos: int, nullable: bool) -> tuple[str | None, int]:
    """STRING / NULLABLE_STRING: int16 length, -1 = null."""
    if pos + 2 > len(buf):
        raise short("string length", pos, 2, len(buf) - pos)
    (n,) = INT16.unpack_from(buf, pos)
    if n < 0:
        if n == -1 and nullable:
            return None, pos + 2
        raise ProtocolError(f"string at byte {pos} has length {n}")
    data, end = _slice(buf, pos + 2, n, "string")
    return _utf8(data, pos), end


def read_compact_string(buf: memoryview, pos: int, nullable: bool) -> tuple[str | None, int]:
    """COMPACT_STRING / COMPACT_NULLABLE_STRING: uvarint length + 1, 0 = null."""
    n, start = read_uvarint(buf, pos)
    if n == 0:
        if nullable:
            return None, start
        raise ProtocolError(f"non-nullable compact string at byte {pos} is null")
    data, end = _slice(buf, start, n - 1, "compact string")
    return _utf8(data, pos), end


def write_string(value: str | None) -> bytes:
    if value is None:
        return NULL_INT16
    data = value.encode()
    return INT16.pack(len(data)) + data


def write_compact_string(value: str | None) -> bytes:
    if value is None:
        return NULL_COMPACT
    data = value.encode()
    return compact_length(len(data)) + data


def read_bytes(buf: memoryview, pos: int, nullable: bool) -> tuple[memoryview | None, int]:
    """BYTES / NULLABLE_BYTES: int32 length, -1 = null. Returns a view of `buf`."""
    if pos + 4 > len(buf):
        raise short("bytes length", pos, 4, len(buf) - pos)
    (n,) = INT32.unpack_from(buf, pos)
    if n < 0:
        if n == -1 and nullable:
            return None, pos + 4
        raise ProtocolError(f"bytes at byte {pos} have length {n}")
    return _slice(buf, pos + 4, n, "bytes")


def read_compact_bytes(buf: memoryview, pos: int, nullable: bool) -> tuple[memoryview | None, int]:
    n, start = read_uvarint(buf, pos)
    if n:
        end = start + n - 1
        if end <= len(buf):
            return buf[start:end], end
    if n == 0:
        if nullable:
            return None, start
        raise ProtocolError(f"non-nullable compact bytes at byte {pos} are null")
    return _slice(buf, start, n - 1, "compact bytes")


def write_bytes_prefix(value: object) -> bytes:
    """The int32 length prefix of BYTES / RECORDS (value: bytes-like, a sized slice, None)."""
    return NULL_INT32 if value is None else INT32.pack(len(value))  # type: ignore[arg-type]


def write_compact_bytes_prefix(value: object) -> bytes:
    return NULL_COMPACT if value is None else compact_length(len(value))  # type: ignore[arg-type]


# ---------------------------------------------------------------- arrays


def read_array_count(buf: memoryview, pos: int, nullable: bool) -> tuple[int, int]:
    """ARRAY count (int32), -1 when null. A count larger than the bytes left is refused
    before any element is read, so a hostile count cannot make the decoder spin."""
    if pos + 4 > len(buf):
        raise short("array count", pos, 4, len(buf) - pos)
    (n,) = INT32.unpack_from(buf, pos)
    if n < 0:
        if n == -1 and nullable:
            return -1, pos + 4
        raise ProtocolError(f"array at byte {pos} has count {n}")
    if n > len(buf) - pos - 4:
        raise ProtocolError(f"array at byte {pos} claims {n} elements, {len(buf) - pos} bytes left")
    return n, pos + 4


def read_compact_array_count(buf: memoryview, pos: int, nullable: bool) -> tuple[int, int]:
    n, start = read_uvarint(buf, pos)
    if n == 0:
        if nullable:
            return -1, start
        raise ProtocolError(f"non-nullable compact array at byte {pos} is null")
    if n - 1 > len(buf) - start:
        raise ProtocolError(f"array at byte {pos} claims {n - 1} elements, {len(buf) - pos} left")
    return n - 1, start


def read_fixed_array(buf: memoryview, pos: int, n: int, fmt: str, size: int) -> tuple[list, int]:
    """n fixed-width elements (e.g. []int32) in one unpack."""
    end = pos + n * size
    if end > len(buf):
        raise short("array", pos, n * size, len(buf) - pos)
    return list(struct.unpack_from(f">{n}{fmt}", buf, pos)), end


# ---------------------------------------------------------------- tagged fields


def read_tag_header(buf: memoryview, pos: int) -> tuple[int, int, int]:
    """(tag, end of its data, start of its data) for one tagged field."""
    tag, pos = read_uvarint(buf, pos)
    size, pos = read_uvarint(buf, pos)
    end = pos + size
    if end > len(buf):
        raise short(f"tagged field {tag}", pos, size, len(buf) - pos)
    return tag, end, pos


def skip_tagged_fields(buf: memoryview, pos: int) -> int:
    """Skip a whole tagged-field section (all tags unknown to the reader)."""
    if pos < len(buf) and buf[pos] == 0:
        return pos + 1
    count, pos = read_uvarint(buf, pos)
    for _ in range(count):
        _, pos, _ = read_tag_header(buf, pos)
    return pos
