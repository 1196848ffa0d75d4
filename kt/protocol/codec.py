"""Body codec: a compiled plan per (message class, version), built on first use.

`encode_body` appends a message's encoding to a parts list; `decode_body` reads one
from a memoryview. Malformed input becomes ProtocolError naming the message, the
version and what went wrong where; nothing else escapes a decode.
"""

from __future__ import annotations

import struct
from typing import Any

from kt.errors import ProtocolError
from kt.protocol.compiler import Plan, compile_plan
from kt.protocol.messages import STRUCT_CLASSES

_PLANS: dict[tuple[type, int], Plan] = {}
# What a generated decoder can raise on hostile bytes besides ProtocolError.
_DECODE_ERRORS = (struct.error, IndexError, ValueError, OverflowError, MemoryError, TypeError)


def plan(cls: type, version: int) -> Plan:
    """The compiled codec of message class `cls` at `version` (cached)."""
    found = _PLANS.get((cls, version))
    if found is None:
        schema = cls.SCHEMA  # type: ignore[attr-defined]
        lo, hi = schema.valid
        if not lo <= version <= hi:
            raise ValueError(f"{schema.name} has no version {version} (valid {lo}-{hi})")
        found = compile_plan(schema, version, STRUCT_CLASSES[schema.name])
        _PLANS[(cls, version)] = found
    return found


def encode_body(body: Any, version: int, out: list) -> None:
    """Append the encoding of `body` at `version` to `out` (a list of parts)."""
    try:
        plan(type(body), version).encode(body, out.append)
    except (struct.error, TypeError, AttributeError) as e:
        name = type(body).__qualname__
        raise ValueError(f"cannot encode {name} v{version}: {e}") from None


def decode_body(cls: type, version: int, buf: memoryview, pos: int) -> tuple[Any, int]:
    """Decode a `cls` body at `version` from `buf[pos:]`; (message, end offset)."""
    decode = plan(cls, version).decode
    try:
        return decode(buf, pos)
    except ProtocolError as e:
        raise ProtocolError(f"{cls.__qualname__} v{version}: {e}") from None
    except _DECODE_ERRORS as e:
        raise ProtocolError(f"{cls.__qualname__} v{version}: {e}") from None
