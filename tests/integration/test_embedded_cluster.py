"""Three brokers in one `kt server-start` process replicate as Kafka's do: followers fetch
from their leaders, acks=all waits for the ISR, the high watermark lets consumers read
what every ISR member holds, and the replicas' segment files are the leader's, byte for
byte. __consumer_offsets is created with offsets.topic.replication.factor replicas, so
consumer groups work on the cluster.
"""

from __future__ import annotations

import filecmp
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.conftest import kt_ok

pytestmark = pytest.mark.slow

READY = re.compile(r"\[KafkaServer id=(\d+)\] started: (\S+) log.dirs=")


def start_cluster(
    base: Path, extra: dict[str, str] | None = None
) -> tuple[subprocess.Popen, dict[int, str]]:
    """Three brokers in one `kt server-start`, with `extra` in each one's properties;
    each one's PLAINTEXT address."""
    proc, listeners = start_cluster_listeners(base, extra)
    return proc, {broker: named["PLAINTEXT"] for broker, named in listeners.items()}


def start_cluster_listeners(
    base: Path, extra: dict[str, str] | None = None, cpus: set[int] | None = None
) -> tuple[subprocess.Popen, dict[int, dict[str, str]]]:
    """Three brokers in one `kt server-start`, with `extra` in each one's properties (a
    PLAINTEXT listener unless it names `listeners`), on `cpus` if given (the process's
    CPU affinity); each one's address by listener."""
    extra = {"listeners": "PLAINTEXT://127.0.0.1:0", **(extra or {})}
    files = []
    for broker_id in (1, 2, 3):
        path = base / f"b{broker_id}.properties"
        path.write_text(
            f"broker.id={broker_id}\n"
            f"log.dirs={base}/logs-{broker_id}\n"
            "offsets.topic.replication.factor=3\n"
            "offsets.topic.num.partitions=5\n"
            "group.initial.rebalance.delay.ms=0\n"
            + "".join(f"{key}={value}\n" for key, value in extra.items())
        )
        files.append(str(path))
    with open(base / "cluster.log", "a") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kt", "server-start", "--log-level", "INFO", *files],
            stdout=subprocess.PIPE, stderr=stderr, text=True,
            preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None,
        )  # fmt: skip
    assert proc.stdout is not None
    endpoints: dict[int, dict[str, str]] = {}
    while len(endpoints) < 3:
        line = proc.stdout.readline()
        assert line, f"the cluster exited with {proc.wait()}"
        match = READY.search(line)
        if match:
            named = dict(e.split("://") for e in match.group(2).split(","))
            endpoints[int(match.group(1))] = named
    return proc, endpoints


def test_three_brokers_in_one_process_replicate(tmp_path: Path) -> None:
    proc, endpoints = start_cluster(tmp_path)
    try:
        bootstrap = ",".join(endpoints.values())
        admin = AdminClient({"bootstrap.servers": bootstrap})
        topic = NewTopic("replicated", 3, 3, config={"min.insync.replicas": "2"})
        admin.create_topics([topic])["replicated"].result(timeout=30)

        producer = Producer(
            {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True}
        )
        errors: list[str] = []
        for i in range(3000):
            producer.produce(
                "replicated", key=b"%d" % i, value=b"value-%d" % i,
                on_delivery=lambda err, _msg: errors.append(err.name()) if err else None,
            )  # fmt: skip
            producer.poll(0)
        assert producer.flush(30) == 0
        assert errors == []

        consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": "cluster-group",
             "auto.offset.reset": "earliest"}
        )  # fmt: skip
        consumer.subscribe(["replicated"])
        values = set()
        deadline = time.monotonic() + 60
        while len(values) < 3000 and time.monotonic() < deadline:
            msg = consumer.poll(1)
            if msg is not None and msg.error() is None:
                values.add(msg.value())
        consumer.commit(asynchronous=False)
        consumer.close()
        assert values == {b"value-%d" % i for i in range(3000)}

        described = kt_ok("topics", "--bootstrap-server", bootstrap, "--describe")
        lines = [line.strip() for line in described if "Partition:" in line]
        replicated = [line for line in lines if line.startswith("Topic: replicated")]
        assert len(replicated) == 3
        for line in replicated:
            replicas = re.search(r"Replicas: ([\d,]+)", line).group(1)
            assert sorted(replicas.split(",")) == ["1", "2", "3"]
            assert re.search(r"Isr: ([\d,]+)", line).group(1) == replicas
        offsets = [line for line in lines if line.startswith("Topic: __consumer_offsets")]
        assert len(offsets) == 5 and all("Replicas: " in line for line in offsets)
        assert all(len(re.search(r"Replicas: ([\d,]+)", x).group(1).split(",")) == 3
                   for x in offsets)  # fmt: skip

        # Every replica's segment equals the leader's, byte for byte.
        for partition in range(3):
            files = [tmp_path / f"logs-{b}" / f"replicated-{partition}" /
                     "00000000000000000000.log" for b in (1, 2, 3)]  # fmt: skip
            assert files[0].stat().st_size > 0
            assert all(filecmp.cmp(files[0], f, shallow=False) for f in files[1:])
    finally:
        proc.terminate()
        assert proc.wait(30) == 0
    assert "Traceback" not in (tmp_path / "cluster.log").read_text()


def test_two_clusters_in_one_process_stay_apart(tmp_path: Path) -> None:
    """Two embedded clusters in one process, with the same broker ids: a topic created on
    the first is served by the first alone (their controllers once sent LeaderAndIsr to
    whichever broker of the process had the id, so the second cluster's brokers took the
    partitions and the first's CreateTopics never completed)."""
    from kt.testing import KtCluster

    with KtCluster(2, base_dir=tmp_path / "first") as first, \
            KtCluster(2, base_dir=tmp_path / "second") as second:  # fmt: skip
        admin = AdminClient({"bootstrap.servers": first.bootstrap_servers})
        admin.create_topics([NewTopic("apart", 2, 2)])["apart"].result(30)
        topic = admin.list_topics("apart", timeout=30).topics["apart"]
        assert sorted(len(p.replicas) for p in topic.partitions.values()) == [2, 2]
        assert sorted(p.name for p in (tmp_path / "first").glob("broker-*/apart-*")) == [
            "apart-0", "apart-0", "apart-1", "apart-1"]  # fmt: skip
        assert list((tmp_path / "second").glob("broker-*/apart-*")) == []
        assert second.controller_id() in (0, 1)
