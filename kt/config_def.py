"""Kafka's ConfigDef in small: how a config value's text becomes a typed value
(ConfigDef.parseType, with its reasons), the validators of its keys (Range.atLeast,
Range.between, ValidString, ValidList, MetadataVersionValidator) and the one message
format of a refusal, ConfigException's "Invalid value V for configuration K: reason".
Topic configs (LogConfig) and broker configs (KafkaConfig) in kt/config.py are tables of
keys over these."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from kt.errors import InvalidConfigError

Validator = Callable[[Any], None]


# -- value parsers: str -> typed value, raising ValueError with ConfigDef.parseType's reason


def integer(bits: int) -> Callable[[str], int]:
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    type_name = {16: "SHORT", 32: "INT", 64: "LONG"}[bits]  # ConfigDef.Type, as Kafka says it

    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            value = None
        if value is None or not low <= value <= high:  # Integer.parseInt overflows too
            raise ValueError(f"Not a number of type {type_name}")
        return value

    return parse


def boolean(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise ValueError("Expected value to be either true or false")
    return lowered == "true"


def double(text: str) -> float:
    try:
        return float(text.strip())
    except ValueError:
        raise ValueError("Not a number of type DOUBLE") from None


def string(text: str) -> str:
    return text.strip()


def string_list(text: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in text.split(",") if item.strip())


INT = integer(32)
LONG = integer(64)


# -- validators: typed value -> None, raising InvalidValue (ConfigDef's validators) ------


class InvalidValue(ValueError):
    """A parsed value a validator refuses: `shown` is the value as Kafka prints it."""

    def __init__(self, shown: object, reason: str) -> None:
        super().__init__(reason)
        self.shown = shown


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def at_least(minimum: float) -> Callable[[Any], None]:
    """ConfigDef.Range.atLeast."""

    def check(value: Any) -> None:
        if value < minimum:
            raise InvalidValue(value, f"Value must be at least {_number(minimum)}")

    return check


def between(low: float, high: float) -> Callable[[Any], None]:
    """ConfigDef.Range.between."""

    def check(value: Any) -> None:
        if value < low:
            raise InvalidValue(value, f"Value must be at least {_number(low)}")
        if value > high:
            raise InvalidValue(value, f"Value must be no more than {_number(high)}")

    return check


def one_of(*allowed: str) -> Callable[[Any], None]:
    """ConfigDef.ValidString, and ValidList (each item of a list)."""

    def check(value: Any) -> None:
        items = value if isinstance(value, tuple | list) else (value,)
        for item in items:
            if item not in allowed:
                raise InvalidValue(item, f"String must be one of: {', '.join(allowed)}")

    return check


def one_of_ignoring_case(*allowed: str) -> Callable[[Any], None]:
    """ConfigDef.CaseInsensitiveValidString."""

    def check(value: Any) -> None:
        if str(value).lower() not in {a.lower() for a in allowed}:
            raise InvalidValue(
                value, f"String must be one of (case insensitive): {', '.join(allowed)}"
            )

    return check


# MetadataVersion's versions (inter.broker.protocol.version, log.message.format.version).
METADATA_VERSIONS = (  # noqa: SIM905 (one line per row of Kafka's list)
    "0.8.0 0.8.1 0.8.2 0.9.0 0.10.0-IV0 0.10.0-IV1 0.10.1-IV0 0.10.1-IV1 0.10.1-IV2 0.10.2-IV0 "
    "0.11.0-IV0 0.11.0-IV1 0.11.0-IV2 1.0-IV0 1.1-IV0 2.0-IV0 2.0-IV1 2.1-IV0 2.1-IV1 2.1-IV2 "
    "2.2-IV0 2.2-IV1 2.3-IV0 2.3-IV1 2.4-IV0 2.4-IV1 2.5-IV0 2.6-IV0 2.7-IV0 2.7-IV1 2.7-IV2 "
    "2.8-IV0 2.8-IV1 3.0-IV0 3.0-IV1 3.1-IV0 3.2-IV0 3.3-IV0 3.3-IV1 3.3-IV2 3.3-IV3 3.4-IV0 "
    "3.5-IV0 3.5-IV1 3.5-IV2 3.6-IV0 3.6-IV1 3.6-IV2 3.7-IV0 3.7-IV1 3.7-IV2 3.7-IV3 3.7-IV4 "
    "3.8-IV0 3.9-IV0 4.0-IV0 4.0-IV1"
).split()
_VERSION_KEYS = set(METADATA_VERSIONS) | {v.partition("-IV")[0] for v in METADATA_VERSIONS}


def metadata_version(value: Any) -> None:
    """MetadataVersionValidator: MetadataVersion.fromVersionString, which reads 3.9.1 as
    3.9 (and 0.10.0.1 as 0.10.0)."""
    segments = value.split(".")
    kept = 3 if value.startswith("0.") else 2
    key = value if kept >= len(segments) else ".".join(segments[:kept])
    if key not in _VERSION_KEYS:
        raise InvalidValue(value, f"Version {value} is not a valid version")


def checked_value(
    name: str, parse: Callable[[str], Any], validate: Callable[[Any], None] | None, text: str
) -> Any:
    """ConfigDef.parse of one value: "Invalid value V for configuration K: reason", V the
    text for a parse error and the parsed value for a validator's."""
    try:
        value = parse(text)
        if validate is not None:
            validate(value)
    except InvalidValue as e:
        raise InvalidConfigError(
            f"Invalid value {shown_value(e.shown)} for configuration {name}: {e}"
        ) from None
    except ValueError as e:
        raise InvalidConfigError(f"Invalid value {text} for configuration {name}: {e}") from None
    return value


def shown_value(value: object) -> str:
    """A parsed value as Java's toString prints it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


PARSERS: dict[str, Callable[[str], Any]] = {
    "short": integer(16),
    "int": INT,
    "long": LONG,
    "double": double,
    "bool": boolean,
    "list": lambda text: list(string_list(text)),
    "string": string,
}


_DURATION = re.compile(
    r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$", re.IGNORECASE
)


def parse_iso_duration_ms(text: str) -> int:
    """ISO-8601 `PnDTnHnMnS` (java.time.Duration.parse) in milliseconds; ValueError with
    Java's message for anything else."""
    match = _DURATION.match(text.strip())
    if match is None or text.strip().upper() in ("P", "PT"):
        raise ValueError(f"Text cannot be parsed to a Duration: {text}")
    days, hours, minutes, seconds = match.groups()
    total = int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes or 0) * 60
    return int((total + float(seconds or 0)) * 1000)
