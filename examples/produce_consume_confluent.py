"""Produce and consume with confluent-kafka (librdkafka) against `kt server-start`.

    kt server-start &                                   # listens on 127.0.0.1:9092
    python examples/produce_consume_confluent.py [bootstrap]

Creates the topic `example-confluent` (3 partitions) through the admin API if needed,
produces 100 keyed records with a header (idempotent producer, zstd), then reads them
back in a consumer group and prints where each key's records landed. Nothing here is
specific to kt: point it at any Kafka cluster.
"""

from __future__ import annotations

import sys
import time
import uuid
from collections import Counter

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

TOPIC = "example-confluent"
COUNT = 100


def ensure_topic(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    future = admin.create_topics([NewTopic(TOPIC, num_partitions=3, replication_factor=1)])[TOPIC]
    try:
        future.result(timeout=30)
        print(f"created topic {TOPIC}")
    except KafkaException as e:
        if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise


def produce(bootstrap: str, run: str) -> None:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "enable.idempotence": True, "compression.type": "zstd"}
    )
    failures = []

    def on_delivery(err, msg) -> None:
        if err is not None:
            failures.append(err)

    for i in range(COUNT):
        producer.produce(
            TOPIC,
            key=f"user-{i % 10}",
            value=f"{run} event {i}",
            headers=[("source", b"example")],
            on_delivery=on_delivery,
        )
    producer.flush(30)
    if failures:
        raise SystemExit(f"{len(failures)} records failed: {failures[0]}")
    print(f"produced {COUNT} records")


def consume(bootstrap: str, run: str) -> None:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"example-{run}",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([TOPIC])
    partitions: Counter[int] = Counter()
    deadline = time.monotonic() + 60
    try:
        while sum(partitions.values()) < COUNT and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            if msg.error() is not None:
                raise KafkaException(msg.error())
            if msg.value().decode().startswith(run):
                partitions[msg.partition()] += 1
    finally:
        consumer.close()
    print(
        f"consumed {sum(partitions.values())} records: "
        + ", ".join(f"partition {p}: {n}" for p, n in sorted(partitions.items()))
    )
    if sum(partitions.values()) != COUNT:
        raise SystemExit("did not read back every record")


def main() -> None:
    bootstrap = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:9092"
    run = uuid.uuid4().hex[:8]
    ensure_topic(bootstrap)
    produce(bootstrap, run)
    consume(bootstrap, run)


if __name__ == "__main__":
    main()
