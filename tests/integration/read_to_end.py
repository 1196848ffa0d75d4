"""Read a topic's partitions to their ends with confluent-kafka, for the tests that check
what a consumer sees (at read_committed, a partition ends at its last stable offset)."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, Message, TopicPartition


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
