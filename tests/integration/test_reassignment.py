"""Partition reassignment (KIP-455) on an embedded cluster: AlterPartitionReassignments and
ListPartitionReassignments through kt's admin client, and /admin/reassign_partitions
written as the 2.x tool did. Data comes from librdkafka; nothing produced may be lost."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient as RdAdmin
from confluent_kafka.admin import NewTopic

from kt.broker.replication.partition import TopicPartition as KtPartition
from kt.client.admin import BROKER_RESOURCE, TOPIC_RESOURCE, AdminClient
from kt.client.client import KafkaClient
from kt.metadata import znodes as z
from kt.testing import KtCluster
from tests.integration.conftest import kt_ok
from tests.integration.test_replication import read_partition

pytestmark = pytest.mark.slow

SET = 0  # IncrementalAlterConfigs' operation

FAST = {"replica.fetch.backoff.ms": "100", "replica.fetch.wait.max.ms": "100",
        "offsets.topic.replication.factor": "1"}  # fmt: skip


def create(cluster: KtCluster, topic: str, assignment: dict[int, list[int]]) -> None:
    admin = RdAdmin({"bootstrap.servers": cluster.bootstrap_servers})
    new = NewTopic(topic, len(assignment),
                   replica_assignment=[assignment[p] for p in sorted(assignment)])  # fmt: skip
    admin.create_topics([new])[topic].result(30)
    for p in assignment:
        cluster.wait_until(lambda p=p: cluster.leader_of(topic, p) >= 0, what="a leader")


def produce(cluster: KtCluster, topic: str, partitions: int, count: int, start: int = 0) -> None:
    # Idempotent, as Kafka's producers are by default since 3.0: a batch answered
    # NOT_LEADER_OR_FOLLOWER while its leader moved may be in the log already, and
    # librdkafka's default producer would write its retry again (CI saw 100 twice).
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                         "enable.idempotence": True})  # fmt: skip
    for i in range(start, start + count):
        producer.produce(topic, value=b"%d" % i, partition=i % partitions)
    assert producer.flush(30) == 0


def assignment(cluster: KtCluster, topic: str) -> z.TopicAssignment:
    return cluster._call(lambda: cluster._any_broker().zk.get_topic_assignment(topic))  # type: ignore[union-attr]


def test_reassignment_moves_replicas_and_keeps_every_record(kt_cluster) -> None:
    cluster = kt_cluster(3, overrides=FAST)
    create(cluster, "moving", {0: [0, 1], 1: [1, 0], 2: [0, 1]})
    produce(cluster, "moving", 3, 300)
    client = KafkaClient(cluster.bootstrap_servers)
    try:
        admin = AdminClient(client)
        results = admin.alter_partition_reassignments(
            {("moving", 0): [1, 2], ("moving", 1): [2, 1], ("moving", 2): [1, 2]}
        )
        assert results == {("moving", p): (0, None) for p in range(3)}
        produce(cluster, "moving", 3, 300, start=300)
        cluster.wait_until(lambda: admin.list_partition_reassignments() == {},
                           what="the moves completing")  # fmt: skip
        done = assignment(cluster, "moving")
        assert dict(done.partitions) == {0: [1, 2], 1: [2, 1], 2: [1, 2]}
        assert (dict(done.adding_replicas), dict(done.removing_replicas)) == ({}, {})
        for p in range(3):
            state = cluster.partition_state("moving", p)
            assert state.leader in (1, 2) and sorted(state.isr) == [1, 2]
        cluster.wait_until(lambda: not (cluster.log_dir(0) / "moving-0").exists(),
                           what="the removed replica's log deleted")  # fmt: skip
        bootstrap = cluster.bootstrap_servers
        values = sorted(int(v) for p in range(3) for v in read_partition(bootstrap, "moving", p))
        assert values == list(range(600))
        # Errors as Kafka's controller gives them.
        refused = admin.alter_partition_reassignments(
            {("moving", 0): [1, 1], ("moving", 9): [1], ("moving", 1): None}
        )
        assert refused[("moving", 0)] == (39, "Duplicate replica ids in partition "
                                          "reassignment replica list: List(1, 1)")  # fmt: skip
        assert refused[("moving", 9)] == (3, "The partition does not exist.")
        assert refused[("moving", 1)][0] == 85  # NO_REASSIGNMENT_IN_PROGRESS
    finally:
        client.close()


def test_reassignment_through_the_admin_znode(kt_cluster) -> None:
    cluster = kt_cluster(3, overrides=FAST)
    create(cluster, "by-znode", {0: [0, 1], 1: [1, 2]})
    produce(cluster, "by-znode", 2, 100)
    zk = cluster._any_broker().zk
    cluster._call(lambda: zk.create_partition_reassignment({("by-znode", 0): [2, 0]}))  # type: ignore[union-attr]
    cluster.wait_until(
        lambda: dict(assignment(cluster, "by-znode").partitions)[0] == [2, 0],
        what="the move through /admin/reassign_partitions",
    )
    cluster.wait_until(
        lambda: cluster._call(lambda: zk.get_partition_reassignment()) is None,  # type: ignore[union-attr]
        what="/admin/reassign_partitions deleted once done",
    )
    values = sorted(int(v) for p in range(2)
                    for v in read_partition(cluster.bootstrap_servers, "by-znode", p))  # fmt: skip
    assert values == list(range(100))


RATE = 200_000  # bytes/s, for leader and follower alike


def throttle(admin: AdminClient, topic: str, leaders: str, followers: str) -> None:
    """What `kt reassign --execute --throttle` sets: the rates on every broker, the
    throttled replicas on the topic."""
    for broker in ("0", "1", "2"):
        assert admin.incremental_alter_configs(BROKER_RESOURCE, broker, [
            (SET, "leader.replication.throttled.rate", str(RATE)),
            (SET, "follower.replication.throttled.rate", str(RATE)),
        ]) == (0, None)  # fmt: skip
    assert admin.incremental_alter_configs(TOPIC_RESOURCE, topic, [
        (SET, "leader.replication.throttled.replicas", leaders),
        (SET, "follower.replication.throttled.replicas", followers),
    ]) == (0, None)  # fmt: skip


def replica_bytes(cluster: KtCluster, broker: int, topic: str) -> int:
    def size() -> int:
        partition = cluster.brokers[broker].replica_manager.partitions.get(KtPartition(topic, 0))
        return partition.log.size if partition is not None else 0

    return cluster._call(size)


def test_a_throttled_move_copies_at_the_throttled_rate(kt_cluster) -> None:
    cluster = kt_cluster(3, overrides=FAST)
    create(cluster, "throttled", {0: [0, 1]})
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                         "linger.ms": 20, "batch.size": 65536})  # fmt: skip
    for i in range(3000):
        producer.produce("throttled", value=b"%06d" % i + bytes(1000), partition=0)
    assert producer.flush(30) == 0
    backlog = replica_bytes(cluster, 0, "throttled")
    client = KafkaClient(cluster.bootstrap_servers)
    try:
        admin = AdminClient(client)
        throttle(admin, "throttled", "0:0,0:1", "0:2")
        start = time.monotonic()
        assert admin.alter_partition_reassignments({("throttled", 0): [1, 2]}) == {
            ("throttled", 0): (0, None)
        }
        # Measured over 8 s of the copy's 15 s (3 MB at 200 KB/s).
        cluster.wait_until(lambda: time.monotonic() - start >= 2, timeout_s=20)
        copied_at_2 = replica_bytes(cluster, 2, "throttled")
        assert copied_at_2 < backlog, "the move finished within the burst: too little data"
        header, line = kt_ok("topics", "--bootstrap-server", cluster.bootstrap_servers,
                             "--describe", "--topic", "throttled")  # fmt: skip
        assert "\tReplicationFactor: 2\t" in header  # the target's size, as Kafka counts
        assert line.startswith("\tTopic: throttled\tPartition: 0\tLeader: 0\tReplicas: 1,2,0\t")
        assert line.endswith(
            "\tAdding Replicas: 2\tRemoving Replicas: 0\tElr: N/A\tLastKnownElr: N/A"
        )
        time.sleep(8)
        rate = (replica_bytes(cluster, 2, "throttled") - copied_at_2) / 8
        # The throttle bounds the copy from above (<= 1.2x). From below the copy also needs
        # CPU: beside three other busy test workers one measured 0.72x, so 0.5x, which
        # still catches a throttle mis-scaled (per partition, or in other units).
        assert 0.5 * RATE <= rate <= 1.2 * RATE, rate
        cluster.wait_until(lambda: admin.list_partition_reassignments() == {}, timeout_s=60,
                           what="the move completing")  # fmt: skip
    finally:
        client.close()
    values = read_partition(cluster.bootstrap_servers, "throttled", 0)
    assert [int(v[:6]) for v in values] == list(range(3000))
