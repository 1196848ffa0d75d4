"""Until kt has transactions (their own issue), a transactional producer is refused as
not supported, and nothing that looks like an ACL problem: librdkafka's init_transactions
fails with UNSUPPORTED_VERSION ("Failed to initialize Producer ID: Broker: API version
not supported"), while idempotent producers, which need the same InitProducerId, work."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient

pytestmark = pytest.mark.slow


def test_init_transactions_says_not_supported(broker) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "tx-1"})
    with pytest.raises(KafkaException) as info:
        producer.init_transactions(3)
    error = info.value.args[0]
    assert (error.code(), error.str()) == (
        KafkaError.UNSUPPORTED_VERSION,
        "Failed to initialize Producer ID: Broker: API version not supported",
    )
    topics = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10)
    assert "__transaction_state" not in topics.topics


def test_idempotent_producers_still_work(broker) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
    delivered: list[object] = []
    for i in range(100):
        producer.produce("idempotent", str(i).encode(),
                         on_delivery=lambda err, msg: delivered.append(err))  # fmt: skip
    assert producer.flush(30) == 0
    assert delivered == [None] * 100
