"""No ZooKeeper call runs on a broker's event loop thread (issue 28).

The loop serves every client: a ZooKeeper call made there holds up every Produce and
Fetch until ZooKeeper answers. Every KazooClient call of a three-broker cluster on
Debian's ZooKeeper is recorded with the thread that made it, through a scenario that
touches each part that talks to ZooKeeper: start-up and registration, topic creation
(CreateTopics and auto-creation), configs and client quotas, the group coordinator's
internal topic, producer ids, ISR shrink and expand, a broker's loss and return (the
controller's fail-over work), partition growth and topic deletion.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
)
from kazoo.client import KazooClient

from kt.metadata.store import SessionExpiredError

pytestmark = pytest.mark.slow

KAZOO_CALLS = ("create", "get", "set", "delete", "get_children", "exists", "ensure_path",
               "transaction", "sync")  # fmt: skip


@pytest.fixture
def kazoo_threads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, str, str]]]:
    """Every KazooClient call made from now on: (thread name, method, kt function)."""
    calls: list[tuple[str, str, str]] = []

    def recording(name: str) -> Any:
        original = getattr(KazooClient, name)

        def call(self: KazooClient, *args: Any, **kwargs: Any) -> Any:
            callers = [f for f in traceback.extract_stack(limit=12)
                       if "/kt/" in f.filename and "/kt/metadata/" not in f.filename]  # fmt: skip
            where = (
                f"{callers[-1].filename.rsplit('/kt/', 1)[-1]}:{callers[-1].name}"
                if callers
                else "?"
            )
            calls.append((threading.current_thread().name, name, where))
            return original(self, *args, **kwargs)

        return call

    for name in KAZOO_CALLS:
        monkeypatch.setattr(KazooClient, name, recording(name))
    yield calls


def _wait(condition: Any, what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_no_zookeeper_call_on_the_event_loop(kt_cluster, kazoo_threads) -> None:
    cluster = kt_cluster(3, zookeeper=True, overrides={"replica.lag.time.max.ms": "1500"})
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    for future in admin.create_topics([NewTopic("t", 3, 3)]).values():
        future.result(30)
    # CreateTopics v5+ (kafka-python's) answers each new topic's configs, read from the store
    from kafka.admin import KafkaAdminClient
    from kafka.admin import NewTopic as KafkaPythonNewTopic

    kafka_python = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    kafka_python.create_topics([KafkaPythonNewTopic("t5", 1, 1)])
    kafka_python.close()
    retention = ConfigEntry("retention.ms", "600000",
                            incremental_operation=AlterConfigOpType.SET)  # fmt: skip
    resource = ConfigResource("topic", "t", incremental_configs=[retention])
    admin.incremental_alter_configs([resource])[resource].result(30)
    described = admin.describe_configs([ConfigResource("topic", "t")])
    assert described[ConfigResource("topic", "t")].result(30)["retention.ms"].value == "600000"

    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                         "enable.idempotence": True, "allow.auto.create.topics": True})  # fmt: skip
    for i in range(300):
        producer.produce("t", f"v{i}".encode())
    producer.produce("auto-created", b"x")
    assert producer.flush(30) == 0

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "g",
                         "auto.offset.reset": "earliest"})  # fmt: skip
    consumer.subscribe(["t"])
    seen = 0
    deadline = time.monotonic() + 30
    while seen < 300 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            seen += 1
    consumer.commit(asynchronous=False)
    consumer.close()
    assert seen == 300

    # Broker 2 goes: the ISRs shrink (and the controller may move); it comes back: they grow.
    cluster.kill_broker(2)
    _wait(lambda: all(2 not in cluster.partition_state("t", p).isr for p in range(3)),
          "the ISRs to shrink")  # fmt: skip
    cluster.start_broker(2)
    _wait(lambda: all(2 in cluster.partition_state("t", p).isr for p in range(3)),
          "the ISRs to grow")  # fmt: skip

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_partitions([NewPartitions("t", 4)])["t"].result(30)
    admin.delete_topics(["t"])["t"].result(30)
    _wait(lambda: "t" not in admin.list_topics(timeout=10).topics, "the topic to go")

    loop_thread = cluster.loop_thread.name
    on_loop = sorted({f"{method} from {where}" for thread, method, where in kazoo_threads
                      if thread == loop_thread})  # fmt: skip
    assert len(kazoo_threads) > 100  # the recorder saw the cluster at work
    assert on_loop == []


def test_a_topic_config_that_cannot_be_read_holds_back_only_its_partitions(
    kt_cluster, monkeypatch
) -> None:
    """LeaderAndIsr reads the config of a topic new to the broker (off the loop). When the
    store cannot answer for one topic, its partitions wait (an error for each in the
    answer) instead of starting with configs that may not be theirs, and the other
    topics of the same request are led."""
    cluster = kt_cluster(1)
    server = cluster.brokers[0]
    read = server.configs.read_topic_config

    def failing(topic: str) -> Any:
        if topic == "unreadable":
            raise SessionExpiredError("ZooKeeper went away", f"/config/topics/{topic}")
        return read(topic)

    monkeypatch.setattr(server.configs, "read_topic_config", failing)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    futures = admin.create_topics([NewTopic("unreadable", 1, 1), NewTopic("readable", 1, 1)],
                                  operation_timeout=5)  # fmt: skip
    futures["readable"].result(30)
    partitions = server.replica_manager.partitions
    _wait(lambda: ("readable", 0) in partitions, "the readable topic's replica")
    assert ("unreadable", 0) not in partitions
    assert server.log_manager.config_for("unreadable") is server.log_manager.default_config
