"""Per-record errors in ProduceResponse (KIP-467): when a batch holds records that a
topic refuses, the broker names them, and librdkafka fails those records with the
broker's error and the batch's others with "invalid different record" (the Java client
does the same), instead of failing every record alike."""

from __future__ import annotations

import time
from collections import Counter

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = pytest.mark.slow


COMPACTED = {"cleanup.policy": "compact"}
RECENT_ONLY = {"message.timestamp.before.max.ms": "3600000"}  # an hour back at most
DAY_AGO_MS = int(time.time() * 1000) - 86_400_000


def produce_with_bad_records(bootstrap: str, topic: str, config: dict[str, str]) -> Counter:
    """100 records in one batch, every tenth without a key and stamped a day ago, to a
    topic with `config`: the error names the delivery reports give."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, 1, 1, config=config)
    admin.create_topics([new])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1000,
                         "batch.num.messages": 100, "enable.idempotence": False,
                         "retries": 0})  # fmt: skip
    # The batch must hold all 100 records: a producer that does not know the partition's
    # leader yet may send the first ones on their own once it learns it (CI saw 8 sent
    # apart, which then succeeded). So it learns the leader first.
    deadline = time.monotonic() + 30
    while producer.list_topics(topic, timeout=10).topics[topic].partitions[0].leader < 0:
        assert time.monotonic() < deadline, f"no leader for {topic}-0"
        time.sleep(0.1)
    outcomes: Counter = Counter()

    def report(error: KafkaError | None, _message: object) -> None:
        outcomes[error.name() if error else "NONE"] += 1

    for i in range(100):
        bad = i % 10 == 3
        producer.produce(topic, key=None if bad else f"key-{i}".encode(), value=b"v",
                         partition=0, timestamp=DAY_AGO_MS if bad else 0,
                         on_delivery=report)  # fmt: skip
    assert producer.flush(30) == 0
    return outcomes


def test_only_the_refused_records_fail(broker) -> None:
    outcomes = produce_with_bad_records(broker.bootstrap, "compacted", COMPACTED)
    assert outcomes == {"INVALID_RECORD": 10, "_INVALID_DIFFERENT_RECORD": 90}
    # The partition's error is INVALID_TIMESTAMP; librdkafka reports each record that
    # record_errors names as INVALID_RECORD (on Kafka as well: the oracle test).
    outcomes = produce_with_bad_records(broker.bootstrap, "recent", RECENT_ONLY)
    assert outcomes == {"INVALID_RECORD": 10, "_INVALID_DIFFERENT_RECORD": 90}
