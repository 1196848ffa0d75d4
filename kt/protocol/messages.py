"""Message classes: one plain class per Kafka request/response and per nested struct.

Built once at import from the schema table (kt/protocol/schemas/), not per
version: a class carries every field of every version, and the codec of a version
reads and writes the fields that exist in it (the others keep their defaults).

    from kt.protocol.messages import ProduceRequest, ProduceResponse
    r = ProduceResponse(responses=[ProduceResponse.TopicProduceResponse(name="t")])

Field names are Kafka's, in snake_case (`PartitionIndex` -> `partition_index`).
Nested structs, at any depth, and common structs are attributes of their message
class under Kafka's struct name: `ProduceResponse.PartitionProduceResponse`,
`FetchResponse.PartitionData`, `MetadataRequest.MetadataRequestTopic`.
`REQUESTS[api_key]` / `RESPONSES[api_key]` give the classes by API key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from kt.protocol.schema import PRIMITIVES, Field, MessageSchema
from kt.protocol.schemas import SCHEMAS
from kt.protocol.types import ZERO_UUID


class Struct:
    """A Kafka struct value. Invariant: every name of FIELDS is set on every instance
    (constructor keywords, else the schema default; mutable defaults are fresh)."""

    __slots__ = ()
    FIELDS: ClassVar[tuple[str, ...]] = ()
    _INIT: ClassVar[tuple[tuple[str, Any, Callable[[], Any] | None], ...]] = ()

    def __init__(self, **values: Any) -> None:
        for name, default, factory in self._INIT:
            if name in values:
                setattr(self, name, values.pop(name))
            elif factory is None:
                setattr(self, name, default)
            else:
                setattr(self, name, factory())
        if values:
            raise TypeError(f"{type(self).__qualname__} has no field {', '.join(sorted(values))}")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self.FIELDS)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = ", ".join(f"{n}={_short_repr(getattr(self, n))}" for n in self.FIELDS)
        return f"{type(self).__qualname__}({shown})"


class Message(Struct):
    """A request or response body; SCHEMA is its table entry."""

    __slots__ = ()
    SCHEMA: ClassVar[MessageSchema]
    API_KEY: ClassVar[int]
    KIND: ClassVar[str]


def _short_repr(value: object) -> str:
    if isinstance(value, memoryview):
        value = bytes(value)
    if isinstance(value, bytes | bytearray) and len(value) > 64:
        return f"<{len(value)} bytes>"
    return repr(value)


def _default_of(field: Field, classes: dict[str, type]) -> tuple[Any, Callable[[], Any] | None]:
    """(constant default, or a factory building a fresh mutable default)."""
    if field.is_array:
        return (None, None) if field.default is None else (None, list)
    if field.element_type not in PRIMITIVES:
        if field.default is None:
            return None, None
        name = field.type
        return None, lambda: classes[name]()
    if field.type == "uuid":
        return ZERO_UUID, None
    return field.default, None


def _make_class(
    name: str, qualname: str, fields: tuple[Field, ...], base: type, classes: dict[str, type]
) -> type:
    names = tuple(f.name for f in fields)
    init = tuple((f.name, *_default_of(f, classes)) for f in fields)
    doc = f"Kafka's {qualname}: " + ", ".join(names) + "."
    namespace = {"__slots__": names, "FIELDS": names, "_INIT": init, "__doc__": doc}
    cls = type(name, (base,), namespace)
    cls.__qualname__ = qualname
    cls.__module__ = __name__
    return cls


def _build(schema: MessageSchema) -> tuple[type, dict[str, type]]:
    """The message class and {struct name: class} including the message itself."""
    classes: dict[str, type] = {}
    for sname, fields in schema.structs.items():
        classes[sname] = _make_class(sname, f"{schema.name}.{sname}", fields, Struct, classes)
    top = _make_class(schema.name, schema.name, schema.fields, Message, classes)
    top.SCHEMA = schema  # type: ignore[attr-defined]
    top.API_KEY = schema.api_key  # type: ignore[attr-defined]
    top.KIND = schema.kind  # type: ignore[attr-defined]
    for sname, cls in classes.items():
        setattr(top, sname, cls)
    classes[schema.name] = top
    return top, classes


MESSAGES: dict[str, type] = {}
STRUCT_CLASSES: dict[str, dict[str, type]] = {}  # message name -> {struct name: class}
REQUESTS: dict[int, type] = {}
RESPONSES: dict[int, type] = {}


def data_message(schema: MessageSchema) -> type:
    """The class of one of Kafka's data messages (a coordinator record's key or value,
    not a request): built as the requests' classes are, read and written by the same
    codec (kt.protocol.codec), without an API key of its own."""
    cls, STRUCT_CLASSES[schema.name] = _build(schema)
    MESSAGES[schema.name] = cls
    return cls


for _schema in SCHEMAS:
    _cls, STRUCT_CLASSES[_schema.name] = _build(_schema)
    MESSAGES[_schema.name] = _cls
    (REQUESTS if _schema.kind == "request" else RESPONSES)[_schema.api_key] = _cls
    globals()[_schema.name] = _cls
del _schema, _cls
