"""confluent-kafka (librdkafka) against `kt server-start`: admin, produce, consume, restart.

librdkafka is the strictest of the three clients about versions and batch layouts: it
negotiates with ApiVersions only, writes raw (unframed) snappy, and with
enable.idempotence=true it checks sequence numbers against every ProduceResponse.
It also enables lz4 only when the broker lists FindCoordinator in ApiVersions (its proxy
for Kafka >= 0.8.2, src/rdkafka_feature.c) and otherwise sends lz4 batches uncompressed:
`check_stored` catches that.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

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


def create_topic(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=10)
    futures[topic].result(timeout=30)
    described = admin.list_topics(topic, timeout=10).topics[topic]
    assert described.error is None
    assert sorted(described.partitions) == list(range(partitions))


def produce(bootstrap: str, topic: str, records: list[Rec], **config: object) -> list[Delivered]:
    """Send every record; return the delivery reports (raising on the first failure)."""
    delivered: list[Delivered] = []
    errors: list[object] = []

    def on_delivery(err, msg, rec: Rec) -> None:
        if err is not None:
            errors.append(err)
        else:
            delivered.append(Delivered(msg.partition(), msg.offset(), rec))

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **config})
    for rec in records:
        producer.produce(
            topic,
            key=rec.key,
            value=rec.value,
            headers=list(rec.headers),
            timestamp=rec.timestamp_ms,
            on_delivery=lambda err, msg, rec=rec: on_delivery(err, msg, rec),
        )
        producer.poll(0)
    assert producer.flush(60) == 0, "records still queued after 60 s"
    assert not errors, errors[:3]
    return delivered


def consume(bootstrap: str, topic: str, ends: dict[int, int]) -> dict[int, list[tuple[int, Rec]]]:
    """Read each partition from the beginning up to `ends` (assign, no group protocol)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "kt-integration",  # required by the client; never joined (assign only)
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in ends])
    out: dict[int, list[tuple[int, Rec]]] = {p: [] for p in ends if ends[p]}
    remaining = sum(ends.values())
    deadline = time.monotonic() + 60
    try:
        while remaining and time.monotonic() < deadline:
            for msg in consumer.consume(1000, timeout=1.0):
                if msg.error() is not None:
                    raise KafkaException(msg.error())
                headers = tuple((k, v) for k, v in msg.headers() or [])
                rec = Rec(msg.key(), msg.value(), headers, msg.timestamp()[1])
                out[msg.partition()].append((msg.offset(), rec))
                remaining -= 1
    finally:
        consumer.close()
    assert remaining == 0, f"{remaining} records not read back"
    return out


@pytest.mark.parametrize("idempotence", [False, True], ids=["acks-all", "idempotent"])
@pytest.mark.parametrize("codec", CODECS)
def test_produce_consume_restart(module_broker, codec: str, idempotence: bool) -> None:
    topic = f"rdkafka-{codec}-{'idem' if idempotence else 'plain'}"
    create_topic(module_broker.bootstrap, topic)
    sent = make_records(topic)
    delivered = produce(
        module_broker.bootstrap,
        topic,
        sent,
        **{"acks": "all", "compression.type": codec, "enable.idempotence": idempotence},
    )
    expected = check_delivered(sent, delivered)
    check_partitions(expected, consume(module_broker.bootstrap, topic, counts(expected)))

    module_broker.restart()
    check_partitions(expected, consume(module_broker.bootstrap, topic, counts(expected)))
    check_stored(module_broker.log_dir, topic, codec, len(sent), idempotence)
