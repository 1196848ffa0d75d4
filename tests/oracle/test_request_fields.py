"""The answers in tests/request_fields.py are Apache Kafka's: each request with a field
out of range goes to Kafka 3.9 on ZooKeeper (kt's model), whose error codes must be the
table's."""

from __future__ import annotations

from tests.request_fields import CASES, answers, codes


def test_the_table_holds_kafkas_answers(kafka_factory, zookeeper) -> None:
    kafka = kafka_factory(zookeeper_connect=zookeeper)
    on_kafka = answers(kafka.bootstrap, CASES)
    expected = {name: codes(names) for name, (*_, names) in CASES.items()}
    assert {n: (c, expected[n]) for n, c in on_kafka.items() if c != expected[n]} == {}
