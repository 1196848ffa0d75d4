"""kt's producer is idempotent as Kafka's is since 3.0: on by default, quietly off when
left at its default beside acks other than all, retries=0 or more than five requests in
flight, and an error with the Java producer's message when asked for beside them
(ProducerConfig.postProcessAndValidateIdempotenceConfigs)."""

from __future__ import annotations

import pytest

from kt.client.producer_config import idempotence


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({}, True),
        ({"acks": "all", "retries": "3"}, True),
        ({"acks": "-1"}, True),
        ({"enable.idempotence": "false"}, False),
        ({"enable.idempotence": "FALSE", "acks": "1"}, False),
        ({"acks": "1"}, False),
        ({"acks": "0"}, False),
        ({"retries": "0"}, False),
        ({"max.in.flight.requests.per.connection": "6"}, False),
        ({"enable.idempotence": "true", "acks": "all"}, True),
    ],
)  # fmt: skip
def test_on_unless_off_or_quietly_off(props: dict[str, str], expected: bool) -> None:
    assert idempotence(props) is expected


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"enable.idempotence": "true", "acks": "1"}, "Must set acks to all in order to use "
         "the idempotent producer. Otherwise we cannot guarantee idempotence."),
        ({"enable.idempotence": "true", "retries": "0"},
         "Must set retries to non-zero when using the idempotent producer."),
        ({"enable.idempotence": "true", "max.in.flight.requests.per.connection": "6"},
         "Must set max.in.flight.requests.per.connection to at most 5 to use the idempotent "
         "producer."),
        ({"enable.idempotence": "yes"}, "Invalid value yes for configuration "
         "enable.idempotence: Expected value to be either true or false"),
    ],
)  # fmt: skip
def test_asked_for_beside_a_conflict_is_an_error(props: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError) as info:
        idempotence(props)
    assert str(info.value) == message
