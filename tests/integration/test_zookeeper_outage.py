"""kt serves through a ZooKeeper outage (issue 28): with ZooKeeper SIGSTOPped for 10 s,
and then its traffic dropped for 10 s, Produce (acks=1 and acks=all: no ISR needs to
change) and Fetch go on answering on every broker, nothing is lost, and afterwards a
topic can be created again (ZooKeeper and the controller at work). Before the broker's
ZooKeeper calls left its event loop, each fault stopped every broker (acks in 32-42 % of
the seconds). The scenario and its measures: kt.testing.outage; Kafka 3.9 in it:
tests/oracle/test_zookeeper_outage.py."""

from __future__ import annotations

import pytest

from kt.testing import KtCluster
from kt.testing.outage import SESSION_MS, run_outage_scenario, table
from kt.testing.tcp_proxy import TcpProxy
from kt.testing.zookeeper import running_zookeeper, zookeeper_installed
from tests._environment import unavailable
from tests.zookeeper_outage import assert_never_stopped, assert_served_through

pytestmark = pytest.mark.slow


def test_kt_serves_through_a_zookeeper_outage(tmp_path, capsys) -> None:
    if not zookeeper_installed():
        unavailable("Debian's zookeeper package is not installed")
    with running_zookeeper(tmp_path / "zk", max_session_timeout_ms=SESSION_MS) as zookeeper:
        proxy = TcpProxy("127.0.0.1", zookeeper.port)
        try:
            with KtCluster(3, base_dir=tmp_path / "kt",
                           zookeeper_connect=f"{proxy.address}/kt") as cluster:  # fmt: skip
                reports, recovered = run_outage_scenario(
                    cluster.bootstrap_servers, zookeeper, proxy
                )
        finally:
            proxy.close()
    with capsys.disabled():
        print("\n" + table(reports, recovered))
    assert_served_through(reports)
    assert_never_stopped(reports)
