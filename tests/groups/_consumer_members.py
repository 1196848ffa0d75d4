"""confluent-kafka group members of either protocol, each on its own thread, for the tests
of Kafka 4's consumer groups (KIP-848) and of the migration between the protocols.

A member commits after each batch and in its revocation callback (commits precede
revocation), and logs when it gains and loses each partition, so a test can check that
no partition had two owners at one instant (`no_overlap`). A commit the coordinator
refuses because the group is moving (REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION,
UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH: Kafka's answers too) leaves that batch
uncommitted, as do partitions lost rather than revoked (the member's generation gone);
those records are kept in `uncommitted`: the only ones another member may read again.
"""

from __future__ import annotations

import itertools
import threading
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

_names = itertools.count()
# Kafka 4's consumer group timings for a quick test (each kt broker of these tests).
CONSUMER_GROUP_OVERRIDES = {
    "group.consumer.heartbeat.interval.ms": "300",
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.min.session.timeout.ms": "1000",
}
REFUSED_WHILE_MOVING = frozenset((
    KafkaError.REBALANCE_IN_PROGRESS, KafkaError.ILLEGAL_GENERATION,
    KafkaError.UNKNOWN_MEMBER_ID, KafkaError.STALE_MEMBER_EPOCH,
))  # fmt: skip


class Member:
    """A confluent-kafka consumer on its own thread: `protocol` "consumer" (KIP-848) or
    "classic" (JoinGroup/SyncGroup, librdkafka's default eager assignors)."""

    def __init__(self, bootstrap: str, group: str, topics: list[str], log: list,
                 instance_id: str | None = None, assignor: str | None = None,
                 protocol: str = "consumer") -> None:  # fmt: skip
        self.name = f"{protocol[:2]}{next(_names)}"
        config = {
            "bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
            "auto.offset.reset": "earliest", "enable.auto.commit": False,
            "topic.metadata.refresh.interval.ms": 500,
        }  # fmt: skip
        if protocol == "classic":
            config |= {"session.timeout.ms": 6000, "heartbeat.interval.ms": 300}
        if instance_id is not None:
            config["group.instance.id"] = instance_id
        if assignor is not None:
            config["group.remote.assignor"] = assignor
        self.consumer = Consumer(config)
        self.topics = topics
        self.log = log  # (time, member, "+" or "-", topic, partition), shared by a test
        self.owned: set[tuple[str, int]] = set()
        self.records: list[tuple[str, int, int]] = []
        self.uncommitted: set[tuple[str, int, int]] = set()
        self._pending: list[tuple[str, int, int]] = []
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _assigned(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self.owned.add((tp.topic, tp.partition))
            self.log.append((time.monotonic(), self.name, "+", tp.topic, tp.partition))

    def _revoked(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._commit()
        for tp in partitions:
            self.log.append((time.monotonic(), self.name, "-", tp.topic, tp.partition))
            self.owned.discard((tp.topic, tp.partition))

    def _lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Partitions lost (the member was fenced, or its generation is gone): nothing can
        be committed for them any more."""
        self.uncommitted.update(self._pending)
        self._pending = []
        for tp in partitions:
            self.log.append((time.monotonic(), self.name, "-", tp.topic, tp.partition))
            self.owned.discard((tp.topic, tp.partition))

    def _commit(self) -> None:
        pending, self._pending = self._pending, []
        try:
            self.consumer.commit(asynchronous=False)
        except KafkaException as e:
            code = e.args[0].code()
            if code in REFUSED_WHILE_MOVING:
                self.uncommitted.update(pending)
            elif code != KafkaError._NO_OFFSET:
                raise

    def _run(self) -> None:
        try:
            self.consumer.subscribe(self.topics, on_assign=self._assigned,
                                    on_revoke=self._revoked, on_lost=self._lost)  # fmt: skip
            while not self._stop.is_set():
                batch = self.consumer.consume(100, timeout=0.1)
                good = [msg for msg in batch if msg.error() is None]
                read = [(msg.topic(), msg.partition(), msg.offset()) for msg in good]
                self.records += read
                self._pending += read
                if good:
                    self._commit()
            self.consumer.close()
        except BaseException as e:
            self.error = e

    def close(self) -> None:
        self._stop.set()
        self._thread.join(60)
        assert not self._thread.is_alive(), f"{self.name} did not close"
        if self.error is not None:
            raise self.error


def no_overlap(log: list) -> None:
    """No partition was held by two members at one instant: each owner gave it up (its
    revocation callback) before the next one got it (its assignment callback)."""
    owner: dict[tuple[str, int], str] = {}
    for _, member, sign, topic, partition in sorted(log):
        tp = (topic, partition)
        if sign == "+":
            assert tp not in owner, f"{tp} given to {member} while {owner.get(tp)} holds it"
            owner[tp] = member
        else:
            assert owner.pop(tp, None) == member


def describe(bootstrap: str, group: str):  # type: ignore[no-untyped-def]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return admin.describe_consumer_groups([group])[group].result(30)
