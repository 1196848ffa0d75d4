"""Produce and consume with aiokafka against `kt server-start`.

    kt server-start &                                   # listens on 127.0.0.1:9092
    python examples/produce_consume_aiokafka.py [bootstrap]

Creates the topic `example-aiokafka` (3 partitions) through the admin API if needed,
produces 100 keyed records with a header (acks=all, lz4) and waits for every
acknowledgement, then reads them back in a consumer group and prints where each record
landed. Nothing here is specific to kt: point it at any Kafka cluster.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections import Counter

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

TOPIC = "example-aiokafka"
TOPIC_ALREADY_EXISTS = 36
COUNT = 100


async def ensure_topic(bootstrap: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        response = await admin.create_topics([NewTopic(TOPIC, 3, replication_factor=1)])
    finally:
        await admin.close()
    # aiokafka returns the CreateTopics response instead of raising: (name, code, message).
    for name, code, *_ in response.topic_errors:
        if code == 0:
            print(f"created topic {name}")
        elif code != TOPIC_ALREADY_EXISTS:
            raise SystemExit(f"cannot create {name}: error {code}")


async def produce(bootstrap: str, run: str) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", compression_type="lz4")
    await producer.start()
    try:
        pending = [
            await producer.send(
                TOPIC,
                key=f"user-{i % 10}".encode(),
                value=f"{run} event {i}".encode(),
                headers=[("source", b"example")],
            )
            for i in range(COUNT)
        ]
        delivered = await asyncio.gather(*pending)
    finally:
        await producer.stop()
    last = delivered[-1]
    print(f"produced {COUNT} records (the last at {last.topic}-{last.partition}@{last.offset})")


async def consume(bootstrap: str, run: str) -> None:
    consumer = AIOKafkaConsumer(
        TOPIC,
        bootstrap_servers=bootstrap,
        group_id=f"example-{run}",
        auto_offset_reset="earliest",
    )
    await consumer.start()
    partitions: Counter[int] = Counter()
    try:
        async with asyncio.timeout(60):
            while sum(partitions.values()) < COUNT:
                batches = await consumer.getmany(timeout_ms=1000)
                for tp, records in batches.items():
                    partitions[tp.partition] += sum(
                        r.value.startswith(run.encode()) for r in records
                    )
    finally:
        await consumer.stop()
    print(
        f"consumed {sum(partitions.values())} records: "
        + ", ".join(f"partition {p}: {n}" for p, n in sorted(partitions.items()))
    )


async def main() -> None:
    bootstrap = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:9092"
    run = uuid.uuid4().hex[:8]
    await ensure_topic(bootstrap)
    await produce(bootstrap, run)
    await consume(bootstrap, run)


if __name__ == "__main__":
    asyncio.run(main())
