"""aiokafka against `kt server-start`: admin, produce, consume, restart.

aiokafka 0.13+ sends ApiVersions v0 on every connection and raises
IncompatibleBrokerVersion for any API it needs that the broker does not list; it
decides magic-2 and zstd from the versions it finds there.
"""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from tests.integration.roundtrip import (
    CODECS,
    PARTITIONS,
    Delivered,
    Rec,
    check_delivered,
    check_partitions,
    check_stored,
    counts,
    make_records,
)

pytestmark = pytest.mark.slow


async def create_topic(bootstrap: str, topic: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics(
            [NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)]
        )
        described = await admin.describe_topics([topic])
    finally:
        await admin.close()
    assert described[0]["error_code"] == 0
    assert len(described[0]["partitions"]) == PARTITIONS


async def produce(
    bootstrap: str, topic: str, records: list[Rec], codec: str, idempotence: bool
) -> list[Delivered]:
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        enable_idempotence=idempotence,
        compression_type=None if codec == "none" else codec,
        linger_ms=5,
        max_batch_size=64 * 1024,
    )
    await producer.start()
    try:
        futures = [
            await producer.send(
                topic,
                key=rec.key,
                value=rec.value,
                headers=list(rec.headers),
                timestamp_ms=rec.timestamp_ms,
            )
            for rec in records
        ]
        metadata = await asyncio.wait_for(asyncio.gather(*futures), timeout=60)
    finally:
        await producer.stop()
    return [Delivered(m.partition, m.offset, rec) for m, rec in zip(metadata, records, strict=True)]


async def consume(
    bootstrap: str, topic: str, ends: dict[int, int]
) -> dict[int, list[tuple[int, Rec]]]:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False
    )
    await consumer.start()
    partitions = [TopicPartition(topic, p) for p in ends]
    consumer.assign(partitions)
    await consumer.seek_to_beginning(*partitions)
    out: dict[int, list[tuple[int, Rec]]] = {p: [] for p in ends if ends[p]}
    remaining = sum(ends.values())
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    try:
        while remaining and loop.time() < deadline:
            batches = await consumer.getmany(timeout_ms=1000, max_records=5000)
            for tp, messages in batches.items():
                for m in messages:
                    rec = Rec(m.key, m.value, tuple(m.headers), m.timestamp)
                    out[tp.partition].append((m.offset, rec))
                remaining -= len(messages)
    finally:
        await consumer.stop()
    assert remaining == 0, f"{remaining} records not read back"
    return out


@pytest.mark.parametrize("idempotence", [False, True], ids=["acks-all", "idempotent"])
@pytest.mark.parametrize("codec", CODECS)
def test_produce_consume_restart(module_broker, codec: str, idempotence: bool) -> None:
    topic = f"aiokafka-{codec}-{'idem' if idempotence else 'plain'}"
    bootstrap = module_broker.bootstrap
    asyncio.run(create_topic(bootstrap, topic))
    sent = make_records(topic)
    delivered = asyncio.run(produce(bootstrap, topic, sent, codec, idempotence))
    expected = check_delivered(sent, delivered)
    check_partitions(expected, asyncio.run(consume(bootstrap, topic, counts(expected))))

    module_broker.restart()
    check_partitions(expected, asyncio.run(consume(bootstrap, topic, counts(expected))))
    check_stored(module_broker.log_dir, topic, codec, len(sent), idempotence)
