"""Transactions on three kt brokers (one process, the embedded store): markers sent to
leaders on other brokers, and a coordinator that dies mid-transaction replaced by the
new leader of its `__transaction_state` partition, which finishes the transaction and
leaves nothing hanging (every partition's LSO reaches its high watermark)."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kt.broker.group.group_metadata_manager import partition_for
from kt.testing import KtCluster
from tests.integration.conftest import kt_ok
from tests.integration.read_to_end import read_to_end

pytestmark = pytest.mark.slow

TXN_PARTITIONS = 3
OVERRIDES = {
    "transaction.state.log.num.partitions": str(TXN_PARTITIONS),
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "offsets.topic.num.partitions": "3",
}


@pytest.fixture
def cluster(tmp_path):
    with KtCluster(3, base_dir=tmp_path, overrides=OVERRIDES) as cluster:
        yield cluster


def read_committed(bootstrap: str, topic: str, partitions: int) -> list[bytes]:
    return sorted(m.value() for m in read_to_end(bootstrap, topic, partitions))


def nothing_hanging(cluster: KtCluster, topic: str, partitions: int) -> bool:
    """Every partition's leader has its LSO at its high watermark."""
    for p in range(partitions):
        leader = cluster.brokers[cluster.leader_of(topic, p)]
        log = leader.replica_manager.partitions[next(
            tp for tp in leader.replica_manager.partitions if tp.topic == topic
            and tp.partition == p
        )].log  # fmt: skip
        if log.last_stable_offset != log.high_watermark:
            return False
    return True


def test_markers_reach_leaders_on_every_broker_and_survive_a_dead_coordinator(cluster) -> None:
    bootstrap = cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("spread", 6, 3)])["spread"].result(30)
    leaders = {cluster.leader_of("spread", p) for p in range(6)}
    assert leaders == {0, 1, 2}  # markers must go to the other brokers too

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "spread-txn",
                         "transaction.timeout.ms": 60000})  # fmt: skip
    producer.init_transactions(60)
    producer.begin_transaction()
    for i in range(60):
        producer.produce("spread", f"one-{i}".encode(), partition=i % 6)
    producer.commit_transaction(60)

    producer.begin_transaction()
    for i in range(60):
        producer.produce("spread", f"two-{i}".encode(), partition=i % 6)
    assert producer.flush(30) == 0
    coordinator = cluster.leader_of(
        "__transaction_state", partition_for("spread-txn", TXN_PARTITIONS)
    )
    cluster.kill_broker(coordinator)
    producer.commit_transaction(60)  # the new coordinator has the transaction Ongoing

    expected = sorted(f"{name}-{i}".encode() for name in ("one", "two") for i in range(60))
    assert read_committed(bootstrap, "spread", 6) == expected
    cluster.wait_until(lambda: nothing_hanging(cluster, "spread", 6), what="LSO = HW")


def test_a_transaction_in_prepare_commit_completes_on_the_new_coordinator(cluster) -> None:
    """The partition's leader is down when the producer commits: PrepareCommit is written
    and the commit answered, but no marker can be written. The coordinator dies too; the
    new leader of its __transaction_state partition loads PrepareCommit, and once the
    partition's leader is back, writes the marker and CompleteCommit."""
    bootstrap = cluster.bootstrap_servers
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "prepared-txn"})
    producer.init_transactions(60)
    coordinator = cluster.leader_of(
        "__transaction_state", partition_for("prepared-txn", TXN_PARTITIONS)
    )
    holder = next(b for b in (0, 1, 2) if b != coordinator)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = NewTopic("prepared", 1, replica_assignment=[[holder]])
    admin.create_topics([topic])["prepared"].result(30)
    producer.begin_transaction()
    producer.produce("prepared", b"survives", partition=0)
    assert producer.flush(30) == 0
    cluster.kill_broker(holder)  # no marker can reach prepared-0 now
    producer.commit_transaction(60)  # answered once PrepareCommit is written
    cluster.kill_broker(coordinator)
    cluster.start_broker(holder)
    assert read_committed(cluster.bootstrap_servers, "prepared", 1) == [b"survives"]
    cluster.wait_until(lambda: nothing_hanging(cluster, "prepared", 1), what="LSO = HW")


def test_followers_describe_their_producers_too(cluster) -> None:
    """DescribeProducers is answered by every replica, as Kafka's Partition.
    activeProducerState is (find-hanging --broker-id asks a broker for all it holds)."""
    bootstrap = cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("described", 1, 3)])["described"].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "described"})
    producer.init_transactions(60)
    producer.begin_transaction()
    for i in range(5):
        producer.produce("described", f"r{i}".encode(), partition=0)
    producer.commit_transaction(60)

    def last_sequence(broker_id: int) -> str:
        lines = kt_ok("transactions", "--bootstrap-server", bootstrap, "describe-producers",
                      "--topic", "described", "--partition", "0",
                      "--broker-id", str(broker_id))  # fmt: skip
        assert len(lines) == 2, lines
        return lines[1].split("\t")[3].strip()

    for broker_id in (0, 1, 2):
        cluster.wait_until(lambda b=broker_id: last_sequence(b) == "4", what=f"broker {broker_id}")
