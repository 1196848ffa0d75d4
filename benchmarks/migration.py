"""A rolling migration of a Kafka 3.9 ZooKeeper cluster to kt and back, under load; beside
it, Kafka's own rolling restart (each broker replaced by Kafka again) as the baseline.

  python benchmarks/migration.py [--hold 30] [--no-baseline]

kt.testing.migration on Debian's ZooKeeper: three brokers, three topics of 3 partitions
(replication factor 3, min ISR 2), an idempotent acks=all librdkafka producer at 300
records/s and a consuming group. Each step stops one broker (SIGTERM: a controlled
shutdown) and starts the other kind on its broker.id, log.dirs and port, then waits for
every ISR to be whole (the swap's time), then holds `--hold` seconds under load. Printed
per step: the swap's seconds (target < 30 s); the p99 and the worst produce latency of
the records sent during the step (target: never above 10 s); and the p99 of the records
sent in the last 10 s of the hold over the p99 before the first step (target: back within
1.5x within 30 s of the step's end). At the end: records acknowledged, lost, out of order,
and the group's offset resets (all three targets: 0).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from kt.testing.migration import MigrationLoad, MixedCluster, create_topics
from kt.testing.outage import percentile
from kt.testing.zookeeper import running_zookeeper

TOPICS = ["orders", "payments", "audit"]


def p99(latencies: list[float]) -> float:
    return percentile(latencies, 99)


def run(base: Path, plan: list[tuple[int, str]], hold_s: float, title: str) -> None:
    with running_zookeeper(base / "zk") as zookeeper:
        cluster = MixedCluster(base, zookeeper.connect + "/migration")
        try:
            cluster.start_all("kafka")
            create_topics(cluster.bootstrap, TOPICS)
            cluster.wait_healthy(TOPICS)
            load = MigrationLoad(cluster.bootstrap, TOPICS)
            load.start()
            load.wait_progress()
            time.sleep(hold_s)
            now = time.monotonic()
            baseline = p99(load.latencies_sent_between(now - min(hold_s, 20), now))
            print(f"== {title}: p99 before the first step {baseline:.1f} ms")
            print(f"{'step':<22} {'swap s':>7} {'p99 ms':>8} {'max ms':>8} {'p99 after':>10}")
            for broker_id, kind in plan:
                name = f"broker {broker_id} to {kind}"
                load.step(name)
                began = time.monotonic()
                swap_s = cluster.swap(broker_id, kind, TOPICS)
                ended = time.monotonic()
                during = load.latencies_sent_between(began, ended)
                time.sleep(hold_s)
                after = load.latencies_sent_between(ended + hold_s - 10, ended + hold_s)
                worst = max(during, default=float("nan"))
                print(f"{name:<22} {swap_s:7.1f} {p99(during):8.1f} {worst:8.1f} "
                      f"{p99(after) / baseline:9.2f}x", flush=True)  # fmt: skip
            outcome = load.stop()
        finally:
            cluster.close()
    acked = sum(len(r) for r in outcome.acked.values())
    unplaced = sum(len(r) for r in outcome.acked_unplaced.values())
    print(f"acknowledged {acked} (and {unplaced} without an offset), lost "
          f"{len(outcome.lost())}, partitions out of order {len(outcome.out_of_order())}, "
          f"offset resets {len(outcome.resets)}, failed sends {len(outcome.failed)}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hold", type=float, default=30.0, help="seconds after each step")
    parser.add_argument("--no-baseline", action="store_true", help="skip Kafka's own restart")
    args = parser.parse_args()
    brokers = (1, 2, 3)
    with tempfile.TemporaryDirectory(prefix="kt-migration-") as tmp:
        migration = [(b, "kt") for b in brokers] + [(b, "kafka") for b in brokers]
        run(Path(tmp) / "migration", migration, args.hold, "Kafka -> kt -> Kafka")
        if not args.no_baseline:
            restart = [(b, "kafka") for b in brokers]
            run(Path(tmp) / "restart", restart, args.hold, "Kafka's rolling restart")


if __name__ == "__main__":
    main()
