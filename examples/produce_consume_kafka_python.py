"""Produce and consume with kafka-python against `kt server-start`.

    kt server-start &                                   # listens on 127.0.0.1:9092
    python examples/produce_consume_kafka_python.py [bootstrap]

Creates the topic `example-kafka-python` (3 partitions) through the admin API if
needed, produces 100 keyed records with a header (acks=all, gzip), then reads them back
in a consumer group and prints where each record landed. Nothing here is specific to
kt: point it at any Kafka cluster.
"""

from __future__ import annotations

import sys
import time
import uuid
from collections import Counter

from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import TopicAlreadyExistsError

TOPIC = "example-kafka-python"
COUNT = 100


def ensure_topic(bootstrap: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(TOPIC, num_partitions=3, replication_factor=1)])
        print(f"created topic {TOPIC}")
    except TopicAlreadyExistsError:
        pass
    finally:
        admin.close()


def produce(bootstrap: str, run: str) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", compression_type="gzip")
    futures = [
        producer.send(
            TOPIC,
            key=f"user-{i % 10}".encode(),
            value=f"{run} event {i}".encode(),
            headers=[("source", b"example")],
        )
        for i in range(COUNT)
    ]
    producer.flush()
    last = futures[-1].get(timeout=30)
    producer.close()
    print(f"produced {COUNT} records (the last at {last.topic}-{last.partition}@{last.offset})")


def consume(bootstrap: str, run: str) -> None:
    consumer = KafkaConsumer(
        TOPIC,
        bootstrap_servers=bootstrap,
        group_id=f"example-{run}",
        auto_offset_reset="earliest",
    )
    partitions: Counter[int] = Counter()
    deadline = time.monotonic() + 60
    try:
        while sum(partitions.values()) < COUNT and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=1000).items():
                partitions[tp.partition] += sum(r.value.startswith(run.encode()) for r in records)
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
