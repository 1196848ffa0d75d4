"""Read a topic's partitions to their ends with confluent-kafka, for the tests that check
what a consumer sees (at read_committed, a partition ends at its last stable offset)."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition


def read_to_end(
    bootstrap: str,
    topic: str,
    partitions: int,
    isolation: str = "read_committed",
    timeout_s: float = 60.0,
    config: dict | None = None,
) -> list[Message]:
    """Every record from offset 0 until each partition's end, in the order received
    (`config`: more client settings, security.protocol and the like)."""
    consumer = Consumer({
        **(config or {}), "bootstrap.servers": bootstrap, "group.id": f"read-to-end-{isolation}",
        "isolation.level": isolation, "enable.partition.eof": True,
        "enable.auto.commit": False,
    })  # fmt: skip
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    messages: list[Message] = []
    ended: set[int] = set()
    deadline = time.monotonic() + timeout_s
    try:
        while len(ended) < partitions:
            assert time.monotonic() < deadline, f"ended {ended}, read {len(messages)}"
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                ended.add(message.partition())
                continue
            messages.append(message)
    finally:
        consumer.close()
    return messages


# What committed() may answer while a killed broker's groups move to a new coordinator.
COORDINATOR_MOVING = (KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_NOT_AVAILABLE,
                      KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError._TIMED_OUT)  # fmt: skip


def committed_total(
    bootstrap: str, group: str, topic: str, partitions: int, timeout_s: float = 60.0
) -> int:
    """The group's committed offsets of the topic, summed (a missing one counts 0): asked
    again while the group's coordinator moves, as a consumer would."""
    deadline = time.monotonic() + timeout_s
    while True:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                             "isolation.level": "read_uncommitted"})  # fmt: skip
        try:
            offsets = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], 30)
            return sum(max(tp.offset, 0) for tp in offsets)
        except KafkaException as e:
            if e.args[0].code() not in COORDINATOR_MOVING or time.monotonic() > deadline:
                raise
        finally:
            consumer.close()
        time.sleep(0.2)
