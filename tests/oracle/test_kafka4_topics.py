"""Kafka 4.4 (KRaft, one process) beside kt: Kafka 4.4's own kafka-topics describes a topic
through DescribeTopicPartitions, one page of partitions at a time
(`--partition-size-limit-per-response`), and prints the same partition lines against
both brokers. (The topic line differs where the two hold different configs: a KRaft
Kafka 4.4 lists its static min.insync.replicas; it is not compared here.)"""

from __future__ import annotations

import re

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kt.reference_kafka import KAFKA4_VERSION, ReferenceKafka, run_tool, unavailable_reason
from tests._environment import unavailable


@pytest.fixture
def kafka4(tmp_path):
    reason = unavailable_reason(KAFKA4_VERSION)
    if reason is not None:
        unavailable(reason)
    kafka = ReferenceKafka(tmp_path / "kafka4", broker_id=0, version=KAFKA4_VERSION)
    with kafka.start():
        yield kafka


def partition_lines(bootstrap: str, *extra: str) -> list[str]:
    result = run_tool("kafka-topics", "--bootstrap-server", bootstrap, "--describe",
                      "--topic", "orders", *extra, version=KAFKA4_VERSION)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return [line for line in result.stdout.splitlines() if line.startswith("\tTopic: ")]


def test_kafka4_topics_describe_prints_the_same_partitions(kafka4, broker) -> None:
    for bootstrap in (kafka4.bootstrap, broker.bootstrap):
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("orders", 5, 1)])["orders"].result(30)
    theirs = partition_lines(kafka4.bootstrap, "--partition-size-limit-per-response", "2")
    ours = partition_lines(broker.bootstrap, "--partition-size-limit-per-response", "2")
    assert len(theirs) == 5
    assert re.fullmatch(r"\tTopic: orders\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0\t"
                        r"Elr: \tLastKnownElr: ", theirs[0])  # fmt: skip
    assert ours == theirs
    assert partition_lines(broker.bootstrap) == ours  # one page
