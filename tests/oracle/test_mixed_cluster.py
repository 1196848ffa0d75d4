"""kt and Apache Kafka 3.9 brokers in one live ZooKeeper cluster: the rolling migration of
docs/migration.md. Three Kafka brokers under continuous acks=all production and a
consuming group are replaced by `kt server-start` one at a time (same broker.id, log.dirs,
zookeeper.connect and port), each step waiting for the ISR to be whole again and the group
to move on; once all are kt (a kt controller), back to Kafka the same way. Nothing
acknowledged is lost, each partition keeps its order, and the group's offsets are never
reset (kt.testing.migration); a transactional producer commits throughout, and a
read_committed reader finds every committed record once and no aborted one, whichever
kind led `__transaction_state` (kt.testing.transactional_writer).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from kt.reference_kafka import run_tool
from kt.testing.migration import MigrationLoad, MixedCluster, create_topics
from kt.testing.transactional_writer import TransactionalWriter

TOPICS = ["orders", "payments", "audit"]
LEDGER = "ledger"  # written in transactions


@pytest.mark.timeout(1500)
def test_a_kafka_cluster_goes_to_kt_and_back_broker_by_broker_under_load(
    kafka_available: None, zookeeper: str, tmp_path: Path
) -> None:
    cluster = MixedCluster(tmp_path, zookeeper)
    try:
        cluster.start_all("kafka")
        create_topics(cluster.bootstrap, [*TOPICS, LEDGER])
        cluster.wait_healthy(TOPICS)
        load = MigrationLoad(cluster.bootstrap, TOPICS)
        load.start()
        writer = TransactionalWriter(cluster.bootstrap, LEDGER)
        writer.start()
        load.wait_progress()
        for kind in ("kt", "kafka"):
            for broker_id in cluster.broker_ids:
                load.step(f"broker {broker_id} to {kind}")
                committed = writer.committed_count()
                cluster.swap(broker_id, kind, [*TOPICS, LEDGER, "__transaction_state"])
                load.wait_progress()
                more = lambda c=committed: writer.committed_count() > c  # noqa: E731
                wait_for(more, "a transaction committed")
            assert set(cluster.kinds().values()) == {kind}
            assert cluster.controller_id() in cluster.broker_ids
        outcome = load.stop()
        writer.stop()
        assert writer.check() == []
    finally:
        cluster.close()
    assert outcome.faults() == {}
    assert sum(len(r) for r in outcome.acked.values()) > 1000


OTHER = {"kafka": "kt", "kt": "kafka"}
COORDINATOR_LOAD_IN_PROGRESS = 14


def mixed(tmp_path: Path, zookeeper: str, controller_kind: str, ibp: str) -> MixedCluster:
    """Broker 1 of `controller_kind` (started first, it wins the controller election),
    broker 2 of the other kind, broker 3 of the first; all at inter.broker.protocol.version
    `ibp`."""
    properties = {"auto.leader.rebalance.enable": "false", "inter.broker.protocol.version": ibp}
    cluster = MixedCluster(tmp_path, zookeeper, properties=properties)
    cluster.start(1, controller_kind)
    cluster.start(2, OTHER[controller_kind])
    cluster.start(3, controller_kind)
    return cluster


def run_kt(*args: str) -> str:
    result = subprocess.run([sys.executable, "-m", "kt", *args], capture_output=True, text=True,
                            timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


def run_kafka(tool: str, *args: str) -> str:
    result = run_tool(tool, *args)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def produce_acked(bootstrap: str, topic: str, first: int, count: int) -> dict[int, bytes]:
    from confluent_kafka import Producer

    acked: dict[int, bytes] = {}

    def delivered(error: Any, message: Any) -> None:
        assert error is None, error
        acked[message.offset()] = message.value()

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(first, first + count):
        producer.produce(topic, value=b"%d" % i, partition=0, on_delivery=delivered)
    assert producer.flush(60) == 0
    return acked


def read_partition(bootstrap: str, topic: str) -> dict[int, bytes]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{uuid.uuid4()}",
                         "enable.auto.commit": False})  # fmt: skip
    _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
    consumer.assign([TopicPartition(topic, 0, 0)])
    records: dict[int, bytes] = {}
    deadline = time.monotonic() + 60
    while len(records) < high and time.monotonic() < deadline:
        for message in consumer.consume(1000, timeout=1):
            assert message.error() is None, message.error()
            records[message.offset()] = message.value()
    consumer.close()
    return records


def partition_state(bootstrap: str, topic: str) -> tuple[int, list[int], list[int]]:
    """(leader, replicas, ISR) of the topic's partition 0."""
    from confluent_kafka.admin import AdminClient

    p = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=30)
    state = p.topics[topic].partitions[0]
    return state.leader, list(state.replicas), sorted(state.isrs)


def wait_for(condition: Any, what: str, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"not {what} after {timeout_s} s"
        time.sleep(0.5)


def reassign(tool: str, bootstrap: str, plan: Path, replicas: list[int]) -> None:
    """Move moving-0 to `replicas` with Kafka's tool or kt's, and verify to the end."""
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "moving", "partition": 0, "replicas": replicas}]}))  # fmt: skip
    args = ("--bootstrap-server", bootstrap, "--reassignment-json-file", str(plan))
    run = (lambda *a: run_kafka("kafka-reassign-partitions", *a)) if tool == "kafka" else (
        lambda *a: run_kt("reassign", *a))  # fmt: skip
    run(*args, "--execute")
    wait_for(lambda: "is complete" in run(*args, "--verify"), f"moved to {replicas}")
    wait_for(lambda: partition_state(bootstrap, "moving")[1:] == (replicas, sorted(replicas)),
             f"moving-0 on {replicas} with its ISR whole")  # fmt: skip


def elect_preferred(tool: str, bootstrap: str) -> None:
    args = ("--bootstrap-server", bootstrap, "--election-type", "preferred",
            "--topic", "preferred", "--partition", "0")  # fmt: skip
    if tool == "kafka":
        run_kafka("kafka-leader-election", *args)
    else:
        run_kt("leader-election", *args)
    wait_for(lambda: partition_state(bootstrap, "preferred")[0] == 2, "led by broker 2")


def init_producer_id(port: int) -> int:
    """InitProducerId (no transactional id) asked of one broker; its producer id."""
    from kt.client.connection import BrokerConnection
    from kt.protocol import ApiKey
    from kt.protocol import messages as m

    request = m.InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=-1)
    deadline = time.monotonic() + 60
    with BrokerConnection("127.0.0.1", port) as connection:
        response = connection.send(ApiKey.INIT_PRODUCER_ID, request)
        # A Kafka broker answers COORDINATOR_LOAD_IN_PROGRESS until its first block of
        # ids has come from the controller; clients ask again.
        while response.error_code == COORDINATOR_LOAD_IN_PROGRESS:
            assert time.monotonic() < deadline, "no producer id block in 60 s"
            time.sleep(0.2)
            response = connection.send(ApiKey.INIT_PRODUCER_ID, request)
    assert response.error_code == 0, response
    return response.producer_id


def bounce(cluster: MixedCluster, broker_id: int) -> None:
    """Stop a broker (its leadership moves) and start the same kind again."""
    kind = cluster.kinds()[broker_id]
    assert kind is not None
    cluster.stop(broker_id)
    cluster.start(broker_id, kind)
    cluster.wait_healthy(["moving", "preferred"])


@pytest.mark.parametrize(("controller_kind", "ibp"), [("kafka", "3.9"), ("kt", "3.3")])
def test_in_the_mixed_state_reassignments_and_elections_cross_kinds(
    kafka_available: None, zookeeper: str, tmp_path: Path, controller_kind: str, ibp: str
) -> None:
    """With a controller of each kind: every broker hands out producer ids; moving-0 goes
    from brokers 1 and 3 to broker 2 (the other kind) and back, with Kafka's tool then
    kt's; broker 2 leads `preferred` again after each bounce, by Kafka's leader-election
    tool then kt's; Kafka's and kt's describe print the same; every acknowledged record is
    still there. With the kt controller the cluster runs at IBP 3.3, as an operator
    migrating an older cluster would: the requests between brokers go at 3.3's versions
    (LeaderAndIsr 6, UpdateMetadata 7, Fetch 13)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    cluster = mixed(tmp_path, zookeeper, controller_kind, ibp)
    try:
        bootstrap = cluster.bootstrap
        assert cluster.controller_id() == 1
        admin = AdminClient({"bootstrap.servers": bootstrap})
        futures = admin.create_topics([
            NewTopic("moving", 1, replica_assignment=[[1, 3]]),
            NewTopic("preferred", 1, replica_assignment=[[2, 1, 3]]),
        ])  # fmt: skip
        for future in futures.values():
            future.result(60)
        cluster.wait_healthy(["moving", "preferred"])
        written = {"moving": produce_acked(bootstrap, "moving", 0, 500),
                   "preferred": produce_acked(bootstrap, "preferred", 0, 500)}  # fmt: skip

        # Idempotent producers get ids from every broker, whatever kind the controller is
        # (Kafka's brokers ask it for blocks of ids: AllocateProducerIds, KIP-730).
        producer_ids = [init_producer_id(cluster.nodes[b].port) for b in cluster.broker_ids]
        assert len(set(producer_ids)) == 3 and min(producer_ids) >= 0

        reassign("kafka", bootstrap, tmp_path / "to-2.json", [2, 3])
        written["moving"] |= produce_acked(bootstrap, "moving", 500, 500)
        reassign("kt", bootstrap, tmp_path / "back.json", [1, 3])

        for tool in ("kafka", "kt"):
            bounce(cluster, 2)
            assert partition_state(bootstrap, "preferred")[0] != 2
            written["preferred"] |= produce_acked(
                bootstrap, "preferred", len(written["preferred"]), 200
            )
            elect_preferred(tool, bootstrap)

        for topic in ("moving", "preferred"):
            theirs = run_kafka("kafka-topics", "--bootstrap-server", bootstrap, "--describe",
                               "--topic", topic)  # fmt: skip
            # Kafka's tool prints the empty ELR lists of DescribeTopicPartitions when the broker
            # it asks is a kt one, N/A when a Kafka 3.9 one (Metadata): docs/oracle.md.
            theirs = theirs.replace("\tElr: \tLastKnownElr: ", "\tElr: N/A\tLastKnownElr: N/A")
            ours = run_kt("topics", "--bootstrap-server", bootstrap, "--describe", "--topic", topic)
            assert ours == theirs
            assert read_partition(bootstrap, topic) == written[topic]
    finally:
        cluster.close()


@pytest.mark.parametrize("controller_kind", ["kafka", "kt"])
def test_a_controller_killed_in_the_mixed_state_hands_over_to_the_other_kind(
    kafka_available: None, zookeeper: str, tmp_path: Path, controller_kind: str
) -> None:
    """The controller (broker 1) is killed with SIGKILL under load; brokers 2 and 3, of
    the other kind, elect one of them, which leads on; broker 1 comes back and the ISR is
    whole again. Nothing acknowledged is lost, and the group's offsets are not reset."""
    cluster = MixedCluster(tmp_path, zookeeper)
    try:
        cluster.start(1, controller_kind)
        cluster.start(2, OTHER[controller_kind])
        cluster.start(3, OTHER[controller_kind])
        create_topics(cluster.bootstrap, TOPICS)
        cluster.wait_healthy(TOPICS)
        assert cluster.controller_id() == 1
        load = MigrationLoad(cluster.bootstrap, TOPICS)
        load.start()
        load.wait_progress()
        load.step("controller killed")
        cluster.stop(1, kill=True)
        wait_for(lambda: cluster.controller_id() in (2, 3), "a new controller")
        load.wait_progress()
        load.step("broker 1 back")
        cluster.start(1, controller_kind)
        cluster.wait_healthy(TOPICS)
        load.wait_progress()
        outcome = load.stop()
    finally:
        cluster.close()
    assert outcome.faults() == {}
