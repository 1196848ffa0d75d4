"""Several listeners on a broker, as Kafka opens them: every listener serves, each under
its own name, Metadata and FindCoordinator answer a client with the endpoints of the
listener it came in on, and the brokers replicate over inter.broker.listener.name."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kt.broker.group.group_metadata_manager import partition_for

pytestmark = pytest.mark.slow

INTERNAL, EXTERNAL = "127.0.0.33", "127.0.0.34"
READY = re.compile(r"\[KafkaServer id=(\d+)\] started: (\S+) log.dirs=")


def write_properties(base: Path, broker_id: int, listeners: str) -> Path:
    path = base / f"broker-{broker_id}.properties"
    path.write_text(
        f"broker.id={broker_id}\nlisteners={listeners}\n"
        "listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT\n"
        "inter.broker.listener.name=INTERNAL\n"
        f"log.dirs={base / f'logs-{broker_id}'}\n"
        "offsets.topic.replication.factor=3\nmin.insync.replicas=2\n"
        "group.initial.rebalance.delay.ms=0\n"
    )
    return path


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[dict[int, dict[str, str]]]:
    """Three brokers in one process; 0 and 1 listen on INTERNAL and EXTERNAL, 2 on
    INTERNAL only. Yields each broker's endpoints by listener name."""
    both = f"INTERNAL://{INTERNAL}:0,EXTERNAL://{EXTERNAL}:0"
    files = [write_properties(tmp_path, b, both if b < 2 else f"INTERNAL://{INTERNAL}:0")
             for b in range(3)]  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "kt", "server-start", *map(str, files)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    endpoints: dict[int, dict[str, str]] = {}
    try:
        assert proc.stdout is not None
        while len(endpoints) < 3:
            line = proc.stdout.readline()
            assert line, proc.stderr.read() if proc.stderr else ""
            if match := READY.match(line):
                endpoints[int(match.group(1))] = dict(
                    e.split("://") for e in match.group(2).split(",")
                )
        yield endpoints
    finally:
        proc.terminate()
        proc.communicate(timeout=60)


def brokers_seen(bootstrap: str) -> dict[int, str]:
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30)
    return {b.id: f"{b.host}:{b.port}" for b in metadata.brokers.values()}


def wait_for_partition(bootstrap: str, topic: str, timeout_s: float = 30.0) -> object:
    """Partition 0 of `topic` as Metadata through `bootstrap` gives it, once it is there
    with a leader or an error (the broker may not have heard of the topic yet)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + timeout_s
    while True:
        topics = admin.list_topics(topic, timeout=30).topics
        partitions = topics[topic].partitions if topic in topics else {}
        partition = partitions.get(0)
        if partition is not None and (partition.error is not None or partition.leader >= 0):
            return partition
        assert time.monotonic() < deadline, f"{topic}-0 not in Metadata after {timeout_s} s"
        time.sleep(0.1)


def read_group(bootstrap: str, group: str) -> set[bytes]:
    """What a consumer in `group` reads of "moved" from the beginning (at most 60 s)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest"})  # fmt: skip
    consumer.subscribe(["moved"])
    values: set[bytes] = set()
    deadline = time.monotonic() + 60
    while len(values) < 1000 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.add(message.value())
    consumer.close()
    return values


def group_coordinated_by(bootstrap: str, brokers: set[int]) -> str:
    """A group id whose __consumer_offsets partition one of `brokers` leads."""
    offsets = AdminClient({"bootstrap.servers": bootstrap}).list_topics(
        "__consumer_offsets", timeout=30).topics["__consumer_offsets"].partitions  # fmt: skip
    return next(
        group for group in (f"across-{n}" for n in range(1000))
        if offsets[partition_for(group, len(offsets))].leader in brokers
    )  # fmt: skip


def test_every_listener_serves_its_own_endpoints(cluster) -> None:
    assert set(cluster[0]) == {"INTERNAL", "EXTERNAL"}
    assert cluster[0]["INTERNAL"].startswith(INTERNAL + ":")
    assert cluster[0]["EXTERNAL"].startswith(EXTERNAL + ":")
    # Through INTERNAL a client learns every broker's INTERNAL endpoint; through
    # EXTERNAL only the EXTERNAL ones, and broker 2, which has none, not at all.
    for broker in (0, 1):
        assert brokers_seen(cluster[broker]["INTERNAL"]) == {
            b: cluster[b]["INTERNAL"] for b in range(3)
        }
        assert brokers_seen(cluster[broker]["EXTERNAL"]) == {
            b: cluster[b]["EXTERNAL"] for b in range(2)
        }


def test_replication_and_groups_across_listeners(cluster) -> None:
    external, internal = cluster[0]["EXTERNAL"], cluster[2]["INTERNAL"]
    admin = AdminClient({"bootstrap.servers": internal})
    topics = {"moved": NewTopic("moved", 2, replica_assignment=[[0, 1, 2], [1, 2, 0]]),
              "led-by-2": NewTopic("led-by-2", 1, replica_assignment=[[2, 0, 1]])}  # fmt: skip
    for future in admin.create_topics(list(topics.values())).values():
        future.result(30)
    # A partition whose leader has no EXTERNAL endpoint: LISTENER_NOT_FOUND there, once
    # EXTERNAL's broker has heard of the partition (until then it is not in Metadata).
    partition = wait_for_partition(external, "led-by-2")
    assert partition.error is not None, "LISTENER_NOT_FOUND expected, no error given"
    assert (partition.error.code(), partition.leader) == (KafkaError.LISTENER_NOT_FOUND, -1)

    # acks=all with min.insync.replicas=2 through EXTERNAL: the followers fetch over
    # INTERNAL; a group through EXTERNAL finds its coordinator there and reads it all.
    producer = Producer({"bootstrap.servers": external, "acks": "all"})
    delivered: list[object] = []
    for i in range(1000):
        producer.produce("moved", str(i).encode(), partition=i % 2,
                         on_delivery=lambda err, msg: delivered.append(err))  # fmt: skip
    assert producer.flush(60) == 0
    assert delivered == [None] * 1000
    assert read_group(internal, "warm-up") == {str(i).encode() for i in range(1000)}
    # A coordinator without an EXTERNAL endpoint (broker 2) is one that a client on
    # EXTERNAL cannot reach, as in Kafka: the group is one that 0 or 1 coordinates.
    group = group_coordinated_by(internal, {0, 1})
    assert read_group(external, group) == {str(i).encode() for i in range(1000)}
    isr = AdminClient({"bootstrap.servers": internal}).list_topics("moved", timeout=30)
    assert [sorted(p.isrs) for p in isr.topics["moved"].partitions.values()] == [[0, 1, 2]] * 2
