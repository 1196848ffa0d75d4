"""`kt console-producer` beside Kafka 3.9's kafka-console-producer.sh (issue 43): the same
file of lines on standard input, the same props, against the same kt broker, in one run.

  interop/fetch-kafka.sh                        # once: Kafka's jars
  python benchmarks/console_producer.py [--lines 1000000] [--repeat 2] [--keys]
                                        [--key-count 1000] [--partitions 1]

A file of --lines lines of 100 bytes (and, with --keys, "key<TAB>value" lines read with
parse.key=true, --key-count distinct keys, 1,000 by default) is piped into each tool,
alternating, into a fresh topic of --partitions partitions each time (with more than one,
keyed records are spread by their murmur2 hash); the wall time from spawn to exit (JVM
start and the last acknowledgement included, as a user sees it) gives lines/s; the
medians, the ratio kt / Kafka, and each process's CPU per line. The records each tool
wrote are counted on the broker (the partitions' end offsets), so that a tool losing
lines cannot win. Target: >= 1.0x.
"""

from __future__ import annotations

import argparse
import os
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
from confluent_kafka import Consumer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from kt.reference_kafka import tool_command, unavailable_reason  # noqa: E402


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def end_offset(bootstrap: str, topic: str, partitions: int) -> int:
    """The records in the topic: its partitions' end offsets summed."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-end-offset"})
    try:
        return sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
                   for p in range(partitions))  # fmt: skip
    finally:
        consumer.close()


def timed(command: list[str], lines: Path) -> tuple[float, float]:
    """(seconds from spawn to exit, CPU seconds) of a tool reading `lines`."""
    before, started = child_cpu(), time.monotonic()
    with open(lines, "rb") as stdin:
        result = subprocess.run(command, stdin=stdin, capture_output=True, timeout=1800)
    elapsed, cpu = time.monotonic() - started, child_cpu() - before
    if result.returncode:
        raise RuntimeError(f"{command[:3]} failed: {result.stderr[-2000:]!r}")
    return elapsed, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--keys", action="store_true", help="key<TAB>value lines")
    parser.add_argument("--partitions", type=int, default=1, help="of each fresh topic")
    parser.add_argument("--key-count", type=int, default=1000, help="distinct keys (--keys)")
    o = parser.parse_args()
    if (reason := unavailable_reason()) is not None:
        raise SystemExit(f"Kafka's jars are needed: {reason}")
    with tempfile.TemporaryDirectory(prefix="kt-console-bench-") as work, \
            KtBroker(Path(work) / "logs") as broker:  # fmt: skip
        lines = Path(work) / "lines.txt"
        with open(lines, "w") as f:
            for i in range(o.lines):
                value = f"{i:010d}" + "v" * 90
                f.write(f"k{i % o.key_count}\t{value}\n" if o.keys else f"{value}\n")
        props = ["--property", "parse.key=true"] if o.keys else []
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        got: dict[str, list[tuple[float, float]]] = {"kt": [], "kafka": []}
        loads = []
        for n in range(o.repeat):
            for side in ("kafka", "kt"):
                topic = f"console-{side}-{n}"
                admin.create_topics([NewTopic(topic, o.partitions, 1)])[topic].result(30)
                args = ["--bootstrap-server", broker.bootstrap, "--topic", topic, *props]
                kt = [sys.executable, "-m", "kt", "console-producer", *args]
                command = kt if side == "kt" else tool_command("kafka-console-producer", *args)
                loads.append(os.getloadavg()[0])
                got[side].append(timed(command, lines))
                written = end_offset(broker.bootstrap, topic, o.partitions)
                if written != o.lines:
                    raise SystemExit(f"{side} wrote {written} of {o.lines} lines")
    kt_s = statistics.median(s for s, _ in got["kt"])
    kafka_s = statistics.median(s for s, _ in got["kafka"])
    kt_cpu = statistics.median(c for _, c in got["kt"]) / o.lines * 1e6
    kafka_cpu = statistics.median(c for _, c in got["kafka"]) / o.lines * 1e6
    print(f"kt console-producer vs Kafka 3.9's kafka-console-producer, {o.lines:,} lines of "
          f"100 B{f' with {o.key_count:,} keys' if o.keys else ''}, {o.partitions} partition(s), "
          f"one kt broker, "
          f"{os.cpu_count()} cores, "
          f"median of {o.repeat}; load average during the runs "
          f"{min(loads):.1f}-{max(loads):.1f}")  # fmt: skip
    print("| tool | lines/s | CPU µs/line |")
    print("|---|---|---|")
    print(f"| kt console-producer | {o.lines / kt_s:,.0f} | {kt_cpu:.1f} |")
    print(f"| kafka-console-producer | {o.lines / kafka_s:,.0f} | {kafka_cpu:.1f} |")
    print(f"| kt / Kafka | {kafka_s / kt_s:.2f}x | |")


if __name__ == "__main__":
    main()
