"""kafka-python against `kt server-start`: admin, produce, consume, restart.

kafka-python 3 picks its protocol versions from ApiVersions and a release table: it
writes magic-2 batches only if the broker looks like Kafka >= 0.11, and zstd only if
it looks like >= 2.1, so this also checks what kt advertises. Snappy goes out in the
xerial framing that librdkafka never writes.
"""

from __future__ import annotations

import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import InvalidRecordError, InvalidTimestampError

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


def create_topic(bootstrap: str, topic: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)])
        described = admin.describe_topics([topic])
    finally:
        admin.close()
    assert described[0]["error_code"] == 0
    assert len(described[0]["partitions"]) == PARTITIONS


def produce(
    bootstrap: str, topic: str, records: list[Rec], codec: str, idempotence: bool
) -> list[Delivered]:
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        enable_idempotence=idempotence,
        compression_type=None if codec == "none" else codec,
        linger_ms=5,
        batch_size=64 * 1024,
    )
    try:
        futures = [
            producer.send(
                topic,
                key=rec.key,
                value=rec.value,
                headers=list(rec.headers),
                timestamp_ms=rec.timestamp_ms,
            )
            for rec in records
        ]
        producer.flush(60)
        metadata = [future.get(timeout=0) for future in futures]
    finally:
        producer.close(timeout=10)
    return [Delivered(m.partition, m.offset, rec) for m, rec in zip(metadata, records, strict=True)]


def consume(bootstrap: str, topic: str, ends: dict[int, int]) -> dict[int, list[tuple[int, Rec]]]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    partitions = [TopicPartition(topic, p) for p in ends]
    consumer.assign(partitions)
    consumer.seek_to_beginning(*partitions)
    out: dict[int, list[tuple[int, Rec]]] = {p: [] for p in ends if ends[p]}
    remaining = sum(ends.values())
    deadline = time.monotonic() + 60
    try:
        while remaining and time.monotonic() < deadline:
            for tp, messages in consumer.poll(timeout_ms=1000, max_records=5000).items():
                for m in messages:
                    rec = Rec(m.key, m.value, tuple(m.headers), m.timestamp)
                    out[tp.partition].append((m.offset, rec))
                remaining -= len(messages)
    finally:
        consumer.close()
    assert remaining == 0, f"{remaining} records not read back"
    return out


@pytest.mark.parametrize("idempotence", [False, True], ids=["acks-all", "idempotent"])
@pytest.mark.parametrize("codec", CODECS)
def test_produce_consume_restart(module_broker, codec: str, idempotence: bool) -> None:
    topic = f"kafka-python-{codec}-{'idem' if idempotence else 'plain'}"
    create_topic(module_broker.bootstrap, topic)
    sent = make_records(topic)
    delivered = produce(module_broker.bootstrap, topic, sent, codec, idempotence)
    expected = check_delivered(sent, delivered)
    check_partitions(expected, consume(module_broker.bootstrap, topic, counts(expected)))

    module_broker.restart()
    check_partitions(expected, consume(module_broker.bootstrap, topic, counts(expected)))
    check_stored(module_broker.log_dir, topic, codec, len(sent), idempotence)


def an_hour_ago() -> dict:
    return {"timestamp_ms": int(time.time() * 1000) - 3_600_000}


@pytest.mark.parametrize(
    ("config", "refused", "error"),
    [
        ({"message.timestamp.before.max.ms": "60000"}, an_hour_ago, InvalidTimestampError),
        ({"cleanup.policy": "compact"}, lambda: {"key": None}, InvalidRecordError),
    ],
    ids=["timestamp-bounds", "compacted-no-key"],
)
def test_the_leader_refuses_a_record_that_breaks_the_topics_rules(
    module_broker, config: dict[str, str], refused, error: type
) -> None:
    """Kafka's per-record rules reach the client as its error codes, and the refused
    record is not stored: the next one gets offset 0."""
    topic = f"kafka-python-refused-{error.__name__}"
    admin = KafkaAdminClient(bootstrap_servers=module_broker.bootstrap)
    try:
        admin.create_topics([NewTopic(topic, 1, 1, topic_configs=config)])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=module_broker.bootstrap, retries=0)
    try:
        with pytest.raises(error):
            producer.send(topic, b"refused", **{"key": b"k", **refused()}).get(timeout=30)
        assert producer.send(topic, b"stored", key=b"k").get(timeout=30).offset == 0
    finally:
        producer.close()
