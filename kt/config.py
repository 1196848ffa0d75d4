"""Typed configuration: topic-level log config (Kafka's LogConfig) and the broker's (KafkaConfig).

A topic's effective config is the broker defaults (`log.*` keys in server.properties,
already mapped to topic key names by the caller) overlaid with the topic's overrides
(`/config/topics/<t>`). Both arrive as `dict[str, str]`; `LogConfig.from_props` parses
and validates them against one declarative table, `TOPIC_CONFIGS`, whose names, types,
defaults and bounds are those of storage/.../log/LogConfig.java (Kafka 3.x).
"""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kt.broker.inter_broker_protocol import InterBrokerProtocol
from kt.config_def import (
    INT,
    LONG,
    PARSERS,
    InvalidValue,
    Validator,
    at_least,
    between,
    boolean,
    checked_value,
    double,
    metadata_version,
    one_of,
    string,
    string_list,
)
from kt.config_unread import UNREAD, UNREAD_KEYS, refuse_unread
from kt.endpoints import DEFAULT_PROTOCOL_MAP, SECURITY_PROTOCOLS, Endpoint, Listeners, require
from kt.errors import InvalidConfigError
from kt.properties import parse_properties
from kt.security.listener_security import ListenerSecurity
from kt.unsupported import refuse_broker_features

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


# ---------------------------------------------------------------------------------------
# Broker-level configuration: server.properties (KafkaConfig.scala).
# ---------------------------------------------------------------------------------------

DEFAULT_LOG_DIR = "/tmp/kt-logs"


_BROKER_KEYS: tuple[tuple[str, str, object, Validator | None], ...] = (
    # name, type, default, validator  (KafkaConfig.configDef, 3.9)
    ("broker.id", "int", -1, None),
    ("node.id", "int", -1, None),
    ("listeners", "string", "PLAINTEXT://127.0.0.1:9092", None),
    ("advertised.listeners", "string", None, None),
    ("listener.security.protocol.map", "string", DEFAULT_PROTOCOL_MAP, None),
    ("inter.broker.listener.name", "string", None, None),
    ("control.plane.listener.name", "string", None, None),
    ("security.inter.broker.protocol", "string", "PLAINTEXT", one_of(*SECURITY_PROTOCOLS)),
    # TLS (SslConfigs, BrokerSecurityConfigs); each may be set for one listener as
    # listener.name.<listener>.<key> (kt/security/ssl_factory.py reads them).
    ("ssl.keystore.type", "string", "JKS", None),
    ("ssl.keystore.location", "string", None, None),
    ("ssl.keystore.password", "string", None, None),
    ("ssl.key.password", "string", None, None),
    ("ssl.keystore.certificate.chain", "string", None, None),
    ("ssl.keystore.key", "string", None, None),
    ("ssl.truststore.type", "string", "JKS", None),
    ("ssl.truststore.location", "string", None, None),
    ("ssl.truststore.password", "string", None, None),
    ("ssl.truststore.certificates", "string", None, None),
    ("ssl.client.auth", "string", "none", one_of("required", "requested", "none")),
    ("ssl.enabled.protocols", "list", "TLSv1.2,TLSv1.3", None),
    ("ssl.cipher.suites", "list", "", None),
    ("ssl.endpoint.identification.algorithm", "string", "https", None),
    ("ssl.principal.mapping.rules", "string", "DEFAULT", None),
    ("ssl.engine.factory.class", "string", None, None),
    # SASL (SaslConfigs, BrokerSecurityConfigs); per listener as for ssl.*, and the JAAS
    # configuration per listener and mechanism: listener.name.<l>.<mechanism>.sasl.jaas.config
    # (kt/security/sasl.py reads them).
    ("sasl.enabled.mechanisms", "list", "GSSAPI", None),
    ("sasl.mechanism.inter.broker.protocol", "string", "GSSAPI", None),
    ("sasl.jaas.config", "string", None, None),
    ("connections.max.reauth.ms", "long", 0, at_least(0)),
    ("sasl.server.max.receive.size", "int", 524288, None),
    # Prometheus metrics (kt/metrics/http_server.py): http://host:port endpoints, or none.
    ("metrics.listeners", "string", "", None),
    # Client quotas (kt/broker/quota_manager.py: ClientQuotaManager's rate window).
    ("quota.window.num", "int", 11, at_least(1)),
    ("quota.window.size.seconds", "int", 1, at_least(1)),
    # Authorization (kt/broker/authorizer.py: AclAuthorizer's keys).
    ("authorizer.class.name", "string", "", None),
    ("super.users", "string", None, None),
    ("allow.everyone.if.no.acl.found", "bool", False, None),
    ("log.dirs", "string", None, None),
    ("log.dir", "string", DEFAULT_LOG_DIR, None),
    ("num.partitions", "int", 1, at_least(1)),
    ("default.replication.factor", "int", 1, None),
    ("min.insync.replicas", "int", 1, at_least(1)),
    ("unclean.leader.election.enable", "bool", False, None),
    ("auto.create.topics.enable", "bool", True, None),
    ("delete.topic.enable", "bool", True, None),
    ("log.segment.bytes", "int", 1073741824, at_least(14)),
    ("log.roll.ms", "long", None, None),
    ("log.roll.hours", "int", 168, at_least(1)),
    ("log.roll.jitter.ms", "long", None, None),
    ("log.roll.jitter.hours", "int", 0, at_least(0)),
    ("log.retention.ms", "long", None, None),
    ("log.retention.minutes", "int", None, None),
    ("log.retention.hours", "int", 168, None),
    ("log.retention.bytes", "long", -1, None),
    ("log.retention.check.interval.ms", "long", 300000, at_least(1)),
    ("log.cleanup.policy", "list", "delete", one_of("compact", "delete")),
    ("log.cleaner.enable", "bool", True, None),
    ("log.cleaner.backoff.ms", "long", 15000, at_least(0)),
    ("log.cleaner.min.cleanable.ratio", "double", 0.5, between(0, 1)),
    ("log.cleaner.delete.retention.ms", "long", 86400000, at_least(0)),
    ("log.cleaner.min.compaction.lag.ms", "long", 0, at_least(0)),
    ("log.cleaner.max.compaction.lag.ms", "long", LONG_MAX, at_least(1)),
    ("log.index.interval.bytes", "int", 4096, at_least(0)),
    ("log.index.size.max.bytes", "int", 10485760, at_least(4)),
    ("log.flush.interval.messages", "long", LONG_MAX, at_least(1)),
    ("log.flush.interval.ms", "long", None, None),
    ("log.flush.scheduler.interval.ms", "long", LONG_MAX, None),
    ("log.flush.offset.checkpoint.interval.ms", "int", 60000, at_least(0)),
    ("log.segment.delete.delay.ms", "long", 60000, at_least(0)),
    ("log.preallocate", "bool", False, None),
    ("log.message.timestamp.type", "string", "CreateTime", one_of("CreateTime", "LogAppendTime")),
    ("log.message.format.version", "string", "3.0-IV1", metadata_version),
    ("log.message.downconversion.enable", "bool", True, None),
    ("message.max.bytes", "int", 1048588, at_least(0)),
    ("replica.fetch.max.bytes", "int", 1048576, at_least(0)),
    ("replica.fetch.wait.max.ms", "int", 500, None),
    ("replica.fetch.min.bytes", "int", 1, None),
    ("replica.fetch.backoff.ms", "int", 1000, at_least(0)),
    ("replica.fetch.response.max.bytes", "int", 10485760, at_least(0)),
    ("replica.lag.time.max.ms", "long", 30000, None),
    ("socket.request.max.bytes", "int", 104857600, at_least(1)),
    ("socket.send.buffer.bytes", "int", 102400, None),
    ("socket.receive.buffer.bytes", "int", 102400, None),
    ("queued.max.request.bytes", "long", -1, None),
    ("connections.max.idle.ms", "long", 600000, None),
    ("socket.listen.backlog.size", "int", 50, at_least(1)),
    ("offsets.topic.num.partitions", "int", 50, at_least(1)),
    ("offsets.topic.replication.factor", "short", 3, at_least(1)),
    ("offsets.topic.segment.bytes", "int", 104857600, at_least(1)),
    ("offsets.retention.minutes", "int", 10080, at_least(1)),
    ("offsets.retention.check.interval.ms", "long", 600000, at_least(1)),
    ("offset.metadata.max.bytes", "int", 4096, None),
    ("offsets.load.buffer.size", "int", 5242880, at_least(1)),
    ("group.initial.rebalance.delay.ms", "int", 3000, None),
    ("group.min.session.timeout.ms", "int", 6000, None),
    ("group.max.session.timeout.ms", "int", 1800000, None),
    ("group.max.size", "int", 2147483647, at_least(1)),
    ("transaction.state.log.num.partitions", "int", 50, at_least(1)),
    ("transaction.state.log.replication.factor", "short", 3, at_least(1)),
    ("transaction.state.log.min.isr", "int", 2, at_least(1)),
    ("transaction.state.log.segment.bytes", "int", 104857600, at_least(1)),
    ("transactional.id.expiration.ms", "int", 604800000, at_least(1)),
    ("transaction.max.timeout.ms", "int", 900000, at_least(1)),
    ("transaction.abort.timed.out.transaction.cleanup.interval.ms", "int", 10000, at_least(1)),
    ("transaction.remove.expired.transaction.cleanup.interval.ms", "int", 3600000, at_least(1)),
    ("transaction.state.log.load.buffer.size", "int", 5242880, at_least(1)),
    ("request.timeout.ms", "int", 30000, at_least(0)),
    ("zookeeper.connect", "string", None, None),
    ("zookeeper.session.timeout.ms", "int", 18000, None),
    ("zookeeper.connection.timeout.ms", "int", None, None),
    ("zookeeper.set.acl", "bool", False, None),
    ("controlled.shutdown.enable", "bool", True, None),
    ("controlled.shutdown.max.retries", "int", 3, None),
    ("controlled.shutdown.retry.backoff.ms", "long", 5000, None),
    ("auto.leader.rebalance.enable", "bool", True, None),
    ("leader.imbalance.check.interval.seconds", "long", 300, at_least(1)),
    ("leader.imbalance.per.broker.percentage", "int", 10, None),
    ("broker.rack", "string", None, None),
    ("compression.type", "string", "producer", one_of(*COMPRESSION_TYPES)),
    ("compression.gzip.level", "int", -1, gzip_level),
    ("compression.lz4.level", "int", 9, between(1, 17)),
    ("compression.zstd.level", "int", 3, between(-131072, 22)),
    ("log.message.timestamp.difference.max.ms", "long", LONG_MAX, at_least(0)),
    ("log.message.timestamp.before.max.ms", "long", LONG_MAX, at_least(0)),
    ("log.message.timestamp.after.max.ms", "long", LONG_MAX, at_least(0)),
    ("log.local.retention.ms", "long", -2, at_least(-2)),
    ("log.local.retention.bytes", "long", -2, at_least(-2)),
    # Connection limits (kt/broker/connection_quotas.py: Kafka's ConnectionQuotas), and the
    # delay before a failed authentication's connection is closed (SaslServerAuthenticator).
    ("max.connections", "int", INT_MAX, at_least(0)),
    ("max.connections.per.ip", "int", INT_MAX, at_least(0)),
    ("max.connections.per.ip.overrides", "string", "", None),
    ("max.connection.creation.rate", "int", INT_MAX, at_least(0)),
    ("connection.failed.authentication.delay.ms", "int", 100, at_least(0)),
    ("leader.replication.throttled.rate", "long", LONG_MAX, None),
    ("follower.replication.throttled.rate", "long", LONG_MAX, None),
    ("replica.alter.log.dirs.io.max.bytes.per.second", "long", LONG_MAX, None),
    ("inter.broker.protocol.version", "string", "3.9-IV0", metadata_version),
)  # fmt: skip

# Every key of Kafka's KafkaConfig: those kt reads, and the others (kt/config_unread.py),
# which are parsed and checked the same way, so that a value Kafka refuses kt refuses too.
BROKER_KEYS: dict[str, tuple[str, object]] = {
    name: ("string" if kind in ("class", "password") else kind, default)
    for name, kind, default, *_ in (*_BROKER_KEYS, *UNREAD_KEYS)
}
_BROKER_VALIDATORS = {
    name: validator for name, _, _, validator, *_ in (*_BROKER_KEYS, *UNREAD_KEYS)
}

# Broker key -> the topic-level key it supplies the default for (LogConfig synonyms).
TOPIC_DEFAULTS_FROM_BROKER: dict[str, str] = {
    "log.cleanup.policy": "cleanup.policy",
    "log.retention.bytes": "retention.bytes",
    "log.segment.bytes": "segment.bytes",
    "min.insync.replicas": "min.insync.replicas",
    "message.max.bytes": "max.message.bytes",
    "log.message.timestamp.type": "message.timestamp.type",
    "compression.type": "compression.type",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
    "log.cleaner.min.compaction.lag.ms": "min.compaction.lag.ms",
    "log.cleaner.max.compaction.lag.ms": "max.compaction.lag.ms",
    "log.cleaner.delete.retention.ms": "delete.retention.ms",
    "log.cleaner.min.cleanable.ratio": "min.cleanable.dirty.ratio",
    "log.index.interval.bytes": "index.interval.bytes",
    "log.index.size.max.bytes": "segment.index.bytes",
    "log.flush.interval.messages": "flush.messages",
    "log.segment.delete.delay.ms": "file.delete.delay.ms",
    "log.preallocate": "preallocate",
    "log.message.downconversion.enable": "message.downconversion.enable",
    "log.message.timestamp.difference.max.ms": "message.timestamp.difference.max.ms",
    "log.message.timestamp.before.max.ms": "message.timestamp.before.max.ms",
    "log.message.timestamp.after.max.ms": "message.timestamp.after.max.ms",
    "compression.gzip.level": "compression.gzip.level",
    "compression.lz4.level": "compression.lz4.level",
    "compression.zstd.level": "compression.zstd.level",
    "log.local.retention.ms": "local.retention.ms",
    "log.local.retention.bytes": "local.retention.bytes",
}


def _coerce(name: str, kind: str, raw: str) -> object:
    return checked_value(name, PARSERS[kind], _BROKER_VALIDATORS.get(name), raw)


# What Kafka's shipped config/server.properties sets for a one-broker installation, and
# kt's defaults when `kt server-start` is given no properties file: internal topics with
# one replica (Kafka's built-in defaults of 3 suit a cluster, whose files set them), and
# no delay before a new group's first rebalance ("a better out-of-the-box experience for
# development and testing", as the shipped file says).
SINGLE_BROKER_DEFAULTS = {
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
}


class KafkaConfig(ListenerSecurity):
    """The broker's configuration: server.properties, then overrides, over Kafka's defaults.

    Unknown keys are kept (plugins and clients read them) and reported by `unknown_keys`;
    a bad value raises InvalidConfigError naming the key.
    """

    def __init__(self, props: Mapping[str, str]) -> None:
        self.originals = dict(props)
        self.values: dict[str, object] = {}
        for name, (kind, default) in BROKER_KEYS.items():
            raw = props.get(name)
            self.values[name] = default if raw is None else _coerce(name, kind, raw)
        self.unknown_keys = sorted(
            k for k in props if _base_key(k) not in BROKER_KEYS and _base_key(k) not in UNREAD
        )
        self._validate()

    @classmethod
    def from_files(
        cls, paths: list[str | Path], overrides: Mapping[str, str] | None = None
    ) -> KafkaConfig:
        props: dict[str, str] = {}
        for path in paths:
            try:
                props.update(parse_properties(Path(path).read_text(encoding="latin-1")))
            except OSError as e:
                raise InvalidConfigError(f"Cannot read {path}: {e.strerror}") from None
        props.update(overrides or {})
        return cls(props)

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def _validate(self) -> None:
        """KafkaConfig.validateValues, for what kt reads (ZooKeeper mode's rules: kt has
        no KRaft), with Kafka's messages; then what kt cannot do yet is refused."""
        if (
            self["node.id"] != -1
            and self["broker.id"] != -1
            and (self["node.id"] != self["broker.id"])
        ):
            raise InvalidConfigError("You must set `node.id` to the same value as `broker.id`.")
        if self["broker.id.generation.enable"]:
            require(
                -1 <= self.broker_id <= self["reserved.broker.max.id"],
                "broker.id must be "
                "greater than or equal to -1 and not greater than reserved.broker.max.id",
            )
        else:
            require(self.broker_id >= 0, "broker.id must be greater than or equal to 0")
        require(
            self._ms("log.roll.ms", None, "log.roll.hours") >= 1,
            "log.roll.ms must be greater than or equal to 1",
        )
        require(
            self._ms("log.roll.jitter.ms", None, "log.roll.jitter.hours") >= 0,
            "log.roll.jitter.ms must be greater than or equal to 0",
        )
        require(
            self.log_retention_ms != 0,
            "log.retention.ms must be unlimited (-1) or, greater than or equal to 1",
        )
        require(
            bool(self.log_dirs),
            "At least one log directory must be defined via log.dirs or log.dir.",
        )
        threads = self["log.cleaner.threads"]
        require(
            not threads or self["log.cleaner.dedupe.buffer.size"] // threads > 1024 * 1024,
            "log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread.",
        )
        wait = self["replica.fetch.wait.max.ms"]
        require(
            wait <= self["replica.socket.timeout.ms"],
            "replica.socket.timeout.ms should "
            "always be at least replica.fetch.wait.max.ms to prevent unnecessary socket "
            "timeouts",
        )
        require(
            wait <= self["replica.lag.time.max.ms"],
            "replica.fetch.wait.max.ms should "
            "always be less than or equal to replica.lag.time.max.ms to prevent frequent "
            "changes in ISR",
        )
        self.listener_config = Listeners.from_config(self.values, self.originals)
        refuse_broker_features(self.originals, self.listener_config)  # before Kafka's checks
        refuse_unread(self.originals, _base_key)
        self.listener_config.validate()
        for endpoint in self.listener_config.bound:  # a listener's own limits, checked now
            for key in ("max.connections", "max.connection.creation.rate"):
                self.listener_value(endpoint.listener_name, key)
        self._read_security()  # key stores and JAAS lines now: a bad one stops the start
        queued = self["queued.max.request.bytes"]
        require(
            queued <= 0 or queued >= self["socket.request.max.bytes"],
            "queued.max.request.bytes must be larger or equal to socket.request.max.bytes",
        )
        self.inter_broker_protocol = InterBrokerProtocol(self["inter.broker.protocol.version"])
        self.inter_broker_protocol.check_message_format(self["log.message.format.version"])

    def listener_value(self, listener_name: str, key: str) -> Any:
        """A listener's own value of a broker key (listener.name.<listener>.<key>), parsed
        and checked as the key is; None where the listener sets none."""
        name = f"listener.name.{listener_name.lower()}.{key}"
        raw = self.originals.get(name)
        if raw is None:
            return None
        return checked_value(name, PARSERS[BROKER_KEYS[key][0]], _BROKER_VALIDATORS.get(key), raw)

    @property
    def broker_id(self) -> int:
        bid = self["broker.id"]
        return bid if bid != -1 else self["node.id"]

    @property
    def listeners(self) -> list[Endpoint]:
        return list(self.listener_config.bound)

    @property
    def advertised_listeners(self) -> list[Endpoint]:
        # An empty host advertises this machine's name, as Kafka does.
        return [
            e if e.host else dataclasses.replace(e, host=socket.getfqdn())
            for e in self.listener_config.advertised
        ]

    @property
    def log_retention_ms(self) -> int:
        """KafkaConfig.logRetentionTimeMillis: ms, else minutes, else hours; any negative
        value is unlimited (-1)."""
        ms = self._ms("log.retention.ms", "log.retention.minutes", "log.retention.hours")
        return -1 if ms < 0 else ms

    @property
    def log_dirs(self) -> list[Path]:
        dirs = self["log.dirs"] or self["log.dir"]
        return [Path(d.strip()).expanduser() for d in dirs.split(",") if d.strip()]

    def _ms(self, ms_key: str, minutes_key: str | None, hours_key: str) -> int:
        if self[ms_key] is not None:
            return self[ms_key]
        if minutes_key and self[minutes_key] is not None:
            return self[minutes_key] * 60_000
        return self[hours_key] * 3_600_000

    def topic_defaults(self) -> dict[str, str]:
        """Topic-level config defaults as this broker's keys set them (LogConfig synonyms)."""
        out = {topic_key: _to_text(self[broker_key])
               for broker_key, topic_key in TOPIC_DEFAULTS_FROM_BROKER.items()}  # fmt: skip
        out["retention.ms"] = str(self.log_retention_ms)
        out["segment.ms"] = str(self._ms("log.roll.ms", None, "log.roll.hours"))
        out["segment.jitter.ms"] = str(
            self._ms("log.roll.jitter.ms", None, "log.roll.jitter.hours")
        )
        flush_ms = self["log.flush.interval.ms"]
        out["flush.ms"] = str(
            flush_ms if flush_ms is not None else self["log.flush.scheduler.interval.ms"]
        )
        return out


def _base_key(key: str) -> str:
    """`listener.name.<listener>.<key>` -> `<key>` (a listener's own value of a key), and
    `listener.name.<listener>.<mechanism>.<key>` -> `<key>` (a SASL mechanism's own on a
    listener: sasl.jaas.config, the callback handlers, connections.max.reauth.ms)."""
    if key.startswith("listener.name."):
        parts = key.split(".", 3)
        if len(parts) == 4:
            rest = parts[3]
            after_mechanism = rest.partition(".")[2]
            if rest not in BROKER_KEYS and after_mechanism in BROKER_KEYS:
                return after_mechanism
            return rest
    return key


def _to_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(value)
    return str(value)
