"""server.properties parsing and the broker's typed configuration."""

from pathlib import Path

import pytest

from kt.config import InvalidConfigError, KafkaConfig, LogConfig, parse_properties


def test_properties_syntax_as_java_reads_it() -> None:
    text = (
        "# comment\n"
        "! also a comment\n"
        "broker.id=3\n"
        "listeners : PLAINTEXT://127.0.0.1:9093\n"
        "log.dirs /tmp/a,\\\n"
        "    /tmp/b\n"
        "key\\=with\\:escapes=v\\tx\n"
        "\n"
        "empty=\n"
    )
    assert parse_properties(text) == {
        "broker.id": "3",
        "listeners": "PLAINTEXT://127.0.0.1:9093",
        "log.dirs": "/tmp/a,/tmp/b",
        "key=with:escapes": "v\tx",
        "empty": "",
    }


def test_defaults_when_no_file() -> None:
    config = KafkaConfig({})
    assert [str(e) for e in config.listeners] == ["PLAINTEXT://127.0.0.1:9092"]
    assert config.log_dirs == [Path("/tmp/kt-logs")]
    assert config["num.partitions"] == 1
    assert config["message.max.bytes"] == 1048588
    assert config["offsets.topic.num.partitions"] == 50


def test_topic_defaults_follow_broker_keys() -> None:
    config = KafkaConfig(
        {"log.retention.minutes": "5", "log.segment.bytes": "1048576", "log.roll.ms": "1000"}
    )
    defaults = LogConfig.from_props(config.topic_defaults())
    assert defaults.retention_ms == 300_000
    assert defaults.segment_bytes == 1_048_576
    assert defaults.segment_ms == 1000
    assert defaults.max_message_bytes == 1048588


def test_log_dirs_wins_over_log_dir() -> None:
    config = KafkaConfig({"log.dir": "/x", "log.dirs": "/a, /b"})
    assert config.log_dirs == [Path("/a"), Path("/b")]


# Broker configs that Kafka 3.9's KafkaConfig refuses, with its messages (ConfigDef's
# "Invalid value ..." and validateValues' "requirement failed: ..."). The oracle test
# tests/oracle/test_kafka_config.py has Kafka's own KafkaConfig judge each of these.
KAFKA_REFUSES: list[tuple[dict[str, str], str]] = [
    ({"num.partitions": "-1"},
     "Invalid value -1 for configuration num.partitions: Value must be at least 1"),
    ({"num.partitions": "many"},
     "Invalid value many for configuration num.partitions: Not a number of type INT"),
    ({"num.partitions": "2147483648"},
     "Invalid value 2147483648 for configuration num.partitions: Not a number of type INT"),
    ({"offsets.topic.replication.factor": "40000"}, "Invalid value 40000 for configuration "
     "offsets.topic.replication.factor: Not a number of type SHORT"),
    ({"auto.create.topics.enable": "yes"}, "Invalid value yes for configuration "
     "auto.create.topics.enable: Expected value to be either true or false"),
    ({"log.cleaner.min.cleanable.ratio": "2"}, "Invalid value 2.0 for configuration "
     "log.cleaner.min.cleanable.ratio: Value must be no more than 1"),
    ({"log.message.timestamp.type": "Wall"}, "Invalid value Wall for configuration "
     "log.message.timestamp.type: String must be one of: CreateTime, LogAppendTime"),
    ({"log.cleanup.policy": "delete,shred"}, "Invalid value shred for configuration "
     "log.cleanup.policy: String must be one of: compact, delete"),
    ({"compression.type": "brotli"}, "Invalid value brotli for configuration compression.type: "
     "String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"),
    ({"inter.broker.protocol.version": "9.9"}, "Invalid value 9.9 for configuration "
     "inter.broker.protocol.version: Version 9.9 is not a valid version"),
    ({"socket.request.max.bytes": "0"},
     "Invalid value 0 for configuration socket.request.max.bytes: Value must be at least 1"),
    ({"broker.id": "5", "node.id": "6"},
     "You must set `node.id` to the same value as `broker.id`."),
    ({"broker.id": "1001"}, "requirement failed: broker.id must be greater than or equal to -1 "
     "and not greater than reserved.broker.max.id"),
    ({"log.roll.ms": "0"}, "requirement failed: log.roll.ms must be greater than or equal to 1"),
    ({"log.retention.ms": "0"}, "requirement failed: log.retention.ms must be unlimited (-1) "
     "or, greater than or equal to 1"),
    ({"log.cleaner.dedupe.buffer.size": "1048576"}, "requirement failed: "
     "log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread."),
    ({"replica.fetch.wait.max.ms": "40000"}, "requirement failed: replica.socket.timeout.ms "
     "should always be at least replica.fetch.wait.max.ms to prevent unnecessary socket "
     "timeouts"),
    ({"queued.max.request.bytes": "1000"}, "requirement failed: queued.max.request.bytes must "
     "be larger or equal to socket.request.max.bytes"),
    ({"listeners": "127.0.0.1:9092"}, "Error creating broker listeners from '127.0.0.1:9092': "
     "Unable to parse 127.0.0.1:9092 to a broker endpoint"),
    ({"listeners": "INTERNAL://127.0.0.1:9092"}, "Error creating broker listeners from "
     "'INTERNAL://127.0.0.1:9092': No security protocol defined for listener INTERNAL"),
    ({"listeners": "PLAINTEXT://127.0.0.1:9092,PLAINTEXT://127.0.0.1:9093"},
     "requirement failed: Each listener must have a different name, listeners: "
     "PLAINTEXT://127.0.0.1:9092,PLAINTEXT://127.0.0.1:9093"),
    ({"listeners": "A://127.0.0.1:9092,B://127.0.0.2:9092",
      "listener.security.protocol.map": "A:PLAINTEXT,B:PLAINTEXT",
      "inter.broker.listener.name": "A"},
     "requirement failed: If you have two listeners on the same port then one needs to be "
     "IPv4 and the other IPv6, listeners: A://127.0.0.1:9092,B://127.0.0.2:9092, port: 9092"),
    ({"listeners": "A://:9092,B://:9092", "listener.security.protocol.map":
      "A:PLAINTEXT,B:PLAINTEXT", "inter.broker.listener.name": "A"},
     "requirement failed: Each listener must have a different port, listeners: "
     "A://:9092,B://:9092"),
    ({"listeners": "A://127.0.0.1:9092,B://127.0.0.1:9093",
      "listener.security.protocol.map": "A:PLAINTEXT,B:PLAINTEXT"},
     "requirement failed: inter.broker.listener.name must be a listener name defined in "
     "advertised.listeners. The valid options based on currently configured listeners are "
     "A,B"),
    ({"listener.security.protocol.map": "PLAINTEXT:TLS"},
     "Invalid security protocol `TLS` defined in listener.security.protocol.map"),
    ({"inter.broker.listener.name": "PLAINTEXT", "security.inter.broker.protocol": "PLAINTEXT"},
     "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set."),
    ({"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"}, "requirement failed: "
     "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP "
     "address."),
    ({"listeners": "PLAINTEXT://127.0.0.1:9092", "advertised.listeners":
      "PLAINTEXT://127.0.0.1:9092,OTHER://127.0.0.1:9093",
      "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT"},
     "requirement failed: advertised.listeners listener names must be equal to or a subset of "
     "the ones defined in listeners. Found PLAINTEXT,OTHER. The valid options based on the "
     "current configuration are PLAINTEXT"),
    ({"control.plane.listener.name": "PLAINTEXT"}, "requirement failed: "
     "control.plane.listener.name, when defined, should have a different value from the inter "
     "broker listener name. Currently they both have the value ListenerName(PLAINTEXT)"),
    ({"listeners": "SASL_PLAINTEXT://127.0.0.1:9093", "sasl.enabled.mechanisms": "SCRAM-SHA-256",
      "security.inter.broker.protocol": "SASL_PLAINTEXT"},
     "requirement failed: sasl.mechanism.inter.broker.protocol must be included in "
     "sasl.enabled.mechanisms when SASL is used for inter-broker communication"),
]  # fmt: skip

# What Kafka does and kt cannot do yet: refused out loud, naming the key.
KT_REFUSES: list[tuple[dict[str, str], str]] = [
    ({"listeners": "SASL_PLAINTEXT://127.0.0.1:9093", "sasl.enabled.mechanisms": "SCRAM-SHA-256",
      "security.inter.broker.protocol": "SASL_PLAINTEXT",
      "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256"},
     "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config: must name this broker's "
     "identity for SCRAM-SHA-256"),
    ({"listeners": "PLAINTEXT://127.0.0.1:9092,SECURE://127.0.0.1:9094",
      "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SECURE:SASL_SSL",
      "ssl.keystore.type": "PEM", "ssl.keystore.location": "/nonexistent/keystore.pem"},
     "ssl.keystore.location=/nonexistent/keystore.pem: No such file or directory"),
    ({"listeners": "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9094"},
     "sasl.enabled.mechanisms=GSSAPI: kt does not support SASL mechanism GSSAPI (only PLAIN, "
     "SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER)"),
    ({"listeners": "SSL://127.0.0.1:9093", "security.inter.broker.protocol": "SSL",
      "ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"},
     "ssl.cipher.suites=TLS_AES_128_GCM_SHA256: kt does not support choosing cipher suites "
     "yet (OpenSSL's defaults for the enabled protocols are used)"),
    ({"authorizer.class.name": "com.example.Authorizer"},
     "authorizer.class.name=com.example.Authorizer: kt does not support other authorizers "
     "than kafka.security.authorizer.AclAuthorizer yet"),
    ({"process.roles": "broker,controller"}, "process.roles=broker,controller: kt does not "
     "support KRaft mode yet; run it on ZooKeeper (zookeeper.connect) or on its embedded "
     "store (neither process.roles nor zookeeper.connect)"),
    ({"zookeeper.ssl.client.enable": "true"},
     "zookeeper.ssl.client.enable=true: kt does not support TLS to ZooKeeper yet"),
    ({"metric.reporters": "com.example.Reporter"},
     "metric.reporters=com.example.Reporter: kt does not support metrics reporters yet"),
]  # fmt: skip


@pytest.mark.parametrize(("props", "message"), KAFKA_REFUSES + KT_REFUSES)
def test_refused_with_the_message(props: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfigError) as info:
        KafkaConfig(props)
    assert str(info.value) == message


def test_what_kt_does_not_do_yet_is_accepted_when_off() -> None:
    config = KafkaConfig({"authorizer.class.name": "", "zookeeper.ssl.client.enable": "false",
                          "process.roles": "", "metric.reporters": ""})  # fmt: skip
    assert config.unknown_keys == []  # Kafka's keys all, known whatever kt makes of them


def test_listener_names_and_protocols() -> None:
    config = KafkaConfig({
        "listeners": "internal://10.0.0.1:9093,EXTERNAL://:9094,CONTROL://127.0.0.1:9095",
        "advertised.listeners": "INTERNAL://10.0.0.1:9093,EXTERNAL://kafka.example:9094,"
                                "CONTROL://127.0.0.1:9095",
        "listener.security.protocol.map":
            "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,CONTROL:PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL",
        "control.plane.listener.name": "CONTROL",
    })  # fmt: skip
    assert [(e.listener_name, e.host, e.port) for e in config.listeners] == [
        ("INTERNAL", "10.0.0.1", 9093), ("EXTERNAL", "", 9094), ("CONTROL", "127.0.0.1", 9095)
    ]  # fmt: skip
    assert [str(e) for e in config.advertised_listeners] == [
        "INTERNAL://10.0.0.1:9093", "EXTERNAL://kafka.example:9094", "CONTROL://127.0.0.1:9095"
    ]  # fmt: skip
    listeners = config.listener_config
    assert (listeners.inter_broker, listeners.controller_listener) == ("INTERNAL", "CONTROL")
    # Without inter.broker.listener.name, the listener named after
    # security.inter.broker.protocol carries the brokers' traffic (and the controller's).
    plain = KafkaConfig({"security.inter.broker.protocol": "PLAINTEXT"}).listener_config
    assert (plain.inter_broker, plain.controller_listener) == ("PLAINTEXT", "PLAINTEXT")


def test_unknown_keys_are_reported_not_fatal() -> None:
    config = KafkaConfig({"no.such.key": "1", "broker.id": "1"})
    assert config.unknown_keys == ["no.such.key"]
    assert config.broker_id == 1


def test_from_files_applies_overrides(tmp_path: Path) -> None:
    props = tmp_path / "server.properties"
    props.write_text("broker.id=1\nnum.partitions=3\n")
    config = KafkaConfig.from_files([props], {"num.partitions": "7"})
    assert config.broker_id == 1
    assert config["num.partitions"] == 7


def test_missing_file_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidConfigError, match="Cannot read"):
        KafkaConfig.from_files([tmp_path / "nope.properties"])


def test_a_plugin_set_for_one_listener_or_mechanism_is_refused_too() -> None:
    """listener.name.<l>.[<mechanism>.]<key>: a listener's own value of a key kt cannot
    honour is refused as the key itself is, naming the key as given."""
    for key, feature in (
        ("listener.name.sasl_ssl.plain.sasl.server.callback.handler.class",
         "SASL callback handlers"),
        ("listener.name.sasl_ssl.principal.builder.class",
         "principal builders other than DefaultKafkaPrincipalBuilder"),
    ):  # fmt: skip
        with pytest.raises(InvalidConfigError) as refused:
            KafkaConfig({key: "com.example.Plugin"})
        assert str(refused.value) == f"{key}=com.example.Plugin: kt does not support {feature} yet"
    config = KafkaConfig({"listener.name.sasl_ssl.scram-sha-512.connections.max.reauth.ms": "1"})
    assert config.unknown_keys == []


def test_kafka_4_keys_are_known_and_its_defaults_taken() -> None:
    """A Kafka 4.x server.properties names keys that Kafka 3.9 lacks: kt knows them (no
    "unknown" line) and takes Kafka 4's defaults where it behaves so (its JmxReporter in
    metric.reporters: kt has no JMX, and reports nothing either way)."""
    config = KafkaConfig({
        "group.coordinator.append.linger.ms": "-1",  # Kafka 4's default
        "metric.reporters": "org.apache.kafka.common.metrics.JmxReporter",
        "share.coordinator.state.topic.num.partitions": "50",
        "group.streams.session.timeout.ms": "45000",
        "add.partitions.to.txn.retry.backoff.ms": "20",
    })  # fmt: skip
    assert config.unknown_keys == []


def test_the_group_protocols_must_include_classic() -> None:
    """Kafka 4.4's default, classic, consumer and streams, is kt's; a list without classic
    is refused as by Kafka."""
    assert KafkaConfig({}).list_of("group.coordinator.rebalance.protocols") == [
        "classic",
        "consumer",
        "streams",
    ]
    with pytest.raises(InvalidConfigError) as refused:
        KafkaConfig({"group.coordinator.rebalance.protocols": "consumer"})
    assert str(refused.value) == (
        "requirement failed: group.coordinator.rebalance.protocols must contain classic"
    )


@pytest.mark.parametrize(("key", "value", "message"), [
    ("group.consumer.heartbeat.interval.ms", "4000",
     "group.consumer.heartbeat.interval.ms must be greater than or equal to "
     "group.consumer.min.heartbeat.interval.ms"),
    ("group.consumer.max.heartbeat.interval.ms", "4000",
     "group.consumer.max.heartbeat.interval.ms must be greater than or equal to "
     "group.consumer.min.heartbeat.interval.ms"),
    ("group.consumer.heartbeat.interval.ms", "16000",
     "group.consumer.heartbeat.interval.ms must be less than or equal to "
     "group.consumer.max.heartbeat.interval.ms"),
    ("group.consumer.session.timeout.ms", "40000",
     "group.consumer.session.timeout.ms must be greater than or equal to "
     "group.consumer.min.session.timeout.ms"),
    ("group.consumer.min.session.timeout.ms", "50000",
     "group.consumer.session.timeout.ms must be greater than or equal to "
     "group.consumer.min.session.timeout.ms"),
    ("group.consumer.max.session.timeout.ms", "44000",
     "group.consumer.max.session.timeout.ms must be greater than or equal to "
     "group.consumer.min.session.timeout.ms"),
    ("group.consumer.session.timeout.ms", "70000",
     "group.consumer.session.timeout.ms must be less than or equal to "
     "group.consumer.max.session.timeout.ms"),
    ("group.share.heartbeat.interval.ms", "500",
     "group.share.heartbeat.interval.ms must be greater than or equal to "
     "group.share.min.heartbeat.interval.ms"),
    ("group.share.max.heartbeat.interval.ms", "4000",
     "group.share.max.heartbeat.interval.ms must be greater than or equal to "
     "group.share.min.heartbeat.interval.ms"),
    ("group.share.min.session.timeout.ms", "50000",
     "group.share.session.timeout.ms must be greater than or equal to "
     "group.share.min.session.timeout.ms"),
    ("group.share.max.session.timeout.ms", "44000",
     "group.share.max.session.timeout.ms must be greater than or equal to "
     "group.share.min.session.timeout.ms"),
    ("group.streams.heartbeat.interval.ms", "16000",
     "group.streams.heartbeat.interval.ms must be less than or equal to "
     "group.streams.max.heartbeat.interval.ms"),
    ("group.streams.max.session.timeout.ms", "44000",
     "group.streams.max.session.timeout.ms must be greater than or equal to "
     "group.streams.min.session.timeout.ms"),
    ("group.streams.min.heartbeat.interval.ms", "6000",
     "group.streams.heartbeat.interval.ms must be greater than or equal to "
     "group.streams.min.heartbeat.interval.ms"),
    ("group.streams.min.session.timeout.ms", "50000",
     "group.streams.session.timeout.ms must be greater than or equal to "
     "group.streams.min.session.timeout.ms"),
    ("group.streams.max.assignment.interval.ms", "500",
     "group.streams.assignment.interval.ms must be less than or equal to "
     "group.streams.max.assignment.interval.ms"),
    ("group.streams.min.assignment.interval.ms", "20000",
     "group.streams.max.assignment.interval.ms must be greater than or equal to "
     "group.streams.min.assignment.interval.ms"),
    ("group.streams.num.standby.replicas", "3",
     "group.streams.num.standby.replicas must be less than or equal to "
     "group.streams.max.standby.replicas"),
    ("group.streams.task.offset.interval.ms", "1000",
     "group.streams.task.offset.interval.ms must be greater than or equal to "
     "group.streams.min.task.offset.interval.ms"),
])  # fmt: skip
def test_the_consumer_group_bounds_are_kafkas(key: str, value: str, message: str) -> None:
    """GroupCoordinatorConfig's checks, with its messages (consumer and share groups)."""
    with pytest.raises(InvalidConfigError) as refused:
        KafkaConfig({key: value})
    assert str(refused.value) == f"requirement failed: {message}"


def test_the_heartbeat_interval_is_below_the_session_timeout() -> None:
    with pytest.raises(InvalidConfigError) as refused:
        KafkaConfig({"group.consumer.min.session.timeout.ms": "1000",
                     "group.consumer.session.timeout.ms": "5000"})  # fmt: skip
    assert str(refused.value) == (
        "requirement failed: group.consumer.heartbeat.interval.ms "
        "must be less than group.consumer.session.timeout.ms"
    )
