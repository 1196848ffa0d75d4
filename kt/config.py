"""The broker's typed configuration (Kafka's KafkaConfig): server.properties, then
overrides, over Kafka's defaults, with Kafka's validators and messages. A topic's log
config (Kafka's LogConfig) is kt/log_config.py's, re-exported here; the broker keys kt
knows and does not read are kt/config_unread.py's.
"""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kt.config_def import (
    PARSERS,
    Validator,
    at_least,
    between,
    checked_value,
    metadata_version,
    one_of,
    one_of_ignoring_case,
)
from kt.config_unread import UNREAD, UNREAD_KEYS, refuse_unread
from kt.endpoints import DEFAULT_PROTOCOL_MAP, SECURITY_PROTOCOLS, Endpoint, Listeners, require
from kt.errors import InvalidConfigError
from kt.inter_broker_protocol import InterBrokerProtocol
from kt.log_config import (  # noqa: F401 (re-exported: kt.config is where callers look)
    CLEANUP_POLICIES,
    CODEC_IDS,
    COMPRESSION_TYPES,
    CREATE_TIME,
    INT_MAX,
    INT_MIN,
    LOG_APPEND_TIME,
    LONG_MAX,
    LONG_MIN,
    TOPIC_CONFIGS,
    TOPIC_CONFIGS_BY_NAME,
    ConfigKey,
    LogConfig,
    gzip_level,
    parse_value,
)
from kt.properties import parse_properties
from kt.security.listener_security import ListenerSecurity
from kt.unsupported import refuse_broker_features

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
    # DescribeTopicPartitions (kt/broker/api/handlers/cluster.py): partitions per answer.
    ("max.request.partition.size.limit", "int", 2000, at_least(1)),
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
    # Kafka 4's consumer and streams groups (KIP-848, KIP-1071; GroupCoordinatorConfig, 4.4).
    # kt serves classic, consumer and streams groups as listed; share, accepted, changes
    # nothing (share groups are always served, as on Kafka 4.4).
    ("group.coordinator.rebalance.protocols", "list", "classic,consumer,streams",
     one_of("consumer", "classic", "share", "streams")),
    ("group.consumer.session.timeout.ms", "int", 45000, at_least(1)),
    ("group.consumer.min.session.timeout.ms", "int", 45000, at_least(1)),
    ("group.consumer.max.session.timeout.ms", "int", 60000, at_least(1)),
    ("group.consumer.heartbeat.interval.ms", "int", 5000, at_least(1)),
    ("group.consumer.min.heartbeat.interval.ms", "int", 5000, at_least(1)),
    ("group.consumer.max.heartbeat.interval.ms", "int", 15000, at_least(1)),
    ("group.consumer.max.size", "int", 2147483647, at_least(1)),
    ("group.consumer.migration.policy", "string", "bidirectional",
     one_of_ignoring_case("bidirectional", "upgrade", "downgrade", "disabled")),
    ("group.consumer.assignors", "list",
     "org.apache.kafka.coordinator.group.assignor.UniformAssignor,"
     "org.apache.kafka.coordinator.group.assignor.RangeAssignor",
     one_of("uniform", "range", "org.apache.kafka.coordinator.group.assignor.UniformAssignor",
            "org.apache.kafka.coordinator.group.assignor.RangeAssignor")),
    # Streams groups (KIP-1071; GroupCoordinatorConfig of Kafka 4.4)
    ("group.streams.session.timeout.ms", "int", 45000, at_least(1)),
    ("group.streams.min.session.timeout.ms", "int", 45000, at_least(1)),
    ("group.streams.max.session.timeout.ms", "int", 60000, at_least(1)),
    ("group.streams.heartbeat.interval.ms", "int", 5000, at_least(1)),
    ("group.streams.min.heartbeat.interval.ms", "int", 5000, at_least(1)),
    ("group.streams.max.heartbeat.interval.ms", "int", 15000, at_least(1)),
    ("group.streams.max.size", "int", 2147483647, at_least(1)),
    ("group.streams.num.standby.replicas", "int", 0, at_least(0)),
    ("group.streams.max.standby.replicas", "int", 2, at_least(0)),
    ("group.streams.initial.rebalance.delay.ms", "int", 3000, at_least(0)),
    ("group.streams.assignment.interval.ms", "int", 1000, at_least(0)),
    ("group.streams.min.assignment.interval.ms", "int", 0, at_least(0)),
    ("group.streams.max.assignment.interval.ms", "int", 15000, at_least(0)),
    ("group.streams.task.offset.interval.ms", "int", 60000, at_least(1)),
    ("group.streams.min.task.offset.interval.ms", "int", 15000, at_least(1)),
    ("group.streams.acceptable.recovery.lag", "long", 10000, at_least(0)),
    # Share groups (KIP-932; GroupCoordinatorConfig, ShareGroupConfig, ShareCoordinatorConfig
    # of Kafka 4.4), always served (kt.broker.features).
    ("group.share.session.timeout.ms", "int", 45000, at_least(1)),
    ("group.share.min.session.timeout.ms", "int", 45000, at_least(1)),
    ("group.share.max.session.timeout.ms", "int", 60000, at_least(1)),
    ("group.share.heartbeat.interval.ms", "int", 5000, at_least(1)),
    ("group.share.min.heartbeat.interval.ms", "int", 5000, at_least(1)),
    ("group.share.max.heartbeat.interval.ms", "int", 15000, at_least(1)),
    ("group.share.max.size", "short", 200, between(1, 1000)),
    ("group.share.delivery.count.limit", "int", 5, between(2, 10)),
    ("group.share.record.lock.duration.ms", "int", 30000, between(1000, 3600000)),
    ("group.share.partition.max.record.locks", "int", 2000, between(100, 10000)),
    ("group.share.max.share.sessions", "int", 2000, at_least(1)),
    # internal in Kafka 4.4; below offsets.commit.timeout.ms that is used
    ("group.share.initialize.retry.interval.ms", "int", 30000, at_least(1)),
    ("share.coordinator.state.topic.num.partitions", "int", 50, at_least(1)),
    ("share.coordinator.state.topic.replication.factor", "short", 3, at_least(1)),
    ("share.coordinator.state.topic.min.isr", "short", 2, at_least(1)),
    ("share.coordinator.state.topic.segment.bytes", "int", 104857600, at_least(1)),
    ("share.coordinator.snapshot.update.records.per.snapshot", "int", 500, between(0, 500)),
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
    "share.coordinator.state.topic.replication.factor": "1",  # Kafka 4's file
    "share.coordinator.state.topic.min.isr": "1",
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
        self._validate_consumer_groups()

    def _validate_consumer_groups(self) -> None:
        """GroupCoordinatorConfig's checks of the consumer and share group settings, its
        messages."""
        protocols = self.list_of("group.coordinator.rebalance.protocols")
        require(
            "classic" in protocols, "group.coordinator.rebalance.protocols must contain classic"
        )
        for prefix in ("group.consumer.", "group.share.", "group.streams."):
            for kind in ("heartbeat.interval.ms", "session.timeout.ms"):
                low, high = f"{prefix}min.{kind}", f"{prefix}max.{kind}"
                value = f"{prefix}{kind}"
                require(self[high] >= self[low], f"{high} must be greater than or equal to {low}")
                require(self[value] >= self[low], f"{value} must be greater than or equal to {low}")
                require(self[value] <= self[high], f"{value} must be less than or equal to {high}")
            require(
                self[f"{prefix}heartbeat.interval.ms"] < self[f"{prefix}session.timeout.ms"],
                f"{prefix}heartbeat.interval.ms must be less than {prefix}session.timeout.ms",
            )
        streams = "group.streams."
        for low, value, high in (
            ("min.assignment.interval.ms", "assignment.interval.ms", "max.assignment.interval.ms"),
            (None, "num.standby.replicas", "max.standby.replicas"),
            ("min.task.offset.interval.ms", "task.offset.interval.ms", None),
        ):  # GroupCoordinatorConfig.verifyStreamsGroupConfigs
            name = streams + value
            if low is not None and high is not None:
                require(
                    self[streams + high] >= self[streams + low],
                    f"{streams}{high} must be greater than or equal to {streams}{low}",
                )
            if low is not None:
                require(
                    self[name] >= self[streams + low],
                    f"{name} must be greater than or equal to {streams}{low}",
                )
            if high is not None:
                require(self[name] <= self[streams + high],
                        f"{name} must be less than or equal to {streams}{high}")  # fmt: skip

    def list_of(self, name: str) -> list[str]:
        """A list key's items (its default is kept as Kafka's text)."""
        value = self[name]
        return PARSERS["list"](value) if isinstance(value, str) else list(value)

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
