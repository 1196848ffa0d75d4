"""Replication and failover on an embedded cluster (kt.testing.KtCluster), driven by
librdkafka: leaders killed under load, followers that diverged, too few replicas.

A killed broker stops as SIGKILL stops it (no flush, no checkpoint, its metadata session
ends); its restart recovers its logs and rejoins the ISR.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from kt.broker.controller.channel_manager import ControllerChannel
from kt.broker.group.group_metadata_manager import partition_for
from kt.broker.replication.partition import TopicPartition as KtPartition
from kt.client.connection import BrokerConnection
from kt.metadata.kafka_zk_client import KafkaZkClient
from kt.metadata.store import ControllerMovedError
from kt.protocol import ApiKey
from kt.protocol import messages as m
from kt.testing import KtCluster
from tests.integration.conftest import kt_ok

pytestmark = pytest.mark.slow

STALE_CONTROLLER_EPOCH = 11  # not among librdkafka's named codes
STALE_BROKER_EPOCH = 77
FAST_FAILOVER = {"replica.fetch.backoff.ms": "100", "replica.fetch.wait.max.ms": "100"}


def create_topic(
    cluster: KtCluster, topic: str, partitions: int = 1, replicas: int = 3, **config: str
) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(topic, partitions, replicas, config=config)])[topic].result(30)
    for p in range(partitions):
        cluster.wait_until(lambda p=p: cluster.leader_of(topic, p) >= 0, what="a leader")


def isr(cluster: KtCluster, topic: str, partition: int = 0) -> list[int]:
    return list(cluster.partition_state(topic, partition).isr)


def read_partition(bootstrap: str, topic: str, partition: int = 0) -> list[bytes]:
    """Every record up to the high watermark, in offset order."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "kt-replication-reader",
         "enable.partition.eof": True, "enable.auto.commit": False}
    )  # fmt: skip
    consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
    values: list[bytes] = []
    try:
        while True:
            msg = consumer.poll(30)
            assert msg is not None, "no end of partition within 30 s"
            if msg.error() is not None:
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                return values
            values.append(msg.value())
    finally:
        consumer.close()


def under_replicated(cluster: KtCluster, topic: str) -> list[str]:
    """`kt topics --describe --under-replicated-partitions`: the lines of `topic`."""
    lines = kt_ok("topics", "--bootstrap-server", cluster.bootstrap_servers, "--describe",
                  "--under-replicated-partitions")  # fmt: skip
    return [line.strip() for line in lines if line.strip().startswith(f"Topic: {topic}\t")]


def coordinator_partition(group: str, partitions: int) -> int:
    """The __consumer_offsets partition of a group (Utils.abs(groupId.hashCode) % n)."""
    return partition_for(group, partitions)


class Deliveries:
    """Delivery reports of one producer: acknowledged values in order, errors by name."""

    def __init__(self) -> None:
        self.acked: list[bytes] = []
        self.errors: dict[str, int] = {}

    def __call__(self, err, msg) -> None:  # type: ignore[no-untyped-def]
        if err is None:
            self.acked.append(msg.value())
        else:
            self.errors[err.name()] = self.errors.get(err.name(), 0) + 1


def test_killing_the_leader_twenty_times_loses_and_duplicates_nothing(kt_cluster) -> None:
    cluster = kt_cluster(3, overrides=FAST_FAILOVER)
    create_topic(cluster, "failover", **{"min.insync.replicas": "2"})
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
         "enable.idempotence": True, "linger.ms": 2, "message.timeout.ms": 120_000}
    )  # fmt: skip
    deliveries = Deliveries()
    sent = 0

    def produce(count: int) -> None:
        nonlocal sent
        for _ in range(count):
            producer.produce("failover", b"%08d" % sent, on_delivery=deliveries)
            sent += 1
            producer.poll(0)

    for _ in range(20):
        produce(200)
        leader = cluster.leader_of("failover", 0)
        cluster.kill_broker(leader)
        produce(200)  # on its way while the controller elects a new leader
        cluster.wait_until(
            lambda leader=leader: cluster.leader_of("failover", 0) not in (-1, leader),
            what="a new leader",
        )
        assert leader not in isr(cluster, "failover")
        cluster.start_broker(leader)
        cluster.wait_until(lambda: len(isr(cluster, "failover")) == 3, what="the ISR back to 3")
    assert producer.flush(120) == 0
    assert deliveries.errors == {}
    assert deliveries.acked == [b"%08d" % i for i in range(sent)]
    assert read_partition(cluster.bootstrap_servers, "failover") == deliveries.acked


def test_a_follower_that_diverged_truncates_and_rejoins_the_isr(kt_cluster) -> None:
    """The leader, alone in the ISR, took writes with acks=1; it died, and an unclean
    election made a replica that never had them leader, which took other writes at the
    same offsets. Back as a follower, the old leader cuts its own at the point of
    divergence (the end of its epoch on the new leader) and copies the new leader's log.
    (The followers leave the ISR through the controller, or through the leader after
    replica.lag.time.max.ms when the controller was among them.)"""
    cluster = kt_cluster(3, overrides={**FAST_FAILOVER, "replica.lag.time.max.ms": "1000"})
    create_topic(cluster, "diverge", **{"unclean.leader.election.enable": "true"})
    bootstrap = cluster.bootstrap_servers
    first = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(100):
        first.produce("diverge", b"committed-%d" % i)
    assert first.flush(30) == 0

    old_leader = cluster.leader_of("diverge", 0)
    followers = [b for b in range(3) if b != old_leader]
    for broker in followers:
        cluster.kill_broker(broker)
    cluster.wait_until(lambda: isr(cluster, "diverge") == [old_leader], what="ISR = leader")
    lonely = Producer({"bootstrap.servers": bootstrap, "acks": 1})
    for i in range(50):
        lonely.produce("diverge", b"uncommitted-%d" % i)
    assert lonely.flush(30) == 0
    cluster.kill_broker(old_leader)

    for broker in followers:
        cluster.start_broker(broker)
    cluster.wait_until(lambda: cluster.leader_of("diverge", 0) in followers, what="a new leader")
    second = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for i in range(30):
        second.produce("diverge", b"new-leader-%d" % i)
    assert second.flush(30) == 0
    under = under_replicated(cluster, "diverge")
    assert len(under) == 1 and "Partition: 0" in under[0]
    assert sorted(re.search(r"Isr: ([\d,]+)", under[0]).group(1).split(",")) == [
        str(b) for b in followers
    ]

    cluster.start_broker(old_leader)
    cluster.wait_until(lambda: len(isr(cluster, "diverge")) == 3, what="the old leader in the ISR")
    assert under_replicated(cluster, "diverge") == []
    expected = [b"committed-%d" % i for i in range(100)] + [b"new-leader-%d" % i for i in range(30)]
    assert read_partition(cluster.bootstrap_servers, "diverge") == expected
    segments = [
        (cluster.log_dir(b) / "diverge-0" / "00000000000000000000.log").read_bytes()
        for b in range(3)
    ]
    assert segments[0] == segments[1] == segments[2]


def test_acks_all_is_refused_when_too_few_replicas_are_in_sync(kt_cluster) -> None:
    cluster = kt_cluster(3, overrides={**FAST_FAILOVER, "replica.lag.time.max.ms": "1000"})
    create_topic(cluster, "few", **{"min.insync.replicas": "2"})
    leader = cluster.leader_of("few", 0)
    for broker in range(3):
        if broker != leader:
            cluster.kill_broker(broker)
    cluster.wait_until(lambda: isr(cluster, "few") == [leader], what="the ISR down to the leader")
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "retries": 0}
    )
    deliveries = Deliveries()
    producer.produce("few", b"refused", on_delivery=deliveries)
    assert producer.flush(30) == 0
    assert deliveries.acked == [] and deliveries.errors == {"NOT_ENOUGH_REPLICAS": 1}
    ones = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": 1})
    ones.produce("few", b"taken")
    assert ones.flush(30) == 0
    assert read_partition(cluster.bootstrap_servers, "few") == [b"taken"]


@pytest.mark.parametrize("zookeeper", [False, True], ids=["embedded", "zookeeper"])
def test_describe_filters_follow_the_isr_down_to_no_leader(kt_cluster, zookeeper: bool) -> None:
    cluster = kt_cluster(
        3, overrides={**FAST_FAILOVER, "replica.lag.time.max.ms": "1000"}, zookeeper=zookeeper
    )
    kt_ok("topics", "--bootstrap-server", cluster.bootstrap_servers, "--create", "--topic",
          "watched", "--replica-assignment", "1:2", "--config",
          "min.insync.replicas=1")  # fmt: skip
    cluster.wait_until(lambda: isr(cluster, "watched") == [1, 2], what="a full ISR")
    bootstrap = f"127.0.0.1:{cluster.ports[0]}"  # broker 0 holds no replica and stays up

    def listed() -> dict[str, list[str]]:
        shown = {}
        for name in ("under-replicated", "under-min-isr", "at-min-isr", "unavailable"):
            lines = kt_ok("topics", "--bootstrap-server", bootstrap, "--describe",
                          "--topic", "watched", f"--{name}-partitions")  # fmt: skip
            shown[name] = [re.sub(r"\tElr.*", "", line.strip()) for line in lines]
        return shown

    line = "Topic: watched\tPartition: 0\tLeader: {}\tReplicas: 1,2\tIsr: {}"
    assert listed() == {"under-replicated": [], "under-min-isr": [], "at-min-isr": [],
                        "unavailable": []}  # fmt: skip
    cluster.kill_broker(2)
    cluster.wait_until(lambda: isr(cluster, "watched") == [1], what="the ISR down to 1")
    one = line.format(1, 1)
    assert listed() == {"under-replicated": [one], "under-min-isr": [], "at-min-isr": [one],
                        "unavailable": []}  # fmt: skip
    cluster.kill_broker(1)
    cluster.wait_until(lambda: cluster.leader_of("watched", 0) < 0, what="no leader")
    none = line.format("none", 1)
    assert listed() == {"under-replicated": [none], "under-min-isr": [none],
                        "at-min-isr": [none], "unavailable": [none]}  # fmt: skip


def test_a_group_moves_with_its_coordinator_and_keeps_its_offsets(kt_cluster) -> None:
    cluster = kt_cluster(3, overrides={**FAST_FAILOVER, "offsets.topic.num.partitions": "3"})
    create_topic(cluster, "grouped", partitions=3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for i in range(300):
        producer.produce("grouped", b"%d" % i, partition=i % 3)
    assert producer.flush(30) == 0

    def consume(count: int) -> tuple[list[bytes], int]:
        """Read `count` records as group "movers" and commit; (values, offsets committed)."""
        consumer = Consumer(
            {"bootstrap.servers": cluster.bootstrap_servers, "group.id": "movers",
             "auto.offset.reset": "earliest", "enable.auto.commit": False}
        )  # fmt: skip
        consumer.subscribe(["grouped"])
        values: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(values) < count and time.monotonic() < deadline:
            msg = consumer.poll(1)
            if msg is not None and msg.error() is None:
                values.append(msg.value())
        consumer.commit(asynchronous=False)
        committed = consumer.committed([TopicPartition("grouped", p) for p in range(3)], 30)
        consumer.close()
        return values, sum(max(tp.offset, 0) for tp in committed)

    first, committed = consume(150)
    assert committed == 150
    offsets_partition = coordinator_partition("movers", 3)
    coordinator = cluster.leader_of("__consumer_offsets", offsets_partition)
    cluster.kill_broker(coordinator)
    cluster.wait_until(
        lambda: cluster.leader_of("__consumer_offsets", offsets_partition) not in (-1, coordinator),
        what="a new coordinator",
    )
    rest, committed = consume(150)  # from the offsets the first consumer committed
    assert committed == 300
    assert sorted(first + rest, key=int) == [b"%d" % i for i in range(300)]


def test_another_broker_takes_over_from_a_controller_that_died(kt_cluster) -> None:
    cluster = kt_cluster(3, overrides=FAST_FAILOVER)
    controller = cluster.controller_id()
    cluster.kill_broker(controller)
    cluster.wait_until(
        lambda: cluster.controller_id() not in (-1, controller), what="a new controller"
    )
    create_topic(cluster, "after-failover", partitions=2, replicas=2)
    for partition in range(2):
        state = cluster.partition_state("after-failover", partition)
        assert controller not in state.isr and len(state.isr) == 2
    cluster.start_broker(controller)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    producer.produce("after-failover", b"x", partition=0)
    assert producer.flush(30) == 0


@pytest.mark.parametrize("zookeeper", [False, True], ids=["embedded", "zookeeper"])
def test_a_broker_whose_session_expired_registers_again(kt_cluster, zookeeper: bool) -> None:
    """On ZooKeeper, the server itself expires the session (kazoo hears LOST, then starts
    a new session), as after a pause longer than the session timeout."""
    cluster = kt_cluster(3, overrides=FAST_FAILOVER, zookeeper=zookeeper)
    create_topic(cluster, "expiry", **{"min.insync.replicas": "2"})
    controller = cluster.controller_id()
    epoch = cluster.brokers[controller].controller.ctx.epoch
    session = cluster.brokers[controller].zk.session
    old_session = session.session_id
    cluster.expire_session(controller)
    cluster.wait_until(lambda: session.session_id not in (0, old_session), what="a new session")
    cluster.wait_until(
        lambda: (
            cluster.brokers[controller].controller.is_active is False
            or cluster.brokers[controller].controller.ctx.epoch > epoch
        ),
        what="the old controller resigned or was elected anew",
    )
    cluster.wait_until(lambda: cluster.controller_id() >= 0, what="a controller")
    cluster.wait_until(lambda: cluster.registered_brokers() == [0, 1, 2], what="registered")
    cluster.wait_until(lambda: len(isr(cluster, "expiry")) == 3, what="a full ISR again")
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    deliveries = Deliveries()
    producer.produce("expiry", b"after the expiry", on_delivery=deliveries)
    assert producer.flush(30) == 0
    assert deliveries.acked == [b"after the expiry"]


def test_a_controller_elected_again_in_its_new_session_keeps_the_role(kt_cluster) -> None:
    """kazoo fires the old session's watches as it expires, so the watch on /controller can
    run the election in the new session, and win it, before the broker hears of the
    expiry. The Expire that follows must not make it resign: it would own /controller
    without acting, and no other broker could take over (no partition leader would ever
    be elected again)."""
    cluster = kt_cluster(1)
    controller = cluster.brokers[0].controller
    epoch = controller.ctx.epoch
    assert controller.is_active and cluster.controller_id() == 0

    async def hear_the_expiry() -> None:
        controller.on_session_expired()
        await controller.barrier()

    cluster._run(hear_the_expiry())
    assert controller.is_active and controller.ctx.epoch == epoch
    create_topic(cluster, "still-led", replicas=1)  # a controller elects its leader


def test_a_broker_that_lost_the_election_names_the_winner_before_its_update_metadata(
    kt_cluster,
) -> None:
    """A controller that resigned must not name itself in Metadata answers until the new
    controller's UpdateMetadata comes: librdkafka's admin client keeps the controller one
    answer named and sends it CreateTopics, NOT_CONTROLLER after NOT_CONTROLLER (CI saw a
    minute of them after a ZooKeeper session expiry). Both controllers' event threads are
    held while broker 1 takes /controller, as its own election would; then only broker 0's
    runs, so nothing but its own election can tell its cache."""
    cluster = kt_cluster(2)
    assert cluster.controller_id() == 0
    old, new = cluster.brokers[0], cluster.brokers[1]
    held = {0: threading.Event(), 1: threading.Event()}
    try:
        for broker_id, event in held.items():
            cluster.brokers[broker_id].controller.post("Hold", lambda e=event: e.wait(60))
        old.zk.resign_controller(0)
        assert new.zk.register_controller_and_increment_epoch(1) is not None
        held[0].set()
        cluster._run(old.controller.barrier())
        assert not old.controller.is_active
        with BrokerConnection("127.0.0.1", cluster.ports[0]) as connection:  # broker 0's
            response = connection.send(ApiKey.METADATA, m.MetadataRequest(topics=[]), 12)
        assert response.controller_id == 1
    finally:
        held[0].set()
        new.zk.resign_controller(1)  # a real election, for the brokers to stop cleanly
        held[1].set()
    cluster.wait_until(
        lambda: any(b.controller.is_active for b in cluster.brokers.values()),
        what="a controller elected",
    )


def test_a_restarting_broker_is_reached_directly_before_the_store_names_it(
    kt_cluster, monkeypatch
) -> None:
    """The controller reaches a broker of its own process by direct calls, any other over
    the wire. A restarting broker that registered in the store first was sent the state
    of its joining over the wire (its listener was open) and later changes directly: the
    queued request could land after a newer one and undo it (CI saw a restarted leader
    keep its partition led by -1 in its metadata, and read_committed clients wait a
    minute). It must be a broker of the process before the store names it."""
    cluster = kt_cluster(2)
    store = cluster.brokers[0].store
    cluster.kill_broker(1)
    direct_when_registered: list[bool] = []
    register = KafkaZkClient.register_broker

    def observed(self, broker_id, *args, **kwargs):  # type: ignore[no-untyped-def]
        direct_when_registered.append(ControllerChannel.local_broker(store, broker_id) is not None)
        return register(self, broker_id, *args, **kwargs)

    monkeypatch.setattr(KafkaZkClient, "register_broker", observed)
    cluster.start_broker(1)
    assert direct_when_registered == [True]


def test_a_controller_whose_epoch_moved_on_writes_no_partition_state(kt_cluster) -> None:
    """Every state write of the controller is fenced by the /controller_epoch version it
    was elected with (Kafka's checkControllerEpoch): a controller that has not yet heard
    that another was elected (its events still queued under a new session) changes
    nothing."""
    cluster = kt_cluster(1)
    create_topic(cluster, "fenced-write", replicas=1)
    server = cluster.brokers[0]
    controller = server.controller
    before = cluster.partition_state("fenced-write", 0)
    server.zk.increment_controller_epoch()  # another election, as far as the store knows

    async def elect_again() -> Any:
        tp = KtPartition("fenced-write", 0)
        return await controller.events.ask(
            "Test", lambda: controller._update_leader_and_isr(tp, lambda s: (s.leader, s.isr))
        )

    with pytest.raises(ControllerMovedError):
        cluster._run(elect_again())
    assert cluster.partition_state("fenced-write", 0) == before
    # New partitions: their first states are not written either.
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    grown = admin.create_partitions([NewPartitions("fenced-write", 2)], operation_timeout=1)
    assert grown["fenced-write"].exception(30) is not None  # no leader came in time
    cluster._run(controller.barrier())
    assert cluster.partition_state("fenced-write", 1) is None


def test_no_coordinator_until_the_offsets_topic_can_have_all_its_replicas(kt_cluster) -> None:
    """Kafka since 0.11: __consumer_offsets is created with offsets.topic.replication.factor
    replicas or not at all, and FindCoordinator answers COORDINATOR_NOT_AVAILABLE until
    enough brokers are alive."""
    cluster = kt_cluster(2, overrides={"offsets.topic.replication.factor": "3"})

    def find_coordinator() -> int:
        with BrokerConnection("127.0.0.1", cluster.ports[0]) as connection:
            response = connection.send(
                ApiKey.FIND_COORDINATOR, m.FindCoordinatorRequest(key="waiting", key_type=0), 3
            )
        return response.error_code

    assert find_coordinator() == KafkaError.COORDINATOR_NOT_AVAILABLE
    assert find_coordinator() == KafkaError.COORDINATOR_NOT_AVAILABLE
    assert cluster.partition_state("__consumer_offsets", 0) is None  # never created short
    cluster.start_broker(2)
    cluster.wait_until(lambda: find_coordinator() == 0, what="a coordinator")
    state = cluster.partition_state("__consumer_offsets", 0)
    assert sorted(state.isr) == [0, 1, 2]


def test_controlled_shutdown_moves_leadership_before_the_broker_stops(kt_cluster) -> None:
    cluster = kt_cluster(3, overrides=FAST_FAILOVER)
    create_topic(cluster, "controlled", partitions=3)
    leaders = {p: cluster.leader_of("controlled", p) for p in range(3)}
    broker = leaders[0]
    controller = cluster.controller_id()
    # The request a stopping broker sends, here while it is still up and registered.
    with BrokerConnection("127.0.0.1", cluster.ports[controller]) as connection:
        response = connection.send(
            ApiKey.CONTROLLED_SHUTDOWN, m.ControlledShutdownRequest(broker_id=broker), 3
        )
    assert (response.error_code, list(response.remaining_partitions)) == (0, [])
    assert broker in cluster.registered_brokers()
    for p in range(3):
        state = cluster.partition_state("controlled", p)
        assert state.leader != broker and broker not in state.isr
        if leaders[p] == broker:
            assert state.leader_epoch == 1  # moved once, by the controller, not by a death
    # A stopping broker asks for it itself; its partitions stay available meanwhile.
    other = next(b for b in range(3) if b not in (broker, controller))
    cluster.stop_broker(other)
    for p in range(3):
        assert cluster.leader_of("controlled", p) not in (other, -1)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    producer.produce("controlled", b"still writable", partition=0)
    assert producer.flush(30) == 0


def test_a_broker_refuses_requests_from_a_stale_controller(kt_cluster) -> None:
    """After a controller failover, requests stamped with the old controller epoch (a
    controller that has not heard it lost) are refused: STALE_CONTROLLER_EPOCH."""
    cluster = kt_cluster(3, overrides=FAST_FAILOVER)
    create_topic(cluster, "fenced")
    old_controller = cluster.controller_id()
    cluster.kill_broker(old_controller)
    cluster.wait_until(
        lambda: cluster.controller_id() not in (-1, old_controller), what="a new controller"
    )
    # The new controller moves the partition off the dead broker (from its own thread).
    cluster.wait_until(lambda: cluster.leader_of("fenced", 0) not in (-1, old_controller),
                       what="a new leader")  # fmt: skip
    target = cluster.leader_of("fenced", 0)
    stale_epoch = 1  # the first controller's epoch
    # The new controller's first requests reach the broker (from its own event thread).
    cluster.wait_until(lambda: cluster.brokers[target].controller_epoch_seen > stale_epoch,
                       what="the new controller heard")  # fmt: skip
    R = m.UpdateMetadataRequest
    with BrokerConnection("127.0.0.1", cluster.ports[target]) as connection:
        response = connection.send(
            ApiKey.UPDATE_METADATA,
            R(controller_id=old_controller, controller_epoch=stale_epoch, live_brokers=[]),
        )
        assert response.error_code == STALE_CONTROLLER_EPOCH
        L = m.LeaderAndIsrRequest
        state = L.LeaderAndIsrPartitionState(
            topic_name="fenced", partition_index=0, controller_epoch=stale_epoch,
            leader=old_controller, leader_epoch=99, isr=[old_controller], replicas=[0, 1, 2],
        )  # fmt: skip
        response = connection.send(
            ApiKey.LEADER_AND_ISR,
            L(controller_id=old_controller, controller_epoch=stale_epoch,
              ungrouped_partition_states=[state],
              topic_states=[L.LeaderAndIsrTopicState(topic_name="fenced",
                                                     partition_states=[state])]),
        )  # fmt: skip
    errors = [e.error_code for t in response.topics for e in t.partition_errors] or [
        e.error_code for e in response.partition_errors
    ]
    assert errors == [STALE_CONTROLLER_EPOCH]
    assert cluster.leader_of("fenced", 0) == target  # nothing changed
    partition = cluster.brokers[target].replica_manager.partitions[KtPartition("fenced", 0)]
    assert partition.leader_epoch < 99


def test_a_broker_refuses_requests_meant_for_its_earlier_registration(kt_cluster) -> None:
    """A controller's request stamped with an older broker epoch than the broker's
    registration (it was queued for the process before a restart) is refused with
    STALE_BROKER_EPOCH, as Kafka's isBrokerEpochStale refuses it, and changes nothing."""
    cluster = kt_cluster(3, zookeeper=True)
    create_topic(cluster, "restarted")
    target = cluster.leader_of("restarted", 0)
    broker = cluster.brokers[target]
    assert broker.broker_epoch > 0
    controller = cluster.controller_id()
    U = m.UpdateMetadataRequest
    with BrokerConnection("127.0.0.1", cluster.ports[target]) as connection:
        response = connection.send(ApiKey.UPDATE_METADATA, U(
            controller_id=controller, controller_epoch=broker.controller_epoch_seen,
            broker_epoch=broker.broker_epoch - 1, live_brokers=[],
        ))  # fmt: skip
        assert response.error_code == STALE_BROKER_EPOCH
    assert sorted(broker.metadata_cache.brokers) == [0, 1, 2]  # nothing applied
