"""kt serves through a ZooKeeper outage (issue 28): with ZooKeeper SIGSTOPped for 10 s,
and then its traffic dropped for 10 s, Produce (acks=1 and acks=all: no ISR needs to
change) and Fetch go on answering on every broker, nothing is lost, and afterwards a
topic can be created again (ZooKeeper and the controller at work). Before the broker's
ZooKeeper calls left its event loop, each fault stopped every broker (acks in 32-42 % of
the seconds). The scenario and its measures: kt.testing.outage; Kafka 3.9 in it:
tests/oracle/test_zookeeper_outage.py."""

from __future__ import annotations

import time

import pytest

from kt.metadata.store import SessionExpiredError
from kt.testing import KtCluster
from kt.testing.outage import SESSION_MS, OutageLoad, create_topic, run_outage_scenario, table
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


def test_kt_serves_through_a_session_expiry_and_comes_back_whole(tmp_path, capsys) -> None:
    """ZooKeeper out of reach for longer than the session timeout: every broker's session
    expires. The brokers serve meanwhile (nothing needs ZooKeeper), then register again
    under new sessions, a controller is elected (one whose watch already re-elected it in
    the new session must not resign on the expiry it hears after), and the ISRs grow
    back: acks=all flows again and nothing was lost."""
    if not zookeeper_installed():
        unavailable("Debian's zookeeper package is not installed")
    with running_zookeeper(tmp_path / "zk") as zookeeper:
        proxy = TcpProxy("127.0.0.1", zookeeper.port)
        try:
            with KtCluster(
                3,
                base_dir=tmp_path / "kt",
                zookeeper_connect=f"{proxy.address}/kt",
                overrides={"zookeeper.session.timeout.ms": "3000"},
            ) as cluster:
                bootstrap = cluster.bootstrap_servers
                create_topic(bootstrap, "t")
                load = OutageLoad(bootstrap, "t")
                load.start()
                cluster.wait_until(lambda: load.current().consumed > 0, what="the load")
                load.phase("before")
                time.sleep(3)
                proxy.drop()
                load.phase("dropped")
                time.sleep(8)  # the sessions (3 s) expire
                proxy.restore()
                load.phase("after")
                cluster.wait_until(lambda: _whole(cluster), timeout_s=30, what="full ISRs")
                create_topic(bootstrap, "after")  # ZooKeeper and a controller at work
                time.sleep(3)
                reports = load.stop()
        finally:
            proxy.close()
    with capsys.disabled():
        print("\n" + table(reports, []))
    for name in ("before", "dropped", "after"):
        for producer in ("acks=1", "acks=all"):
            assert reports[name].producers[producer].failed == 0, reports[name].row()
    assert reports["dropped"].seconds_with_acks("acks=1") >= 0.8, reports["dropped"].row()
    assert reports["after"].acked("acks=all") > 0


def _whole(cluster: KtCluster) -> bool:
    """Every broker registered, an active controller that every broker's Metadata answer
    names (an admin client keeps the controller it is told, as librdkafka's does), and
    every partition of "t" with all three in its ISR (read through a broker's session,
    which may be between its expiry and the next)."""
    try:
        if cluster.registered_brokers() != [0, 1, 2]:
            return False
        controller = cluster.controller_id()
        if controller < 0 or not cluster.brokers[controller].controller.is_active:
            return False
        if any(b.metadata_cache.controller_id != controller for b in cluster.brokers.values()):
            return False
        return all(sorted(cluster.partition_state("t", p).isr) == [0, 1, 2] for p in range(3))
    except SessionExpiredError:
        return False
