"""Compile a message schema, at one version, into a decoder and an encoder.

The schema table (kt/protocol/schema.py) is walked once per (message, version) and
turned into straight-line Python source, one decode and one encode function per
struct, which is compiled with `compile()`/`exec()` in a namespace holding the
precompiled struct.Structs, the primitive readers of kt/protocol/types.py and the
message classes. Nothing is interpreted per call: runs of consecutive fixed-width
fields become one `Struct.unpack_from` / `Struct.pack`, arrays of fixed-width
elements one unpack, and fields absent from the version become constant defaults.

Generated signatures:

    d_<Struct>(buf: memoryview, pos: int) -> (obj, pos)
    e_<Struct>(obj, a)   # `a` is list.append of the output parts; writes the struct

A `records` value is appended as it is, so a sized non-bytes object (a file slice)
can travel in the parts list to the network layer untouched.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

from kt.protocol import types as t
from kt.protocol.schema import PRIMITIVES, Field, MessageSchema, in_range

_VARIABLE = ("string", "bytes", "records", "uuid")


@dataclass(frozen=True, slots=True)
class Plan:
    """The compiled codec of one message at one version."""

    decode: Callable  # (buf: memoryview, pos: int) -> (obj, pos)
    encode: Callable  # (obj, append) -> None
    source: str  # the generated code, for reading and debugging


class _Builder:
    """Accumulates generated source and the constants it refers to."""

    def __init__(self, schema: MessageSchema, version: int, classes: dict[str, type]) -> None:
        self.schema = schema
        self.version = version
        self.flexible = schema.is_flexible(version)
        self.classes = classes
        self.lines: list[str] = []
        self.ns: dict[str, object] = {
            name: getattr(t, name) for name in dir(t) if not name.startswith("__")
        }
        self.ns["new"] = object.__new__
        self.ns["struct"] = struct
        for name, cls in classes.items():
            self.ns[f"C_{name}"] = cls
        self._const: dict[tuple, str] = {}
        self.done: set[str] = set()

    def const(self, value: object) -> str:
        key = (type(value), repr(value))
        name = self._const.get(key)
        if name is None:
            name = f"K{len(self._const)}"
            self._const[key] = name
            self.ns[name] = value
        return name

    def fixed_struct(self, types: list[str]) -> str:
        fmt = ">" + "".join(t.FIXED_FORMATS[x] for x in types)
        return self.const(struct.Struct(fmt))

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    # ------------------------------------------------------------ helpers

    def default_expr(self, f: Field) -> str:
        if f.is_array or f.element_type not in PRIMITIVES:
            if f.default is None:
                return "None"
            return "[]" if f.is_array else f"C_{f.type}()"
        if f.type == "uuid":
            return "ZERO_UUID"
        return self.const(f.default)

    def differs_from_default(self, f: Field) -> str:
        """A condition true when tagged field value `v` is not its default (Kafka writes
        only those). A struct of scalars compares as one tuple, in C."""
        if f.is_array:
            return "v != []" if f.default is not None else "v is not None"
        if f.element_type in PRIMITIVES or f.default is None:
            return f"v != {self.default_expr(f)}"
        default = self.classes[f.type]()
        names = [x.name for x in self.struct_fields(f.type)]
        if all(x.element_type in PRIMITIVES and not x.is_array for x in self.struct_fields(f.type)):
            values = tuple(getattr(default, n) for n in names)
            return f"({', '.join(f'v.{n}' for n in names)},) != {self.const(values)}"
        return f"v != {self.const(default)}"

    def nullable(self, f: Field) -> bool:
        return in_range(self.version, f.nullable)

    def is_tagged(self, f: Field) -> bool:
        return self.flexible and in_range(self.version, f.tagged)

    def struct_fields(self, name: str) -> tuple[Field, ...]:
        if name == self.schema.name:
            return self.schema.fields
        return self.schema.structs[name]

    # ------------------------------------------------------------ structs

    def build(self, name: str) -> None:
        """Emit d_<name> and e_<name> and, first, those of every struct it uses."""
        if name in self.done:
            return
        self.done.add(name)
        fields = self.struct_fields(name)
        for f in fields:
            if f.is_struct and in_range(self.version, f.versions):
                self.build(f.element_type)
        self.build_decoder(name, fields)
        self.build_encoder(name, fields)

    def build_decoder(self, name: str, fields: tuple[Field, ...]) -> None:
        self.emit(0, f"def d_{name}(buf, pos):")
        self.emit(1, f"o = new(C_{name})")
        regular = []
        tagged = []
        for f in fields:
            if not in_range(self.version, f.versions):
                self.emit(1, f"o.{f.name} = {self.default_expr(f)}")
            elif self.is_tagged(f):
                self.emit(1, f"o.{f.name} = {self.default_expr(f)}")
                tagged.append(f)
            else:
                regular.append(f)
        run: list[Field] = []
        for f in regular + [None]:  # type: ignore[list-item]
            if f is not None and f.type in t.FIXED_FORMATS:
                run.append(f)
                continue
            if run:
                s = self.fixed_struct([x.type for x in run])
                targets = ", ".join(f"o.{x.name}" for x in run)
                self.emit(1, f"({targets},) = {s}.unpack_from(buf, pos)")
                self.emit(1, f"pos += {self.ns[s].size}")  # type: ignore[attr-defined]
                run = []
            if f is not None:
                self.decode_value(1, f, f"o.{f.name}", "pos")
        if self.flexible:
            self.decode_tagged(tagged)
        self.emit(1, "return o, pos")
        self.emit(0, "")

    def decode_tagged(self, tagged: list[Field]) -> None:
        if not tagged:
            self.emit(1, "if buf[pos]:  # IndexError past the end becomes ProtocolError")
            self.emit(2, "pos = skip_tagged_fields(buf, pos)")
            self.emit(1, "else:")
            self.emit(2, "pos += 1")
            return
        self.emit(1, "n, pos = read_uvarint(buf, pos)")
        self.emit(1, "for _ in range(n):")
        self.emit(2, "tag, end, p = read_tag_header(buf, pos)")
        for i, f in enumerate(sorted(tagged, key=lambda x: x.tag)):
            self.emit(2, f"{'if' if i == 0 else 'elif'} tag == {f.tag}:")
            self.decode_value(3, f, f"o.{f.name}", "p")
        self.emit(2, "pos = end")

    def decode_value(self, ind: int, f: Field, target: str, pos: str) -> None:
        """Lines reading one value of field `f` at `pos` into `target`, advancing `pos`."""
        nullable = self.nullable(f)
        compact = "compact_" if self.flexible else ""
        ftype = f.type
        if f.is_array:
            self.emit(ind, f"n, {pos} = read_{compact}array_count(buf, {pos}, {nullable})")
            self.emit(ind, "if n < 0:")
            self.emit(ind + 1, f"{target} = None")
            self.emit(ind, "else:")
            elem = f.element_type
            if elem in t.FIXED_FORMATS:
                fmt = t.FIXED_FORMATS[elem]
                size = struct.calcsize(">" + fmt)
                call = f"read_fixed_array(buf, {pos}, n, '{fmt}', {size})"
                self.emit(ind + 1, f"{target}, {pos} = {call}")
                return
            self.emit(ind + 1, "items = []")
            self.emit(ind + 1, "add = items.append")
            self.emit(ind + 1, "for _ in range(n):")
            element = Field(f.name, f.kafka_name, elem, f.versions)
            self.decode_value(ind + 2, element, "x", pos)
            self.emit(ind + 2, "add(x)")
            self.emit(ind + 1, f"{target} = items")
        elif ftype in t.FIXED_FORMATS:
            s = self.fixed_struct([ftype])
            self.emit(ind, f"({target},) = {s}.unpack_from(buf, {pos})")
            self.emit(ind, f"{pos} += {self.ns[s].size}")  # type: ignore[attr-defined]
        elif ftype == "uuid":
            self.emit(ind, f"{target}, {pos} = read_uuid(buf, {pos})")
        elif ftype == "string":
            self.emit(ind, f"{target}, {pos} = read_{compact}string(buf, {pos}, {nullable})")
        elif ftype == "bytes":
            self.emit(ind, f"v, {pos} = read_{compact}bytes(buf, {pos}, {nullable})")
            self.emit(ind, f"{target} = None if v is None else bytes(v)")
        elif ftype == "records":
            self.emit(ind, f"{target}, {pos} = read_{compact}bytes(buf, {pos}, {nullable})")
        elif nullable:  # a nullable struct: int8 marker, -1 = null
            self.emit(ind, f"if buf[{pos}] >= 128:")
            self.emit(ind + 1, f"{target} = None")
            self.emit(ind + 1, f"{pos} += 1")
            self.emit(ind, "else:")
            self.emit(ind + 1, f"{target}, {pos} = d_{ftype}(buf, {pos} + 1)")
        else:
            self.emit(ind, f"{target}, {pos} = d_{ftype}(buf, {pos})")

    # ------------------------------------------------------------ encoders

    def build_encoder(self, name: str, fields: tuple[Field, ...]) -> None:
        self.emit(0, f"def e_{name}(o, a):")
        regular = [
            f for f in fields if in_range(self.version, f.versions) and not self.is_tagged(f)
        ]
        tagged = [f for f in fields if in_range(self.version, f.versions) and self.is_tagged(f)]
        run: list[Field] = []
        for f in regular + [None]:  # type: ignore[list-item]
            if f is not None and f.type in t.FIXED_FORMATS:
                run.append(f)
                continue
            if run:
                s = self.fixed_struct([x.type for x in run])
                values = ", ".join(f"o.{x.name}" for x in run)
                self.emit(1, f"a({s}.pack({values}))")
                run = []
            if f is not None:
                self.encode_value(1, f, f"o.{f.name}", "a")
        if self.flexible:
            self.encode_tagged(tagged)
        self.emit(1, "return None")
        self.emit(0, "")

    def encode_tagged(self, tagged: list[Field]) -> None:
        if not tagged:
            self.emit(1, "a(b'\\x00')")
            return
        self.emit(1, "tags = []")
        for f in sorted(tagged, key=lambda x: x.tag):
            self.emit(1, f"v = o.{f.name}")
            self.emit(1, f"if {self.differs_from_default(f)}:")
            self.emit(2, "parts = []")
            self.encode_value(2, f, "v", "parts.append")
            self.emit(2, f"tags.append(({f.tag}, b''.join(parts)))")
        self.emit(1, "a(write_uvarint(len(tags)))")
        self.emit(1, "for tag, data in tags:")
        self.emit(2, "a(write_uvarint(tag))")
        self.emit(2, "a(write_uvarint(len(data)))")
        self.emit(2, "a(data)")

    def encode_value(self, ind: int, f: Field, value: str, a: str) -> None:
        """Lines appending the encoding of `value` (an expression) of field `f`."""
        nullable = self.nullable(f)
        flex = self.flexible
        ftype = f.type
        if ftype in t.FIXED_FORMATS:
            self.emit(ind, f"{a}({self.fixed_struct([ftype])}.pack({value}))")
            return
        if ftype == "uuid":
            self.emit(ind, f"{a}({value}.bytes)")
            return
        if value != "v":
            self.emit(ind, f"v = {value}")
        if nullable:
            null = "NULL_COMPACT" if flex else ("NULL_INT16" if ftype == "string" else "NULL_INT32")
            if not f.is_array and ftype not in _VARIABLE:
                null = "b'\\xff'"
            self.emit(ind, "if v is None:")
            self.emit(ind + 1, f"{a}({null})")
            self.emit(ind, "else:")
            ind += 1
        if ftype == "string":
            self.emit(ind, "v = v.encode()")
            self.emit(ind, f"{a}({'compact_length(len(v))' if flex else 'INT16.pack(len(v))'})")
            self.emit(ind, f"{a}(v)")
        elif ftype in ("bytes", "records"):
            self.emit(ind, f"{a}({'compact_length(len(v))' if flex else 'INT32.pack(len(v))'})")
            self.emit(ind, f"{a}(v)")
        elif f.is_array:
            self.emit(ind, f"{a}({'compact_length(len(v))' if flex else 'INT32.pack(len(v))'})")
            elem = f.element_type
            if elem in t.FIXED_FORMATS:
                fmt = t.FIXED_FORMATS[elem]
                self.emit(ind, f"{a}(struct.pack('>%d{fmt}' % len(v), *v))")
            elif elem in PRIMITIVES:
                self.emit(ind, "for x in v:")
                element = Field(f.name, f.kafka_name, elem, f.versions)
                self.encode_value(ind + 1, element, "x", a)
            else:
                self.emit(ind, "for x in v:")
                self.emit(ind + 1, f"e_{elem}(x, {a})")
        else:
            if nullable:
                self.emit(ind, f"{a}(b'\\x01')")
            self.emit(ind, f"e_{ftype}(v, {a})")


def compile_plan(schema: MessageSchema, version: int, classes: dict[str, type]) -> Plan:
    """Generate, compile and return the codec of `schema` at `version`.

    `classes` maps the message name and every struct name to its class."""
    b = _Builder(schema, version, classes)
    b.build(schema.name)
    source = "\n".join(b.lines)
    code = compile(source, f"<kt.protocol {schema.name} v{version}>", "exec")
    exec(code, b.ns)
    return Plan(b.ns[f"d_{schema.name}"], b.ns[f"e_{schema.name}"], source)  # type: ignore[arg-type]
