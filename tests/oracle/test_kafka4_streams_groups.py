"""Kafka Streams 4.4 on the streams rebalance protocol (KIP-1071, `group.protocol=streams`)
against kt and against Kafka 4.4: a word count with a repartition topic and a state store
(interop/StreamsGroupWordCount.java) in two instances, exactly_once_v2, one standby
replica per task. The counts it writes, read at read_committed, are exact on both; each
instance runs active tasks and holds the other's as standbys; Kafka 4.4's
kafka-streams-groups.sh prints the same for both; an instance killed -9 hands its tasks
to the other; on three kt brokers on ZooKeeper the counts stay exact through a broker
and an instance killed -9 mid-run."""

from __future__ import annotations

import random
import re
import signal
import struct
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kt.broker.group.group_metadata_manager import partition_for
from kt.reference_kafka import (
    KAFKA4_VERSION,
    ReferenceKafka,
    _tool_log4j,
    jvm_options,
    kafka_home,
    run_tool,
    unavailable_reason,
)
from tests._environment import unavailable
from tests.integration.read_to_end import read_to_end
from tests.integration.test_zookeeper_cluster import ZkCluster

APP = Path(__file__).resolve().parents[2] / "interop" / "StreamsGroupWordCount.java"
APP_ID, INPUT, OUTPUT = "wc-streams", "lines", "counts"
PARTITIONS = 4
# Quick heartbeats and a short session, on kt and Kafka alike.
STREAMS_TIMINGS = {
    "group.streams.heartbeat.interval.ms": "500",
    "group.streams.min.heartbeat.interval.ms": "500",
    "group.streams.session.timeout.ms": "6000",
    "group.streams.min.session.timeout.ms": "6000",
}
ONE_BROKER = {"offsets.topic.replication.factor": "1",
              "transaction.state.log.replication.factor": "1",
              "transaction.state.log.min.isr": "1", **STREAMS_TIMINGS}  # fmt: skip


def line(i: int) -> str:
    return f"w{i % 23} w{(i * 7) % 23} w{(i * 13 + 5) % 23}"


def expected_counts(lines: int) -> dict[str, int]:
    return dict(Counter(word for i in range(lines) for word in line(i).split()))


class Instance:
    """One instance of the word count (a JVM), its state under `base`, its output in a
    log file."""

    def __init__(self, base: Path, bootstrap: str, name: str, standbys: int = 1) -> None:
        self.base, self.bootstrap, self.name, self.standbys = base, bootstrap, name, standbys
        self.stop_file = base / f"{name}.stop"
        self.log = base / f"{name}.log"
        self.proc: subprocess.Popen | None = None

    def start(self) -> Instance:
        home = kafka_home(KAFKA4_VERSION)
        self.stop_file.unlink(missing_ok=True)
        command = [
            "java", "-Xmx384m", *jvm_options(),
            f"-Dlog4j2.configurationFile={_tool_log4j(KAFKA4_VERSION)}",
            "-cp", f"{home}/libs/*:{home}/streams/*", str(APP), self.bootstrap, APP_ID,
            INPUT, OUTPUT, str(self.base / f"{self.name}-state"), "exactly_once_v2",
            str(self.standbys), str(self.stop_file),
        ]  # fmt: skip
        with open(self.log, "a") as out:
            self.proc = subprocess.Popen(command, stdout=out, stderr=out)
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        """Close the instance (it leaves the group), kill it if it does not exit."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.stop_file.touch()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def tail(self) -> str:
        return self.log.read_text()[-3000:] if self.log.exists() else ""


def streams_groups(bootstrap: str, *args: str) -> str:
    """Kafka 4.4's kafka-streams-groups.sh; its standard output."""
    result = run_tool("kafka-streams-groups", "--bootstrap-server", bootstrap, *args,
                      version=KAFKA4_VERSION)  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def members(bootstrap: str) -> list[dict[str, str]]:
    """The members as `--describe --members --verbose` prints them: each row's columns by
    header, the assignments as one text."""
    text = streams_groups(bootstrap, "--describe", "--group", APP_ID, "--members", "--verbose")
    rows = [r for r in text.splitlines() if r.strip()]
    if len(rows) < 2 or "ASSIGNMENTS" not in rows[0]:
        return []
    header = rows[0].split()
    out = []
    for row in rows[1:]:
        cells = row.split(None, len(header) - 1)
        out.append(dict(zip(header, cells, strict=True)))
    return out


def settled(rows: list[dict[str, str]], count: int) -> bool:
    """`count` members, each at its target, running active tasks and holding standbys."""
    if len(rows) != count:
        return False
    for row in rows:
        assignments = row["ASSIGNMENTS"]
        cut = assignments.find("TARGET-")
        held, target = assignments[:cut].strip(), assignments[cut:].replace("TARGET-", "")
        if "ACTIVE:" not in held or held != target.strip():
            return False
        if count > 1 and "STANDBY:" not in held:
            return False
    return True


def active_tasks(rows: list[dict[str, str]]) -> list[str]:
    """Each member's active tasks as printed ("0:[0,1]; 1:[0,1];")."""
    out = []
    for row in rows:
        held = row["ASSIGNMENTS"].split("TARGET-")[0]
        out.append(held.split("ACTIVE:")[1].split("STANDBY:")[0].strip() if "ACTIVE:" in held
                   else "")  # fmt: skip
    return out


def wait_until(condition: Callable[[], bool], what: str, timeout_s: float,
               instances: list[Instance]) -> None:  # fmt: skip
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            logs = "\n".join(f"--- {i.name}\n{i.tail()}" for i in instances)
            raise AssertionError(f"{what} did not happen within {timeout_s} s\n{logs}")
        time.sleep(0.5)


def last_counts(bootstrap: str) -> dict[str, int]:
    """Each word's last count in the output, read at read_committed to each end."""
    return {m.key().decode(): struct.unpack(">q", m.value())[0]
            for m in read_to_end(bootstrap, OUTPUT, PARTITIONS)}  # fmt: skip


def produce(bootstrap: str, first: int, last: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                         "enable.idempotence": True})  # fmt: skip
    for i in range(first, last):
        producer.produce(INPUT, line(i).encode(), key=str(i).encode())
        if i % 200 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0


def create_topics(bootstrap: str, replication: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for topic in (INPUT, OUTPUT):
        admin.create_topics([NewTopic(topic, PARTITIONS, replication)])[topic].result(60)


IDS = re.compile(r"\b[A-Za-z0-9_-]{22}\b|[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}"
                 r"|127\.0\.0\.1:\d+ \(\d+\)")  # fmt: skip


def normalized(text: str) -> list[str]:
    """The tool's rows with member, process and client ids and the coordinator's address
    blanked, columns joined by one space, in order."""
    rows = [" ".join(IDS.sub("<id>", row).split()) for row in text.splitlines() if row.strip()]
    return rows[:1] + sorted(rows[1:])


def two_instances(base: Path, bootstrap: str, lines: int) -> list[Instance]:
    """The topics and `lines` lines, one standby per task, two instances started."""
    create_topics(bootstrap)
    produce(bootstrap, 0, lines)
    # a streams group's standby replicas are the group's config (the client's is ignored)
    configured = run_tool("kafka-configs", "--bootstrap-server", bootstrap, "--alter",
                          "--entity-type", "groups", "--entity-name", APP_ID, "--add-config",
                          "streams.num.standby.replicas=1", version=KAFKA4_VERSION)  # fmt: skip
    assert configured.returncode == 0, configured.stderr
    return [Instance(base, bootstrap, f"app{n}").start() for n in range(2)]


def kt_streams_groups(bootstrap: str, *args: str) -> str:
    """`kt streams-groups`; its standard output (exit status 0 demanded)."""
    command = [sys.executable, "-m", "kt", "streams-groups", "--bootstrap-server", bootstrap]
    result = subprocess.run([*command, *args], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


DESCRIBED = [(f"--{what}", *verbose) for what in ("members", "state", "offsets")
             for verbose in ((), ("--verbose",))]  # fmt: skip


def same_as_kafkas_tool(bootstrap: str, *args: str) -> bool:
    """kt's tool prints what Kafka's prints, asked one after the other (again while the
    group moves between them)."""
    return kt_streams_groups(bootstrap, *args) == streams_groups(bootstrap, *args)


def word_count_as_seen_by_the_tool(
    base: Path, bootstrap: str, tool: Callable[..., str]
) -> tuple[list[list[str]], float]:
    """Two instances count 3,000 lines; (what kafka-streams-groups prints once they are
    settled and, by `tool`, once they are gone, the seconds from an instance's kill -9
    until the other runs all the tasks). The counts are exact before the kill and after
    more lines; with kt's tool, it prints what Kafka's does."""
    instances = two_instances(base, bootstrap, 3000)
    try:
        expected = expected_counts(3000)
        wait_until(lambda: last_counts(bootstrap) == expected, "exact counts", 180, instances)
        wait_until(lambda: settled(members(bootstrap), 2), "two settled members", 120,
                   instances)  # fmt: skip
        printed = [normalized(streams_groups(bootstrap, *args)) for args in (
            ("--list",),
            ("--describe", "--group", APP_ID, "--members"),
            ("--describe", "--group", APP_ID, "--state"),
            ("--describe", "--group", APP_ID, "--offsets"),
        )]  # fmt: skip
        if tool is kt_streams_groups:
            for args in [("--list",), ("--list", "--state"), ("--list", "--state", "stable"),
                         *(("--describe", "--group", APP_ID, *a) for a in DESCRIBED)]:  # fmt: skip
                wait_until(lambda a=args: same_as_kafkas_tool(bootstrap, *a),
                           f"kt streams-groups {' '.join(args)} printing as Kafka's", 30,
                           instances)  # fmt: skip
        killed = time.monotonic()
        instances[1].kill()
        everything = "0:[0,1,2,3]; 1:[0,1,2,3];"
        wait_until(lambda: active_tasks(members(bootstrap)) == [everything],
                   "the survivor running every task", 120, instances)  # fmt: skip
        moved = time.monotonic() - killed
        produce(bootstrap, 3000, 4000)
        expected = expected_counts(4000)
        wait_until(lambda: last_counts(bootstrap) == expected, "exact counts after the kill",
                   180, instances)  # fmt: skip
        instances[0].stop()
        wait_until(lambda: "Empty" in streams_groups(bootstrap, "--describe", "--group", APP_ID,
                                                     "--state"),
                   "the group empty once its last member closed", 60, instances)  # fmt: skip
        group = ("--group", APP_ID)
        inactive = [normalized(tool(bootstrap, *args)) for args in (
            ("--describe", *group, "--state"),
            ("--list", "--state"),
            ("--reset-offsets", *group, "--all-input-topics", "--to-earliest", "--dry-run"),
            ("--reset-offsets", *group, "--input-topic", f"{INPUT}:1", "--shift-by", "-10",
             "--dry-run"),
            ("--reset-offsets", *group, "--all-input-topics", "--to-offset", "5", "--execute",
             "--delete-all-internal-topics"),
            ("--delete", *group),
            ("--list",),
        )]  # fmt: skip
        return [*printed, *inactive], moved
    finally:
        for instance in instances:
            instance.stop()


@pytest.fixture
def streams_jars() -> None:
    """Kafka 4.4 and its Kafka Streams (interop/fetch-kafka.sh)."""
    reason = unavailable_reason(KAFKA4_VERSION)
    if reason is not None:
        unavailable(reason)
    if not (kafka_home(KAFKA4_VERSION) / "streams").is_dir():
        unavailable("Kafka Streams 4.4 is missing: run interop/fetch-kafka.sh")


@pytest.fixture
def kafka44_streams(tmp_path: Path, streams_jars: None) -> Iterator[ReferenceKafka]:
    kafka = ReferenceKafka(tmp_path / "kafka44", broker_id=0, version=KAFKA4_VERSION,
                           overrides=STREAMS_TIMINGS)  # fmt: skip
    with kafka.start():
        yield kafka


@pytest.mark.timeout(900)  # two brokers, each with its own run of the application
def test_a_streams_word_count_on_kt_as_on_kafka44(
    tmp_path: Path, broker_factory, kafka44_streams: ReferenceKafka
) -> None:
    """Exact counts, standbys held, the tool's output alike, the tasks of a killed
    instance on the survivor; the same on Kafka 4.4."""
    kt = broker_factory(**ONE_BROKER)
    (tmp_path / "on-kt").mkdir()
    (tmp_path / "on-kafka").mkdir()
    ours, _ = word_count_as_seen_by_the_tool(tmp_path / "on-kt", kt.bootstrap, kt_streams_groups)
    theirs, _ = word_count_as_seen_by_the_tool(
        tmp_path / "on-kafka", kafka44_streams.bootstrap, streams_groups
    )
    assert ours == theirs
    listed, described, state, offsets, *inactive = ours
    assert listed == [APP_ID]
    assert state[1].split()[-2:] == ["Stable", "2"]
    assert len(described) == 3 and all("STANDBY:" in row for row in described[1:])
    assert len(offsets) == 1 + 2 * PARTITIONS  # the lines and the repartition topic
    empty, listed_states, dry_run, shifted, reset, deleted, gone = inactive
    assert empty[0] == f"Error: Streams group '{APP_ID}' has no active members."
    assert listed_states == ["GROUP STATE", f"{APP_ID} Empty"]
    assert len(dry_run) == 1 + PARTITIONS and all(r.endswith(" 0") for r in dry_run[1:])
    assert len(shifted) == 2 and shifted[1].split()[:3] == [APP_ID, INPUT, "1"]
    assert deleted == [f"Deletion of requested streams groups ('{APP_ID}') was successful."]
    assert gone == [] and len(reset) == 1 + PARTITIONS
    topics = AdminClient({"bootstrap.servers": kt.bootstrap}).list_topics(timeout=30).topics
    assert sorted(t for t in topics if not t.startswith("__")) == [OUTPUT, INPUT]  # no internal


@pytest.mark.timeout(900)
def test_exactly_once_through_broker_and_instance_kills_on_three_brokers(
    tmp_path: Path, zookeeper: str, streams_jars: None
) -> None:
    """Three kt brokers on ZooKeeper; while the lines come in, the broker leading the
    group's coordinator partition is killed -9 and started again, then an instance is
    killed -9 and started again: every word's last count is exact."""
    rng = random.Random(1071)
    cluster = ZkCluster(tmp_path, zookeeper, overrides={
        "min.insync.replicas": "2", "default.replication.factor": "3",  # internal topics'
        "transaction.state.log.num.partitions": "3",
        "transaction.state.log.replication.factor": "3", "transaction.state.log.min.isr": "2",
        "offsets.topic.num.partitions": "3", "replica.lag.time.max.ms": "4000",
        **STREAMS_TIMINGS,
    })  # fmt: skip
    instances: list[Instance] = []
    try:
        create_topics(cluster.bootstrap, replication=3)
        lines = 6000

        def feeding(first: int, last: int) -> threading.Thread:
            """Lines first..last, 250 a second, while a fault comes."""

            def feed() -> None:
                for at in range(first, last, 250):
                    produce(cluster.bootstrap, at, at + 250)
                    time.sleep(1.0)

            thread = threading.Thread(target=feed, daemon=True)
            thread.start()
            return thread

        def counted() -> int:
            return sum(last_counts(cluster.bootstrap).values())

        produce(cluster.bootstrap, 0, 2000)
        instances = [Instance(tmp_path, cluster.bootstrap, f"app{n}").start() for n in range(2)]
        wait_until(lambda: counted() >= 1500, "the first counts", 180, instances)
        feeder = feeding(2000, 4000)
        coordinator = cluster.state("__consumer_offsets", partition_for(APP_ID, 3))["leader"]
        cluster.brokers[coordinator].kill()
        time.sleep(rng.uniform(1.0, 3.0))
        cluster.brokers[coordinator].start()
        assert feeder.is_alive(), "the broker's fault came too late: the lines were all in"
        feeder.join(120)
        wait_until(lambda: counted() >= 3 * 3000, "counting after the broker came back", 180,
                   instances)  # fmt: skip
        feeder = feeding(4000, lines)
        instances[1].kill()
        time.sleep(rng.uniform(0.5, 2.0))
        instances[1].start()
        assert feeder.is_alive(), "the instance's fault came too late: the lines were all in"
        feeder.join(120)
        expected = expected_counts(lines)
        counts: dict[str, int] = {}

        def exact() -> bool:
            nonlocal counts
            for instance in instances:
                if not instance.alive():
                    instance.start()
            counts = last_counts(cluster.bootstrap)
            return counts == expected

        try:
            wait_until(exact, "every word counted", 240, instances)
        except AssertionError as e:
            wrong = {w: (counts.get(w), n) for w, n in expected.items() if counts.get(w) != n}
            raise AssertionError(f"(counted, expected): {wrong}; {e}") from None
    finally:
        for instance in instances:
            instance.stop()
        cluster.close()


def test_kafka4_configs_sets_and_refuses_streams_group_configs_as_on_kafka4(
    kafka_factory, broker_factory
) -> None:
    """A streams group's configs (streams.*) through kafka-configs: Kafka 4.4's tool sets,
    refuses (its messages, the broker's bounds) and describes the same against both."""
    from tests.oracle.test_kafka4_consumer_groups import configs

    runs = (
        ("--alter", "--add-config", "streams.num.standby.replicas=1"),
        ("--alter", "--add-config", "streams.num.standby.replicas=3"),
        ("--alter", "--add-config", "streams.num.standby.replicas=-1"),
        ("--alter", "--add-config", "streams.session.timeout.ms=30000"),
        ("--alter", "--add-config", "streams.session.timeout.ms=50000"),
        ("--alter", "--add-config", "streams.heartbeat.interval.ms=60000"),
        ("--alter", "--add-config", "streams.assignment.interval.ms=20000"),
        ("--alter", "--add-config", "streams.assignor.name=balanced"),
        ("--alter", "--add-config", "streams.assignor.name=sticky"),
        ("--alter", "--add-config", "streams.initial.rebalance.delay.ms=0"),
        ("--describe",),
        ("--alter", "--delete-config", "streams.num.standby.replicas"),
        ("--describe",),
    )
    kafka = kafka_factory(version=KAFKA4_VERSION)
    theirs = [configs(kafka.bootstrap, *args) for args in runs]
    kt = broker_factory()
    ours = [configs(kt.bootstrap, *args) for args in runs]
    assert "streams.num.standby.replicas=1" in theirs[10][1]
    assert "must be less than or equal to 2" in theirs[1][2]
    assert ours == theirs
