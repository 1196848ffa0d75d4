"""Real clients' group consumers against `kt server-start`: assignment shared and taken
over, commits that survive a consumer restart and a broker restart."""

from __future__ import annotations

import itertools

import pytest

from tests.groups._clients import (
    LIBRARIES,
    STRATEGIES,
    GroupConsumer,
    create_topic,
    produce,
    wait_until,
)
from tests.groups.conftest import start_broker

pytestmark = pytest.mark.slow
_names = itertools.count()

CASES = [(lib, s) for lib in LIBRARIES for s in STRATEGIES[lib]]


@pytest.mark.parametrize(("library", "strategy"), CASES)
def test_two_consumers_share_four_partitions_then_one_takes_all(group_broker, library, strategy):
    n = next(_names)
    topic, group = f"share-{n}", f"share-group-{n}"
    create_topic(group_broker.bootstrap, topic, 4)
    produce(group_broker.bootstrap, topic, 5)
    first = GroupConsumer(library, group_broker.bootstrap, group, topic, strategy)
    second = None
    try:
        wait_until(lambda: first.assignment == {0, 1, 2, 3}, what="the first consumer owns all")
        second = GroupConsumer(library, group_broker.bootstrap, group, topic, strategy)
        wait_until(
            lambda: len(first.assignment) == 2 and len(second.assignment) == 2
            and first.assignment | second.assignment == {0, 1, 2, 3},
            what="a 2+2 split",
        )  # fmt: skip
        second.close()
        second = None
        wait_until(lambda: first.assignment == {0, 1, 2, 3}, what="the survivor owns all 4")
        produce(group_broker.bootstrap, topic, 1, start=5)
        wait_until(lambda: {(p, o) for p, o, _ in first.records} >= {(p, 5) for p in range(4)},
                   what="the survivor reads new records on every partition")  # fmt: skip
    finally:
        for consumer in (first, second):
            if consumer is not None:
                consumer.close()


@pytest.mark.parametrize("library", LIBRARIES)
def test_a_restarted_consumer_resumes_after_its_committed_offsets(group_broker, library):
    n = next(_names)
    topic, group = f"resume-{n}", f"resume-group-{n}"
    create_topic(group_broker.bootstrap, topic, 4)
    produce(group_broker.bootstrap, topic, 10)
    consumer = GroupConsumer(library, group_broker.bootstrap, group, topic)
    wait_until(lambda: len(consumer.records) == 40, what="40 records read")
    consumer.close()

    produce(group_broker.bootstrap, topic, 3, start=10)
    again = GroupConsumer(library, group_broker.bootstrap, group, topic)
    try:
        wait_until(lambda: len(again.records) >= 12, what="the 12 new records")
        assert again.first_offsets() == {0: 10, 1: 10, 2: 10, 3: 10}
        assert sorted(v for _, _, v in again.records) == sorted(
            b"p%d-%d" % (p, i) for p in range(4) for i in range(10, 13)
        )
    finally:
        again.close()


def test_commits_survive_a_broker_restart(tmp_path):
    broker = start_broker(tmp_path)
    try:
        create_topic(broker.bootstrap, "restart", 4)
        produce(broker.bootstrap, "restart", 5)
        for library in LIBRARIES:
            consumer = GroupConsumer(library, broker.bootstrap, f"restart-{library}", "restart")
            wait_until(lambda c=consumer: len(c.records) == 20, what=f"{library} reads 20")
            consumer.close()
        broker.restart()
        produce(broker.bootstrap, "restart", 2, start=5)
        for library in LIBRARIES:
            consumer = GroupConsumer(library, broker.bootstrap, f"restart-{library}", "restart")
            try:
                wait_until(lambda c=consumer: len(c.records) >= 8, what=f"{library} resumes")
                assert consumer.first_offsets() == {0: 5, 1: 5, 2: 5, 3: 5}, library
            finally:
                consumer.close()
    finally:
        broker.stop()
