"""A broker for the group tests: no initial rebalance delay, a small `__consumer_offsets`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.conftest import BrokerProcess

GROUP_BROKER_OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "5",
    "log.cleaner.backoff.ms": "200",
}


def start_broker(base, **overrides: str) -> BrokerProcess:
    broker = BrokerProcess(base / "kt-logs", {**GROUP_BROKER_OVERRIDES, **overrides})
    broker.log_dir.mkdir()
    broker.start()
    return broker


@pytest.fixture(scope="module")
def group_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker per test module (tests use their own topics and groups)."""
    broker = start_broker(tmp_path_factory.mktemp("groups"))
    yield broker
    if broker.proc is not None and broker.proc.poll() is None:
        broker.stop()
