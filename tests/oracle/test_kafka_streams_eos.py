"""Kafka Streams with processing.guarantee=exactly_once_v2 on kt: a word count
(interop/StreamsWordCount.java, Kafka 3.9.1's Streams from Maven) on three `kt
server-start` processes on ZooKeeper, killed with SIGKILL at moments it is at work and
started again (its state store then restored from its changelog at read_committed),
while the leader of an output partition's broker and the broker of its transaction
coordinator are killed too. Every word's last count in the output, read at
read_committed, is the number of times the input holds it, and no transaction is left
hanging on any broker (`kt transactions find-hanging --broker-id`)."""

from __future__ import annotations

import random
import signal
import struct
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kt.reference_kafka import _tool_log4j, java_command
from tests.integration.read_to_end import committed_total, read_to_end
from tests.integration.test_zookeeper_cluster import ZkCluster

pytestmark = pytest.mark.slow

APP = Path(__file__).resolve().parents[2] / "interop" / "StreamsWordCount.java"
INPUT, OUTPUT, GROUP = "lines", "word-counts", "kt-word-count"
PARTITIONS = 3
LINES = 4500
RATE = 150  # lines a second: the input lasts 30 s
WORDS = 40


def line(i: int) -> str:
    return f"w{i % WORDS} w{(i * 7) % WORDS} w{(i * 13 + 5) % WORDS}"


def start_app(bootstrap: str, state_dir: Path, log: Path) -> subprocess.Popen:
    command = [*java_command(str(APP), ["-Xmx384m"], _tool_log4j()), bootstrap, INPUT, OUTPUT,
               str(state_dir)]  # fmt: skip
    with open(log, "a") as out:
        return subprocess.Popen(command, stdout=out, stderr=out)


fed: list[int] = []


class Gate:
    """How many input lines the feeder may have written: the test opens it step by step,
    so the faults come while there is work left whatever the machine's speed."""

    def __init__(self, opened: int) -> None:
        self.opened = opened
        self.changed = threading.Condition()

    def open(self, lines: int) -> None:
        with self.changed:
            self.opened = min(LINES, self.opened + lines)
            self.changed.notify_all()

    def wait_past(self, i: int, source: Producer) -> None:
        with self.changed:
            while i >= self.opened:
                source.poll(0)
                self.changed.wait(0.1)


def feed(bootstrap: str, gate: Gate) -> None:
    source = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20,
                       "enable.idempotence": True})  # fmt: skip
    for i in range(LINES):
        gate.wait_past(i, source)
        source.produce(INPUT, line(i).encode(), key=f"{i}".encode())
        if i % 30 == 29:
            source.poll(0)
            time.sleep(30 / RATE)
    fed.append(LINES if source.flush(120) == 0 else -1)


def consumed(bootstrap: str) -> int:
    """The input lines the application committed (its group's offsets, summed)."""
    return committed_total(bootstrap, GROUP, INPUT, PARTITIONS)


def last_counts(bootstrap: str) -> dict[str, int]:
    """Each word's last count in the output, read at read_committed to each end."""
    return {m.key().decode(): struct.unpack(">q", m.value())[0]
            for m in read_to_end(bootstrap, OUTPUT, PARTITIONS)}  # fmt: skip


def kt_transactions(bootstrap: str, *args: str) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-m", "kt", "transactions", "--bootstrap-server", bootstrap, *args],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def coordinator_of_the_app(bootstrap: str) -> int:
    """The broker coordinating one of the application's transactional ids (Streams names
    them after its process id): `kt transactions list`'s Coordinator column."""
    header, *rows = [line.split("\t") for line in kt_transactions(bootstrap, "list")]
    ids = [cell.strip() for cell in header]
    ours = [row for row in rows if row[ids.index("TransactionalId")].startswith(GROUP)]
    assert ours, rows
    return int(ours[0][ids.index("Coordinator")])


def test_a_word_count_with_exactly_once_v2_counts_every_word_once(
    tmp_path: Path, zookeeper: str
) -> None:
    rng = random.Random(29)
    cluster = ZkCluster(tmp_path, zookeeper, overrides={
        "min.insync.replicas": "2", "transaction.state.log.num.partitions": "3",
        "transaction.state.log.replication.factor": "3", "transaction.state.log.min.isr": "2",
        "offsets.topic.num.partitions": "3", "replica.lag.time.max.ms": "4000",
    })  # fmt: skip
    app = None
    log = tmp_path / "streams.log"
    state_dir = tmp_path / "streams-state"
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        for topic in (INPUT, OUTPUT):
            admin.create_topics([NewTopic(topic, PARTITIONS, 3)])[topic].result(30)
        faults = ("app", "app", "output-leader", "app", "coordinator", "app")
        step = 600  # lines let in per fault: 150 to consume before each, more than enough
        gate = Gate(LINES - step * len(faults))
        feeder = threading.Thread(target=feed, args=(cluster.bootstrap, gate), daemon=True)
        feeder.start()
        expected = Counter(word for i in range(LINES) for word in line(i).split())
        app = start_app(cluster.bootstrap, state_dir, log)

        progress = 0
        for fault in faults:
            floor = progress + 150

            def progressed(floor: int = floor) -> bool:
                nonlocal app
                if app.poll() is not None:
                    app = start_app(cluster.bootstrap, state_dir, log)
                return consumed(cluster.bootstrap) >= floor

            cluster.wait_until(progressed, f"{floor} lines consumed", timeout_s=120)
            progress = consumed(cluster.bootstrap)
            assert progress < LINES, "the faults came too late: the work was done"
            time.sleep(rng.uniform(0.0, 0.5))
            if fault == "app":
                app.send_signal(signal.SIGKILL)
                app.wait()
                app = start_app(cluster.bootstrap, state_dir, log)
            else:
                if fault == "output-leader":
                    victim = cluster.state(OUTPUT, rng.randrange(PARTITIONS))["leader"]
                else:
                    victim = coordinator_of_the_app(cluster.bootstrap)
                cluster.brokers[victim].kill()
                time.sleep(rng.uniform(1.0, 2.5))
                cluster.brokers[victim].start()
            gate.open(step)

        feeder.join(120)
        assert fed == [LINES]

        # Done when every word is counted: the counting sub-topology reads the repartition
        # topic after the first one read the lines, so the lines alone say too little.
        counts: dict[str, int] = {}

        def counted() -> bool:
            nonlocal app, counts
            if app.poll() is not None:
                app = start_app(cluster.bootstrap, state_dir, log)
            counts = last_counts(cluster.bootstrap)
            return counts == dict(expected)

        try:
            cluster.wait_until(counted, "every word counted", timeout_s=180)
        except TimeoutError:
            wrong = {w: (counts.get(w), n) for w, n in expected.items() if counts.get(w) != n}
            tail = log.read_text()[-3000:]
            raise AssertionError(f"(counted, expected): {wrong}; {tail}") from None
        app.send_signal(signal.SIGTERM)
        app.wait(60)
        assert last_counts(cluster.bootstrap) == dict(expected)  # and after a clean stop
        for broker_id in cluster.brokers:
            hanging = kt_transactions(cluster.bootstrap, "find-hanging", "--broker-id",
                                      str(broker_id), "--max-transaction-timeout", "0")  # fmt: skip
            assert len(hanging) == 1, hanging  # the header only
    finally:
        if app is not None and app.poll() is None:
            app.kill()
            app.wait()
        cluster.close()
