"""Group consumers of the three real client libraries behind one small interface.

Each `GroupConsumer` runs its library's subscribe-and-poll loop on a thread of its own
(as an application would), commits synchronously after every batch it receives, and
publishes what it owns and what it read. Tests only read those, and wait for
conditions with a deadline (`wait_until`), never for a fixed time.

Like an application, the loop outlives a commit that the coordinator refuses because
the group is rebalancing (REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID:
Kafka's answers too, e.g. to a commit queued behind the member's own JoinGroup); the
refusals are kept in `commit_errors`. Any other error ends the loop and is raised by
`close()`. The library's consumer is closed in every case (it leaves the group; and a
librdkafka handle destroyed unclosed during a rebalance can hang its destroy).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

SESSION_TIMEOUT_MS = 6000  # group.min.session.timeout.ms
HEARTBEAT_MS = 300

LIBRARIES = ("confluent-kafka", "kafka-python", "aiokafka")
STRATEGIES = {
    "confluent-kafka": ("range", "roundrobin", "cooperative-sticky"),
    "kafka-python": ("range", "roundrobin"),
    "aiokafka": ("range", "roundrobin"),
}


def wait_until(condition: Callable[[], bool], timeout_s: float = 45.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}")
        time.sleep(0.05)


class GroupConsumer:
    """One consumer in `group` subscribed to `topic`, polling on its own thread."""

    def __init__(
        self, library: str, bootstrap: str, group: str, topic: str, strategy: str = "range"
    ) -> None:
        self.library = library
        self.bootstrap = bootstrap
        self.group = group
        self.topic = topic
        self.strategy = strategy
        self.assignment: frozenset[int] = frozenset()
        self.records: list[tuple[int, int, bytes]] = []  # (partition, offset, value)
        self.commit_errors: list[str] = []  # commits refused during a rebalance
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"{library}-{group}", daemon=True)
        self._thread.start()

    def first_offsets(self) -> dict[int, int]:
        out: dict[int, int] = {}
        for partition, offset, _ in self.records:
            out.setdefault(partition, offset)
        return out

    def close(self) -> None:
        """Stop polling and leave the group (the library's close)."""
        self._stop.set()
        self._thread.join(60)
        assert not self._thread.is_alive(), f"{self.library} consumer did not close"
        if self.error is not None:
            raise self.error

    def _run(self) -> None:
        try:
            if self.library == "confluent-kafka":
                self._run_confluent()
            elif self.library == "kafka-python":
                self._run_kafka_python()
            else:
                asyncio.run(self._run_aiokafka())
        except BaseException as e:  # surfaced by close()
            self.error = e

    def _run_confluent(self) -> None:
        from confluent_kafka import Consumer, KafkaError, KafkaException

        refused = {KafkaError.REBALANCE_IN_PROGRESS, KafkaError.ILLEGAL_GENERATION,
                   KafkaError.UNKNOWN_MEMBER_ID}  # fmt: skip
        consumer = Consumer({
            "bootstrap.servers": self.bootstrap, "group.id": self.group,
            "auto.offset.reset": "earliest", "enable.auto.commit": False,
            "partition.assignment.strategy": self.strategy,
            "session.timeout.ms": SESSION_TIMEOUT_MS, "heartbeat.interval.ms": HEARTBEAT_MS,
            "topic.metadata.refresh.interval.ms": 1000,
        })  # fmt: skip
        try:
            consumer.subscribe([self.topic])
            while not self._stop.is_set():
                messages = consumer.consume(100, timeout=0.1)
                for msg in messages:
                    if msg.error() is None:
                        self.records.append((msg.partition(), msg.offset(), msg.value()))
                if any(msg.error() is None for msg in messages):
                    try:
                        consumer.commit(asynchronous=False)
                    except KafkaException as e:
                        if e.args[0].code() not in refused:
                            raise
                        self.commit_errors.append(e.args[0].name())
                self.assignment = frozenset(tp.partition for tp in consumer.assignment())
        finally:
            consumer.close()

    def _run_kafka_python(self) -> None:
        from kafka import KafkaConsumer
        from kafka.coordinator.assignors.range import RangePartitionAssignor
        from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
        from kafka.errors import CommitFailedError, RebalanceInProgressError

        assignor = {"range": RangePartitionAssignor,
                    "roundrobin": RoundRobinPartitionAssignor}[self.strategy]  # fmt: skip
        consumer = KafkaConsumer(
            self.topic, bootstrap_servers=self.bootstrap, group_id=self.group,
            auto_offset_reset="earliest", enable_auto_commit=False,
            partition_assignment_strategy=[assignor], session_timeout_ms=SESSION_TIMEOUT_MS,
            heartbeat_interval_ms=HEARTBEAT_MS, metadata_max_age_ms=1000,
        )  # fmt: skip
        try:
            # kafka-python 3.0.x loses the rejoin a leader starts when the topic metadata
            # it assigned from changes, if a poll() times out during that JoinGroup:
            # ConsumerCoordinator.poll() only checks need_rejoin(), which the leader's own
            # assignment turns False before the SyncGroup answer, and not the join still
            # in flight (the Java client checks rejoinNeededOrPending()). The member then
            # never takes its assignment nor heartbeats, and the coordinator rightly
            # expires it. Knowing the topic before the first poll makes the first
            # assignment complete, so no such rejoin happens.
            while self.topic not in consumer.topics() and not self._stop.is_set():
                self._stop.wait(0.05)
            while not self._stop.is_set():
                batches = consumer.poll(100)
                for tp, records in batches.items():
                    self.records += [(tp.partition, r.offset, r.value) for r in records]
                if batches:
                    try:
                        consumer.commit()
                    except (CommitFailedError, RebalanceInProgressError) as e:
                        self.commit_errors.append(type(e).__name__)
                self.assignment = frozenset(tp.partition for tp in consumer.assignment())
        finally:
            consumer.close()

    async def _run_aiokafka(self) -> None:
        from aiokafka import AIOKafkaConsumer
        from aiokafka.coordinator.assignors.range import RangePartitionAssignor
        from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
        from aiokafka.errors import CommitFailedError, RebalanceInProgressError

        assignor = {"range": RangePartitionAssignor,
                    "roundrobin": RoundRobinPartitionAssignor}[self.strategy]  # fmt: skip
        consumer = AIOKafkaConsumer(
            self.topic, bootstrap_servers=self.bootstrap, group_id=self.group,
            auto_offset_reset="earliest", enable_auto_commit=False,
            partition_assignment_strategy=(assignor,), session_timeout_ms=SESSION_TIMEOUT_MS,
            heartbeat_interval_ms=HEARTBEAT_MS, metadata_max_age_ms=1000,
        )  # fmt: skip
        await consumer.start()
        try:
            while not self._stop.is_set():
                batches = await consumer.getmany(timeout_ms=100)
                for tp, records in batches.items():
                    self.records += [(tp.partition, r.offset, r.value) for r in records]
                if batches:
                    try:
                        await consumer.commit()
                    except (CommitFailedError, RebalanceInProgressError) as e:
                        self.commit_errors.append(type(e).__name__)
                self.assignment = frozenset(tp.partition for tp in consumer.assignment())
        finally:
            await consumer.stop()


def produce(bootstrap: str, topic: str, per_partition: int, partitions: int = 4,
            start: int = 0) -> None:  # fmt: skip
    """`per_partition` records on each partition, values `p<partition>-<i>`."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(start, start + per_partition):
        for p in range(partitions):
            producer.send(topic, b"p%d-%d" % (p, i), partition=p)
    producer.flush()
    producer.close()


def create_topic(bootstrap: str, topic: str, partitions: int = 4, **configs: str) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, 1, topic_configs=configs)])
    finally:
        admin.close()
