"""`kt get-offsets`, `kt delete-records` and `kt configs` against a live broker.

The records come from confluent-kafka with explicit CreateTimes, so every offset the
tools print is known in advance; config changes made with `kt configs` must be what a
real client's DescribeConfigs sees and what the broker enforces.
"""

from __future__ import annotations

import json

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from tests.integration.conftest import kt_command, kt_error, kt_ok

pytestmark = pytest.mark.slow

T0 = 1_700_000_000_000


def create_topic(bootstrap: str, topic: str, config: dict[str, str] | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, 1, 1, config=config or {})
    admin.create_topics([new], operation_timeout=10)[topic].result(timeout=30)


def produce_ten(bootstrap: str, topic: str) -> None:
    """Offsets 0..9 with CreateTime T0 + offset * 1000."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(10):
        producer.produce(topic, value=f"v{i}".encode(), timestamp=T0 + i * 1000)
    assert producer.flush(30) == 0


def get_offsets(broker, topic: str, time_spec: str) -> list[str]:
    return kt_ok("get-offsets", "--bootstrap-server", broker.bootstrap, "--topic", topic,
                 "--time", time_spec)  # fmt: skip


def test_get_offsets_by_time(module_broker) -> None:
    create_topic(module_broker.bootstrap, "offsets")
    produce_ten(module_broker.bootstrap, "offsets")
    assert get_offsets(module_broker, "offsets", "-1") == ["offsets:0:10"]
    assert get_offsets(module_broker, "offsets", "latest") == ["offsets:0:10"]
    assert get_offsets(module_broker, "offsets", "-2") == ["offsets:0:0"]
    assert get_offsets(module_broker, "offsets", "earliest") == ["offsets:0:0"]
    # -3: the offset of the record with the largest timestamp (ListOffsets v7).
    assert get_offsets(module_broker, "offsets", "-3") == ["offsets:0:9"]
    # A timestamp: the first offset whose timestamp is >= it.
    assert get_offsets(module_broker, "offsets", str(T0 + 3500)) == ["offsets:0:4"]
    assert get_offsets(module_broker, "offsets", str(T0)) == ["offsets:0:0"]
    # Later than every record: no line for the partition.
    assert get_offsets(module_broker, "offsets", str(T0 + 60_000)) == []


def test_get_offsets_sorts_partitions_as_strings(module_broker) -> None:
    kt_ok("topics", "--bootstrap-server", module_broker.bootstrap, "--create",
          "--topic", "offsets-many", "--partitions", "12")  # fmt: skip
    lines = get_offsets(module_broker, "offsets-many", "-1")
    assert lines == [f"offsets-many:{p}:0" for p in sorted(range(12), key=lambda p: str(p))]


def test_delete_records(module_broker, tmp_path) -> None:
    create_topic(module_broker.bootstrap, "trim")
    produce_ten(module_broker.bootstrap, "trim")
    plan = tmp_path / "delete.json"

    def delete(*partitions: dict) -> list[str]:
        plan.write_text(json.dumps({"partitions": list(partitions), "version": 1}))
        return kt_ok("delete-records", "--bootstrap-server", module_broker.bootstrap,
                     "--offset-json-file", str(plan))  # fmt: skip

    assert delete({"topic": "trim", "partition": 0, "offset": 4}) == [
        "Executing records delete operation",
        "Records delete operation completed:",
        "partition: trim-0\tlow_watermark: 4",
    ]
    assert get_offsets(module_broker, "trim", "-2") == ["trim:0:4"]
    assert get_offsets(module_broker, "trim", str(T0)) == ["trim:0:4"]
    # Offset -1 deletes up to the high watermark.
    assert delete({"topic": "trim", "partition": 0, "offset": -1})[-1] == (
        "partition: trim-0\tlow_watermark: 10"
    )
    assert get_offsets(module_broker, "trim", "-2") == ["trim:0:10"]
    assert get_offsets(module_broker, "trim", "-1") == ["trim:0:10"]

    twice = [{"topic": "trim", "partition": 0, "offset": 1}] * 2
    plan.write_text(json.dumps({"partitions": twice, "version": 1}))
    error = kt_error("delete-records", "--bootstrap-server", module_broker.bootstrap,
                     "--offset-json-file", str(plan))  # fmt: skip
    assert error.endswith("Offset json file contains duplicate topic partitions: trim-0")


def describe_configs(broker, topic: str) -> list[str]:
    return kt_ok("configs", "--bootstrap-server", broker.bootstrap, "--entity-type", "topics",
                 "--entity-name", topic, "--describe")  # fmt: skip


def alter_configs(broker, topic: str, *args: str) -> list[str]:
    return kt_ok("configs", "--bootstrap-server", broker.bootstrap, "--entity-type", "topics",
                 "--entity-name", topic, "--alter", *args)  # fmt: skip


def client_config(bootstrap: str, topic: str) -> dict[str, tuple[str, int]]:
    """name -> (value, source) as librdkafka's DescribeConfigs returns them."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(timeout=30)
    return {name: (entry.value, entry.source) for name, entry in entries.items()}


def test_configs_describe_and_alter(module_broker) -> None:
    create_topic(module_broker.bootstrap, "tuned", {"retention.ms": "86400000"})
    assert describe_configs(module_broker, "tuned") == [
        "Dynamic configs for topic tuned are:",
        # No DEFAULT_CONFIG:log.retention.hours=168: Kafka lists a topic key's broker
        # synonyms from the first that is set, and log.retention.ms is not (Kafka 3.9).
        "  retention.ms=86400000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms="
        "86400000}",
    ]

    assert alter_configs(
        module_broker, "tuned", "--add-config", "max.message.bytes=2000,cleanup.policy=compact"
    ) == ["Completed updating config for topic tuned."]
    assert alter_configs(module_broker, "tuned", "--delete-config", "retention.ms") == [
        "Completed updating config for topic tuned."
    ]
    assert describe_configs(module_broker, "tuned") == [
        "Dynamic configs for topic tuned are:",
        "  cleanup.policy=compact sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy="
        "compact, DEFAULT_CONFIG:log.cleanup.policy=delete}",
        "  max.message.bytes=2000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
        "max.message.bytes=2000, DEFAULT_CONFIG:message.max.bytes=1048588}",
    ]

    dynamic_topic_config = 1  # ConfigSource.DYNAMIC_TOPIC_CONFIG
    seen = client_config(module_broker.bootstrap, "tuned")
    assert seen["max.message.bytes"] == ("2000", dynamic_topic_config)
    assert seen["retention.ms"][0] == "604800000"
    assert seen["retention.ms"][1] != dynamic_topic_config

    # The broker enforces the new limit on the next produce.
    errors = []
    producer = Producer({"bootstrap.servers": module_broker.bootstrap, "acks": "all"})
    producer.produce("tuned", key=b"k", value=b"x" * 5000,
                     on_delivery=lambda err, msg: errors.append(err))  # fmt: skip
    producer.flush(30)
    assert [e.code() for e in errors] == [KafkaError.MSG_SIZE_TOO_LARGE]


def test_configs_rejects_a_bad_value(module_broker) -> None:
    create_topic(module_broker.bootstrap, "strict")
    args = ["--bootstrap-server", module_broker.bootstrap, "--entity-type", "topics",
            "--entity-name", "strict", "--alter", "--add-config", "retention.ms=abc"]  # fmt: skip
    result = kt_command("configs", *args)
    assert result.returncode == 1
    # ConfigCommand's two parts: the arguments, then the broker's message (Kafka adds a
    # stack trace).
    first, second = result.stderr.splitlines()
    assert first == f"Error while executing config command with args '{' '.join(args)}'"
    assert second.startswith("Invalid value abc for configuration retention.ms")
    assert describe_configs(module_broker, "strict") == ["Dynamic configs for topic strict are:"]
