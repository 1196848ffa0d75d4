"""A topic's log config (Kafka's LogConfig, storage/.../log/LogConfig.java, Kafka 3.9).

A topic's effective config is the broker defaults (`log.*` keys in server.properties,
already mapped to topic key names by the caller) overlaid with the topic's overrides
(`/config/topics/<t>`). Both arrive as `dict[str, str]`; `LogConfig.from_props` parses
and validates them against one declarative table, `TOPIC_CONFIGS`, whose names, types,
defaults and bounds are Kafka's. The broker's own config is kt/config.py's KafkaConfig.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kt.config_def import (
    INT,
    LONG,
    InvalidValue,
    at_least,
    between,
    boolean,
    checked_value,
    double,
    one_of,
    string,
    string_list,
)
from kt.errors import InvalidConfigError

INT_MAX = 2**31 - 1
INT_MIN = -(2**31)
LONG_MAX = 2**63 - 1
LONG_MIN = -(2**63)

CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
# A topic's compression.type as the codec id of a batch's attributes (CompressionType.id);
# "producer" keeps each batch's own codec.
CODEC_IDS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
CLEANUP_POLICIES = ("compact", "delete")


def gzip_level(value: int) -> None:
    """GzipCompression.LevelValidator: Deflater's default (-1) or a level of 1 to 9."""
    if value != -1 and not 1 <= value <= 9:
        raise InvalidValue(value, "Value must be between 1 and 9 or equal to -1")


def no_tiered_storage(value: bool) -> None:
    """remote.storage.enable: kt has no tiered storage (Kafka's own refusal when its
    remote.log.storage.system.enable is off, LogConfig.validateRemoteStorageOnlyIfSystemEnabled)."""
    if value:
        raise InvalidValue(value, "Tiered Storage functionality is disabled in the broker. "
                           "Topic cannot be configured with remote log storage.")  # fmt: skip


@dataclass(frozen=True, slots=True)
class ConfigKey:
    """One topic-level key: its Kafka name, the LogConfig field, parser and validator."""

    name: str
    field: str
    parse: Callable[[str], Any]
    validate: Callable[[Any], None] | None = None


TOPIC_CONFIGS: tuple[ConfigKey, ...] = (
    ConfigKey("cleanup.policy", "cleanup_policy", string_list, one_of(*CLEANUP_POLICIES)),
    ConfigKey("compression.type", "compression_type", string, one_of(*COMPRESSION_TYPES)),
    ConfigKey("compression.gzip.level", "compression_gzip_level", INT, gzip_level),
    ConfigKey("compression.lz4.level", "compression_lz4_level", INT, between(1, 17)),
    ConfigKey("compression.zstd.level", "compression_zstd_level", INT, between(-131072, 22)),
    ConfigKey("delete.retention.ms", "delete_retention_ms", LONG, at_least(0)),
    ConfigKey("file.delete.delay.ms", "file_delete_delay_ms", LONG, at_least(0)),
    ConfigKey("flush.messages", "flush_messages", LONG, at_least(1)),
    ConfigKey("flush.ms", "flush_ms", LONG, at_least(0)),
    ConfigKey("follower.replication.throttled.replicas", "follower_replication_throttled_replicas", string),  # noqa: E501
    ConfigKey("index.interval.bytes", "index_interval_bytes", INT, at_least(0)),
    ConfigKey("leader.replication.throttled.replicas", "leader_replication_throttled_replicas", string),  # noqa: E501
    ConfigKey("local.retention.bytes", "local_retention_bytes", LONG, at_least(-2)),
    ConfigKey("local.retention.ms", "local_retention_ms", LONG, at_least(-2)),
    ConfigKey("max.compaction.lag.ms", "max_compaction_lag_ms", LONG, at_least(1)),
    ConfigKey("max.message.bytes", "max_message_bytes", INT, at_least(0)),
    ConfigKey("message.downconversion.enable", "message_downconversion_enable", boolean),
    ConfigKey("message.format.version", "message_format_version", string),
    ConfigKey("message.timestamp.after.max.ms", "message_timestamp_after_max_ms", LONG, at_least(0)),  # noqa: E501
    ConfigKey("message.timestamp.before.max.ms", "message_timestamp_before_max_ms", LONG, at_least(0)),  # noqa: E501
    ConfigKey("message.timestamp.difference.max.ms", "message_timestamp_difference_max_ms", LONG, at_least(0)),  # noqa: E501
    ConfigKey("message.timestamp.type", "message_timestamp_type", string, one_of(CREATE_TIME, LOG_APPEND_TIME)),  # noqa: E501
    ConfigKey("min.cleanable.dirty.ratio", "min_cleanable_dirty_ratio", double, between(0, 1)),
    ConfigKey("min.compaction.lag.ms", "min_compaction_lag_ms", LONG, at_least(0)),
    ConfigKey("min.insync.replicas", "min_insync_replicas", INT, at_least(1)),
    ConfigKey("preallocate", "preallocate", boolean),
    ConfigKey("remote.log.copy.disable", "remote_log_copy_disable", boolean),
    ConfigKey("remote.log.delete.on.disable", "remote_log_delete_on_disable", boolean),
    ConfigKey("remote.storage.enable", "remote_storage_enable", boolean, no_tiered_storage),
    ConfigKey("retention.bytes", "retention_bytes", LONG),
    ConfigKey("retention.ms", "retention_ms", LONG, at_least(-1)),
    # LegacyRecord.RECORD_OVERHEAD_V0 = 14: the smallest segment that can hold a message.
    ConfigKey("segment.bytes", "segment_bytes", INT, at_least(14)),
    ConfigKey("segment.index.bytes", "segment_index_bytes", INT, at_least(4)),
    ConfigKey("segment.jitter.ms", "segment_jitter_ms", LONG, at_least(0)),
    ConfigKey("segment.ms", "segment_ms", LONG, at_least(1)),
    ConfigKey("unclean.leader.election.enable", "unclean_leader_election_enable", boolean),
)  # fmt: skip

TOPIC_CONFIGS_BY_NAME: dict[str, ConfigKey] = {key.name: key for key in TOPIC_CONFIGS}


@dataclass(frozen=True, slots=True)
class LogConfig:
    """A topic's log settings, every field typed and within Kafka's bounds.

    Invariants: field defaults are Kafka's topic defaults (LogConfig.java); an instance is
    immutable, so a config change builds a new one (`with_overrides`) and the log picks
    it up whole. Field names are the Kafka keys with dots as underscores.
    """

    cleanup_policy: tuple[str, ...] = ("delete",)
    compression_type: str = "producer"
    compression_gzip_level: int = -1  # Deflater.DEFAULT_COMPRESSION
    compression_lz4_level: int = 9
    compression_zstd_level: int = 3
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
    message_downconversion_enable: bool = True
    message_format_version: str = "3.0-IV1"
    message_timestamp_after_max_ms: int = LONG_MAX
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_difference_max_ms: int = LONG_MAX  # deprecated: before/after's default
    message_timestamp_type: str = CREATE_TIME
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    min_insync_replicas: int = 1
    preallocate: bool = False
    remote_log_copy_disable: bool = False
    remote_log_delete_on_disable: bool = False
    remote_storage_enable: bool = False
    retention_bytes: int = -1
    retention_ms: int = 604_800_000  # 7 days
    segment_bytes: int = 1_073_741_824  # 1 GiB
    segment_index_bytes: int = 10_485_760  # 10 MiB
    segment_jitter_ms: int = 0
    segment_ms: int = 604_800_000
    unclean_leader_election_enable: bool = False
    # Derived settings that every append reads: plain attributes (set in __post_init__)
    # rather than properties. validates_records: the leader walks a client's records
    # (bounds_timestamps, or compaction, which takes no record without a key).
    # timestamp_before_max_ms / timestamp_after_max_ms: the bounds in force, which are
    # message.timestamp.difference.max.ms's where before/after are left at their
    # default (LogConfig.getMessageTimestampBeforeMaxMs, KIP-937's transition).
    log_append_time: bool = dataclasses.field(init=False, repr=False, compare=False)
    validates_records: bool = dataclasses.field(init=False, repr=False, compare=False)
    timestamp_before_max_ms: int = dataclasses.field(init=False, repr=False, compare=False)
    timestamp_after_max_ms: int = dataclasses.field(init=False, repr=False, compare=False)
    # The codec the leader writes a client's batches in (None: the producer's own), and
    # its level (KIP-390; None: the codec has no levels).
    target_codec: int | None = dataclasses.field(init=False, repr=False, compare=False)
    target_level: int | None = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        codec = CODEC_IDS.get(self.compression_type)
        levels = {1: self.compression_gzip_level, 3: self.compression_lz4_level,
                  4: self.compression_zstd_level}  # fmt: skip
        object.__setattr__(self, "target_codec", codec)
        object.__setattr__(self, "target_level", levels.get(codec))  # type: ignore[arg-type]
        difference = self.message_timestamp_difference_max_ms
        before, after = self.message_timestamp_before_max_ms, self.message_timestamp_after_max_ms
        object.__setattr__(self, "timestamp_before_max_ms",
                           before if before != LONG_MAX else difference)  # fmt: skip
        object.__setattr__(self, "timestamp_after_max_ms",
                           after if after != LONG_MAX else difference)  # fmt: skip
        object.__setattr__(self, "log_append_time", self.message_timestamp_type == LOG_APPEND_TIME)
        object.__setattr__(self, "validates_records", self.bounds_timestamps or self.compact)

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
    def bounds_timestamps(self) -> bool:
        """A CreateTime topic whose records' timestamps must lie within
        message.timestamp.before/after.max.ms (or the older difference.max.ms) of the
        broker's clock."""
        bounded = min(self.timestamp_before_max_ms, self.timestamp_after_max_ms)
        return not self.log_append_time and bounded < LONG_MAX

    @property
    def max_index_size(self) -> int:
        return self.segment_index_bytes


def parse_value(key: ConfigKey, text: str) -> Any:
    """Parse and check one value; InvalidConfigError says which key and why."""
    return checked_value(key.name, key.parse, key.validate, text)
