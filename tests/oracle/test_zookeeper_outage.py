"""Apache Kafka 3.9 in the ZooKeeper-outage scenario kt goes through in
tests/integration/test_zookeeper_outage.py (tests/zookeeper_outage.py): three brokers on
ZooKeeper paused for 10 s, then cut off for 10 s, under two producers and a consumer,
with CreateTopics and DescribeConfigs asked during each fault. Kafka serves through
both, as kt must; the table printed beside kt's is the comparison issue 28 asks for."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from kt.reference_kafka import ReferenceKafka
from kt.testing.outage import SESSION_MS, run_outage_scenario, table
from kt.testing.tcp_proxy import TcpProxy
from kt.testing.zookeeper import running_zookeeper, zookeeper_installed
from tests._environment import unavailable
from tests.zookeeper_outage import assert_served_through


def test_kafka_serves_through_a_zookeeper_outage(kafka_available, tmp_path, capsys) -> None:
    if not zookeeper_installed():
        unavailable("Debian's zookeeper package is not installed")
    with running_zookeeper(tmp_path / "zk", max_session_timeout_ms=SESSION_MS) as zookeeper:
        proxy = TcpProxy("127.0.0.1", zookeeper.port)
        brokers = [
            ReferenceKafka(tmp_path / f"kafka-{b}", broker_id=b,
                           zookeeper_connect=f"{proxy.address}/kafka",
                           overrides={"offsets.topic.replication.factor": "3"})
            for b in range(3)
        ]  # fmt: skip
        try:
            with ThreadPoolExecutor(3) as pool:  # three JVMs start together
                list(pool.map(ReferenceKafka.start, brokers))
            bootstrap = ",".join(b.bootstrap for b in brokers)
            reports, recovered = run_outage_scenario(bootstrap, zookeeper, proxy)
        finally:
            for broker in brokers:
                broker.stop()
            proxy.close()
    with capsys.disabled():
        print("\nApache Kafka 3.9:\n" + table(reports, recovered))
    assert_served_through(reports)
