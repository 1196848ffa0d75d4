"""A cursor over Kafka protocol types in a byte string, for the small version-prefixed
payloads that are not wire messages: `__consumer_offsets` and `__transaction_state`
keys and values, consumer-protocol subscriptions and assignments.

`flexible` switches to the compact encodings (unsigned varint length + 1, a tagged-field
section after each struct). Reads past the end raise ValueError, IndexError or
struct.error, which the callers turn into their own messages.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class SchemaReader:
    """Reads Kafka protocol types from `data`, starting at offset 0."""

    def __init__(self, data: bytes, flexible: bool = False) -> None:
        self.data = data
        self.pos = 0
        self.flexible = flexible

    def _fixed(self, st: struct.Struct) -> int:
        (value,) = st.unpack_from(self.data, self.pos)
        self.pos += st.size
        return value

    def int8(self) -> int:
        return self._fixed(_I8)

    def int16(self) -> int:
        return self._fixed(_I16)

    def int32(self) -> int:
        return self._fixed(_I32)

    def int64(self) -> int:
        return self._fixed(_I64)

    def uuid(self) -> uuid.UUID:
        return uuid.UUID(bytes=self._take(16))

    def uvarint(self) -> int:
        result = shift = 0
        while True:
            b = self.data[self.pos]
            self.pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result
            shift += 7

    def _length(self, classic: struct.Struct) -> int:
        return self.uvarint() - 1 if self.flexible else self._fixed(classic)

    def _take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise ValueError("field runs past the end of the record")
        out = bytes(self.data[self.pos : self.pos + n])
        self.pos += n
        return out

    def nullable_bytes(self) -> bytes | None:
        n = self._length(_I32)
        return None if n < 0 else self._take(n)

    def bytes_(self) -> bytes:
        out = self.nullable_bytes()
        if out is None:
            raise ValueError("non-nullable bytes field is null")
        return out

    def nullable_string(self) -> str | None:
        n = self._length(_I16)
        return None if n < 0 else self._take(n).decode()

    def string(self) -> str:
        out = self.nullable_string()
        if out is None:
            raise ValueError("non-nullable string field is null")
        return out

    def array_length(self) -> int:
        """The element count of an array (-1: null)."""
        return self._length(_I32)

    def array(self, item: Callable[[], object]) -> list | None:
        n = self.array_length()
        return None if n < 0 else [item() for _ in range(n)]

    def tagged_fields(self) -> None:
        if self.flexible:
            for _ in range(self.uvarint()):
                self.uvarint()
                self.pos += self.uvarint()
