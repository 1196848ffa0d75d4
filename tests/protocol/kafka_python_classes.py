"""kafka-python 3.0's protocol classes, found by message name: the independent oracle.

kafka-python builds one class per message from its own copy of Kafka's JSON and
compiles its own encoders (kafka/protocol/api_message.py); `Cls.decode(data,
version=v)` and `obj.encode(version=v)` read and write a body without header."""

from __future__ import annotations

import importlib
import pkgutil

import kafka.protocol
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.data_container import DataContainer

from kt.protocol.messages import STRUCT_CLASSES
from kt.protocol.schema import in_range
from kt.protocol.types import ZERO_UUID


def _subclasses(cls: type):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def load() -> dict[str, type]:
    for module in pkgutil.walk_packages(kafka.protocol.__path__, "kafka.protocol."):
        if module.name.endswith(("generate_stubs", ".old")) or ".old." in module.name:
            continue
        importlib.import_module(module.name)
    return {c.__name__: c for c in _subclasses(ApiMessage) if c._class_version is None}


# kafka-python names two fields its own way: ClusterAuthorizedOperations and
# TopicAuthorizedOperations are both `authorized_operations` there.
def _kt_name(value, kp_name: str) -> str | None:
    if kp_name in value.FIELDS:
        return kp_name
    return next((n for n in value.FIELDS if n.endswith("_" + kp_name)), None)


def _kp_name(value, kt_name: str) -> str:
    if kt_name in value._struct.fields:
        return kt_name
    return next(n for n in value._struct.fields if kt_name.endswith("_" + n))


def kt_to_kp(value, kp_struct, version: int, cls: type | None = None):
    """A kafka-python object holding the values of kt struct `value`, by field name."""
    values = {}
    for field in kp_struct._fields:
        name = _kt_name(value, field.name)
        if not field.for_version_q(version) or name is None:
            continue
        v = getattr(value, name)
        if getattr(field, "_type_str", None) == "bitfield" and isinstance(v, int):
            v = _int_to_bitfield(v)  # where kafka-python reads the int32 as a set of bits
        elif v is not None and field.is_struct_array():
            v = [kt_to_kp(x, field, version) for x in v]
        elif v is not None and field.is_struct():
            v = kt_to_kp(v, field, version)
        values[field.name] = v
    if cls is None and kp_struct.data_class is None:  # kafka-python makes some lazily
        kp_struct.set_data_class(type(kp_struct.type_str, (DataContainer,), {"_struct": kp_struct}))
    return (cls or kp_struct.data_class)(version=version, **values)


def kp_to_kt(value, schema, version: int, name: str | None = None):
    """A kt struct (`name`, default the message) holding kafka-python `value`'s values."""
    name = name or schema.name
    fields = schema.fields if name == schema.name else schema.structs[name]
    values = {}
    for f in fields:
        if not in_range(version, f.versions):
            continue
        v = getattr(value, _kp_name(value, f.name))
        if f.type == "uuid" and v is None:  # kafka-python reads the zero UUID as None
            v = ZERO_UUID
        elif f.name.endswith("authorized_operations") and not isinstance(v, int):
            v = _bitfield_to_int(v)  # kafka-python's set of bits (or None: bit 31 alone)
        elif v is not None and f.is_struct:
            if f.is_array:
                v = [kp_to_kt(x, schema, version, f.element_type) for x in v]
            else:
                v = kp_to_kt(v, schema, version, f.element_type)
        values[f.name] = v
    return STRUCT_CLASSES[schema.name][name](**values)


# kafka-python shows the int32 authorized-operations bit fields as sets of bit numbers,
# None for "not requested" (-2**31, bit 31 alone).
def _int_to_bitfield(value: int) -> set[int] | None:
    bits = {b for b in range(32) if (value & 0xFFFFFFFF) >> b & 1}
    return None if bits == {31} else bits


def _bitfield_to_int(bits: set[int] | None) -> int:
    raw = sum(1 << b for b in ({31} if bits is None else bits))
    return raw - 2**32 if raw >= 2**31 else raw
