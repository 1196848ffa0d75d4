"""kt answers requests with fields out of range as Apache Kafka does (the table in
tests/request_fields.py, checked against Kafka by the oracle test of the same name), and
keeps the connection: a negative Fetch max_bytes once closed it, and a CreateTopics of
2^31-1 partitions took the broker's memory."""

from __future__ import annotations

import pytest

from tests.request_fields import CASES, DIFFERENCES, KT_ONLY, answers, codes

pytestmark = pytest.mark.slow


def test_fields_out_of_range_get_kafkas_answers(broker) -> None:
    on_kt = answers(broker.bootstrap, CASES)
    expected = {name: codes(names) for name, (*_, names) in CASES.items()}
    expected.update({name: codes(names) for name, (names, _) in DIFFERENCES.items()})
    assert {n: (c, expected[n]) for n, c in on_kt.items() if c != expected[n]} == {}


def test_what_kafka_on_zookeeper_cannot_answer(broker) -> None:
    on_kt = answers(broker.bootstrap, KT_ONLY)
    assert on_kt == {name: codes(names) for name, (*_, names) in KT_ONLY.items()}
