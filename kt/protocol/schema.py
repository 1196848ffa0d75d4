"""kt's declarative schema table format: the facts of one Kafka message, per field.

A `MessageSchema` is what Kafka's JSON message definition
(clients/src/main/resources/common/message/*.json) says about one request or response,
reduced to what the codec needs:

    MessageSchema => name, api_key, kind, valid (lo, hi), flexible (lo, hi) | None,
                     fields [Field], structs {StructName: [Field]}
    Field         => name (snake_case attribute), kafka_name, type, versions (lo, hi),
                     nullable (lo, hi) | None, default, tag | None, tagged (lo, hi) | None

`type` is Kafka's type string: int8 int16 int32 int64 uint16 uint32 float64 bool uuid
string bytes records, a struct name, or `[]` + one of those for an array. A struct
name refers to `structs` of the same message (nested and common structs alike).
Version ranges are inclusive; an open range ("3+") has `hi = None`.

Defaults are Python values: numbers, bools, strings, None for "null". An array or
struct field whose default is not null has `default == ()`: a fresh empty list or a
struct with its own defaults.
"""

from __future__ import annotations

from dataclasses import dataclass

Versions = tuple[int, int | None]

PRIMITIVES = frozenset(
    (
        "int8",
        "int16",
        "int32",
        "int64",
        "uint16",
        "uint32",
        "float64",
        "bool",
        "uuid",
        "string",
        "bytes",
        "records",
    )
)


def in_range(version: int, versions: Versions | None) -> bool:
    """True when `version` lies in the inclusive range (open at the top when hi is None)."""
    if versions is None:
        return False
    lo, hi = versions
    return version >= lo and (hi is None or version <= hi)


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a struct. Invariant: `tag` and `tagged` are both set or both None;
    a tagged field exists on the wire only in flexible versions within `tagged`."""

    name: str
    kafka_name: str
    type: str
    versions: Versions
    nullable: Versions | None = None
    default: object = None
    tag: int | None = None
    tagged: Versions | None = None

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        """The element type of an array, or the type itself."""
        return self.type[2:] if self.type.startswith("[]") else self.type

    @property
    def is_struct(self) -> bool:
        """True for a struct or an array of structs."""
        return self.element_type not in PRIMITIVES


@dataclass(frozen=True, slots=True)
class MessageSchema:
    """One request or response. Invariant: every struct name used by a field is a key of
    `structs`, and struct names are unique within the message (as Kafka requires)."""

    name: str
    api_key: int
    kind: str  # "request" | "response"
    valid: tuple[int, int]
    flexible: Versions | None
    fields: tuple[Field, ...]
    structs: dict[str, tuple[Field, ...]]

    def is_flexible(self, version: int) -> bool:
        return in_range(version, self.flexible)
