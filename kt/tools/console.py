"""Line parsing and record formatting for the console producer and consumer.

LineMessageReader (kafka-console-producer.sh): a line is
`[h1:v1,h2:v2<headers.delimiter>][key<key.separator>]value`, with the parts present only
when parse.headers / parse.key are on. DefaultMessageFormatter (kafka-console-consumer.sh):
the enabled fields in the order timestamp, partition, offset, headers, key, value, joined
by key.separator and ended by line.separator, as Kafka 3.9's tools print them
(tools/src/main/java/org/apache/kafka/tools/consumer/DefaultMessageFormatter.java).
"""

from __future__ import annotations

import datetime
import os
import re
import select
import struct
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any


class LineFormatError(Exception):
    """A line the reader cannot split; the message is Kafka's."""


def _flag(props: dict[str, str], key: str, default: bool) -> bool:
    value = props.get(key)
    return default if value is None else value.strip().lower() == "true"


def _unescape(text: str) -> str:
    return text.encode("utf-8").decode("unicode_escape") if "\\" in text else text


# BufferedReader.readLine's line ends, which LineMessageReader reads with: "\n", "\r", "\r\n"
_LINE_END = re.compile("\r\n|\r|\n")


def stdin_lines(linger_s: float) -> Iterator[str | None]:
    """Standard input's lines as Java's BufferedReader.readLine reads them (ended by "\n",
    "\r" or "\r\n", decoded as UTF-8 with replacement), and None once `linger_s` has passed
    since the first line not yet sent: the producer's cue to send what waits. That is
    linger.ms as the Java producer counts it, from a batch's first record, so that lines
    arriving steadily still go out every linger.ms (an idle gap of linger.ms held them
    until input paused)."""
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):  # a stream with no descriptor (tests)
        for line in sys.stdin:  # split again: a StringIO keeps a lone "\r"
            lines = _LINE_END.split(line)
            if not lines[-1]:
                lines.pop()
            yield from lines
        return
    pending = b""
    first_unsent: float | None = None  # when the oldest line not yet sent was read
    while True:
        if first_unsent is not None:
            wait = first_unsent + linger_s - time.monotonic()
            if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                first_unsent = None
                yield None
                continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        data = pending + chunk
        # The last whole line's end: a "\r" as the last byte may be half of a "\r\n".
        end = max(data.rfind(b"\n"), data.rfind(b"\r", 0, len(data) - 1))
        if end < 0:
            pending = data
            continue
        # Whole lines decoded at once: line ends are ASCII and inside no UTF-8 sequence,
        # so this reads as line by line would, invalid bytes included.
        lines = _LINE_END.split(data[: end + 1].decode("utf-8", "replace"))
        pending = data[end + 1 :]
        lines.pop()  # the empty text after the last line's end
        yield from lines
        if first_unsent is None:
            first_unsent = time.monotonic()
    if pending:
        lines = _LINE_END.split(pending.decode("utf-8", "replace"))
        if not lines[-1]:  # the input ended with a line end
            lines.pop()
        yield from lines


@dataclass
class LineReader:
    parse_key: bool = False
    key_separator: str = "\t"
    parse_headers: bool = False
    headers_delimiter: str = "\t"
    headers_separator: str = ","
    headers_key_separator: str = ":"
    null_marker: str | None = None
    ignore_error: bool = False

    @classmethod
    def from_props(cls, props: dict[str, str]) -> LineReader:
        reader = cls(
            parse_key=_flag(props, "parse.key", False),
            key_separator=_unescape(props.get("key.separator", "\t")),
            parse_headers=_flag(props, "parse.headers", False),
            headers_delimiter=_unescape(props.get("headers.delimiter", "\t")),
            headers_separator=_unescape(props.get("headers.separator", ",")),
            headers_key_separator=_unescape(props.get("headers.key.separator", ":")),
            null_marker=props.get("null.marker"),
            ignore_error=_flag(props, "ignore.error", False),
        )
        reader.check()
        return reader

    def check(self) -> None:
        """The separator checks of Kafka's LineMessageReader.configure."""
        pairs = [
            ("headers.delimiter", self.headers_delimiter, "headers.separator",
             self.headers_separator),
            ("headers.delimiter", self.headers_delimiter, "headers.key.separator",
             self.headers_key_separator),
            ("headers.separator", self.headers_separator, "headers.key.separator",
             self.headers_key_separator),
        ]  # fmt: skip
        if self.null_marker is not None:
            pairs += [
                ("null.marker", self.null_marker, name, value)
                for name, value in (
                    ("headers.delimiter", self.headers_delimiter),
                    ("headers.separator", self.headers_separator),
                    ("headers.key.separator", self.headers_key_separator),
                    ("key.separator", self.key_separator),
                )
            ]
        used = [("key.separator", self.key_separator)] if self.parse_key else []
        if self.parse_headers:
            used += [
                ("headers.delimiter", self.headers_delimiter),
                ("headers.separator", self.headers_separator),
                ("headers.key.separator", self.headers_key_separator),
            ]
        for name, value in used:
            if not value:
                raise LineFormatError(f"{name} may not be empty")
        for name_a, a, name_b, b in pairs:
            if a == b:
                raise LineFormatError(f"{name_a} and {name_b} may not be equal")

    def _null(self, text: str) -> bytes | None:
        return None if text == self.null_marker else text.encode()  # the marker may be None

    def parse(
        self, line: str, line_number: int
    ) -> tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]:
        """(key, value, headers) for one input line (without its newline)."""
        rest = line
        headers: list[tuple[str, bytes | None]] = []
        if self.parse_headers:
            head, sep, rest = rest.partition(self.headers_delimiter)
            if not sep:
                if not self.ignore_error:
                    raise LineFormatError(
                        f"No headers delimiter found on line number {line_number}: '{line}'"
                    )
                head, rest = "", line
            if head and head != self.null_marker:
                for pair in head.split(self.headers_separator):
                    k, ksep, v = pair.partition(self.headers_key_separator)
                    if not ksep:
                        raise LineFormatError(
                            f"No header key separator found in pair '{pair}' on line number "
                            f"{line_number}"
                        )
                    headers.append((k, self._null(v)))
        key = None
        if self.parse_key:
            k, sep, value_text = rest.partition(self.key_separator)
            if not sep:
                if not self.ignore_error:
                    raise LineFormatError(
                        f"No key separator found on line number {line_number}: '{line}'"
                    )
                return None, self._null(rest), headers
            key = None if k == self.null_marker else k.encode()  # _null, inlined: per line
            rest = value_text
        return key, None if rest == self.null_marker else rest.encode(), headers


class SerializationError(Exception):
    """A record a deserializer cannot read; the message is Kafka's."""


def _fixed(name: str, size: int, fmt: str) -> Callable[[bytes], str]:
    def read(data: bytes) -> str:
        if len(data) != size:
            raise SerializationError(f"Size of data received by {name}Deserializer is not {size}")
        value = struct.unpack(fmt, data)[0]
        return _java_float(value) if fmt in (">d", ">f") else str(value)

    return read


def _java_float(value: float) -> str:
    """Double.toString for the values a console shows: 1.0, 2.5, NaN, Infinity."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(float(value))


def _uuid(data: bytes) -> str:
    return str(uuid.UUID(data.decode("utf-8", "replace")))


def _bytes(data: bytes) -> str:
    """org.apache.kafka.common.utils.Bytes.toString: printable ASCII as is, the rest \\xNN."""
    return "".join(chr(b) if 32 <= b < 127 else f"\\x{b:02X}" for b in data)


DESERIALIZERS: dict[str, Callable[[bytes], str]] = {
    "StringDeserializer": lambda data: data.decode("utf-8", "replace"),
    "ByteArrayDeserializer": lambda data: data.decode("utf-8", "replace"),
    "ByteBufferDeserializer": lambda data: data.decode("utf-8", "replace"),
    "BytesDeserializer": _bytes,
    "ShortDeserializer": _fixed("Short", 2, ">h"),
    "IntegerDeserializer": _fixed("Integer", 4, ">i"),
    "LongDeserializer": _fixed("Long", 8, ">q"),
    "FloatDeserializer": _fixed("Float", 4, ">f"),
    "DoubleDeserializer": _fixed("Double", 8, ">d"),
    "UUIDDeserializer": _uuid,
    "VoidDeserializer": lambda data: "null",
}
SERIALIZATION_PACKAGE = "org.apache.kafka.common.serialization."


def deserializer(name: str) -> Callable[[bytes], str]:
    """A deserializer by Kafka class name (full or short); ValueError names the unknown."""
    short = name.removeprefix(SERIALIZATION_PACKAGE)
    if short not in DESERIALIZERS:
        raise ValueError(
            f"Unable to instantiate a deserializer from {name}: kt reads "
            + ", ".join(SERIALIZATION_PACKAGE + n for n in DESERIALIZERS)
        )
    return DESERIALIZERS[short]


@dataclass
class MessageFormatter:
    """DefaultMessageFormatter: the enabled fields, each followed by key.separator when
    another follows and by line.separator after the last."""

    print_timestamp: bool = False
    print_key: bool = False
    print_offset: bool = False
    print_delivery: bool = False
    print_epoch: bool = False
    print_partition: bool = False
    print_headers: bool = False
    print_value: bool = True
    key_separator: str = "\t"
    line_separator: str = "\n"
    headers_separator: str = ","
    null_literal: str = "null"
    key_deserializer: Callable[[bytes], str] | None = None
    value_deserializer: Callable[[bytes], str] | None = None
    headers_deserializer: Callable[[bytes], str] | None = None

    @classmethod
    def from_props(cls, props: dict[str, str]) -> MessageFormatter:
        def read_with(key: str) -> Callable[[bytes], str] | None:
            return deserializer(props[key].strip()) if props.get(key) else None

        return cls(
            print_timestamp=_flag(props, "print.timestamp", False),
            print_key=_flag(props, "print.key", False),
            print_offset=_flag(props, "print.offset", False),
            print_delivery=_flag(props, "print.delivery", False),
            print_epoch=_flag(props, "print.epoch", False),
            print_partition=_flag(props, "print.partition", False),
            print_headers=_flag(props, "print.headers", False),
            print_value=_flag(props, "print.value", True),
            key_separator=_unescape(props.get("key.separator", "\t")),
            line_separator=_unescape(props.get("line.separator", "\n")),
            headers_separator=_unescape(props.get("headers.separator", ",")),
            null_literal=props.get("null.literal", "null"),
            key_deserializer=read_with("key.deserializer"),
            value_deserializer=read_with("value.deserializer"),
            headers_deserializer=read_with("headers.deserializer"),
        )

    def _text(self, data: bytes | None, read: Callable[[bytes], str] | None) -> str:
        if read is None:
            return self.null_literal if data is None else data.decode("utf-8", "replace")
        return read(self.null_literal.encode() if data is None else data)

    def format(self, record: Any) -> str:
        fields = []
        if self.print_timestamp:
            if record.timestamp_type in (0, 1) and record.timestamp >= 0:
                label = "CreateTime" if record.timestamp_type == 0 else "LogAppendTime"
                fields.append(f"{label}:{record.timestamp}")
            else:
                fields.append("NO_TIMESTAMP")
        if self.print_partition:
            fields.append(f"Partition:{record.partition}")
        if self.print_offset:
            fields.append(f"Offset:{record.offset}")
        if self.print_delivery:  # a share group's record has its delivery count
            count = getattr(record, "delivery_count", None)
            fields.append(f"Delivery:{'NOT_PRESENT' if count is None else count}")
        if self.print_epoch:
            fields.append("Epoch:NOT_PRESENT")  # ConsoleConsumer hands the formatter none
        if self.print_headers:
            headers = list(record.headers)
            fields.append(
                self.headers_separator.join(
                    f"{k}:{self._text(v, self.headers_deserializer)}" for k, v in headers
                )
                if headers
                else "NO_HEADERS"
            )
        if self.print_key:
            fields.append(self._text(record.key, self.key_deserializer))
        if self.print_value:
            fields.append(self._text(record.value, self.value_deserializer))
        return self.key_separator.join(fields) + self.line_separator if fields else ""


class LoggingMessageFormatter(MessageFormatter):
    """DefaultMessageFormatter's output, and each record logged at INFO on stderr."""

    def format(self, record: Any) -> str:
        text = super().format(record)
        stamp = ""
        if record.timestamp_type in (0, 1):
            label = "CreateTime" if record.timestamp_type == 0 else "LogAppendTime"
            stamp = f"{label}:{record.timestamp}, "
        key = "key:" + ("null " if record.key is None else self._text(record.key, None) + ", ")
        value = "value:" + self._text(record.value, None)
        now = datetime.datetime.now()
        when = now.strftime("%Y-%m-%d %H:%M:%S") + f",{now.microsecond // 1000:03d}"
        sys.stderr.write(
            f"[{when}] INFO {stamp}{key}{value} "
            "(org.apache.kafka.tools.consumer.LoggingMessageFormatter)\n"
        )
        return text


class NoOpMessageFormatter(MessageFormatter):
    """Prints nothing: for measuring consumption alone."""

    def format(self, record: Any) -> str:
        return ""


TOOLS_PACKAGE = "org.apache.kafka.tools.consumer."
FORMATTERS: dict[str, type[MessageFormatter]] = {
    "DefaultMessageFormatter": MessageFormatter,
    "LoggingMessageFormatter": LoggingMessageFormatter,
    "NoOpMessageFormatter": NoOpMessageFormatter,
}


def formatter_class(name: str) -> type[MessageFormatter]:
    """--formatter: Kafka's class names (kafka.tools.X warns that it is deprecated, as Kafka
    does); ValueError for any other."""
    short = name.removeprefix(TOOLS_PACKAGE).removeprefix("kafka.tools.")
    if short not in FORMATTERS or name not in (TOOLS_PACKAGE + short, "kafka.tools." + short):
        raise ValueError(
            f"Unknown message formatter {name}: kt has "
            + ", ".join(TOOLS_PACKAGE + n for n in FORMATTERS)
        )
    if name.startswith("kafka.tools."):
        sys.stderr.write(
            f"WARNING: {name} is deprecated and will be removed in the next major release. "
            f"Please use {TOOLS_PACKAGE}{short} instead\n"
        )
    return FORMATTERS[short]
