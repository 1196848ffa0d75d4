"""The `kt` bin-script tools, run as the `kt` executable against a live broker.

Output is checked line by line against the text of the Kafka tool each one mirrors
(Kafka 3.9's tools, which tests/oracle/test_tools.py runs beside them). Where the data
comes from a real client (confluent-kafka), the tools must show exactly what that client
wrote.
"""

from __future__ import annotations

import base64
import re

import pytest
from confluent_kafka import TopicCollection
from confluent_kafka.admin import AdminClient

from tests.integration.conftest import kt_command, kt_ok

pytestmark = pytest.mark.slow

TOPIC_ID = re.compile(r"[A-Za-z0-9_-]{22}")


def topics(broker, *args: str) -> list[str]:
    return kt_ok("topics", "--bootstrap-server", broker.bootstrap, *args)


def topics_error(broker, *args: str) -> str:
    """Like TopicCommand, `kt topics` prints its error line on stdout, and exits 1."""
    result = kt_command("topics", "--bootstrap-server", broker.bootstrap, *args)
    assert (result.returncode, result.stderr) == (1, ""), result
    (line,) = result.stdout.splitlines()
    return line


def client_topic_id(bootstrap: str, topic: str) -> bytes:
    """The topic id as librdkafka reads it from Metadata (printed in standard base64)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    described = admin.describe_topics(TopicCollection([topic]))[topic].result(timeout=30)
    return base64.b64decode(str(described.topic_id) + "==")


def test_topics_describe_in_kafka_format(module_broker) -> None:
    created = topics(
        module_broker, "--create", "--topic", "orders", "--partitions", "3",
        "--config", "retention.ms=86400000", "--config", "cleanup.policy=compact",
    )  # fmt: skip
    assert created == ["Created topic orders."]

    summary, *partitions = topics(module_broker, "--describe", "--topic", "orders")
    fields = summary.split("\t")
    assert fields[0] == "Topic: orders"
    assert fields[1].startswith("TopicId: ")
    topic_id = fields[1].removeprefix("TopicId: ")
    assert TOPIC_ID.fullmatch(topic_id), topic_id
    # Kafka prints Uuid in URL-safe base64; librdkafka prints the same 16 bytes in
    # standard base64.
    assert base64.urlsafe_b64decode(topic_id + "==") == client_topic_id(
        module_broker.bootstrap, "orders"
    )
    assert fields[2:] == [
        "PartitionCount: 3",
        "ReplicationFactor: 1",
        "Configs: cleanup.policy=compact,retention.ms=86400000",
    ]
    assert partitions == [
        f"\tTopic: orders\tPartition: {p}\tLeader: 0\tReplicas: 0\tIsr: 0"
        "\tElr: N/A\tLastKnownElr: N/A"
        for p in range(3)
    ]


def test_topics_without_overrides_print_empty_configs(module_broker) -> None:
    topics(module_broker, "--create", "--topic", "plain", "--partitions", "1")
    summary, partition = topics(module_broker, "--describe", "--topic", "plain")
    assert re.fullmatch(
        r"Topic: plain\tTopicId: [A-Za-z0-9_-]{22}\tPartitionCount: 1\tReplicationFactor: 1"
        r"\tConfigs: ",
        summary,
    )
    assert partition == (
        "\tTopic: plain\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0\tElr: N/A\tLastKnownElr: N/A"
    )


def test_topics_create_list_alter_delete(module_broker) -> None:
    assert topics(module_broker, "--create", "--topic", "life", "--partitions", "2") == [
        "Created topic life."
    ]
    assert topics_error(module_broker, "--create", "--topic", "life") == (
        "Error while executing topic command : Topic 'life' already exists."
    )
    assert topics(module_broker, "--create", "--topic", "life", "--if-not-exists") == []
    assert topics(module_broker, "--create", "--topic", "life.v1_x") == [
        "WARNING: Due to limitations in metric names, topics with a period ('.') or "
        "underscore ('_') could collide. To avoid issues it is best to use either, "
        "but not both.",
        "Created topic life.v1_x.",
    ]
    listed = topics(module_broker, "--list")
    assert listed == sorted(listed)
    assert {"life", "life.v1_x"} <= set(listed)

    assert topics(module_broker, "--alter", "--topic", "life", "--partitions", "5") == []
    summary, *partitions = topics(module_broker, "--describe", "--topic", "life")
    assert "\tPartitionCount: 5\t" in summary
    assert [line.split("\t")[2] for line in partitions] == [f"Partition: {p}" for p in range(5)]
    admin = AdminClient({"bootstrap.servers": module_broker.bootstrap})
    assert len(admin.list_topics("life", timeout=10).topics["life"].partitions) == 5

    assert topics(module_broker, "--delete", "--topic", "life") == []
    assert "life" not in topics(module_broker, "--list")
    assert topics_error(module_broker, "--describe", "--topic", "life") == (
        "Error while executing topic command : Topic 'life' does not exist as expected"
    )
    assert topics(module_broker, "--delete", "--topic", "life", "--if-exists") == []


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "a/b",
            "Topic name is invalid: 'a/b' contains one or more characters other than "
            "ASCII alphanumerics, '.', '_' and '-'",
        ),
        (".", "Topic name is invalid: '.' is not allowed"),
        ("..", "Topic name is invalid: '..' is not allowed"),
        (
            "x" * 250,
            f"Topic name is invalid: the length of '{'x' * 250}' is longer than the max "
            "allowed length 249",
        ),
    ],
    ids=["slash", "dot", "dotdot", "too-long"],
)
def test_topics_invalid_name(module_broker, name: str, message: str) -> None:
    error = topics_error(module_broker, "--create", "--topic", name)
    assert error == f"Error while executing topic command : {message}"


def test_topics_replication_factor_above_brokers(module_broker) -> None:
    error = topics_error(module_broker, "--create", "--topic", "rf3", "--replication-factor", "3")
    assert error == (
        "Error while executing topic command : Replication factor: 3 larger than available "
        "brokers: 1."
    )
