"""Kafka's Java client (the one Kafka Streams, Connect and Spark's connector are built on)
against kt, through Kafka's own perf and console tools: the idempotent producer with
acks=all, consumers in a group with the cooperative-sticky assignor, offset commits, and
the admin client. Every failure here is a kt bug or a gap named in docs/oracle.md.
"""

from __future__ import annotations

import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable

from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient, ConsumerGroupDescription

from kt.reference_kafka import run_tool, tool_command

COOPERATIVE = "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"


def wait_until(condition: Callable[[], bool], what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    result = run_tool("kafka-get-offsets", "--bootstrap-server", bootstrap, "--topic", topic)
    assert result.returncode == 0, result.stderr
    return {int(p): int(o) for p, o in re.findall(rf"^{topic}:(\d+):(\d+)$", result.stdout, re.M)}


def test_perf_tools_produce_idempotently_and_consume_in_a_group(broker) -> None:
    b = broker.bootstrap
    created = run_tool("kafka-topics", "--bootstrap-server", b, "--create", "--topic", "perf",
                       "--partitions", "4")  # fmt: skip
    assert created.stdout == "Created topic perf.\n", created.stderr

    produced = run_tool(
        "kafka-producer-perf-test", "--topic", "perf", "--num-records", "200000",
        "--record-size", "100", "--throughput", "-1", "--producer-props",
        f"bootstrap.servers={b}", "acks=all", "enable.idempotence=true", "linger.ms=5",
    )  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    final = produced.stdout.strip().splitlines()[-1]
    assert re.fullmatch(
        r"200000 records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency, "
        r"[\d.]+ ms max latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, \d+ ms 99.9th\.",
        final,
    ), final
    assert sum(end_offsets(b, "perf").values()) == 200000  # exactly once, no duplicates

    consumed = run_tool("kafka-consumer-perf-test", "--bootstrap-server", b, "--topic", "perf",
                        "--messages", "200000", "--group", "perf-group",
                        "--timeout", "60000")  # fmt: skip
    assert consumed.returncode == 0, consumed.stderr
    header, line = consumed.stdout.strip().splitlines()[-2:]
    assert header.startswith("start.time, end.time, data.consumed.in.MB")
    fields = dict(zip(header.split(", "), line.split(", "), strict=True))
    assert int(fields["data.consumed.in.nMsg"]) == 200000
    assert abs(float(fields["data.consumed.in.MB"]) - 200000 * 100 / 2**20) < 0.01

    latency = run_tool("kafka-e2e-latency", b, "perf", "500", "all", "100")
    assert latency.returncode == 0, latency.stderr
    assert "Avg latency:" in latency.stdout


class ConsoleConsumer:
    """kafka-console-consumer in a group, its printed values collected by a thread."""

    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        command = tool_command(
            "kafka-console-consumer", "--bootstrap-server", bootstrap, "--topic", topic,
            "--group", group, "--from-beginning",
            "--consumer-property", f"partition.assignment.strategy={COOPERATIVE}",
            "--consumer-property", "auto.commit.interval.ms=200",
        )  # fmt: skip
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)  # fmt: skip
        self.values: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.values.append(line.rstrip("\n"))

    def stop(self) -> None:
        """SIGTERM: the console consumer commits and leaves the group."""
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)
        self._reader.join(10)


def members(admin: AdminClient, group: str) -> list[set[int]]:
    described: ConsumerGroupDescription = admin.describe_consumer_groups([group])[group].result(30)
    if str(described.state) != "ConsumerGroupState.STABLE":
        return []
    # A member may hold nothing for a moment: cooperative rebalancing revokes in one round
    # and assigns in the next, with the group Stable in between.
    return sorted(
        ({tp.partition for tp in m.assignment.topic_partitions} for m in described.members),
        key=lambda partitions: min(partitions, default=-1),
    )


def test_java_consumers_share_a_topic_with_the_cooperative_sticky_assignor(broker) -> None:
    b = broker.bootstrap
    run_tool("kafka-topics", "--bootstrap-server", b, "--create", "--topic", "shared",
             "--partitions", "4")  # fmt: skip
    admin = AdminClient({"bootstrap.servers": b})

    def produce(first: int) -> None:
        # Keyed, so that the records spread over the partitions (murmur2 of the key).
        lines = "".join(f"k{i}\t{i}\n" for i in range(first, first + 1000))
        sent = run_tool("kafka-console-producer", "--bootstrap-server", b, "--topic", "shared",
                        "--producer-property", "enable.idempotence=true",
                        "--property", "parse.key=true", input=lines)  # fmt: skip
        assert sent.returncode == 0, sent.stderr

    a = ConsoleConsumer(b, "shared", "sharing")
    wait_until(lambda: members(admin, "sharing") == [{0, 1, 2, 3}], "one member with all")
    c = ConsoleConsumer(b, "shared", "sharing")
    try:
        # Cooperative: the first member gives up two partitions and keeps the others.
        wait_until(lambda: sorted(len(p) for p in members(admin, "sharing")) == [2, 2],
                   "two members with two partitions each")  # fmt: skip
        produce(0)
        wait_until(lambda: len(a.values) + len(c.values) >= 1000, "the first 1000 records")
        assert a.values and c.values, "both members consumed"
        c.stop()
        wait_until(lambda: members(admin, "sharing") == [{0, 1, 2, 3}], "the survivor has all")
        produce(1000)
        wait_until(lambda: len(set(a.values) | set(c.values)) >= 2000, "all 2000 records")
    finally:
        a.stop()
        if c.proc.poll() is None:
            c.stop()
    assert set(a.values) | set(c.values) == {str(i) for i in range(2000)}
    # Offsets committed on the way out: the group has no lag.
    request = ConsumerGroupTopicPartitions(
        "sharing", [TopicPartition("shared", p) for p in range(4)]
    )
    committed = admin.list_consumer_group_offsets([request])["sharing"].result(30)
    ends = end_offsets(b, "shared")
    assert {tp.partition: tp.offset for tp in committed.topic_partitions} == ends
