"""DescribeTopicPartitions (API 75, KIP-966), which Kafka 4's admin client describes topics
with: every topic when none is named, or those named, sorted; the partitions in pages of
at most `response_partition_limit` (bounded by max.request.partition.size.limit) with a
cursor where the next page starts; an unknown or invalid name answered with its error;
a cursor whose topic is not among those named refused (INVALID_REQUEST), as Kafka's
DescribeTopicPartitionsRequestHandler answers."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kt.client.connection import BrokerConnection
from kt.errors import KafkaError
from kt.protocol import ApiKey
from kt.protocol import messages as m

pytestmark = pytest.mark.slow

R = m.DescribeTopicPartitionsRequest


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from kt.testing import KtCluster

    base = tmp_path_factory.mktemp("describe-topic-partitions")
    cluster = KtCluster(2, base_dir=base, overrides={"max.request.partition.size.limit": "5"})
    cluster.start()
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    new = [NewTopic("alpha", 3, 2), NewTopic("beta", 4, 1), NewTopic("gamma", 2, 2)]
    for future in admin.create_topics(new).values():
        future.result(30)
    cluster.wait_until(lambda: all(
        len(admin.list_topics(t, timeout=30).topics[t].partitions) == n
        for t, n in (("alpha", 3), ("beta", 4), ("gamma", 2))), what="the topics")  # fmt: skip
    yield cluster
    cluster.close()


def describe(cluster, topics: list[str], limit: int = 2000, cursor: Any = None) -> Any:
    host, port = cluster.bootstrap_servers.split(",")[0].split(":")
    request = R(topics=[R.TopicRequest(name=t) for t in topics],
                response_partition_limit=limit, cursor=cursor)  # fmt: skip
    with BrokerConnection(host, int(port)) as connection:
        return connection.send_version(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, request)


def pages(cluster, topics: list[str], limit: int) -> list[list[tuple[str, list[int]]]]:
    """Every page, following the cursor: [(topic, [partition, ...]), ...] each."""
    out, cursor = [], None
    while True:
        response = describe(cluster, topics, limit, cursor)
        out.append([(t.name, [p.partition_index for p in t.partitions]) for t in response.topics])
        if response.next_cursor is None:
            return out
        cursor = R.Cursor(topic_name=response.next_cursor.topic_name,
                          partition_index=response.next_cursor.partition_index)  # fmt: skip


def test_every_topic_in_pages_bounded_by_the_broker(cluster) -> None:
    # The client asks for 100 a page; max.request.partition.size.limit=5 bounds it.
    assert pages(cluster, [], 100) == [
        [("alpha", [0, 1, 2]), ("beta", [0, 1])],
        [("beta", [2, 3]), ("gamma", [0, 1])],
    ]
    # A page full at a topic's end: the next starts with the next topic.
    assert pages(cluster, ["alpha", "gamma"], 3) == [[("alpha", [0, 1, 2])], [("gamma", [0, 1])]]


def test_a_topic_as_metadata_shows_it(cluster) -> None:
    (topic,) = describe(cluster, ["alpha"]).topics
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    metadata = admin.list_topics("alpha", timeout=30).topics["alpha"]
    assert (topic.error_code, topic.is_internal) == (0, False)
    assert topic.topic_id.int != 0
    assert [(p.partition_index, p.leader_id, list(p.replica_nodes), list(p.isr_nodes))
            for p in topic.partitions] == [
        (i, metadata.partitions[i].leader, metadata.partitions[i].replicas,
         metadata.partitions[i].isrs) for i in range(3)]  # fmt: skip
    assert all(p.offline_replicas == [] and p.eligible_leader_replicas == []
               for p in topic.partitions)  # fmt: skip


def test_unknown_invalid_and_refused(cluster) -> None:
    response = describe(cluster, ["nope", "bad name!", "beta"])
    errors = {t.name: t.error_code for t in response.topics}
    assert errors == {
        "nope": KafkaError("UNKNOWN_TOPIC_OR_PARTITION").code,
        "bad name!": KafkaError("INVALID_TOPIC_EXCEPTION").code,
        "beta": 0,
    }
    refused = describe(cluster, ["alpha"], cursor=R.Cursor(topic_name="beta", partition_index=0))
    assert [(t.name, t.error_code) for t in refused.topics] == [
        ("alpha", KafkaError("INVALID_REQUEST").code)]  # fmt: skip


def test_kafka_pythons_admin_client_pages_through_it(cluster) -> None:
    """A real client: kafka-python's describe_topic_partitions, following the cursor."""
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        seen, cursor = [], None
        while True:
            page = admin.describe_topic_partitions(
                ["beta", "gamma"], response_partition_limit=3, cursor=cursor
            )
            seen += [(t["name"], p["partition_index"], p["leader_id"] >= 0)
                     for t in page["topics"] for p in t["partitions"]]  # fmt: skip
            if page["next_cursor"] is None:
                break
            cursor = page["next_cursor"]
    finally:
        admin.close()
    assert seen == [("beta", i, True) for i in range(4)] + [("gamma", i, True) for i in range(2)]
