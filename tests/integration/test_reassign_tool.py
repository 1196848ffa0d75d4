"""`kt reassign-partitions` (kafka-reassign-partitions.sh) against an embedded cluster:
a throttled move under continuous production, verified until done, its throttles
cleared; a cancel; the generated proposal; the tool's usage errors."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kt.broker.replication.partition import TopicPartition as KtPartition
from kt.testing import KtCluster
from tests.integration.conftest import kt_command, kt_ok
from tests.integration.test_reassignment import FAST, create
from tests.integration.test_replication import read_partition
from tests.integration.test_zookeeper_cluster import ZkCluster

pytestmark = pytest.mark.slow

THROTTLE = 1_000_000


def plan_file(tmp_path: Path, plan: dict[tuple[str, int], list[int]]) -> Path:
    partitions = [{"topic": t, "partition": p, "replicas": r} for (t, p), r in plan.items()]
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"version": 1, "partitions": partitions}))
    return path


def reassign(cluster: KtCluster, *args: str) -> list[str]:
    return kt_ok("reassign", "--bootstrap-server", cluster.bootstrap_servers, *args)


def bytes_on(cluster: KtCluster, broker: int, topic: str, partitions: int) -> int:
    def size() -> int:
        rm = cluster.brokers[broker].replica_manager
        found = [rm.partitions.get(KtPartition(topic, p)) for p in range(partitions)]
        return sum(p.log.size for p in found if p is not None)

    return cluster._call(size)


class BackgroundProducer:
    """Produces numbered records at about `rate` per second until stopped; every
    acknowledged value is kept."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, rate: int) -> None:
        self.acked: list[int] = []
        self._stop = threading.Event()
        # Idempotent: a retry after a leader moved must not store a record twice.
        self._producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                   "enable.idempotence": True})  # fmt: skip
        self._thread = threading.Thread(target=self._run, args=(topic, partitions, rate))
        self._thread.start()

    def _run(self, topic: str, partitions: int, rate: int) -> None:
        def on_delivery(err, msg) -> None:  # type: ignore[no-untyped-def]
            if err is None:
                self.acked.append(int(msg.value()[:8]))

        i = 1_000_000
        while not self._stop.is_set():
            self._producer.produce(topic, value=b"%08d" % i + bytes(100), partition=i % partitions,
                                   on_delivery=on_delivery)  # fmt: skip
            i += 1
            self._producer.poll(0)
            time.sleep(1 / rate)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        assert self._producer.flush(30) == 0


def test_a_throttled_move_under_production(kt_cluster, tmp_path: Path) -> None:
    cluster = kt_cluster(3, overrides=FAST)
    create(cluster, "orders", {0: [0, 1], 1: [1, 0], 2: [0, 1]})
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 20,
                         "batch.size": 65536, "acks": "all"})  # fmt: skip
    for i in range(12_000):  # 12 MB: a 12 s copy at 1 MB/s
        producer.produce("orders", value=b"%08d" % i + bytes(1000), partition=i % 3)
    assert producer.flush(60) == 0
    plan = plan_file(tmp_path, {("orders", 0): [1, 2], ("orders", 1): [2, 1],
                                ("orders", 2): [1, 2]})  # fmt: skip
    background = BackgroundProducer(cluster.bootstrap_servers, "orders", 3, rate=200)
    try:
        start = time.monotonic()
        out = reassign(cluster, "--execute", "--reassignment-json-file", str(plan),
                       "--throttle", str(THROTTLE))  # fmt: skip
        entry = '{"topic":"orders","partition":%d,"replicas":[%s],"log_dirs":["any","any"]}'
        current = ('{"version":1,"partitions":['
                   + ",".join(entry % (p, r) for p, r in ((0, "0,1"), (1, "1,0"), (2, "0,1")))
                   + "]}")  # fmt: skip
        assert out == [
            "Current partition replica assignment", "", current, "",
            "Save this to use as the --reassignment-json-file option during rollback",
            "Warning: You must run --verify periodically, until the reassignment completes, to "
            "ensure the throttle is removed.",
            f"The inter-broker throttle limit was set to {THROTTLE} B/s",
            "Successfully started partition reassignments for orders-0,orders-1,orders-2",
        ]  # fmt: skip
        assert reassign(cluster, "--verify", "--reassignment-json-file", str(plan)) == [
            "Status of partition reassignment:",
            *(f"Reassignment of partition orders-{p} is still in progress." for p in range(3)),
            "",
        ]
        listed = reassign(cluster, "--list")
        assert listed[0] == "Current partition reassignments:"
        assert listed[1] == "orders-0: replicas: 1,2,0. adding: 2. removing: 0."
        # Broker 2 is the one destination, so its follower throttle bounds the whole copy.
        cluster.wait_until(lambda: time.monotonic() - start >= 2, timeout_s=20)
        copied = bytes_on(cluster, 2, "orders", 3)
        time.sleep(8)
        rate = (bytes_on(cluster, 2, "orders", 3) - copied) / 8
        # The throttle bounds the copy from above (<= 1.2x). From below the copy also needs
        # CPU: beside three other busy test workers one measured 0.72x, so 0.5x, which
        # still catches a throttle mis-scaled (per partition, or in other units).
        assert 0.5 * THROTTLE <= rate <= 1.2 * THROTTLE, rate
        cluster.wait_until(
            lambda: reassign(cluster, "--list") == ["No partition reassignments found."],
            timeout_s=90,
            what="the move completing",
        )
    finally:
        background.stop()
    assert reassign(cluster, "--verify", "--reassignment-json-file", str(plan)) == [
        "Status of partition reassignment:",
        *(f"Reassignment of partition orders-{p} is completed." for p in range(3)),
        "",
        "Clearing broker-level throttles on brokers 0,1,2",
        "Clearing topic-level throttles on topic orders",
    ]
    for broker in ("0", "1", "2"):
        configs = kt_ok("configs", "--bootstrap-server", cluster.bootstrap_servers,
                        "--describe", "--broker", broker)  # fmt: skip
        assert configs == [f"Dynamic configs for broker {broker} are:"]
    described = kt_ok("topics", "--bootstrap-server", cluster.bootstrap_servers, "--describe",
                      "--topic", "orders")  # fmt: skip
    assert [line.split("\t")[4] for line in described[1:]] == [
        "Replicas: 1,2", "Replicas: 2,1", "Replicas: 1,2"]  # fmt: skip
    assert "leader.replication.throttled.replicas" not in described[0]
    stored = sorted(int(v[:8]) for p in range(3)
                    for v in read_partition(cluster.bootstrap_servers, "orders", p))  # fmt: skip
    assert stored == sorted([*range(12_000), *background.acked])  # nothing lost


def test_cancel_restores_the_original_replicas(kt_cluster, tmp_path: Path) -> None:
    cluster = kt_cluster(3, overrides=FAST)
    create(cluster, "slow", {0: [0, 1]})
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "batch.size": 16384})
    for i in range(2000):
        producer.produce("slow", value=b"%08d" % i + bytes(500), partition=0)
    assert producer.flush(30) == 0
    plan = plan_file(tmp_path, {("slow", 0): [2, 1]})
    reassign(cluster, "--execute", "--reassignment-json-file", str(plan), "--throttle", "10000")
    assert reassign(cluster, "--list") == [
        "Current partition reassignments:",
        "slow-0: replicas: 2,1,0. adding: 2. removing: 0.",
    ]
    out = kt_command("reassign", "--bootstrap-server", cluster.bootstrap_servers, "--cancel",
                     "--reassignment-json-file", str(plan))  # fmt: skip
    assert out.returncode == 0, out
    assert out.stdout.splitlines() == [
        "Successfully cancelled partition reassignment for: slow-0",
        "None of the specified partition moves are active.Clearing broker-level throttles on "
        "brokers 0,1,2",
        "Clearing topic-level throttles on topic slow",
    ]
    assert reassign(cluster, "--list") == ["No partition reassignments found."]
    cluster.wait_until(lambda: not (cluster.log_dir(2) / "slow-0").exists(),
                       what="the cancelled replica deleted")  # fmt: skip
    described = kt_ok("topics", "--bootstrap-server", cluster.bootstrap_servers, "--describe",
                      "--topic", "slow")  # fmt: skip
    # RS was TRS ++ ORS = 2,1,0: the original set comes back in that order, as on Kafka
    # (KafkaController.updateCurrentReassignment: "no way to get to the original order").
    assert described[1].split("\t")[4] == "Replicas: 1,0"
    values = [int(v[:8]) for v in read_partition(cluster.bootstrap_servers, "slow", 0)]
    assert values == list(range(2000))


def test_generate_proposes_an_assignment_over_the_given_brokers(kt_cluster, tmp_path) -> None:
    cluster = kt_cluster(3, overrides=FAST)
    create(cluster, "gen", {0: [0, 1], 1: [1, 0], 2: [0, 1], 3: [1, 0]})
    topics = tmp_path / "topics.json"
    topics.write_text('{"topics":[{"topic":"gen"}],"version":1}')
    out = reassign(cluster, "--generate", "--topics-to-move-json-file", str(topics),
                   "--broker-list", "1,2")  # fmt: skip
    assert out[0] == "Current partition replica assignment"
    assert json.loads(out[1]) == {"version": 1, "partitions": [
        {"topic": "gen", "partition": p, "replicas": r, "log_dirs": ["any", "any"]}
        for p, r in enumerate([[0, 1], [1, 0], [0, 1], [1, 0]])]}  # fmt: skip
    assert out[2:4] == ["", "Proposed partition reassignment configuration"]
    proposed = json.loads(out[4])["partitions"]
    assert [e["partition"] for e in proposed] == [0, 1, 2, 3]
    assert all(sorted(e["replicas"]) == [1, 2] for e in proposed)
    # Round robin: the leaders alternate between the two brokers.
    assert sorted(e["replicas"][0] for e in proposed) == [1, 1, 2, 2]
    missing = kt_command("reassign", "--bootstrap-server", cluster.bootstrap_servers,
                         "--generate", "--topics-to-move-json-file", str(topics))  # fmt: skip
    assert missing.returncode == 1
    assert missing.stderr.splitlines()[0] == 'Missing required argument "[broker-list]"'


def disk_bytes(log_dir: Path, topic: str) -> int:
    return sum(f.stat().st_size for f in log_dir.glob(f"{topic}-*/*.log"))


@pytest.fixture
def zk_brokers(tmp_path: Path, zookeeper: str) -> Iterator[ZkCluster]:
    cluster = ZkCluster(tmp_path, zookeeper)
    yield cluster
    cluster.close()


def test_a_throttled_move_on_zookeeper(zk_brokers: ZkCluster, tmp_path: Path) -> None:
    """The same move across three `kt server-start` processes on Debian's ZooKeeper:
    the tool's requests reach the controller over the wire, and the moves, their
    throttles and /brokers/topics/<t> are what ZooKeeper-mode Kafka keeps."""
    cluster = zk_brokers
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    new = NewTopic("zk-orders", 3, replica_assignment=[[1, 2], [2, 1], [1, 2]])
    admin.create_topics([new])["zk-orders"].result(30)
    for p in range(3):
        cluster.wait_until(lambda p=p: cluster.state("zk-orders", p)["leader"] > 0, "a leader")
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 20,
                         "batch.size": 65536, "acks": "all"})  # fmt: skip
    for i in range(12_000):
        producer.produce("zk-orders", value=b"%08d" % i + bytes(1000), partition=i % 3)
    assert producer.flush(60) == 0
    plan = plan_file(tmp_path, {("zk-orders", 0): [2, 3], ("zk-orders", 1): [3, 2],
                                ("zk-orders", 2): [2, 3]})  # fmt: skip
    tool = ["reassign", "--bootstrap-server", cluster.bootstrap]
    background = BackgroundProducer(cluster.bootstrap, "zk-orders", 3, rate=200)
    try:
        start = time.monotonic()
        out = kt_ok(*tool, "--execute", "--reassignment-json-file", str(plan),
                    "--throttle", str(THROTTLE))  # fmt: skip
        assert out[-1] == "Successfully started partition reassignments for " \
            "zk-orders-0,zk-orders-1,zk-orders-2"  # fmt: skip
        topic = cluster.znode("/brokers/topics/zk-orders")
        assert topic["adding_replicas"] == {"0": [3], "1": [3], "2": [3]}
        assert topic["removing_replicas"] == {"0": [1], "1": [1], "2": [1]}
        assert cluster.znode("/config/brokers/3")["config"] == {
            "leader.replication.throttled.rate": str(THROTTLE),
            "follower.replication.throttled.rate": str(THROTTLE),
        }
        target = cluster.brokers[3].log_dir
        cluster.wait_until(lambda: time.monotonic() - start >= 2, "2 s", timeout_s=20)
        copied = disk_bytes(target, "zk-orders")
        time.sleep(8)
        rate = (disk_bytes(target, "zk-orders") - copied) / 8
        # The throttle bounds the copy from above (<= 1.2x). From below the copy also needs
        # CPU: beside three other busy test workers one measured 0.72x, so 0.5x, which
        # still catches a throttle mis-scaled (per partition, or in other units).
        assert 0.5 * THROTTLE <= rate <= 1.2 * THROTTLE, rate
        cluster.wait_until(lambda: kt_ok(*tool, "--list") == ["No partition reassignments found."],
                           "the move completing", timeout_s=90)  # fmt: skip
    finally:
        background.stop()
    verified = kt_ok(*tool, "--verify", "--reassignment-json-file", str(plan))
    assert verified[-2:] == ["Clearing broker-level throttles on brokers 1,2,3",
                             "Clearing topic-level throttles on topic zk-orders"]  # fmt: skip
    topic = cluster.znode("/brokers/topics/zk-orders")
    assert topic["partitions"] == {"0": [2, 3], "1": [3, 2], "2": [2, 3]}
    assert (topic["adding_replicas"], topic["removing_replicas"]) == ({}, {})
    assert cluster.znode("/config/brokers/3")["config"] == {}
    cluster.wait_until(lambda: not list(cluster.brokers[1].log_dir.glob("zk-orders-*")),
                       "broker 1's replicas deleted")  # fmt: skip
    stored = sorted(int(v[:8]) for p in range(3)
                    for v in read_partition(cluster.bootstrap, "zk-orders", p))  # fmt: skip
    assert stored == sorted([*range(12_000), *background.acked])


def test_the_zookeeper_mode_of_the_2x_tool(zk_brokers: ZkCluster, zookeeper: str,
                                           tmp_path: Path) -> None:  # fmt: skip
    """--zookeeper (Kafka 2.x, removed in 3.0): the plan goes to /admin/reassign_partitions,
    which the controller carries out and deletes; verify reads ZooKeeper."""
    cluster = zk_brokers
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    new = NewTopic("legacy", 1, replica_assignment=[[1, 2]])
    admin.create_topics([new])["legacy"].result(30)
    cluster.wait_until(lambda: cluster.state("legacy")["leader"] == 1, "a leader")
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(100):
        producer.produce("legacy", value=b"%08d" % i)
    assert producer.flush(30) == 0
    plan = plan_file(tmp_path, {("legacy", 0): [2, 3]})
    out = kt_ok("reassign", "--zookeeper", zookeeper, "--execute", "--reassignment-json-file",
                str(plan), "--throttle", "5000000")  # fmt: skip
    assert out[0] == "Warning: --zookeeper is deprecated, and will be removed in a future " \
        "version of Kafka."  # fmt: skip
    assert out[-2:] == ["The inter-broker throttle limit was set to 5000000 B/s",
                        "Successfully started partition reassignment for legacy-0"]  # fmt: skip
    cluster.wait_until(lambda: cluster.znode("/brokers/topics/legacy")["partitions"] == {
        "0": [2, 3]}, "the move through ZooKeeper", timeout_s=60)  # fmt: skip
    cluster.wait_until(lambda: not cluster.zk.exists("/admin/reassign_partitions"),
                       "/admin/reassign_partitions deleted")  # fmt: skip
    verified = kt_ok("reassign", "--zookeeper", zookeeper, "--verify",
                     "--reassignment-json-file", str(plan))  # fmt: skip
    assert verified[1:4] == [
        "Warning: because you are using the deprecated --zookeeper option, the results may be "
        "incomplete.  Use --bootstrap-server instead for more accurate results.",
        "Status of partition reassignment:",
        "Reassignment of partition legacy-0 is completed.",
    ]
    assert verified[-2:] == ["Clearing broker-level throttles on brokers 1,2,3",
                             "Clearing topic-level throttles on topic legacy"]  # fmt: skip
    assert cluster.znode("/config/brokers/3")["config"] == {}
    assert [int(v) for v in read_partition(cluster.bootstrap, "legacy", 0)] == list(range(100))
