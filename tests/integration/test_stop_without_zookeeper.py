"""SIGTERM ends a broker within a bounded time whether ZooKeeper answers or not (Kafka 3.9
exits in half a second): controlled shutdown gives up after its retries, and the store's
client is closed with a timeout; the clean-shutdown marker is written all the same."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from kt.testing.zookeeper import ZooKeeperServer, zookeeper_installed
from tests._environment import unavailable
from tests.integration.conftest import BrokerProcess, new_broker

pytestmark = pytest.mark.slow


@pytest.fixture
def own_zookeeper(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A ZooKeeper of this test's own, which it kills."""
    if not zookeeper_installed():
        unavailable("Debian's zookeeper package is not installed (apt-get install zookeeper)")
    server = ZooKeeperServer(tmp_path / "zookeeper")
    server.start()
    yield server
    server.stop()


def seconds_to_exit(brokers: list[BrokerProcess]) -> float:
    start = time.monotonic()
    for broker in brokers:
        assert broker.proc is not None
        broker.proc.send_signal(signal.SIGTERM)
    for broker in brokers:
        assert broker.proc is not None
        broker.proc.wait(60)
    return time.monotonic() - start


@pytest.mark.parametrize("count", [1, 3])
def test_sigterm_ends_brokers_whose_zookeeper_was_killed(
    tmp_path: Path, own_zookeeper: ZooKeeperServer, count: int
) -> None:
    brokers = [
        new_broker(tmp_path, f"kt-logs-{i}", {"broker.id": str(i),
                                              "zookeeper.connect": own_zookeeper.connect})
        for i in range(count)
    ]  # fmt: skip
    try:
        assert own_zookeeper.proc is not None
        own_zookeeper.proc.kill()
        own_zookeeper.proc.wait()
        assert seconds_to_exit(brokers) <= 10
        for broker in brokers:
            assert broker.proc is not None and broker.proc.returncode == 0, broker.run_log()
            assert (broker.log_dir / ".kafka_cleanshutdown").exists()
    finally:
        for broker in brokers:
            if broker.alive:
                broker.kill()


def test_sigterm_ends_a_broker_whose_zookeeper_stops_answering(
    tmp_path: Path, own_zookeeper: ZooKeeperServer
) -> None:
    """ZooKeeper paused (SIGSTOP: its connections stay open, nothing is answered), then
    SIGTERM: the broker, its own controller, starts a controlled shutdown that waits on
    the store, goes on once its session is lost, and exits."""
    broker = new_broker(tmp_path, "kt-logs", {"zookeeper.connect": own_zookeeper.connect,
                                               "zookeeper.session.timeout.ms": "4000"})  # fmt: skip
    try:
        own_zookeeper.pause()
        assert seconds_to_exit([broker]) <= 10
        assert broker.proc is not None and broker.proc.returncode == 0, broker.run_log()
        assert (broker.log_dir / ".kafka_cleanshutdown").exists()
    finally:
        own_zookeeper.resume()
        if broker.alive:
            broker.kill()


@pytest.mark.parametrize("store", ["embedded", "zookeeper"])
def test_a_normal_start_and_stop_log_no_warning(tmp_path: Path, zookeeper: str, store: str) -> None:
    """One log line per real event: nothing at WARNING or above when all goes well; on
    ZooKeeper two brokers, the second hearing from the first, its controller, over the
    wire before it serves clients."""
    overrides = {"zookeeper.connect": zookeeper} if store == "zookeeper" else {}
    brokers = [new_broker(tmp_path, f"kt-logs-{i}", {**overrides, "broker.id": str(i)})
               for i in range(2 if store == "zookeeper" else 1)]  # fmt: skip
    for broker in reversed(brokers):
        assert broker.stop() == 0
    noisy = [line for broker in brokers for line in broker.run_log().splitlines()
             if " WARNING " in line or " ERROR " in line]  # fmt: skip
    assert noisy == []
