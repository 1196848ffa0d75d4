"""kt's producer beside Kafka's Java producer (issue 43): `kt producer-perf-test` and Kafka
3.9's kafka-producer-perf-test (ProducerPerformance) against the same kt broker, with the
same producer props, in one run.

  interop/fetch-kafka.sh                        # once: Kafka's jars
  python benchmarks/producer_perf.py [--records 500000] [--repeat 2]

For each of acks=1 and acks=all, linger.ms 0 and 5, 100-byte and 1 KB records (a fresh
topic of one partition each time): both tools' records/s (medians of --repeat runs,
alternating), the ratio kt / Java, and each producer process's CPU per record (user +
system, from the child's rusage). Kafka's defaults otherwise (batch.size 16384,
max.in.flight 5, no compression; enable.idempotence as each tool's default: both true).
The load of the machine while it runs is printed with the table. Target: >= 1.0x in
every row.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from broker import KtBroker  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from kt.reference_kafka import tool_command, unavailable_reason  # noqa: E402

RATE = re.compile(r"^\d+ records sent, ([\d.]+) records/sec", re.M)


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(command: list[str]) -> tuple[float, float]:
    """(records/s the tool printed, CPU seconds its process used)."""
    before = child_cpu()
    result = subprocess.run(command, capture_output=True, text=True, timeout=900)
    cpu = child_cpu() - before
    match = RATE.search(result.stdout)
    if result.returncode or match is None:
        raise RuntimeError(f"{command[:3]} failed: {result.stdout[-2000:]}{result.stderr[-2000:]}")
    return float(match.group(1)), cpu


def perf_args(topic: str, records: int, size: int, bootstrap: str, acks: str,
              linger: int) -> list[str]:  # fmt: skip
    return ["--topic", topic, "--num-records", str(records), "--record-size", str(size),
            "--throughput", "-1", "--producer-props", f"bootstrap.servers={bootstrap}",
            f"acks={acks}", f"linger.ms={linger}"]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--repeat", type=int, default=2)
    o = parser.parse_args()
    if (reason := unavailable_reason()) is not None:
        raise SystemExit(f"Kafka's jars are needed: {reason}")
    rows = []
    loads = []
    with tempfile.TemporaryDirectory(prefix="kt-producer-bench-") as work, \
            KtBroker(Path(work) / "logs") as broker:  # fmt: skip
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        n = 0
        for size in (100, 1024):
            records = o.records if size == 100 else o.records // 4
            for acks in ("1", "all"):
                for linger in (0, 5):
                    got: dict[str, list[tuple[float, float]]] = {"kt": [], "java": []}
                    for _ in range(o.repeat):
                        for side in ("java", "kt"):
                            n += 1
                            topic = f"perf-{n}"
                            admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
                            args = perf_args(topic, records, size, broker.bootstrap, acks,
                                             linger)  # fmt: skip
                            kt = [sys.executable, "-m", "kt", "producer-perf-test", *args]
                            java = tool_command("kafka-producer-perf-test", *args)
                            command = kt if side == "kt" else java
                            loads.append(os.getloadavg()[0])
                            got[side].append(run(command))
                    kt_rate = statistics.median(r for r, _ in got["kt"])
                    java_rate = statistics.median(r for r, _ in got["java"])
                    kt_cpu = statistics.median(c for _, c in got["kt"]) / records * 1e6
                    java_cpu = statistics.median(c for _, c in got["java"]) / records * 1e6
                    rows.append((f"{size} B, acks={acks}, linger.ms={linger}", kt_rate,
                                 java_rate, kt_cpu, java_cpu))  # fmt: skip
                    print(f"  done: {rows[-1][0]}", file=sys.stderr, flush=True)
    print(f"kt producer-perf-test vs Kafka 3.9's kafka-producer-perf-test, one kt broker, "
          f"{os.cpu_count()} cores, median of {o.repeat}; load average during the runs "
          f"{min(loads):.1f}-{max(loads):.1f}")  # fmt: skip
    print(
        "| records, props | kt rec/s | Java rec/s | kt / Java | kt CPU µs/rec | Java CPU µs/rec |"
    )
    print("|---|---|---|---|---|---|")
    for name, kt_rate, java_rate, kt_cpu, java_cpu in rows:
        print(
            f"| {name} | {kt_rate:,.0f} | {java_rate:,.0f} | {kt_rate / java_rate:.2f}x | "
            f"{kt_cpu:.1f} | {java_cpu:.1f} |"
        )


if __name__ == "__main__":
    started = time.monotonic()
    main()
    print(f"({time.monotonic() - started:.0f} s)")
