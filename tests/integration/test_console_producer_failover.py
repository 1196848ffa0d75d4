"""The console producer through a stalled follower and a leader fail-over, on three
`kt server-start` processes on ZooKeeper: every line exactly once.

Kafka's producer is idempotent by default since 3.0, and so is kt's: a retried batch
carries the same producer id and sequence, and a leader that already has it answers
with the first write's offsets. The retries come from acks=all waiting on a follower
that stopped (SIGSTOP: REQUEST_TIMED_OUT after --request-timeout-ms, while the batch is
in the leader's log) and from a leader killed with its answers unsent. Without
idempotence each such retry writes the batch again: 500 lines once became 1,508
records, many lines four times (the first write and three retries)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.test_zookeeper_cluster import ZkCluster

pytestmark = pytest.mark.slow

TOPIC = "failover-lines"


def write_lines(producer: subprocess.Popen, numbers: range) -> None:
    assert producer.stdin is not None
    for number in numbers:
        producer.stdin.write(f"line-{number}\n")
        producer.stdin.flush()
        time.sleep(0.01)


def read_all(bootstrap: str, expected: int) -> Counter[str]:
    """Every value of the partition, read until `expected` came and 2 s brought no more."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused",
                         "enable.auto.commit": False})  # fmt: skip
    consumer.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
    seen: Counter[str] = Counter()
    deadline = time.monotonic() + 60
    idle_since = time.monotonic()
    while time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            seen[message.value().decode()] += 1
            idle_since = time.monotonic()
        elif sum(seen.values()) >= expected and time.monotonic() - idle_since > 2:
            break
    consumer.close()
    return seen


def isr(cluster: ZkCluster) -> list[int]:
    return cluster.state(TOPIC)["isr"]


def test_every_line_exactly_once_through_failovers(tmp_path: Path, zookeeper: str) -> None:
    cluster = ZkCluster(tmp_path, zookeeper, overrides={
        "replica.lag.time.max.ms": "4000", "min.insync.replicas": "2"})  # fmt: skip
    producer = None
    stopped = None
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 1, 3)])[TOPIC].result(30)
        cluster.wait_until(lambda: len(isr(cluster)) == 3, "a full ISR")
        producer = subprocess.Popen(
            [sys.executable, "-m", "kt", "console-producer", "--bootstrap-server",
             cluster.bootstrap, "--topic", TOPIC, "--request-timeout-ms", "1000",
             "--message-send-max-retries", "20", "--retry-backoff-ms", "200"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        write_lines(producer, range(0, 100))
        # A follower stalls: acks=all waits for it until its session or its lag ends
        # (2 s, 4 s), so the batches written meanwhile time out and are sent again.
        leader = cluster.state(TOPIC)["leader"]
        stopped = next(b for b in isr(cluster) if b != leader)
        os.kill(cluster.brokers[stopped].proc.pid, signal.SIGSTOP)
        write_lines(producer, range(100, 250))
        os.kill(cluster.brokers[stopped].proc.pid, signal.SIGCONT)
        stopped = None
        cluster.wait_until(lambda: len(isr(cluster)) == 3, "the follower back in the ISR")
        # The leader dies (kill -9): answers it owed are lost, the producer retries on the
        # new leader once the controller has moved the partition.
        cluster.brokers[cluster.state(TOPIC)["leader"]].kill()
        write_lines(producer, range(250, 500))
        _, errors = producer.communicate(timeout=120)
        assert producer.returncode == 0, errors
        seen = read_all(cluster.bootstrap, 500)
        assert sorted(seen.items()) == sorted((f"line-{n}", 1) for n in range(500))
    finally:
        if stopped is not None:
            os.kill(cluster.brokers[stopped].proc.pid, signal.SIGCONT)
        if producer is not None and producer.poll() is None:
            producer.kill()
            producer.wait()
        cluster.close()
