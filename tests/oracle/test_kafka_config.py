"""Kafka's KafkaConfig judges the broker configs kt refuses: every value of
tests/test_kafka_config.py's KAFKA_REFUSES is refused by Kafka 3.9 with the same message
(interop/KafkaConfigCheck.java runs KafkaConfig.fromProps on each), and what kt refuses
only because it cannot do it yet (KT_REFUSES) is a config Kafka accepts."""

from __future__ import annotations

import subprocess
from pathlib import Path

from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic

from kt.config import BROKER_KEYS, TOPIC_CONFIGS
from kt.reference_kafka import TOOL_HEAP, _tool_log4j, java_command
from tests.test_kafka_config import KAFKA_REFUSES, KT_REFUSES

CHECK = Path(__file__).resolve().parents[2] / "interop" / "KafkaConfigCheck.java"


def kafka_verdicts(cases: list[dict[str, str]], tmp_path: Path) -> list[str]:
    files = []
    for i, props in enumerate(cases):
        path = tmp_path / f"case-{i}.properties"
        # Kafka's ZooKeeper mode, as kt's (KRaft needs settings kt does not read).
        lines = ["zookeeper.connect=127.0.0.1:2181"] + [f"{k}={v}" for k, v in props.items()]
        path.write_text("\n".join(lines) + "\n", encoding="latin-1")
        files.append(str(path))
    result = subprocess.run([*java_command(str(CHECK), TOOL_HEAP, _tool_log4j()), *files],
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return [line.split("\t", 1)[1] for line in result.stdout.splitlines()
            if line.startswith("RESULT\t")]  # fmt: skip


def test_kafka_refuses_what_kt_refuses_in_the_same_words(kafka_available, tmp_path) -> None:
    verdicts = kafka_verdicts([props for props, _ in KAFKA_REFUSES], tmp_path)
    assert verdicts == [message for _, message in KAFKA_REFUSES]


def test_kafka_accepts_what_kt_cannot_do_yet(kafka_available, tmp_path) -> None:
    # process.roles asks for KRaft, whose other settings a ZooKeeper config lacks.
    cases = [props for props, _ in KT_REFUSES if "process.roles" not in props]
    assert kafka_verdicts(cases, tmp_path) == ["OK"] * len(cases)


KEYS = Path(__file__).resolve().parents[2] / "interop" / "KafkaConfigKeys.java"


def kafka_config_keys(scope: str) -> dict[str, tuple[str, str]]:
    """Kafka 3.9's own keys (KafkaConfig's ConfigDef for "broker", LogConfig's for "topic"),
    each with its type and its default as ConfigDef prints it."""
    result = subprocess.run([*java_command(str(KEYS), TOOL_HEAP, _tool_log4j())],
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    return {name: (kind, default) for where, name, kind, default in rows if where == scope}


def test_kt_knows_every_key_of_kafka(kafka_available) -> None:
    broker, topic = kafka_config_keys("broker"), kafka_config_keys("topic")
    assert len(broker) > 300 and len(topic) == 36  # the whole ConfigDefs were read
    assert sorted(set(broker) - set(BROKER_KEYS)) == []
    assert sorted(set(topic) - {key.name for key in TOPIC_CONFIGS}) == []


def test_every_kafka_key_at_its_default_starts_kt_and_creates_a_topic(
    kafka_available, broker_factory
) -> None:
    """A server.properties holding each of Kafka's broker keys at Kafka's default starts
    kt with no "unknown configuration key" line, and a topic created with each of
    Kafka's topic configs at its default describes those values."""
    defaults = {name: default for name, (_, default) in kafka_config_keys("broker").items()
                if default not in ("null", "<none>")}  # fmt: skip
    for ours in ("listeners", "log.dir"):  # where the test's broker listens and writes
        defaults.pop(ours)
    broker = broker_factory(**defaults)
    assert "unknown configuration key" not in broker.run_log()
    topic_defaults = {name: default for name, (_, default) in kafka_config_keys("topic").items()}
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("every-config", 1, 1, config=topic_defaults)])[
        "every-config"
    ].result(30)
    resource = ConfigResource(ConfigResource.Type.TOPIC, "every-config")
    described = admin.describe_configs([resource])[resource].result(30)
    shown = {name: entry.value or "" for name, entry in described.items()}
    assert {name: shown.get(name) for name in topic_defaults} == topic_defaults


# A value other than Kafka's default for each topic config kt honours, all valid together.
HONOURED = {
    "cleanup.policy": "compact,delete", "compression.type": "lz4",
    "compression.gzip.level": "5", "compression.lz4.level": "12", "compression.zstd.level": "7",
    "delete.retention.ms": "3600000", "file.delete.delay.ms": "30000",
    "flush.messages": "1000", "flush.ms": "5000", "index.interval.bytes": "2048",
    "leader.replication.throttled.replicas": "0:0", "local.retention.bytes": "-1",
    "local.retention.ms": "-1", "max.compaction.lag.ms": "86400000",
    "max.message.bytes": "2000000", "message.downconversion.enable": "false",
    "message.timestamp.difference.max.ms": "1000", "message.timestamp.after.max.ms": "5000",
    "min.cleanable.dirty.ratio": "0.3", "min.compaction.lag.ms": "1000",
    "min.insync.replicas": "1", "preallocate": "true", "retention.bytes": "100000000",
    "retention.ms": "86400000", "segment.bytes": "10485760", "segment.index.bytes": "1048576",
    "segment.jitter.ms": "100", "segment.ms": "3600000",
    "unclean.leader.election.enable": "true",
}  # fmt: skip


def described(bootstrap: str, topic: str) -> dict[str, tuple[str, bool]]:
    """Each config of the topic: (value, whether the topic sets it)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(30)
    dynamic = ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    return {name: (e.value or "", e.source == dynamic) for name, e in entries.items()}


def test_a_kafka_topic_with_every_config_kt_honours_survives_the_swap_to_kt(
    broker_factory, kafka_factory, zookeeper: str, tmp_path
) -> None:
    """A topic created on Kafka 3.9 with a non-default value for each topic config kt
    honours (message.timestamp.difference.max.ms among them, which stopped kt's start):
    the broker swapped to kt on the same ZooKeeper and log dir starts and describes it
    as Kafka did."""
    log_dir = tmp_path / "broker-0"
    log_dir.mkdir()
    kafka = kafka_factory(broker_id=0, zookeeper_connect=zookeeper, log_dir=log_dir)
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    admin.create_topics([NewTopic("tuned", 1, 1, config=HONOURED)])["tuned"].result(30)
    by_kafka = described(kafka.bootstrap, "tuned")
    assert {k: v for k, (v, mine) in by_kafka.items() if mine} == HONOURED
    kafka.stop()
    kt = broker_factory(**{"broker.id": "0", "zookeeper.connect": zookeeper,
                           "log.dirs": str(log_dir)})  # fmt: skip
    assert described(kt.bootstrap, "tuned") == by_kafka
