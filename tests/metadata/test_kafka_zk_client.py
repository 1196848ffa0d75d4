"""KafkaZkClient on the embedded store: the znodes a Kafka broker and controller write."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from kt.metadata import znodes as z
from kt.metadata.embedded import EmbeddedSession, EmbeddedStore
from kt.metadata.kafka_zk_client import KafkaZkClient
from kt.metadata.store import NodeExistsError
from tests.metadata.conftest import Recorder


@dataclass
class Listener:
    listener_name: str
    host: str
    port: int


@dataclass
class State:
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: list[int] = field(default_factory=list)
    controller_epoch: int = 1


@pytest.fixture
def zk(session: EmbeddedSession) -> KafkaZkClient:
    client = KafkaZkClient(session)
    client.create_top_level_paths()
    return client


def test_top_level_paths_and_cluster_id(zk: KafkaZkClient, other: EmbeddedSession) -> None:
    for path in z.PERSISTENT_PATHS:
        assert other.exists(path) is not None
    cluster_id = zk.get_or_create_cluster_id()
    assert len(cluster_id) == 22
    assert KafkaZkClient(other).get_or_create_cluster_id() == cluster_id
    assert other.get(z.CLUSTER_ID)[0] == b'{"version":"1","id":"%s"}' % cluster_id.encode()


def test_broker_registration_is_ephemeral_and_unique(
    zk: KafkaZkClient, store: EmbeddedStore
) -> None:
    zk.register_broker(0, [Listener("PLAINTEXT", "h", 9092)], rack="r1")
    registration = zk.get_broker(0)
    assert registration is not None
    assert (registration.host, registration.port, registration.rack) == ("h", 9092, "r1")
    rival = KafkaZkClient(store.session())
    with pytest.raises(NodeExistsError):
        rival.register_broker(0, [Listener("PLAINTEXT", "h", 9093)])
    zk.register_broker(0, [Listener("PLAINTEXT", "h", 9094)])  # re-registering our own id
    assert rival.get_broker_ids() == [0]
    zk.close()
    assert rival.get_broker_ids() == [] and rival.get_broker(0) is None


def test_controller_election_bumps_the_epoch_once_per_winner(store: EmbeddedStore) -> None:
    first, second = (KafkaZkClient(store.session()) for _ in range(2))
    first.create_top_level_paths()
    assert first.get_controller_id() == -1
    assert first.register_controller_and_increment_epoch(0) == (1, 1)
    assert second.register_controller_and_increment_epoch(1) is None
    assert second.get_controller_id() == 0
    assert second.get_controller_epoch() == (1, 1)
    first.close()
    assert second.register_controller_and_increment_epoch(1) == (2, 2)
    assert second.session.get(z.CONTROLLER_EPOCH)[0] == b"2"


def test_separate_register_and_increment(store: EmbeddedStore) -> None:
    zk, rival = KafkaZkClient(store.session()), KafkaZkClient(store.session())
    changes = Recorder()
    rival.watch_controller(changes)
    assert zk.register_controller(3) and zk.register_controller(3)
    assert not rival.register_controller(4)
    assert zk.increment_controller_epoch() == 1
    assert zk.increment_controller_epoch() == 2
    rival.resign_controller(3)  # not the rival's session: nothing happens
    zk.resign_controller(4)  # not this broker id: nothing happens
    assert rival.get_controller_id() == 3
    zk.resign_controller(3)
    assert rival.get_controller_id() == -1
    assert isinstance(rival.session, EmbeddedSession) and rival.session.wait_callbacks()
    assert changes.events == [("CREATED", "/controller")]


def test_topic_creation_assignment_and_states(zk: KafkaZkClient, other: EmbeddedSession) -> None:
    topics = Recorder()
    zk.get_all_topics(topics)
    topic_id = zk.create_topic("t", {0: [2, 1], 1: [0, 2]}, {"retention.ms": "86400000"})
    with pytest.raises(NodeExistsError):
        zk.create_topic("t", {0: [0]})
    assignment = zk.get_topic_assignment("t")
    assert assignment == z.TopicAssignment("t", {0: [2, 1], 1: [0, 2]}, topic_id)
    assert other.get("/config/topics/t")[0] == b'{"version":1,"config":{"retention.ms":"86400000"}}'
    zk.create_partition_states([State("t", 0, 2, 0, [2, 1], 3), State("t", 1, 0, 0, [0, 2], 3)])
    assert other.get("/brokers/topics/t/partitions/0/state")[0] == (
        b'{"controller_epoch":3,"leader":2,"version":1,"leader_epoch":0,"isr":[2,1]}'
    )
    state = zk.get_partition_state("t", 1)
    assert state == z.LeaderAndIsr(0, 0, [0, 2], 3, zk_version=0)
    assert zk.update_partition_state(State("t", 1, 2, 1, [2], 3), expected_version=0) == 1
    assert zk.get_partition_state("t", 1) == z.LeaderAndIsr(2, 1, [2], 3, zk_version=1)
    assert isinstance(zk.session, EmbeddedSession) and zk.session.wait_callbacks()
    assert topics.events == [("CHILD", "/brokers/topics")]


def test_topic_deletion(zk: KafkaZkClient) -> None:
    zk.create_topic("t", {0: [0]})
    zk.create_partition_states([State("t", 0, 0, 0, [0])])
    zk.mark_topic_for_deletion("t")
    zk.mark_topic_for_deletion("t")
    assert zk.get_topic_deletions() == ["t"]
    zk.delete_topic("t")
    assert zk.get_all_topics() == [] and zk.get_topic_deletions() == []
    assert zk.get_topic_assignment("t") is None and zk.get_entity_config("topics", "t") == {}


def test_config_change_writes_a_sequential_notification(
    zk: KafkaZkClient, other: EmbeddedSession
) -> None:
    zk.change_entity_config("brokers", "<default>", {"leader.replication.throttled.rate": "1"})
    zk.change_entity_config("topics", "t", {"unclean.leader.election.enable": "true"})
    assert other.get_children("/config/changes") == [
        "config_change_0000000000",
        "config_change_0000000001",
    ]
    assert other.get("/config/changes/config_change_0000000001")[0] == (
        b'{"version":2,"entity_path":"topics/t"}'
    )
    assert zk.unclean_leader_election_enabled("t")
    assert not zk.unclean_leader_election_enabled("other")
