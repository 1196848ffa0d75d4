"""A Kafka 3.9 ZooKeeper cluster swapped to kt one broker at a time, and back, under
load: the scenario of docs/migration.md, run by tests/oracle/test_mixed_cluster.py and
measured by benchmarks/migration.py.

`MixedCluster` runs brokers 1..n on Debian's ZooKeeper, each either Apache Kafka
(kt.reference_kafka) or `kt server-start`, on a port and a log directory that stay the
broker's whatever runs it: a swap stops one kind (SIGTERM: a controlled shutdown, as
kafka-server-stop.sh) and starts the other with the same `broker.id`, `log.dirs` and
`zookeeper.connect`. `MigrationLoad` keeps an idempotent acks=all producer and a
consumer group at work meanwhile, and records what was acknowledged, what was
consumed, each record's latency by step, and whether the group's offsets were ever
reset (`auto.offset.reset=error`: a reset is an error the consumer reports).

    cluster = MixedCluster(base, zookeeper_connect)
    cluster.start_all("kafka")
    load = MigrationLoad(cluster.bootstrap, TOPICS); load.start()
    for broker_id in cluster.broker_ids:
        load.step(f"broker {broker_id} to kt")
        cluster.swap(broker_id, "kt")
    outcome = load.stop()
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kt.reference_kafka import ReferenceKafka, free_port
from kt.testing.outage import percentile

KINDS = ("kafka", "kt")
# Each broker's properties, whichever kind runs it: replicated internal topics, and
# acks=all writes that need two replicas.
CLUSTER_PROPERTIES = {
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "10",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "group.initial.rebalance.delay.ms": "0",
    "auto.create.topics.enable": "false",
    # The records carry the time they were sent; retention never cuts them mid-test.
    "log.retention.ms": "-1",
}
KT_READY = re.compile(r"\[KafkaServer id=(\d+)\] started")
RATE_PER_S = 300  # records per second, over all topics
# COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
COORDINATOR_MOVING = (14, 15, 16)


@dataclass
class Node:
    """One broker id: its port and log directory, and what runs it now."""

    broker_id: int
    port: int
    log_dir: Path
    base: Path
    kind: str | None = None
    kafka: ReferenceKafka | None = None
    kt: subprocess.Popen | None = None
    kt_output: list[str] = field(default_factory=list)


class MixedCluster:
    """Brokers `broker_ids` on one ZooKeeper, each Kafka or kt (or stopped)."""

    def __init__(
        self,
        base: Path,
        zookeeper_connect: str,
        broker_ids: tuple[int, ...] = (1, 2, 3),
        properties: dict[str, str] | None = None,
    ) -> None:
        self.base = base
        self.zookeeper_connect = zookeeper_connect
        self.broker_ids = broker_ids
        self.properties = {**CLUSTER_PROPERTIES, **(properties or {})}
        self.nodes = {
            b: Node(b, free_port(), base / f"broker-{b}" / "data", base / f"broker-{b}")
            for b in broker_ids
        }
        for node in self.nodes.values():
            node.log_dir.mkdir(parents=True, exist_ok=True)

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{n.port}" for n in self.nodes.values())

    def kinds(self) -> dict[int, str | None]:
        return {b: n.kind for b, n in self.nodes.items()}

    # -- one broker ------------------------------------------------------------------------

    def start(self, broker_id: int, kind: str, timeout_s: float = 120.0) -> None:
        node = self.nodes[broker_id]
        assert node.kind is None, f"broker {broker_id} runs {node.kind}"
        if kind == "kafka":
            kafka = ReferenceKafka(
                node.base / "kafka", broker_id=broker_id, zookeeper_connect=self.zookeeper_connect,
                log_dir=node.log_dir, overrides=self.properties,
            )  # fmt: skip
            kafka.port = node.port
            node.kafka = kafka.start(timeout_s)
        elif kind == "kt":
            self._start_kt(node, timeout_s)
        else:
            raise ValueError(f"kind {kind!r}: one of {KINDS}")
        node.kind = kind

    def _start_kt(self, node: Node, timeout_s: float) -> None:
        config = node.base / "kt.properties"
        props = {
            **self.properties,
            "broker.id": str(node.broker_id),
            "log.dirs": str(node.log_dir),
            "zookeeper.connect": self.zookeeper_connect,
            "listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
        }
        config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        with open(node.base / "kt.log", "a") as stderr:
            proc = subprocess.Popen(
                [sys.executable, "-m", "kt", "server-start", "--log-level", "INFO", str(config)],
                stdout=subprocess.PIPE, stderr=stderr, text=True,
            )  # fmt: skip
        node.kt, node.kt_output = proc, []
        started = threading.Event()

        def read() -> None:  # the broker's stdout, read to its end so it never blocks
            assert proc.stdout is not None
            for line in proc.stdout:
                node.kt_output.append(line)
                if KT_READY.search(line):
                    started.set()

        threading.Thread(target=read, daemon=True).start()
        deadline = time.monotonic() + timeout_s
        while not started.wait(0.1):
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                log = (node.base / "kt.log").read_text(errors="replace")[-4000:]
                raise RuntimeError(f"kt broker {node.broker_id} did not start: {log}")

    def stop(self, broker_id: int, kill: bool = False) -> None:
        """SIGTERM (a controlled shutdown) or, with `kill`, SIGKILL."""
        node = self.nodes[broker_id]
        if node.kafka is not None:
            node.kafka.stop(signal.SIGKILL if kill else signal.SIGTERM, timeout_s=120)
        if node.kt is not None:
            if kill:
                node.kt.kill()
            else:
                node.kt.terminate()
            try:
                node.kt.wait(120)
            except subprocess.TimeoutExpired:
                node.kt.kill()
                node.kt.wait()
        node.kind, node.kafka, node.kt = None, None, None

    def swap(self, broker_id: int, kind: str, topics: list[str], timeout_s: float = 180.0) -> float:
        """Stop the broker, start `kind` in its place and wait until every partition's ISR
        is whole again; the seconds it took."""
        began = time.monotonic()
        self.stop(broker_id)
        self.start(broker_id, kind)
        self.wait_healthy(topics, timeout_s)
        return time.monotonic() - began

    def start_all(self, kind: str) -> None:
        for broker_id in self.broker_ids:
            self.start(broker_id, kind)

    def close(self) -> None:
        for broker_id in self.broker_ids:
            self.stop(broker_id)

    # -- the checks between steps ----------------------------------------------------------

    def wait_healthy(self, topics: list[str], timeout_s: float = 180.0) -> None:
        """What the operator checks before the next step: a controller, every broker
        registered, `topics` there, every partition of every topic led and its ISR
        whole."""
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        deadline = time.monotonic() + timeout_s
        problem = "not asked"
        while time.monotonic() < deadline:
            problem = _unhealthy(admin, topics, set(self.broker_ids))
            if problem is None:
                return
            time.sleep(0.5)
        raise TimeoutError(f"cluster {self.kinds()} not healthy after {timeout_s} s: {problem}")

    def controller_id(self) -> int:
        """The active controller as the brokers name it; -1 while there is none."""
        from confluent_kafka.admin import AdminClient

        controller = _controller(AdminClient({"bootstrap.servers": self.bootstrap}))
        return -1 if controller is None else controller.id


def _unhealthy(admin: Any, topics: list[str], broker_ids: set[int]) -> str | None:
    from confluent_kafka import KafkaException

    try:
        cluster = admin.describe_cluster(request_timeout=10).result(20)
        metadata = admin.list_topics(timeout=10)
    except KafkaException as e:
        return str(e)
    if cluster.controller is None or cluster.controller.id < 0:
        return "no controller"
    registered = {node.id for node in cluster.nodes}
    if registered != broker_ids:
        return f"brokers {sorted(registered)}"
    for name in topics:
        topic = metadata.topics.get(name)
        if topic is None or topic.error is not None:
            return f"topic {name}: {topic and topic.error}"
    for name, topic in metadata.topics.items():  # every topic, the internal ones too
        for p in topic.partitions.values():
            if p.leader < 0 or set(p.isrs) != set(p.replicas):
                return f"{name}-{p.id}: leader {p.leader} ISR {p.isrs} replicas {p.replicas}"
    return None


def _controller(admin: Any) -> Any:
    """The controller the brokers name, None while they name none (librdkafka's
    DescribeCluster times out then)."""
    from confluent_kafka import KafkaException

    try:
        return admin.describe_cluster(request_timeout=10).result(20).controller
    except KafkaException:
        return None


def create_topics(bootstrap: str, topics: list[str], partitions: int = 3) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    # A ZooKeeper-mode broker answers Metadata without a controller until the controller's
    # first UpdateMetadata reaches it: wait for one before asking it to create topics.
    deadline = time.monotonic() + 60
    while _controller(admin) is None:
        assert time.monotonic() < deadline, "no controller"
        time.sleep(0.2)
    futures = admin.create_topics([NewTopic(t, partitions, 3) for t in topics])
    for future in futures.values():
        future.result(60)


# -- the load ------------------------------------------------------------------------------


@dataclass
class StepStats:
    name: str
    began: float
    latencies_ms: list[float] = field(default_factory=list)

    def percentile(self, p: float) -> float:
        return percentile(self.latencies_ms, p)


@dataclass
class Outcome:
    """What the producer had acknowledged and the group consumed, by (topic, partition):
    {offset: sequence number}; the steps' latencies; the offset resets the consumer met."""

    acked: dict[tuple[str, int], dict[int, int]]
    consumed: dict[tuple[str, int], dict[int, int]]
    failed: list[str]
    resets: list[str]
    steps: list[StepStats]
    # Acknowledged without an offset (librdkafka can report a delivery without one, e.g.
    # for a retried batch): sequence numbers by partition, checked by value.
    acked_unplaced: dict[tuple[str, int], list[int]] = field(default_factory=dict)

    def lost(self) -> list[tuple[str, int, int]]:
        """Acknowledged records the group never got (or got with another value): (topic,
        partition, offset), the offset -1 for one acknowledged without an offset."""
        lost = [
            (topic, partition, offset)
            for (topic, partition), records in self.acked.items()
            for offset, seq in records.items()
            if self.consumed.get((topic, partition), {}).get(offset) != seq
        ]
        for (topic, partition), seqs in self.acked_unplaced.items():
            there = set(self.consumed.get((topic, partition), {}).values())
            lost += [(topic, partition, -1) for seq in seqs if seq not in there]
        return lost

    def faults(self) -> dict[str, list]:
        """Everything that went wrong, by kind (none: {}): sends that failed, offset
        resets, acknowledged records lost, partitions out of order."""
        found = {"failed": self.failed, "resets": self.resets, "lost": self.lost(),
                 "out of order": self.out_of_order()}  # fmt: skip
        return {kind: items for kind, items in found.items() if items}

    def out_of_order(self) -> list[tuple[str, int]]:
        """Partitions whose acknowledged records are not in the order they were sent."""
        bad = []
        for key, records in self.acked.items():
            seqs = [records[o] for o in sorted(records)]
            if seqs != sorted(seqs):
                bad.append(key)
        return bad


class MigrationLoad:
    """One idempotent acks=all producer over `topics` at RATE_PER_S, and one consumer in a
    group whose offsets start committed at 0 (so that any reset is an error)."""

    def __init__(self, bootstrap: str, topics: list[str], partitions: int = 3,
                 group: str = "migration") -> None:  # fmt: skip
        self.bootstrap = bootstrap
        self.topics = topics
        self.partitions = partitions
        self.group = group
        self.acked: dict[tuple[str, int], dict[int, int]] = {}
        self.acked_unplaced: dict[tuple[str, int], list[int]] = {}
        self.consumed: dict[tuple[str, int], dict[int, int]] = {}
        self.failed: list[str] = []
        self.resets: list[str] = []
        self.steps: list[StepStats] = [StepStats("start", time.monotonic())]
        self.samples: list[tuple[float, float]] = []  # (sent, latency ms) of every ack
        self._sent = 0
        self._stopping = threading.Event()
        self._producing = threading.Event()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        self._commit_start()
        self._producing.set()
        for target in (self._produce, self._consume):
            thread = threading.Thread(target=target, daemon=True)
            thread.start()
            self._threads.append(thread)

    def step(self, name: str) -> None:
        with self._lock:
            self.steps.append(StepStats(name, time.monotonic()))

    def latencies_sent_between(self, first: float, last: float) -> list[float]:
        """The latencies (ms) of the acknowledged records sent in [first, last)."""
        with self._lock:
            return [latency for sent, latency in self.samples if first <= sent < last]

    def consumed_count(self) -> int:
        with self._lock:
            return sum(len(r) for r in self.consumed.values())

    def acked_count(self) -> int:
        with self._lock:
            return sum(len(r) for r in self.acked.values())

    def wait_progress(self, timeout_s: float = 60.0) -> None:
        """Both the producer and the group move on: more acknowledged and consumed."""
        acked, consumed = self.acked_count(), self.consumed_count()
        deadline = time.monotonic() + timeout_s
        while self.acked_count() <= acked or self.consumed_count() <= consumed:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"no progress in {timeout_s} s: acked {acked} -> {self.acked_count()}, "
                    f"consumed {consumed} -> {self.consumed_count()}"
                )
            time.sleep(0.2)

    def stop(self, timeout_s: float = 120.0) -> Outcome:
        """Stop producing, let the group read everything acknowledged, then stop it."""
        self._producing.clear()
        self._threads[0].join(timeout_s)
        deadline = time.monotonic() + timeout_s
        while self._missing() and time.monotonic() < deadline:
            time.sleep(0.2)
        self._stopping.set()
        self._threads[1].join(60)
        with self._lock:
            return Outcome(
                {k: dict(v) for k, v in self.acked.items()},
                {k: dict(v) for k, v in self.consumed.items()},
                list(self.failed), list(self.resets), list(self.steps),
                {k: list(v) for k, v in self.acked_unplaced.items()},
            )  # fmt: skip

    def _missing(self) -> bool:
        with self._lock:
            return any(
                offset not in self.consumed.get(key, {})
                for key, records in self.acked.items()
                for offset in records
            ) or any(
                not set(seqs) <= set(self.consumed.get(key, {}).values())
                for key, seqs in self.acked_unplaced.items()
            )

    def _commit_start(self) -> None:
        from confluent_kafka import Consumer, KafkaException, TopicPartition

        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group})
        offsets = [TopicPartition(t, p, 0) for t in self.topics for p in range(self.partitions)]
        deadline = time.monotonic() + 60
        try:
            while True:
                try:
                    consumer.commit(offsets=offsets, asynchronous=False)
                    return
                except KafkaException as e:
                    # The group's coordinator is still being found or loaded (a new
                    # __consumer_offsets): a synchronous commit reports it; ask again.
                    error = e.args[0]
                    again = error.retriable() or error.code() in COORDINATOR_MOVING
                    if not again or time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
        finally:
            consumer.close()

    def _produce(self) -> None:
        from confluent_kafka import Producer

        producer = Producer({
            "bootstrap.servers": self.bootstrap, "acks": "all", "enable.idempotence": True,
            "linger.ms": 5, "message.timeout.ms": 300_000,
        })  # fmt: skip
        interval = 1.0 / RATE_PER_S
        next_send = time.monotonic()
        while self._producing.is_set():
            topic = self.topics[self._sent % len(self.topics)]
            seq = self._sent
            self._sent += 1
            with self._lock:
                step = self.steps[-1]
            producer.produce(topic, value=b"%d" % seq,
                             on_delivery=self._delivered(seq, step, time.monotonic()))  # fmt: skip
            producer.poll(0)
            next_send += interval
            pause = next_send - time.monotonic()
            if pause > 0:
                producer.poll(pause)
        remaining = producer.flush(300)
        if remaining:
            with self._lock:
                self.failed.append(f"{remaining} records never delivered")

    def _delivered(self, seq: int, step: StepStats, sent: float) -> Any:
        def report(error: Any, message: Any) -> None:
            with self._lock:
                if error is not None:
                    self.failed.append(f"record {seq}: {error}")
                    return
                latency_ms = (time.monotonic() - sent) * 1000
                step.latencies_ms.append(latency_ms)
                self.samples.append((sent, latency_ms))
                key = (message.topic(), message.partition())
                offset = message.offset()
                if offset is None or offset < 0:
                    self.acked_unplaced.setdefault(key, []).append(seq)
                else:
                    self.acked.setdefault(key, {})[offset] = seq

        return report

    def _consume(self) -> None:
        from confluent_kafka import Consumer, KafkaError

        consumer = Consumer({
            "bootstrap.servers": self.bootstrap, "group.id": self.group,
            "auto.offset.reset": "error", "enable.auto.commit": True,
            "auto.commit.interval.ms": 1000, "session.timeout.ms": 30_000,
        })  # fmt: skip
        consumer.subscribe(self.topics)
        try:
            while not self._stopping.is_set():
                for message in consumer.consume(500, timeout=0.2):
                    error = message.error()
                    if error is None:
                        key = (message.topic(), message.partition())
                        with self._lock:
                            self.consumed.setdefault(key, {})[message.offset()] = int(
                                message.value()
                            )
                    elif error.code() == KafkaError._AUTO_OFFSET_RESET:
                        with self._lock:
                            self.resets.append(f"{message.topic()}-{message.partition()}: {error}")
        finally:
            consumer.close()
