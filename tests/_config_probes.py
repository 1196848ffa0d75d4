"""How the broker keys of tests/test_config_keys.py are seen: the kinds of entry its
table holds, and the probes that look at a running kt cluster (or at what kt builds
from a configuration) for a key's effect."""

from __future__ import annotations

import itertools
import operator
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from kt.broker.server import KafkaServer
from kt.config import KafkaConfig, LogConfig
from kt.protocol import ApiKey
from kt.protocol import messages as m
from kt.testing import KtCluster


@dataclass(frozen=True)
class Topic:
    value: str
    topic_key: str
    expected: object


@dataclass(frozen=True)
class Probe:
    value: str
    check: Callable[[KtCluster], object]
    expected: object
    cluster: str = "tuned"  # the keys that turn features off share a cluster of their own


@dataclass(frozen=True)
class Built:
    """Shown on what kt builds from the config alone (no broker needs to run)."""

    value: str
    check: Callable[[KafkaConfig], object]
    expected: object


@dataclass(frozen=True)
class ShownBy:
    test: str  # path::function


def server(cluster: KtCluster) -> KafkaServer:
    return cluster.brokers[0]


def on_server(path: str) -> Callable[[KtCluster], object]:
    """The attribute at dotted `path` of the first broker, which the key sets."""
    return lambda cluster: operator.attrgetter(path)(server(cluster))


def task_interval(name: str) -> Callable[[KtCluster], object]:
    def check(cluster: KtCluster) -> object:
        tasks = {t.name: t.interval_s for t in server(cluster)._tasks}
        return tasks.get(name)

    return check


_topic_numbers = itertools.count()


def created_topic(cluster: KtCluster) -> tuple[int, int]:
    """(partitions, replication factor) of a topic created with the broker's defaults."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    name = f"defaults-{next(_topic_numbers)}"
    admin.create_topics([NewTopic(name, -1, -1)])[name].result(30)
    topic = admin.list_topics(name, timeout=30).topics[name]
    return len(topic.partitions), len(topic.partitions[0].replicas)


def internal_topic(topic: str) -> Callable[[KtCluster], tuple[int, int, LogConfig]]:
    """(partitions, replication factor, config) of an internal topic, which the first
    FindCoordinator for a group (__consumer_offsets) or a transactional id
    (__transaction_state) creates."""

    def check(cluster: KtCluster) -> tuple[int, int, LogConfig]:
        from kt.client.client import KafkaClient

        key_type = 1 if topic == "__transaction_state" else 0
        request = m.FindCoordinatorRequest(
            key="probe", key_type=key_type, coordinator_keys=["probe"]
        )
        with KafkaClient(cluster.bootstrap_servers) as client:
            client.any_connection().send(ApiKey.FIND_COORDINATOR, request)
        cluster.wait_until(lambda: topic in server(cluster).zk.get_all_topics(), what=topic)
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        answers = []  # one answer read whole: each Metadata may go to either broker, and
        # the controller tells the brokers of a new topic one after the other

        def known() -> bool:
            answers.append(admin.list_topics(topic, timeout=30).topics.get(topic))
            return answers[-1] is not None and not answers[-1].error

        cluster.wait_until(known, what=f"{topic} in Metadata")
        described = answers[-1]
        replicas = len(described.partitions[0].replicas)
        return len(described.partitions), replicas, server(cluster).topic_config(topic)

    return check


def offsets_topic(cluster: KtCluster) -> tuple[int, int, str]:
    partitions, replicas, config = internal_topic("__consumer_offsets")(cluster)
    return partitions, replicas, str(config.segment_bytes)


def transaction_topic(cluster: KtCluster) -> tuple[int, int, str, int]:
    partitions, replicas, config = internal_topic("__transaction_state")(cluster)
    return partitions, replicas, str(config.segment_bytes), config.min_insync_replicas


def auto_created(cluster: KtCluster) -> bool:
    """Does Metadata for an unknown topic, auto-creation allowed, create it?"""
    from kt.client.client import KafkaClient

    with KafkaClient(cluster.bootstrap_servers) as client:
        client.metadata(["auto-created"], allow_auto_create=True)
    return "auto-created" in server(cluster).zk.get_all_topics()


def committed_metadata_error(cluster: KtCluster) -> str:
    """The error of a commit whose metadata is 100 bytes long."""
    from confluent_kafka import Consumer, TopicPartition

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic("committed", 1, 1)])["committed"].result(30)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "metadata"})
    try:
        committed = consumer.commit(
            offsets=[TopicPartition("committed", 0, 1, metadata="m" * 100)], asynchronous=False
        )
        return committed[0].error.name() if committed[0].error else "NONE"
    except KafkaException as e:
        return e.args[0].name()
    finally:
        consumer.close()


def deletion_error(cluster: KtCluster) -> str:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic("doomed", 1, 1)])["doomed"].result(30)
    try:
        admin.delete_topics(["doomed"])["doomed"].result(30)
    except KafkaException as e:
        return e.args[0].name()
    return "NONE"


def metadata_broker(cluster: KtCluster) -> tuple[str, str | None]:
    """(host, rack) that Metadata advertises for broker 0."""
    from kt.client.client import KafkaClient

    with KafkaClient(cluster.bootstrap_servers) as client:
        client.metadata([])
        host, _, rack = client.brokers[0]
        return host, rack


def listen_backlog(port: int) -> int:
    """The backlog of the socket listening on `port`, as the kernel reports it (ss shows
    a listener's backlog as its Send-Q)."""
    lines = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True,
                           text=True, check=True).stdout.splitlines()  # fmt: skip
    return int(lines[0].split()[2])


def store_connection_timeout(config: KafkaConfig) -> float:
    from kt.broker.runner import open_store

    return open_store([config]).connection_timeout_s  # type: ignore[attr-defined]
