"""Hypothesis strategies built from kt's schema table: a message of any API at any
version, with exactly the fields that version has (the others keep their defaults),
nullable only where the version allows null."""

from __future__ import annotations

import uuid

from hypothesis import strategies as st

from kt.protocol.messages import STRUCT_CLASSES
from kt.protocol.schema import Field, MessageSchema, in_range

_INTS = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}
_TEXT = st.text(st.characters(codec="utf-8"), max_size=8)


def _scalar(ftype: str) -> st.SearchStrategy:
    if ftype in _INTS:
        lo, hi = _INTS[ftype]
        return st.integers(lo, hi)
    if ftype == "bool":
        return st.booleans()
    if ftype == "float64":
        return st.floats(allow_nan=False)
    if ftype == "uuid":
        return st.integers(0, 2**128 - 1).map(lambda n: uuid.UUID(int=n))
    if ftype == "string":
        return _TEXT
    if ftype in ("bytes", "records"):
        return st.binary(max_size=12)
    raise AssertionError(ftype)


def _field(schema: MessageSchema, version: int, f: Field, depth: int) -> st.SearchStrategy:
    elem = f.element_type
    if elem in _INTS or elem in ("bool", "float64", "uuid", "string", "bytes", "records"):
        inner = _scalar(elem)
    else:
        inner = struct_strategy(schema, version, elem, depth + 1)
    if f.is_array:
        inner = st.lists(inner, max_size=3 if depth < 2 else 1)
    if in_range(version, f.nullable):
        inner = st.one_of(st.none(), inner)
    return inner


def struct_strategy(
    schema: MessageSchema, version: int, name: str | None = None, depth: int = 0
) -> st.SearchStrategy:
    """Instances of struct `name` (default: the message itself) valid at `version`."""
    name = name or schema.name
    fields = schema.fields if name == schema.name else schema.structs[name]
    cls = STRUCT_CLASSES[schema.name][name]
    present = {
        f.name: _field(schema, version, f, depth) for f in fields if in_range(version, f.versions)
    }
    return st.fixed_dictionaries(present).map(lambda values: cls(**values))


def message_strategy(cls: type, version: int) -> st.SearchStrategy:
    return struct_strategy(cls.SCHEMA, version)
