"""A Kafka Streams instance killed -9 on kt beside Kafka 4.4, in one run (issue 42).

  interop/fetch-kafka.sh                      # once: Kafka 4.4 and Kafka Streams 4.4
  python benchmarks/streams_failover.py [--runs 2] [--session-timeout-ms 45000]
                                       [--heartbeat-interval-ms 5000]

Kafka Streams 4.4's word count (interop/StreamsGroupWordCount.java: a repartition and a
state store) with group.protocol=streams and exactly_once_v2 in two instances, one
standby replica per task, on one kt broker and on one Kafka 4.4 broker with the same
group settings. Once both instances run, one is killed -9; printed per broker: the
seconds until the other runs every active task (target: within the session timeout, and
kt <= Kafka 4.4), and the seconds until the counts of lines written after the kill are
exact (read at read_committed).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from broker import KtBroker  # noqa: E402

from kt.client.client import KafkaClient  # noqa: E402
from kt.client.groups import GroupAdmin  # noqa: E402
from kt.client.streams_groups import StreamsGroupAdmin  # noqa: E402
from kt.errors import KafkaError  # noqa: E402
from kt.reference_kafka import KAFKA4_VERSION, ReferenceKafka  # noqa: E402
from tests.oracle.test_kafka4_streams_groups import (  # noqa: E402
    APP_ID,
    ONE_BROKER,
    PARTITIONS,
    expected_counts,
    last_counts,
    produce,
    two_instances,
)

EVERY_TASK = [("0", list(range(PARTITIONS))), ("1", list(range(PARTITIONS)))]


def wait(condition: Callable[[], bool], what: str, timeout_s: float = 300.0) -> float:
    """Seconds until `condition` holds (polled every 0.1 s)."""
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout_s:
            raise SystemExit(f"{what}: not within {timeout_s} s")
        time.sleep(0.1)
    return time.monotonic() - start


def actives(bootstrap: str) -> list[list[tuple[str, list[int]]]]:
    """Each member's active tasks, as the group's coordinator describes them."""
    with KafkaClient(bootstrap) as client:
        try:
            described = StreamsGroupAdmin(GroupAdmin(client)).describe(APP_ID)
        except KafkaError:
            return []
    return [sorted(m.assignment.active) for m in described.members]


def one_run(base: Path, bootstrap: str) -> tuple[float, float]:
    """(seconds until the survivor runs every task, until the counts are exact again)."""
    instances = two_instances(base, bootstrap, 2000)
    try:
        wait(lambda: last_counts(bootstrap) == expected_counts(2000), "the first counts")
        wait(lambda: len([a for a in actives(bootstrap) if a]) == 2, "two running instances")
        instances[1].kill()
        killed = time.monotonic()
        produce(bootstrap, 2000, 3000)
        moved = wait(lambda: actives(bootstrap) == [EVERY_TASK], "the survivor running all")
        wait(lambda: last_counts(bootstrap) == expected_counts(3000), "exact counts")
        return moved, time.monotonic() - killed
    finally:
        for instance in instances:
            instance.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--session-timeout-ms", type=int, default=45000)
    parser.add_argument("--heartbeat-interval-ms", type=int, default=5000)
    args = parser.parse_args()
    timings = {  # on both brokers alike
        "group.streams.session.timeout.ms": str(args.session_timeout_ms),
        "group.streams.min.session.timeout.ms": str(min(args.session_timeout_ms, 45000)),
        "group.streams.heartbeat.interval.ms": str(args.heartbeat_interval_ms),
        "group.streams.min.heartbeat.interval.ms": str(min(args.heartbeat_interval_ms, 5000)),
    }
    results: dict[str, list[tuple[float, float]]] = {"kt": [], "kafka": []}
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(args.runs):
            base = Path(tmp) / f"run{run}"
            (base / "kt").mkdir(parents=True)
            (base / "kafka").mkdir()
            overrides = {**ONE_BROKER, **timings}
            with KtBroker(base / "kt-logs", overrides=overrides) as kt:
                results["kt"].append(one_run(base / "kt", kt.bootstrap))
            kafka = ReferenceKafka(base / "kafka4", broker_id=0, version=KAFKA4_VERSION,
                                   overrides=overrides)  # fmt: skip
            with kafka.start():
                results["kafka"].append(one_run(base / "kafka", kafka.bootstrap))
            print(f"run {run}: kt {results['kt'][-1]}, Kafka 4.4 {results['kafka'][-1]}",
                  flush=True)  # fmt: skip
    print(
        f"\nsession timeout {args.session_timeout_ms} ms, heartbeats every "
        f"{args.heartbeat_interval_ms} ms, median of {args.runs} runs:"
    )
    print(f"{'':<10} {'tasks moved (s)':>16} {'counts exact (s)':>17}")
    for name, figures in results.items():
        moved = statistics.median(f[0] for f in figures)
        exact = statistics.median(f[1] for f in figures)
        print(f"{name:<10} {moved:>16.1f} {exact:>17.1f}")
    kt_moved = statistics.median(f[0] for f in results["kt"])
    kafka_moved = statistics.median(f[0] for f in results["kafka"])
    print(f"kt / Kafka 4.4, time until the survivor runs every task: {kt_moved / kafka_moved:.2f}x")


if __name__ == "__main__":
    main()
