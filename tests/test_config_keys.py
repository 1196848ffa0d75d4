"""Every broker key kt accepts in server.properties, and what it does: one table.

Each key of kt.config.BROKER_KEYS has one entry, of five kinds:
- Topic: it supplies a topic config's default; shown by the LogConfig it yields;
- Probe: shown on running brokers, one cluster started with every probe's value and one
  with the defaults; the check must see the value, and something else on the defaults;
- Built: shown on what kt builds from the configuration (the metadata store, the id);
- ShownBy: a test elsewhere shows it (the test must exist and name the key);
The keys kt does not read are kt.config_unread's, each Accepted (any value, no effect,
for the reason given: the key must then appear nowhere in kt's code but the config
tables, so that a key that starts to matter cannot keep an entry that says it does not)
or NotYet (any value but Kafka's default is refused, naming the key).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kt.broker.coordinators import (
    consumer_group_settings,
    share_fetch_settings,
    share_group_settings,
    streams_group_settings,
)
from kt.broker.group.group_config import GroupConfigs
from kt.config import BROKER_KEYS, KafkaConfig, LogConfig
from kt.config_unread import KAFKA_4_KEYS, UNREAD
from kt.testing import KtCluster
from tests._config_probes import (
    Built,
    Probe,
    ShownBy,
    Topic,
    auto_created,
    committed_metadata_error,
    created_topic,
    deletion_error,
    listen_backlog,
    metadata_broker,
    offsets_topic,
    on_server,
    server,
    store_connection_timeout,
    task_interval,
    transaction_topic,
)

ROOT = Path(__file__).resolve().parent.parent
CONTROLLED = "tests/broker/test_controlled_shutdown_keys.py::test_controlled_shutdown_keys"
SSL_FACTORY = "tests/security/test_ssl_factory.py"
TLS = "tests/integration/test_tls.py"
SASL = "tests/integration/test_sasl.py"
CONNECTIONS = "tests/integration/test_connections.py"
ACLS = "tests/integration/test_acls.py"
ACL_RULES = "tests/security/test_acl_rules.py"


FETCHER_CONFIG = "replica_manager.fetcher_manager.config"


AUTO_REBALANCE = "tests/integration/test_leader_election.py::test_auto_leader_rebalance"
THROTTLED_MOVE = (
    "tests/integration/test_reassignment.py::test_a_throttled_move_copies_at_the_throttled_rate"
)


TABLE: dict[str, Topic | Probe | Built | ShownBy] = {
    # -- identity, listeners, directories
    "broker.id": ShownBy(
        "tests/broker/test_meta_properties.py::test_configured_id_must_match_stored"
    ),
    "node.id": Built("7", lambda config: config.broker_id, 7),
    "listeners": ShownBy("tests/test_kafka_config.py::test_defaults_when_no_file"),
    "advertised.listeners": Probe(
        "PLAINTEXT://localhost:0", lambda c: metadata_broker(c)[0], "localhost"
    ),  # fmt: skip
    "listener.security.protocol.map": ShownBy(
        "tests/integration/test_listeners.py::test_every_listener_serves_its_own_endpoints"
    ),
    "inter.broker.listener.name": ShownBy(
        "tests/integration/test_listeners.py::test_replication_and_groups_across_listeners"
    ),
    "security.inter.broker.protocol": ShownBy(
        "tests/test_kafka_config.py::test_listener_names_and_protocols"
    ),
    # -- TLS (kt/security/ssl_factory.py)
    "ssl.keystore.type": ShownBy(f"{SSL_FACTORY}::test_pkcs12_stores_load"),
    "ssl.keystore.location": ShownBy(f"{SSL_FACTORY}::test_a_pem_key_store_with_an_encrypted_key"),
    "ssl.keystore.password": ShownBy(f"{SSL_FACTORY}::test_pkcs12_stores_load"),
    "ssl.key.password": ShownBy(f"{SSL_FACTORY}::test_a_pem_key_store_with_an_encrypted_key"),
    "ssl.keystore.certificate.chain": ShownBy(f"{SSL_FACTORY}::test_inline_pem_stores"),
    "ssl.keystore.key": ShownBy(f"{SSL_FACTORY}::test_inline_pem_stores"),
    "ssl.truststore.type": ShownBy(f"{SSL_FACTORY}::test_pkcs12_stores_load"),
    "ssl.truststore.location": ShownBy(f"{SSL_FACTORY}::test_pkcs12_stores_load"),
    "ssl.truststore.password": ShownBy(f"{SSL_FACTORY}::test_pkcs12_stores_load"),
    "ssl.truststore.certificates": ShownBy(f"{SSL_FACTORY}::test_inline_pem_stores"),
    "sasl.server.max.receive.size": ShownBy(
        f"{SASL}::test_a_frame_before_authentication_is_bounded"
    ),
    "connection.failed.authentication.delay.ms": ShownBy(
        f"{SASL}::test_a_failed_authentication_is_answered_after_the_delay"
    ),
    "max.connections": ShownBy(
        f"{CONNECTIONS}::test_max_connections_holds_new_connections_until_one_closes"
    ),
    "max.connections.per.ip": ShownBy(
        f"{CONNECTIONS}::test_an_address_over_its_connection_limit_is_refused"
    ),
    "max.connections.per.ip.overrides": ShownBy(
        f"{CONNECTIONS}::test_an_address_over_its_connection_limit_is_refused"
    ),
    "max.connection.creation.rate": ShownBy(
        f"{CONNECTIONS}::test_max_connection_creation_rate_spaces_new_connections"
    ),
    "ssl.client.auth": ShownBy(f"{TLS}::test_mutual_tls_serves_only_trusted_clients"),
    "ssl.enabled.protocols": ShownBy(f"{SSL_FACTORY}::test_enabled_protocols_bound_the_versions"),
    "ssl.cipher.suites": ShownBy(f"{SSL_FACTORY}::test_what_kt_cannot_do_is_refused"),
    "ssl.endpoint.identification.algorithm": ShownBy(
        f"{SSL_FACTORY}::test_clients_check_the_brokers_name_unless_told_not_to"
    ),
    "ssl.principal.mapping.rules": ShownBy(f"{SSL_FACTORY}::test_what_kt_cannot_do_is_refused"),
    "ssl.engine.factory.class": ShownBy(f"{SSL_FACTORY}::test_what_kt_cannot_do_is_refused"),
    "sasl.enabled.mechanisms": ShownBy(
        f"{SASL}::test_plain_scram_and_oauthbearer_clients_produce_and_consume"
    ),
    "sasl.jaas.config": ShownBy(
        f"{SASL}::test_plain_scram_and_oauthbearer_clients_produce_and_consume"
    ),
    "connections.max.reauth.ms": ShownBy(
        f"{SASL}::test_clients_reauthenticate_before_their_session_ends"
    ),
    "sasl.mechanism.inter.broker.protocol": ShownBy(
        "tests/test_kafka_config.py::test_refused_with_the_message"
    ),
    "metrics.listeners": ShownBy(
        "tests/integration/test_metrics.py::test_the_counts_agree_with_what_was_produced_and_read"
    ),
    "max.request.partition.size.limit": ShownBy(
        "tests/integration/test_describe_topic_partitions.py::"
        "test_every_topic_in_pages_bounded_by_the_broker"
    ),
    "quota.window.num": ShownBy("tests/broker/test_quota_manager.py::test_the_rate_window"),
    "quota.window.size.seconds": ShownBy(
        "tests/broker/test_quota_manager.py::test_the_rate_window"
    ),
    "authorizer.class.name": ShownBy(f"{ACLS}::test_acls_are_enforced_on_the_clients"),
    "super.users": ShownBy(f"{ACLS}::test_acls_are_enforced_on_the_clients"),
    "allow.everyone.if.no.acl.found": ShownBy(f"{ACL_RULES}::test_no_acl_at_all"),
    "control.plane.listener.name": ShownBy(
        "tests/test_kafka_config.py::test_listener_names_and_protocols"
    ),
    "log.dirs": ShownBy("tests/test_kafka_config.py::test_log_dirs_wins_over_log_dir"),
    "log.dir": ShownBy("tests/test_kafka_config.py::test_log_dirs_wins_over_log_dir"),
    "broker.rack": Probe("rack-a", lambda c: metadata_broker(c)[1], "rack-a"),
    # -- topics
    "num.partitions": Probe("3", lambda c: created_topic(c)[0], 3),
    "default.replication.factor": Probe("2", lambda c: created_topic(c)[1], 2),
    "auto.create.topics.enable": Probe("false", auto_created, False, cluster="off"),
    "delete.topic.enable": Probe(
        "false", deletion_error, "TOPIC_DELETION_DISABLED", cluster="off"
    ),  # fmt: skip
    "min.insync.replicas": Topic("2", "min.insync.replicas", 2),
    "unclean.leader.election.enable": Topic("true", "unclean.leader.election.enable", True),
    "compression.type": Topic("zstd", "compression.type", "zstd"),
    "message.max.bytes": Topic("2000000", "max.message.bytes", 2000000),
    # -- the log
    "log.segment.bytes": Topic("1048576", "segment.bytes", 1048576),
    "log.roll.ms": Topic("1000", "segment.ms", 1000),
    "log.roll.hours": Topic("2", "segment.ms", 7_200_000),
    "log.roll.jitter.ms": Topic("500", "segment.jitter.ms", 500),
    "log.roll.jitter.hours": Topic("1", "segment.jitter.ms", 3_600_000),
    "log.retention.ms": Topic("1000", "retention.ms", 1000),
    "log.retention.minutes": Topic("5", "retention.ms", 300_000),
    "log.retention.hours": Topic("1", "retention.ms", 3_600_000),
    "log.retention.bytes": Topic("4096", "retention.bytes", 4096),
    "log.cleanup.policy": Topic("compact", "cleanup.policy", ("compact",)),
    "log.index.interval.bytes": Topic("128", "index.interval.bytes", 128),
    "log.index.size.max.bytes": Topic("4096", "segment.index.bytes", 4096),
    "log.flush.interval.messages": Topic("10", "flush.messages", 10),
    "log.flush.interval.ms": Topic("500", "flush.ms", 500),
    "log.segment.delete.delay.ms": Topic("10", "file.delete.delay.ms", 10),
    "log.preallocate": Topic("true", "preallocate", True),
    "log.message.timestamp.type": Topic(
        "LogAppendTime", "message.timestamp.type", "LogAppendTime"
    ),  # fmt: skip
    "log.cleaner.min.cleanable.ratio": Topic("0.1", "min.cleanable.dirty.ratio", 0.1),
    "log.cleaner.delete.retention.ms": Topic("100", "delete.retention.ms", 100),
    "log.cleaner.min.compaction.lag.ms": Topic("100", "min.compaction.lag.ms", 100),
    "log.cleaner.max.compaction.lag.ms": Topic("100000", "max.compaction.lag.ms", 100000),
    "log.retention.check.interval.ms": Probe("1500", task_interval("kafka-log-retention"), 1.5),
    "log.flush.offset.checkpoint.interval.ms": Probe(
        "2500", task_interval("kafka-recovery-point-checkpoint"), 2.5
    ),
    "log.flush.scheduler.interval.ms": Topic("1000", "flush.ms", 1000),
    "log.message.downconversion.enable": Topic("false", "message.downconversion.enable", False),
    "log.message.timestamp.difference.max.ms": Topic(
        "1000", "message.timestamp.difference.max.ms", 1000
    ),
    "log.message.timestamp.before.max.ms": Topic("1000", "message.timestamp.before.max.ms", 1000),
    "log.message.timestamp.after.max.ms": Topic("1000", "message.timestamp.after.max.ms", 1000),
    "log.local.retention.ms": Topic("1000", "local.retention.ms", 1000),
    "log.local.retention.bytes": Topic("1000", "local.retention.bytes", 1000),
    "compression.gzip.level": Topic("9", "compression.gzip.level", 9),
    "compression.lz4.level": Topic("17", "compression.lz4.level", 17),
    "compression.zstd.level": Topic("19", "compression.zstd.level", 19),
    "log.cleaner.enable": Probe(
        "false", task_interval("kafka-log-cleaner"), None, cluster="off"
    ),  # fmt: skip
    "log.cleaner.backoff.ms": Probe("3500", task_interval("kafka-log-cleaner"), 3.5),
    "log.message.format.version": ShownBy(
        "tests/broker/test_inter_broker_protocol.py::test_an_old_message_format_counts_under_an_old_ibp_only"
    ),
    # -- replication
    "replica.fetch.max.bytes": Probe("65536", on_server(f"{FETCHER_CONFIG}.max_bytes"), 65536),
    "replica.fetch.wait.max.ms": Probe("250", on_server(f"{FETCHER_CONFIG}.max_wait_ms"), 250),
    "replica.fetch.min.bytes": Probe("10", on_server(f"{FETCHER_CONFIG}.min_bytes"), 10),
    "replica.fetch.backoff.ms": Probe("150", on_server(f"{FETCHER_CONFIG}.backoff_ms"), 150),
    "replica.fetch.response.max.bytes": Probe(
        "131072", on_server(f"{FETCHER_CONFIG}.response_max_bytes"), 131072
    ),
    "replica.lag.time.max.ms": Probe("8000", task_interval("isr-expiration"), 4.0),
    "leader.replication.throttled.rate": ShownBy(THROTTLED_MOVE),
    "follower.replication.throttled.rate": ShownBy(THROTTLED_MOVE),
    "replica.alter.log.dirs.io.max.bytes.per.second": ShownBy(
        "tests/integration/test_log_dirs_tool.py::test_a_replica_moves_between_log_dirs"
    ),
    "auto.leader.rebalance.enable": ShownBy(AUTO_REBALANCE),
    "leader.imbalance.check.interval.seconds": ShownBy(AUTO_REBALANCE),
    "leader.imbalance.per.broker.percentage": ShownBy(AUTO_REBALANCE),
    "inter.broker.protocol.version": ShownBy(
        "tests/broker/test_inter_broker_protocol.py::test_the_versions_a_kafka_broker_of_that_ibp_sends"
    ),
    "controlled.shutdown.enable": ShownBy(CONTROLLED),
    "controlled.shutdown.max.retries": ShownBy(CONTROLLED),
    "controlled.shutdown.retry.backoff.ms": ShownBy(CONTROLLED),
    # -- the network
    "socket.request.max.bytes": Probe(
        "200000", on_server("socket_server.max_request_bytes"), 200000
    ),
    "socket.send.buffer.bytes": Probe("65536", on_server("socket_server.send_buffer_bytes"), 65536),
    "socket.receive.buffer.bytes": Probe(
        "65536", on_server("socket_server.receive_buffer_bytes"), 65536
    ),
    "queued.max.request.bytes": ShownBy(
        "tests/integration/test_connections.py"
        "::test_queued_max_request_bytes_bounds_what_requests_hold"
    ),
    "connections.max.idle.ms": ShownBy(
        "tests/integration/test_connections.py::test_idle_connections_are_closed"
    ),
    "socket.listen.backlog.size": Probe("7", lambda c: listen_backlog(server(c).port), 7),
    # -- groups and offsets
    "offsets.topic.num.partitions": Probe("3", lambda c: offsets_topic(c)[0], 3),
    "offsets.topic.replication.factor": Probe("2", lambda c: offsets_topic(c)[1], 2),
    "offsets.topic.segment.bytes": Probe("2097152", lambda c: offsets_topic(c)[2], "2097152"),
    "offsets.retention.minutes": Probe(
        "3",
        lambda c: next(
            t.action.args[0] for t in server(c)._tasks if t.name == "delete-expired-group-metadata"
        ),
        180_000,
    ),  # fmt: skip
    "offsets.retention.check.interval.ms": Probe(
        "4000", task_interval("delete-expired-group-metadata"), 4.0
    ),
    "offset.metadata.max.bytes": Probe("50", committed_metadata_error, "OFFSET_METADATA_TOO_LARGE"),
    "offsets.load.buffer.size": Probe(
        "65536", on_server("group_coordinator.manager.load_buffer_size"), 65536
    ),
    "group.initial.rebalance.delay.ms": Probe(
        "100", on_server("group_coordinator.initial_rebalance_delay_ms"), 100
    ),
    "group.min.session.timeout.ms": Probe(
        "1000", on_server("group_coordinator.min_session_timeout_ms"), 1000
    ),
    "group.max.session.timeout.ms": Probe(
        "60000", on_server("group_coordinator.max_session_timeout_ms"), 60000
    ),
    "group.max.size": Probe("7", on_server("group_coordinator.max_group_size"), 7),
    "group.coordinator.rebalance.protocols": ShownBy(
        "tests/groups/test_consumer_protocol.py::"
        "test_without_the_consumer_protocol_its_apis_are_not_advertised"
    ),
    "group.consumer.session.timeout.ms": Built(
        "50000", lambda c: GroupConfigs(c).value("g", "consumer.session.timeout.ms"), 50000
    ),
    "group.consumer.heartbeat.interval.ms": Built(
        "6000", lambda c: GroupConfigs(c).value("g", "consumer.heartbeat.interval.ms"), 6000
    ),
    "group.consumer.max.size": Built("7", lambda c: consumer_group_settings(c).max_size, 7),
    "group.share.session.timeout.ms": Built(
        "50000", lambda c: share_group_settings(c).session_timeout_ms, 50000
    ),
    "group.share.heartbeat.interval.ms": Built(
        "6000", lambda c: share_group_settings(c).heartbeat_interval_ms, 6000
    ),
    "group.share.max.size": Built("7", lambda c: share_group_settings(c).max_size, 7),
    "group.streams.session.timeout.ms": Built(
        "50000", lambda c: GroupConfigs(c).value("g", "streams.session.timeout.ms"), 50000
    ),
    "group.streams.heartbeat.interval.ms": Built(
        "6000", lambda c: GroupConfigs(c).value("g", "streams.heartbeat.interval.ms"), 6000
    ),
    "group.streams.num.standby.replicas": Built(
        "1", lambda c: GroupConfigs(c).value("g", "streams.num.standby.replicas"), 1
    ),
    "group.streams.initial.rebalance.delay.ms": Built(
        "0", lambda c: GroupConfigs(c).value("g", "streams.initial.rebalance.delay.ms"), 0
    ),
    "group.streams.assignment.interval.ms": Built(
        "2000", lambda c: GroupConfigs(c).value("g", "streams.assignment.interval.ms"), 2000
    ),
    "group.streams.max.size": Built("7", lambda c: streams_group_settings(c).max_size, 7),
    "group.streams.task.offset.interval.ms": Built(
        "30000", lambda c: streams_group_settings(c).task_offset_interval_ms, 30000
    ),
    "group.streams.acceptable.recovery.lag": Built(
        "5", lambda c: streams_group_settings(c).acceptable_recovery_lag, 5
    ),
    # offsets.commit.timeout.ms (5000) is the floor, as in Kafka
    "group.share.initialize.retry.interval.ms": Built(
        "9000", lambda c: share_group_settings(c).initialize_retry_interval_ms, 9000
    ),
    "group.share.delivery.count.limit": Built(
        "4", lambda c: share_fetch_settings(c, GroupConfigs(c), "g").partition.max_delivery_count, 4
    ),
    "group.share.record.lock.duration.ms": Built(
        "20000",
        lambda c: share_fetch_settings(c, GroupConfigs(c), "g").partition.record_lock_duration_ms,
        20000,
    ),
    "group.share.partition.max.record.locks": Built(
        "300",
        lambda c: share_fetch_settings(c, GroupConfigs(c), "g").partition.max_in_flight_records,
        300,
    ),
    **dict.fromkeys(
        (
            "group.share.max.share.sessions",
            "share.coordinator.state.topic.num.partitions",
            "share.coordinator.state.topic.segment.bytes",
            "share.coordinator.snapshot.update.records.per.snapshot",
        ),
        ShownBy(
            "tests/share/test_share_consumers.py::"
            "test_the_share_coordinators_settings_shape_its_topic_and_state"
        ),
    ),
    **dict.fromkeys(
        (
            "share.coordinator.state.topic.replication.factor",
            "share.coordinator.state.topic.min.isr",
        ),
        ShownBy(
            "tests/share/test_share_cluster.py::"
            "test_acknowledgements_survive_the_share_coordinator_killed"
        ),
    ),
    "group.consumer.migration.policy": ShownBy(
        "tests/groups/test_group_migration.py::"
        "test_with_migration_disabled_a_group_keeps_its_protocol"
    ),
    "group.consumer.assignors": Built(
        "range", lambda c: consumer_group_settings(c).assignors, ("range",)
    ),
    **dict.fromkeys(
        (
            "group.consumer.min.session.timeout.ms",
            "group.consumer.max.session.timeout.ms",
            "group.consumer.min.heartbeat.interval.ms",
            "group.consumer.max.heartbeat.interval.ms",
            "group.share.min.session.timeout.ms",
            "group.share.max.session.timeout.ms",
            "group.share.min.heartbeat.interval.ms",
            "group.share.max.heartbeat.interval.ms",
            "group.streams.min.session.timeout.ms",
            "group.streams.max.session.timeout.ms",
            "group.streams.min.heartbeat.interval.ms",
            "group.streams.max.heartbeat.interval.ms",
            "group.streams.min.assignment.interval.ms",
            "group.streams.max.assignment.interval.ms",
            "group.streams.max.standby.replicas",
            "group.streams.min.task.offset.interval.ms",
        ),
        ShownBy("tests/test_kafka_config.py::test_the_consumer_group_bounds_are_kafkas"),
    ),  # fmt: skip
    # -- transactions and producer ids
    "transaction.state.log.num.partitions": Probe("3", lambda c: transaction_topic(c)[0], 3),
    "transaction.state.log.replication.factor": Probe("2", lambda c: transaction_topic(c)[1], 2),
    "transaction.state.log.min.isr": Probe("2", lambda c: transaction_topic(c)[3], 2),
    "transaction.state.log.segment.bytes": Probe(
        "2097152", lambda c: transaction_topic(c)[2], "2097152"
    ),
    "transaction.state.log.load.buffer.size": Probe(
        "65536", on_server("txn_coordinator.state_manager.load_buffer_size"), 65536
    ),
    "transactional.id.expiration.ms": Probe(
        "3600000",
        on_server("txn_coordinator.state_manager.transactional_id_expiration_ms"),
        3_600_000,
    ),
    "transaction.max.timeout.ms": ShownBy(
        "tests/integration/test_transactions.py::test_a_timeout_above_the_maximum_is_refused"
    ),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": ShownBy(
        "tests/integration/test_transactions.py::test_a_transaction_past_its_timeout_is_aborted"
    ),
    "transaction.remove.expired.transaction.cleanup.interval.ms": Probe(
        "60000", task_interval("transactionalId-expiration"), 60.0
    ),
    "request.timeout.ms": Probe(
        "20000", on_server("txn_coordinator.state_manager.request_timeout_ms"), 20000
    ),
    # -- ZooKeeper
    "zookeeper.connect": ShownBy(
        "tests/integration/test_zookeeper_cluster.py::test_controller_failover_and_kafkas_znodes"
    ),
    "zookeeper.session.timeout.ms": ShownBy(
        "tests/integration/test_zookeeper_cluster.py::test_controller_failover_and_kafkas_znodes"
    ),
    "zookeeper.connection.timeout.ms": Built("2500", store_connection_timeout, 2.5),
    "zookeeper.set.acl": ShownBy(
        "tests/integration/test_zookeeper_security.py::"
        "test_zookeeper_set_acl_guards_the_znodes_of_a_sasl_broker"
    ),
}


def entries(kind: type) -> list[tuple[str, Any]]:
    return [(k, e) for k, e in TABLE.items() if isinstance(e, kind)]


def test_every_broker_key_has_one_entry() -> None:
    assert not set(TABLE) & set(UNREAD)
    kafka_4 = [row[0] for row in KAFKA_4_KEYS]  # known, and not described as a 3.9 broker's
    assert not set(kafka_4) & set(BROKER_KEYS)
    assert sorted([*TABLE, *UNREAD]) == sorted([*BROKER_KEYS, *kafka_4])


@pytest.mark.parametrize(("key", "entry"), entries(Topic), ids=[k for k, _ in entries(Topic)])
def test_a_broker_key_sets_its_topic_default(key: str, entry: Topic) -> None:
    attribute = entry.topic_key.replace(".", "_")
    default = getattr(LogConfig.from_props(KafkaConfig({}).topic_defaults()), attribute)
    tuned = getattr(LogConfig.from_props(KafkaConfig({key: entry.value}).topic_defaults()),
                    attribute)  # fmt: skip
    assert (tuned, default != entry.expected) == (entry.expected, True)


@pytest.fixture(scope="module")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, KtCluster]]:
    """Two brokers for each probe cluster, with its probes' values; two with the defaults."""
    # The defaults, but for the internal topics' replication (Kafka's 3 needs 3 brokers).
    settings: dict[str, dict[str, str]] = {"default": {
        "offsets.topic.replication.factor": "1", "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1"}}  # fmt: skip
    for key, entry in entries(Probe):
        settings.setdefault(entry.cluster, {})[key] = entry.value
    made = {
        name: KtCluster(2, base_dir=tmp_path_factory.mktemp(name), overrides=overrides)
        for name, overrides in settings.items()
    }
    for cluster in made.values():
        cluster.start()
    yield made
    for cluster in made.values():
        cluster.close()


@pytest.mark.slow
@pytest.mark.parametrize(("key", "entry"), entries(Probe), ids=[k for k, _ in entries(Probe)])
def test_a_broker_key_shows_on_a_running_broker(clusters, key: str, entry: Probe) -> None:
    assert entry.check(clusters[entry.cluster]) == entry.expected
    assert entry.check(clusters["default"]) != entry.expected


@pytest.mark.parametrize(("key", "entry"), entries(Built), ids=[k for k, _ in entries(Built)])
def test_a_broker_key_shows_in_what_kt_builds(key: str, entry: Built) -> None:
    config = {"zookeeper.connect": "127.0.0.1:1"}  # a store that is never started
    assert entry.check(KafkaConfig({**config, key: entry.value})) == entry.expected
    assert entry.check(KafkaConfig(config)) != entry.expected


@pytest.mark.parametrize(("key", "entry"), entries(ShownBy), ids=[k for k, _ in entries(ShownBy)])
def test_a_named_test_shows_the_key(key: str, entry: ShownBy) -> None:
    path, function = entry.test.split("::")
    tree = ast.parse((ROOT / path).read_text())
    tests = {node.name: node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
    assert function in tests, f"{entry.test} does not exist"
    assert key in (ROOT / path).read_text(), f"{path} never names {key}"


# Where a key may be named without being acted on: the config tables, DescribeConfigs'
# synonyms, and the properties kt writes for Apache Kafka's broker.
# Modules that name keys without acting on them: the config table, DescribeConfigs, the
# reference broker's settings, `kt reassign`, which sets and clears throttle keys on
# the brokers as Kafka's tool does, and the group configs' table, which names the broker
# keys that supply their defaults and bounds (DescribeConfigs' synonyms).
NAMING_ONLY = {"kt/config.py", "kt/log_config.py", "kt/config_unread.py",
               "kt/broker/admin/configs.py", "kt/reference_kafka.py",
               "kt/tools/reassign.py", "kt/broker/group/group_config.py"}  # fmt: skip


def _kt_sources() -> str:
    return "".join(
        p.read_text()
        for p in (ROOT / "kt").rglob("*.py")
        if str(p.relative_to(ROOT)) not in NAMING_ONLY
    )
