"""Three brokers through a ZooKeeper outage: kt beside Apache Kafka 3.9, same scenario.

  python benchmarks/zookeeper_outage.py [--only kt|kafka]

kt.testing.outage.run_outage on each: ZooKeeper (Debian's package) paused 10 s, then its
traffic dropped 10 s, under two librdkafka producers (acks=1, acks=all, 200 records/s
each) and a consumer, with CreateTopics and DescribeConfigs asked during each fault.
kt runs as three brokers in one process (kt.testing.KtCluster), Kafka as three JVMs.
Printed per system: each phase's table, then for each fault the p99 produce latency
during it over the p99 before it (target for kt: <= 2x), the share of seconds with
acknowledgements, and how long after the fault an admin round trip (CreateTopics) took
(target: the cluster whole within 10 s).
"""

from __future__ import annotations

import argparse
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kt.reference_kafka import ReferenceKafka
from kt.testing import KtCluster
from kt.testing.outage import FAULT_PHASES, SESSION_MS, PhaseReport, run_outage_scenario, table
from kt.testing.tcp_proxy import TcpProxy
from kt.testing.zookeeper import running_zookeeper


def run_kt(base: Path, zookeeper: Any, proxy: TcpProxy) -> tuple[dict, list[float]]:
    with KtCluster(3, base_dir=base / "kt", zookeeper_connect=f"{proxy.address}/kt") as cluster:
        return run_outage_scenario(cluster.bootstrap_servers, zookeeper, proxy)


def run_kafka(base: Path, zookeeper: Any, proxy: TcpProxy) -> tuple[dict, list[float]]:
    brokers = [
        ReferenceKafka(base / f"kafka-{b}", broker_id=b, zookeeper_connect=f"{proxy.address}/kafka",
                       overrides={"offsets.topic.replication.factor": "3"})
        for b in range(3)
    ]  # fmt: skip
    try:
        with ThreadPoolExecutor(3) as pool:
            list(pool.map(ReferenceKafka.start, brokers))
        return run_outage_scenario(",".join(b.bootstrap for b in brokers), zookeeper, proxy)
    finally:
        for broker in brokers:
            broker.stop()


def summary(name: str, reports: dict[str, PhaseReport], recovered: list[float]) -> str:
    lines = [f"== {name}", table(reports, recovered)]
    before = reports["before"]
    for fault in FAULT_PHASES:
        during = reports[fault]
        for producer in ("acks=1", "acks=all"):
            ratio = during.producers[producer].percentile(99) / before.producers[
                producer].percentile(99)  # fmt: skip
            lines.append(
                f"{fault:>8} {producer:>8}: p99 {ratio:5.2f}x the p99 before, "
                f"acks in {during.seconds_with_acks(producer):.0%} of its seconds"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("kt", "kafka"))
    args = parser.parse_args()
    runs = [("kt", run_kt), ("Apache Kafka 3.9", run_kafka)]
    if args.only:
        runs = [r for r in runs if (r[0] == "kt") == (args.only == "kt")]
    with tempfile.TemporaryDirectory(prefix="kt-zk-outage-") as tmp:
        for name, run in runs:
            base = Path(tmp) / name.split()[0]
            with running_zookeeper(base / "zk", max_session_timeout_ms=SESSION_MS) as zookeeper:
                proxy = TcpProxy("127.0.0.1", zookeeper.port)
                try:
                    reports, recovered = run(base, zookeeper, proxy)
                finally:
                    proxy.close()
            print(summary(name, reports, recovered), flush=True)


if __name__ == "__main__":
    main()
