"""Typed configuration: topic-level log config (Kafka's LogConfig), with room for the broker's.

A topic's effective config is the broker defaults (`log.*` keys in server.properties,
already mapped to topic key names by the caller) overlaid with the topic's overrides
(`/config/topics/<t>`). Both arrive as `dict[str, str]`; `LogConfig.from_props` parses
and validates them against one declarative table, `TOPIC_CONFIGS`, whose names, types,
defaults and bounds are those of storage/.../log/LogConfig.java (Kafka 3.x).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kt.errors import KafkaError

INT_MAX = 2**31 - 1
INT_MIN = -(2**31)
LONG_MAX = 2**63 - 1
LONG_MIN = -(2**63)

CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
CLEANUP_POLICIES = ("compact", "delete")


class InvalidConfigError(KafkaError):
    """A config value Kafka would refuse (INVALID_CONFIG); the message names key and value."""

    def __init__(self, message: str) -> None:
        super().__init__("INVALID_CONFIG", message)


# -- value parsers: str -> typed value, raising ValueError with a reason --------------


def _int(bits: int) -> Callable[[str], int]:
    low, high = (INT_MIN, INT_MAX) if bits == 32 else (LONG_MIN, LONG_MAX)

    def parse(text: str) -> int:
        value = int(text.strip())
        if not low <= value <= high:
            raise ValueError(f"out of range for a {bits}-bit integer")
        return value

    return parse


def _bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise ValueError("expected true or false")
    return lowered == "true"


def _double(text: str) -> float:
    return float(text.strip())


def _string(text: str) -> str:
    return text.strip()


def _list(text: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in text.split(",") if item.strip())


_INT = _int(32)
_LONG = _int(64)


# -- validators: typed value -> None, raising ValueError --------------------------------


def at_least(minimum: float) -> Callable[[Any], None]:
    def check(value: Any) -> None:
        if value < minimum:
            raise ValueError(f"value must be at least {minimum:g}")

    return check


def between(low: float, high: float) -> Callable[[Any], None]:
    def check(value: Any) -> None:
        if not low <= value <= high:
            raise ValueError(f"value must be between {low:g} and {high:g}")

    return check


def one_of(*allowed: str) -> Callable[[Any], None]:
    def check(value: Any) -> None:
        items = value if isinstance(value, tuple) else (value,)
        for item in items:
            if item not in allowed:
                raise ValueError(f"String must be one of: {', '.join(allowed)}")

    return check


@dataclass(frozen=True, slots=True)
class ConfigKey:
    """One topic-level key: its Kafka name, the LogConfig field, parser and validator."""

    name: str
    field: str
    parse: Callable[[str], Any]
    validate: Callable[[Any], None] | None = None


TOPIC_CONFIGS: tuple[ConfigKey, ...] = (
    ConfigKey("cleanup.policy", "cleanup_policy", _list, one_of(*CLEANUP_POLICIES)),
    ConfigKey("compression.type", "compression_type", _string, one_of(*COMPRESSION_TYPES)),
    ConfigKey("delete.retention.ms", "delete_retention_ms", _LONG, at_least(0)),
    ConfigKey("file.delete.delay.ms", "file_delete_delay_ms", _LONG, at_least(0)),
    ConfigKey("flush.messages", "flush_messages", _LONG, at_least(1)),
    ConfigKey("flush.ms", "flush_ms", _LONG, at_least(0)),
    ConfigKey("follower.replication.throttled.replicas", "follower_replication_throttled_replicas", _string),  # noqa: E501
    ConfigKey("index.interval.bytes", "index_interval_bytes", _INT, at_least(0)),
    ConfigKey("leader.replication.throttled.replicas", "leader_replication_throttled_replicas", _string),  # noqa: E501
    ConfigKey("local.retention.bytes", "local_retention_bytes", _LONG, at_least(-2)),
    ConfigKey("local.retention.ms", "local_retention_ms", _LONG, at_least(-2)),
    ConfigKey("max.compaction.lag.ms", "max_compaction_lag_ms", _LONG, at_least(1)),
    ConfigKey("max.message.bytes", "max_message_bytes", _INT, at_least(0)),
    ConfigKey("message.format.version", "message_format_version", _string),
    ConfigKey("message.timestamp.after.max.ms", "message_timestamp_after_max_ms", _LONG, at_least(0)),  # noqa: E501
    ConfigKey("message.timestamp.before.max.ms", "message_timestamp_before_max_ms", _LONG, at_least(0)),  # noqa: E501
    ConfigKey("message.timestamp.type", "message_timestamp_type", _string, one_of(CREATE_TIME, LOG_APPEND_TIME)),  # noqa: E501
    ConfigKey("min.cleanable.dirty.ratio", "min_cleanable_dirty_ratio", _double, between(0, 1)),
    ConfigKey("min.compaction.lag.ms", "min_compaction_lag_ms", _LONG, at_least(0)),
    ConfigKey("min.insync.replicas", "min_insync_replicas", _INT, at_least(1)),
    ConfigKey("preallocate", "preallocate", _bool),
    ConfigKey("retention.bytes", "retention_bytes", _LONG),
    ConfigKey("retention.ms", "retention_ms", _LONG, at_least(-1)),
    # LegacyRecord.RECORD_OVERHEAD_V0 = 14: the smallest segment that can hold a message.
    ConfigKey("segment.bytes", "segment_bytes", _INT, at_least(14)),
    ConfigKey("segment.index.bytes", "segment_index_bytes", _INT, at_least(4)),
    ConfigKey("segment.jitter.ms", "segment_jitter_ms", _LONG, at_least(0)),
    ConfigKey("segment.ms", "segment_ms", _LONG, at_least(1)),
    ConfigKey("unclean.leader.election.enable", "unclean_leader_election_enable", _bool),
)  # fmt: skip

TOPIC_CONFIGS_BY_NAME: dict[str, ConfigKey] = {key.name: key for key in TOPIC_CONFIGS}


@dataclass(frozen=True)
class LogConfig:
    """A topic's log settings, every field typed and within Kafka's bounds.

    Invariants: field defaults are Kafka's topic defaults (TOOLS.md B3); an instance is
    immutable, so a config change builds a new one (`with_overrides`) and the log picks
    it up whole. Field names are the Kafka keys with dots as underscores.
    """

    cleanup_policy: tuple[str, ...] = ("delete",)
    compression_type: str = "producer"
    delete_retention_ms: int = 86_400_000
    file_delete_delay_ms: int = 60_000
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    follower_replication_throttled_replicas: str = ""
    index_interval_bytes: int = 4096
    leader_replication_throttled_replicas: str = ""
    local_retention_bytes: int = -2
    local_retention_ms: int = -2
    max_compaction_lag_ms: int = LONG_MAX
    max_message_bytes: int = 1_048_588  # 1 MiB + Records.LOG_OVERHEAD
    message_format_version: str = "3.0-IV1"
    message_timestamp_after_max_ms: int = LONG_MAX
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_type: str = CREATE_TIME
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    min_insync_replicas: int = 1
    preallocate: bool = False
    retention_bytes: int = -1
    retention_ms: int = 604_800_000  # 7 days
    segment_bytes: int = 1_073_741_824  # 1 GiB
    segment_index_bytes: int = 10_485_760  # 10 MiB
    segment_jitter_ms: int = 0
    segment_ms: int = 604_800_000
    unclean_leader_election_enable: bool = False

    @classmethod
    def from_props(cls, props: Mapping[str, str], defaults: LogConfig | None = None) -> LogConfig:
        """Parse `props` (Kafka key -> string) over `defaults` (or Kafka's defaults).

        Raises InvalidConfigError naming the key for an unknown key or a bad value.
        """
        values: dict[str, Any] = {}
        for name, text in props.items():
            key = TOPIC_CONFIGS_BY_NAME.get(name)
            if key is None:
                raise InvalidConfigError(f"Unknown topic config name: {name}")
            values[key.field] = parse_value(key, text)
        base = defaults if defaults is not None else cls()
        config = dataclasses.replace(base, **values)
        config.validate()
        return config

    def with_overrides(self, props: Mapping[str, str]) -> LogConfig:
        """This config with a topic's overrides applied."""
        return LogConfig.from_props(props, defaults=self)

    def validate(self) -> None:
        """Cross-field checks (LogConfig.validateValues)."""
        if self.min_compaction_lag_ms > self.max_compaction_lag_ms:
            raise InvalidConfigError(
                f"conflict topic config setting min.compaction.lag.ms "
                f"({self.min_compaction_lag_ms}) > max.compaction.lag.ms "
                f"({self.max_compaction_lag_ms})"
            )

    def to_props(self) -> dict[str, str]:
        """Every key as Kafka prints it (DescribeConfigs): lists comma-joined, bools lower."""
        out: dict[str, str] = {}
        for key in TOPIC_CONFIGS:
            value = getattr(self, key.field)
            if isinstance(value, bool):
                out[key.name] = "true" if value else "false"
            elif isinstance(value, tuple):
                out[key.name] = ",".join(value)
            else:
                out[key.name] = str(value)
        return out

    # -- derived settings -----------------------------------------------------------

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == LOG_APPEND_TIME

    @property
    def max_index_size(self) -> int:
        return self.segment_index_bytes


def parse_value(key: ConfigKey, text: str) -> Any:
    """Parse and check one value; InvalidConfigError says which key and why."""
    try:
        value = key.parse(text)
        if key.validate is not None:
            key.validate(value)
    except ValueError as e:
        raise InvalidConfigError(
            f"Invalid value {text} for configuration {key.name}: {e}"
        ) from None
    return value
