"""Share groups (KIP-932) on three `kt server-start` brokers on a real ZooKeeper: share
partitions led by one broker keep their state on the share coordinator of another
(the internal RPCs), and the share coordinator's broker killed -9 loses no
acknowledgement: another loads `__share_group_state` and the group goes on."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import AcknowledgeType
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from kt.broker.share.share_coordinator_service import SHARE_GROUP_STATE_TOPIC
from kt.broker.share.share_state import SharePartitionKey
from kt.client.client import KafkaClient
from tests.integration.test_zookeeper_cluster import ZkCluster
from tests.share.test_share_consumers import (
    SHARE,
    consume,
    consumer,
    produce,
    ready,
)

pytestmark = pytest.mark.slow
STATE_PARTITIONS = 3
OVERRIDES = {**SHARE, "share.coordinator.state.topic.replication.factor": "3",
             "share.coordinator.state.topic.min.isr": "2",
             "share.coordinator.state.topic.num.partitions": str(STATE_PARTITIONS),
             "group.share.record.lock.duration.ms": "15000"}  # fmt: skip


def test_acknowledgements_survive_the_share_coordinator_killed(tmp_path: Path, zookeeper: str):
    cluster = ZkCluster(tmp_path, zookeeper, overrides=OVERRIDES)
    c = None
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic("queue", 1, 3)])["queue"].result(30)
        with KafkaClient(cluster.bootstrap) as client:
            topic_id = client.metadata(["queue"])["queue"].topic_id
        c = consumer(cluster.bootstrap, "workers", "queue", explicit=True)
        ready(cluster.bootstrap, "workers", "queue", [c], explicit=True)
        produce(cluster.bootstrap, "queue", range(300))
        first = consume(c, 300, lambda value, _: AcknowledgeType.ACCEPT if value < 150
                        else AcknowledgeType.RELEASE)  # fmt: skip
        assert sorted(first) == [(i, 1) for i in range(300)]
        # share.coordinator.state.topic.replication.factor and .min.isr shape the state topic
        state_topic = admin.list_topics(timeout=30).topics[SHARE_GROUP_STATE_TOPIC]
        assert [len(p.replicas) for p in state_topic.partitions.values()] == [3] * 3
        resource = ConfigResource(ConfigResource.Type.TOPIC, SHARE_GROUP_STATE_TOPIC)
        configs = admin.describe_configs([resource])[resource].result(30)
        assert configs["min.insync.replicas"].value == "2"

        key_partition = SharePartitionKey("workers", topic_id, 0).coordinator_partition(
            STATE_PARTITIONS
        )
        coordinator = cluster.state(SHARE_GROUP_STATE_TOPIC, key_partition)["leader"]
        cluster.brokers[coordinator].kill()
        cluster.wait_until(
            lambda: cluster.state(SHARE_GROUP_STATE_TOPIC, key_partition)["leader"]
            not in (-1, coordinator),
            "a new share coordinator",
        )  # fmt: skip
        after = consume(c, 150, timeout_s=120)
        assert sorted(after) == [(i, 2) for i in range(150, 300)]
    finally:
        if c is not None:
            c.close()
        cluster.close()
