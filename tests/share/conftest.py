"""The share tests' broker: one `kt server-start` serving share groups per test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.groups.conftest import start_broker
from tests.integration.conftest import BrokerProcess
from tests.share.test_share_consumers import SHARE


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    broker = start_broker(tmp_path_factory.mktemp("share"), **SHARE)
    yield broker
    if broker.alive:
        broker.stop()
