"""Exactly-once under faults: a consume-transform-produce application (confluent-kafka,
tests/integration/eos_processor.py) on three `kt server-start` processes on ZooKeeper,
killed with SIGKILL at random moments and started again, while the leader of an output
partition and the transaction coordinator's broker are killed too. A read_committed
reader of the output finds every input record exactly once, and no transaction is left
hanging (`kt transactions find-hanging` prints none; every LSO reaches its high
watermark)."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kt.broker.group.group_metadata_manager import partition_for
from tests.integration.read_to_end import committed_total, read_to_end
from tests.integration.test_zookeeper_cluster import ZkCluster

pytestmark = pytest.mark.slow

INPUT, OUTPUT, GROUP, TXN_ID = "eos-in", "eos-out", "eos-app", "eos-app-0"
PARTITIONS = 3
RECORDS = 5000
RATE = 200  # input records a second: the input lasts 25 s
TXN_PARTITIONS = 3
PROCESSOR = Path(__file__).with_name("eos_processor.py")
# An instance that commits nothing for this long while input waits is restarted, as a
# supervisor's liveness check would (full runs saw a librdkafka consumer that failed
# fatally but kept running, and an instance stuck aborting after its static member was
# fenced while its coordinator's broker was down).
STALLED_S = 60.0


def start_processor(bootstrap: str, log: Path) -> subprocess.Popen:
    with open(log, "a") as stderr:
        return subprocess.Popen(
            [sys.executable, str(PROCESSOR), "--bootstrap-server", bootstrap, "--input", INPUT,
             "--output", OUTPUT, "--group", GROUP, "--transactional-id", TXN_ID,
             "--batch", "30", "--pause-ms", "40"],
            stdout=subprocess.DEVNULL, stderr=stderr,
        )  # fmt: skip


def read_committed(bootstrap: str) -> Counter[bytes]:
    """Every value of the output up to each partition's end (its LSO)."""
    return Counter(m.value() for m in read_to_end(bootstrap, OUTPUT, PARTITIONS))


fed: list[int] = []


def feed(bootstrap: str) -> None:
    """RECORDS input records at a steady pace, acks=all, idempotent."""
    source = Producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20, "enable.idempotence": True}
    )  # no duplicates from retries
    for i in range(RECORDS):
        source.produce(INPUT, f"{i}".encode(), partition=i % PARTITIONS)
        if i % 50 == 49:
            source.poll(0)
            time.sleep(50 / RATE)
    fed.append(RECORDS if source.flush(120) == 0 else -1)


def consumed(bootstrap: str) -> int:
    """How much input the application has committed (the group's offsets, summed): its
    progress, read while the output still flows (a reader of the output would not see
    its end)."""
    return committed_total(bootstrap, GROUP, INPUT, PARTITIONS)


class Supervisor:
    """The processor's supervisor: a new instance when it exits (a fatal error), or when it
    commits nothing for STALLED_S while input waits (a liveness check)."""

    def __init__(self, bootstrap: str, log: Path) -> None:
        self.bootstrap, self.log = bootstrap, log
        self.processor = start_processor(bootstrap, log)
        self.progress, self.since = 0, time.monotonic()

    def restart(self) -> None:
        if self.processor.poll() is None:
            self.processor.send_signal(signal.SIGKILL)
        self.processor.wait()
        self.processor = start_processor(self.bootstrap, self.log)
        self.since = time.monotonic()

    def check(self) -> int:
        """Restart the processor if it is gone or stalled; the input committed so far."""
        if self.processor.poll() is not None or time.monotonic() - self.since > STALLED_S:
            self.restart()
        now = consumed(self.bootstrap)
        if now != self.progress:
            self.progress, self.since = now, time.monotonic()
        return now


def leader(cluster: ZkCluster, topic: str, partition: int) -> int:
    return cluster.state(topic, partition)["leader"]


def test_every_input_exactly_once_through_kills(tmp_path: Path, zookeeper: str) -> None:
    rng = random.Random(20261127)
    cluster = ZkCluster(tmp_path, zookeeper, overrides={
        "min.insync.replicas": "2", "transaction.state.log.num.partitions": str(TXN_PARTITIONS),
        "transaction.state.log.replication.factor": "3", "transaction.state.log.min.isr": "2",
        "offsets.topic.num.partitions": "3", "replica.lag.time.max.ms": "4000",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
    })  # fmt: skip
    supervisor = None
    log = tmp_path / "processor.log"
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        for topic in (INPUT, OUTPUT):
            admin.create_topics([NewTopic(topic, PARTITIONS, 3)])[topic].result(30)
        feeder = threading.Thread(target=feed, args=(cluster.bootstrap,), daemon=True)
        feeder.start()  # the input arrives while the faults strike
        expected = {f"out-{i}".encode() for i in range(RECORDS)}

        supervisor = Supervisor(cluster.bootstrap, log)
        faults = ["processor", "processor", "output-leader", "processor", "coordinator",
                  "processor"]  # fmt: skip
        progress = 0
        for fault in faults:
            # Each fault strikes while the application is at work: after new output.
            floor = progress + 100
            cluster.wait_until(lambda floor=floor: supervisor.check() >= floor,
                               f"{floor} input records consumed", timeout_s=150)  # fmt: skip
            progress = consumed(cluster.bootstrap)
            assert progress < RECORDS, "the faults came too late: the work was done"
            time.sleep(rng.uniform(0.0, 0.5))
            if fault == "processor":
                supervisor.restart()
                continue
            if fault == "output-leader":
                victim = leader(cluster, OUTPUT, rng.randrange(PARTITIONS))
            else:
                victim = leader(cluster, "__transaction_state",
                                partition_for(TXN_ID, TXN_PARTITIONS))  # fmt: skip
            cluster.brokers[victim].kill()
            time.sleep(rng.uniform(1.0, 2.5))
            cluster.brokers[victim].start()

        def done() -> bool:
            supervisor.check()
            return set(read_committed(cluster.bootstrap)) >= expected

        feeder.join(120)
        assert fed == [RECORDS]
        cluster.wait_until(done, "every input in the output", timeout_s=180)
        supervisor.processor.send_signal(signal.SIGTERM)
        supervisor.processor.wait(30)
        seen = read_committed(cluster.bootstrap)
        duplicates = {v: n for v, n in seen.items() if n > 1}
        assert not duplicates, f"{len(duplicates)} values more than once: {log.read_text()[-3000:]}"
        assert set(seen) == expected

        hanging = subprocess.run(
            [sys.executable, "-m", "kt", "transactions", "--bootstrap-server", cluster.bootstrap,
             "find-hanging", "--topic", OUTPUT, "--max-transaction-timeout", "0"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert hanging.returncode == 0, hanging.stderr
        assert len(hanging.stdout.splitlines()) == 1, hanging.stdout  # the header only
    finally:
        if supervisor is not None and supervisor.processor.poll() is None:
            supervisor.processor.kill()
            supervisor.processor.wait()
        cluster.close()
