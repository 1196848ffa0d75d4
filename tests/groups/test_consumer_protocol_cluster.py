"""Kafka 4's consumer groups on three `kt server-start` brokers on a real ZooKeeper: the
coordinator's broker is killed with SIGKILL, another broker loads the group from
`__consumer_offsets`, and the members carry on with the assignment they had."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kt.broker.group.group_metadata_manager import partition_for
from kt.client.client import KafkaClient
from kt.protocol import ApiKey
from kt.protocol import messages as m
from tests.groups._clients import wait_until
from tests.groups._consumer_members import CONSUMER_GROUP_OVERRIDES, Member, no_overlap
from tests.integration.test_zookeeper_cluster import ZkCluster

pytestmark = pytest.mark.slow


def produce(bootstrap: str, topic: str, start: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(start, start + count):
        producer.produce(topic, b"%d" % i, partition=i % 6)
    assert producer.flush(30) == 0


def describe(cluster: ZkCluster, group: str) -> m.ConsumerGroupDescribeResponse.DescribedGroup:
    """The group as its coordinator (whichever broker leads its partition) describes it."""
    leader = cluster.state("__consumer_offsets", partition_for(group, 50))["leader"]
    with KafkaClient(cluster.brokers[leader].bootstrap) as client:
        response = client.any_connection().send(
            ApiKey.CONSUMER_GROUP_DESCRIBE, m.ConsumerGroupDescribeRequest(group_ids=[group])
        )
    return response.groups[0]


def test_the_group_carries_on_when_its_coordinator_is_killed(tmp_path: Path, zookeeper: str):
    cluster = ZkCluster(tmp_path, zookeeper, overrides=CONSUMER_GROUP_OVERRIDES)
    members: list[Member] = []
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic("moving", 6, 3)])["moving"].result(30)
        produce(cluster.bootstrap, "moving", 0, 300)
        log: list = []
        members = [Member(cluster.bootstrap, "movers", ["moving"], log) for _ in range(2)]
        wait_until(lambda: sorted(len(x.owned) for x in members) == [3, 3],
                   what="a 3+3 split")  # fmt: skip
        wait_until(lambda: sum(len(x.records) for x in members) == 300, what="300 read")
        before = describe(cluster, "movers")
        assert (before.error_code, before.group_state) == (0, "Stable")
        owned = [set(x.owned) for x in members]

        coordinator = cluster.state("__consumer_offsets", partition_for("movers", 50))["leader"]
        cluster.brokers[coordinator].kill()
        cluster.wait_until(
            lambda: cluster.state("__consumer_offsets", partition_for("movers", 50))["leader"]
            not in (-1, coordinator),
            "a new coordinator",
        )  # fmt: skip
        produce(cluster.bootstrap, "moving", 300, 300)
        wait_until(lambda: sum(len(x.records) for x in members) >= 600, timeout_s=90,
                   what="the 300 records produced after the kill read")  # fmt: skip
        after = describe(cluster, "movers")
        assert after.error_code == 0
        assert {x.member_id: x.member_epoch for x in after.members} == {
            x.member_id: x.member_epoch for x in before.members
        }
        assert [set(x.owned) for x in members] == owned  # nobody lost its partitions
    finally:
        for member in members:
            member.close()
        cluster.close()
    read = Counter((t, p, o) for x in members for t, p, o in x.records)
    assert len(read) == 600 and set(read.values()) == {1}
    no_overlap(log)
