"""Kafka 4.4 (KRaft, one process) beside kt with the consumer group protocol (KIP-848):
the same scenario on both (two confluent-kafka members of `group.protocol=consumer`
share six partitions and commit what they read), then Kafka 4.4's own
kafka-consumer-groups prints the same against both, modulo member ids and the
coordinator's address, and `kt consumer-groups` prints what it prints; and Kafka 4.4's
DumpLogSegments reads the group's records in kt's `__consumer_offsets` exactly as
`kt dump-log` prints them."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kt.client.client import KafkaClient
from kt.protocol import ApiKey
from kt.protocol import messages as m
from kt.reference_kafka import KAFKA4_VERSION, run_tool
from tests.groups._clients import wait_until
from tests.oracle.conftest import KAFKA4_HEARTBEATS, dump_group_partition

TOOL_RUNS = (
    ("--describe", "--group", "oracle"),
    ("--describe", "--group", "oracle", "--members", "--verbose"),
    ("--describe", "--group", "oracle", "--state", "--verbose"),
    ("--list", "--type"),
)
MEMBER_ID = re.compile(r"[A-Za-z0-9+/_-]{22}")


@pytest.fixture
def kt4(broker_factory):
    return broker_factory(**KAFKA4_HEARTBEATS)


def stable(bootstrap: str) -> bool:
    with KafkaClient(bootstrap) as client:
        response = client.any_connection().send(
            ApiKey.CONSUMER_GROUP_DESCRIBE, m.ConsumerGroupDescribeRequest(group_ids=["oracle"])
        )
    (group,) = response.groups
    return group.group_state == "Stable" and len(group.members) == 2


def scenario(bootstrap: str) -> list[list[str]]:
    """Two members read and commit 60 records of six partitions; Kafka 4.4's tool's
    output then, ids and the coordinator's address masked, each run's lines sorted (the
    members' order is their random ids')."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("orders", 6, 1)])["orders"].result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(60):
        producer.produce("orders", b"%d" % i, partition=i % 6)
    assert producer.flush(30) == 0
    consumers = [
        Consumer({"bootstrap.servers": bootstrap, "group.id": "oracle",
                  "group.protocol": "consumer", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "client.id": "member"})
        for _ in range(2)
    ]  # fmt: skip
    read = 0
    try:
        for consumer in consumers:
            consumer.subscribe(["orders"])

        def settled() -> bool:
            nonlocal read
            for consumer in consumers:
                msg = consumer.poll(0.05)
                if msg is not None and msg.error() is None:
                    consumer.commit(msg, asynchronous=False)
                    read += 1
            owned = sorted(len(c.assignment()) for c in consumers)
            return read == 60 and owned == [3, 3] and stable(bootstrap)

        wait_until(settled, timeout_s=90, what="60 records read by a stable 3+3 group")
        outputs = []
        for args in TOOL_RUNS:
            result = run_tool("kafka-consumer-groups", "--bootstrap-server", bootstrap, *args,
                              version=KAFKA4_VERSION)  # fmt: skip
            assert result.returncode == 0, result.stderr
            ours = subprocess.run(
                [sys.executable, "-m", "kt", "consumer-groups", "--bootstrap-server", bootstrap,
                 *args], capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            # kt's tool prints what Kafka 4.4's does, the members in the same order.
            assert (ours.returncode, ours.stdout) == (0, result.stdout), ours.stderr
            text = MEMBER_ID.sub("<member>", result.stdout.replace(bootstrap, "<coordinator>"))
            outputs.append(sorted(line.rstrip() for line in text.splitlines()))
        return outputs
    finally:
        for consumer in consumers:
            consumer.close()


def test_kafka4_consumer_groups_prints_the_same(kafka4, kt4) -> None:
    theirs = scenario(kafka4.bootstrap)
    ours = scenario(kt4.bootstrap)
    assert any("orders:0,1,2" in line for line in theirs[1])
    assert any("Stable" in line for line in theirs[2])
    assert ours == theirs


def test_kafka4_dump_log_reads_kts_group_records(kt4) -> None:
    scenario(kt4.bootstrap)
    theirs, ours = dump_group_partition(kt4.log_dir, "oracle")
    assert '"type":"8"' in theirs and "Unknown record type" not in theirs
    assert ours == theirs


def features(bootstrap: str) -> list[str]:
    result = run_tool("kafka-features", "--bootstrap-server", bootstrap, "describe",
                      version=KAFKA4_VERSION)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_kafka4_features_describes_group_version_as_on_kafka4(kafka4, kt4, broker_factory):
    """kafka-features.sh describe: the consumer group protocol's feature (group.version) at
    level 1 as on Kafka 4.4 (the epoch aside); share.version up to 1, finalized (share
    groups served whatever the protocols list, as on Kafka 4.4) and transaction.version at
    0, which kt serves; streams.version 1 (streams groups); `kt features describe` prints
    the same. A broker with the classic protocol only leaves group.version and
    streams.version unfinalized, share.version not."""
    epoch = re.compile(r"Epoch: \S+$")
    theirs = {line.split()[1]: epoch.sub("", line) for line in features(kafka4.bootstrap)}
    ours = features(kt4.bootstrap)
    assert [epoch.sub("", line) for line in ours] == [
        theirs["group.version"],
        # share.version 1 (share groups) kt serves; 2 (dead-letter queues) it does not
        theirs["share.version"].replace("SupportedMaxVersion: 2 ", "SupportedMaxVersion: 1 ")
        .replace("FinalizedVersionLevel: 2 ", "FinalizedVersionLevel: 1 "),
        theirs["streams.version"],  # streams groups, served as on Kafka 4.4
        theirs["transaction.version"].replace("SupportedMaxVersion: 2 ", "SupportedMaxVersion: 0 ")
        .replace("FinalizedVersionLevel: 2 ", "FinalizedVersionLevel: 0 "),
    ]  # fmt: skip
    kt_tool = subprocess.run(
        [sys.executable, "-m", "kt", "features", "--bootstrap-server", kt4.bootstrap, "describe"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert kt_tool.stdout.splitlines() == ours
    classic = broker_factory(**{"group.coordinator.rebalance.protocols": "classic"})
    group_version, share_version, streams_version, _ = features(classic.bootstrap)
    assert "FinalizedVersionLevel: 0 " in group_version
    assert "FinalizedVersionLevel: 1 " in share_version
    assert "FinalizedVersionLevel: 0 " in streams_version


def configs(bootstrap: str, *args: str) -> tuple[int, str, str]:
    """kafka-configs on a group: (exit status, output, the cause of a failure)."""
    result = run_tool("kafka-configs", "--bootstrap-server", bootstrap, "--entity-type",
                      "groups", "--entity-name", "orders-app", *args,
                      version=KAFKA4_VERSION)  # fmt: skip
    cause = [line for line in result.stderr.splitlines() if line.startswith("Caused by: ")]
    return result.returncode, result.stdout, cause[-1] if cause else ""


def test_kafka4_configs_sets_and_describes_group_configs(kafka4, kt4) -> None:
    """Group configs (the GROUP resource of IncrementalAlterConfigs and DescribeConfigs):
    Kafka 4.4's kafka-configs sets, describes and refuses the same against both."""
    runs = (
        ("--alter", "--add-config", "consumer.session.timeout.ms=50000"),
        ("--alter", "--add-config", "consumer.heartbeat.interval.ms=20000"),
        ("--alter", "--add-config", "no.such.key=1"),
        ("--alter", "--add-config", "consumer.session.timeout.ms=soon"),
        ("--describe",),
        ("--describe", "--all"),
        ("--alter", "--delete-config", "consumer.session.timeout.ms"),
        ("--describe",),
    )
    theirs = [configs(kafka4.bootstrap, *args) for args in runs]
    ours = [configs(kt4.bootstrap, *args) for args in runs]
    assert theirs[0][0] == 0 and "consumer.session.timeout.ms=50000" in theirs[4][1]
    assert "must be in the range 100 to 15000 inclusive" in theirs[1][2]
    assert ours == theirs
