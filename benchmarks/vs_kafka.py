"""kt beside Apache Kafka 3.9, the broker a user would otherwise run: the same scenarios,
the same clients, the same log settings, in one run, printed as one table.

  interop/fetch-kafka.sh                       # once: Kafka's jars
  python benchmarks/vs_kafka.py [--records 1000000] [--repeat 3] [scenario ...]

Scenarios (100-byte values, one partition, one broker each, log settings left at both
brokers' identical defaults: no flush per append, 1 GiB segments):
  produce       librdkafka producer (confluent-kafka), acks=1 and acks=all: records/s,
                and the broker process's CPU seconds per million records (read from
                /proc), since one client can be the bottleneck for both brokers
  perf          kafka-producer-perf-test (the Java producer, acks=1), kt producer-perf-test
                (kt's producer, acks=1), each against both brokers, and
                kafka-consumer-perf-test (a Java consumer in a group): records/s, CPU
  transactions  kafka-producer-perf-test with --transactional-id and
                --transaction-duration-ms (--txn-ms, 5 by default: about 1,000 records a
                transaction here), acks=all, against both brokers; and the same tool
                without transactions (idempotent, acks=all) against kt: records/s, the
                records per transaction each broker's log shows (issue 29's targets: >=
                1.0x Kafka's transactional figure, >= 0.8x kt's own non-transactional one)
  latency       kafka-e2e-latency (Java producer and consumer, acks=all): average ms
  startup       spawn to the first answered ApiVersions, fresh log dir (Kafka's storage
                formatted beforehand, as an operator does once)
  recovery      a broker killed with SIGKILL after --records records: spawn to the first
                answered ApiVersions, log recovery included

Both brokers run side by side for the whole run and are measured alternately, `--repeat`
times each (medians), after an untimed warm-up of each that also gives Kafka's JIT its
run. Kafka's heap is 512 MB (kt.reference_kafka). Targets (issue 22): produce records/s
>= 1.0x Kafka with acks=1 and acks=all; broker CPU per million records <= 1.0x; start-up
<= 0.2x.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from broker import (  # noqa: E402
    TOPIC,
    KtBroker,
    api_versions_answered,
    cpu_seconds,
    create_topic,
    librdkafka_produce,
)

from kt.reference_kafka import ReferenceKafka, run_tool, unavailable_reason  # noqa: E402


@dataclass
class Side:
    name: str
    bootstrap: str
    pid: int


@dataclass
class Row:
    scenario: str
    unit: str
    kt: float
    kafka: float
    higher_is_better: bool
    target: float | None = None  # on kt / Kafka

    def line(self) -> str:
        ratio = self.kt / self.kafka
        verdict = ""
        if self.target is not None:
            met = ratio >= self.target if self.higher_is_better else ratio <= self.target
            verdict = f"{'>=' if self.higher_is_better else '<='} {self.target:.1f}x: "
            verdict += "met" if met else "NOT met"
        return (f"| {self.scenario} | {self.kt:,.3g} {self.unit} | {self.kafka:,.3g} {self.unit} "
                f"| {ratio:.2f}x | {verdict} |")  # fmt: skip


def timed(side: Side, work: Callable[[], float]) -> tuple[float, float]:
    """(the seconds `work` reports, the broker's CPU seconds meanwhile)."""
    before = cpu_seconds(side.pid)
    seconds = work()
    return seconds, cpu_seconds(side.pid) - before


def alternate(sides: list[Side], repeat: int, run: Callable[[Side], tuple[float, float]]
              ) -> dict[str, tuple[float, float]]:  # fmt: skip
    """Medians of (value, cpu) per side, the sides measured in turn after a warm-up each."""
    for side in sides:
        run(side)
    samples: dict[str, list[tuple[float, float]]] = {s.name: [] for s in sides}
    for _ in range(repeat):
        for side in sides:
            samples[side.name].append(run(side))
    return {
        name: (statistics.median(v for v, _ in got), statistics.median(c for _, c in got))
        for name, got in samples.items()
    }


def bench_produce(sides: list[Side], records: int, repeat: int) -> list[Row]:
    rows = []
    for acks in ("1", "all"):
        got = alternate(sides, repeat, lambda s, acks=acks: timed(
            s, lambda: librdkafka_produce(s.bootstrap, records, acks)))  # fmt: skip
        (kt_s, kt_cpu), (kafka_s, kafka_cpu) = got["kt"], got["kafka"]
        rows.append(Row(f"produce acks={acks}, librdkafka", "rec/s", records / kt_s,
                        records / kafka_s, True, 1.0))  # fmt: skip
        rows.append(Row(f"  broker CPU, acks={acks}", "s/M rec", kt_cpu / records * 1e6,
                        kafka_cpu / records * 1e6, False, 1.0))  # fmt: skip
    return rows


def producer_perf_test(bootstrap: str, records: int) -> float:
    """Seconds the Java producer took, from its own records/sec figure."""
    result = run_tool(
        "kafka-producer-perf-test", "--topic", TOPIC, "--num-records", str(records),
        "--record-size", "100", "--throughput", "-1", "--producer-props",
        f"bootstrap.servers={bootstrap}", "acks=1", "linger.ms=5",
    )  # fmt: skip
    match = re.search(r"^\d+ records sent, ([\d.]+) records/sec", result.stdout, re.M)
    if result.returncode or match is None:
        raise RuntimeError(f"producer-perf-test failed: {result.stdout}{result.stderr}")
    return records / float(match.group(1))


def kt_producer_perf_test(bootstrap: str, records: int) -> float:
    """Seconds kt's producer took (`kt producer-perf-test`, its default path), from its own
    records/sec figure."""
    result = subprocess.run(
        [sys.executable, "-m", "kt", "producer-perf-test", "--topic", TOPIC, "--num-records",
         str(records), "--record-size", "100", "--throughput", "-1", "--producer-props",
         f"bootstrap.servers={bootstrap}", "acks=1", "linger.ms=5"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    match = re.search(r"^\d+ records sent, ([\d.]+) records/sec", result.stdout, re.M)
    if result.returncode or match is None:
        raise RuntimeError(f"kt producer-perf-test failed: {result.stdout}{result.stderr}")
    return records / float(match.group(1))


def consumer_perf_test(bootstrap: str, records: int) -> float:
    """Seconds of fetching for the Java consumer (its fetch.nMsg.sec), group join excluded."""
    result = run_tool("kafka-consumer-perf-test", "--bootstrap-server", bootstrap, "--topic",
                      TOPIC, "--messages", str(records), "--timeout", "60000")  # fmt: skip
    lines = result.stdout.strip().splitlines()
    if result.returncode or len(lines) < 2:
        raise RuntimeError(f"consumer-perf-test failed: {result.stdout}{result.stderr}")
    fields = dict(zip(lines[-2].split(", "), lines[-1].split(", "), strict=True))
    return records / float(fields["fetch.nMsg.sec"])


def bench_perf_tools(sides: list[Side], records: int, repeat: int) -> list[Row]:
    got = alternate(sides, repeat, lambda s: timed(
        s, lambda: producer_perf_test(s.bootstrap, records)))  # fmt: skip
    rows = [Row("kafka-producer-perf-test, acks=1", "rec/s", records / got["kt"][0],
                records / got["kafka"][0], True)]  # fmt: skip
    rows.append(Row("  broker CPU", "s/M rec", got["kt"][1] / records * 1e6,
                    got["kafka"][1] / records * 1e6, False))  # fmt: skip
    got = alternate(sides, repeat, lambda s: timed(
        s, lambda: kt_producer_perf_test(s.bootstrap, records)))  # fmt: skip
    rows.append(Row("kt producer-perf-test, acks=1", "rec/s", records / got["kt"][0],
                    records / got["kafka"][0], True))  # fmt: skip
    got = alternate(sides, repeat, lambda s: timed(
        s, lambda: consumer_perf_test(s.bootstrap, records)))  # fmt: skip
    rows.append(Row("kafka-consumer-perf-test (fetch)", "rec/s", records / got["kt"][0],
                    records / got["kafka"][0], True))  # fmt: skip
    rows.append(Row("  broker CPU", "s/M rec", got["kt"][1] / records * 1e6,
                    got["kafka"][1] / records * 1e6, False))  # fmt: skip
    return rows


TXN_TOPIC = "bench-txn"


def create_txn_topic(bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TXN_TOPIC, 1, 1)])[TXN_TOPIC].result(timeout=30)


def end_offset(bootstrap: str, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-offsets",
                         "isolation.level": "read_uncommitted"})  # fmt: skip
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), 30)[1]
    finally:
        consumer.close()


def perf_in_transactions(bootstrap: str, records: int, txn_ms: int) -> tuple[float, float]:
    """(seconds, records per transaction) of the Java producer writing `records` in
    transactions of `txn_ms` (acks=all, as transactions require), from its own figure
    and from the markers the log gained (one partition: one marker a transaction)."""
    before = end_offset(bootstrap, TXN_TOPIC)
    result = run_tool(
        "kafka-producer-perf-test", "--topic", TXN_TOPIC, "--num-records", str(records),
        "--record-size", "100", "--throughput", "-1", "--producer-props",
        f"bootstrap.servers={bootstrap}", "acks=all", "linger.ms=5",
        "--transactional-id", "bench-txn", "--transaction-duration-ms", str(txn_ms),
    )  # fmt: skip
    match = re.search(r"^\d+ records sent, ([\d.]+) records/sec", result.stdout, re.M)
    if result.returncode or match is None:
        raise RuntimeError(f"producer-perf-test failed: {result.stdout}{result.stderr}")
    markers = end_offset(bootstrap, TXN_TOPIC) - before - records
    return records / float(match.group(1)), records / max(markers, 1)


def producer_perf_acks_all(bootstrap: str, records: int) -> float:
    result = run_tool(
        "kafka-producer-perf-test", "--topic", TXN_TOPIC, "--num-records", str(records),
        "--record-size", "100", "--throughput", "-1", "--producer-props",
        f"bootstrap.servers={bootstrap}", "acks=all", "linger.ms=5",
    )  # fmt: skip
    match = re.search(r"^\d+ records sent, ([\d.]+) records/sec", result.stdout, re.M)
    if result.returncode or match is None:
        raise RuntimeError(f"producer-perf-test failed: {result.stdout}{result.stderr}")
    return records / float(match.group(1))


def bench_transactions(sides: list[Side], records: int, repeat: int, txn_ms: int) -> list[Row]:
    sizes: dict[str, list[float]] = {s.name: [] for s in sides}

    def run(side: Side) -> tuple[float, float]:
        seconds, per_txn = perf_in_transactions(side.bootstrap, records, txn_ms)
        sizes[side.name].append(per_txn)
        return seconds, 0.0

    got = alternate(sides, repeat, run)
    kt_side = next(s for s in sides if s.name == "kt")
    plain = alternate([kt_side], repeat,
                      lambda s: (producer_perf_acks_all(s.bootstrap, records), 0.0))  # fmt: skip
    size = {name: statistics.median(v) for name, v in sizes.items()}
    return [
        Row(f"producer-perf-test in transactions ({txn_ms} ms, acks=all)", "rec/s",
            records / got["kt"][0], records / got["kafka"][0], True, 1.0),
        Row("  records a transaction", "rec", size["kt"], size["kafka"], True),
        Row("  kt: in transactions / without (kt in both columns)", "rec/s",
            records / got["kt"][0], records / plain["kt"][0], True, 0.8),
    ]  # fmt: skip


def e2e_latency_ms(bootstrap: str) -> float:
    result = run_tool("kafka-e2e-latency", bootstrap, TOPIC, "2000", "all", "100")
    match = re.search(r"Avg latency: ([\d.]+) ms", result.stdout)
    if result.returncode or match is None:
        raise RuntimeError(f"e2e latency failed: {result.stdout}{result.stderr}")
    return float(match.group(1))


def bench_latency(sides: list[Side], repeat: int) -> list[Row]:
    got = alternate(sides, repeat, lambda s: (e2e_latency_ms(s.bootstrap), 0.0))
    return [Row("end-to-end latency, acks=all (avg)", "ms", got["kt"][0], got["kafka"][0],
                False)]  # fmt: skip


def until_answered(port: int, start: float) -> float:
    while not api_versions_answered(port):
        if time.perf_counter() - start > 120:
            raise RuntimeError("no ApiVersions answer after 120 s")
        time.sleep(0.002)
    return time.perf_counter() - start


def kt_ready_s(log_dir: Path) -> float:
    broker = KtBroker(log_dir)
    start = time.perf_counter()
    broker.spawn()
    try:
        return until_answered(broker.port, start)
    finally:
        assert broker.proc is not None
        broker.proc.terminate()
        broker.proc.wait(30)


def kafka_ready_s(base: Path) -> float:
    kafka = ReferenceKafka(base)
    kafka.format_storage()
    start = time.perf_counter()
    kafka.spawn()
    try:
        return until_answered(kafka.port, start)
    finally:
        kafka.stop()


def bench_startup(work: Path, repeat: int) -> list[Row]:
    kt = [kt_ready_s(work / f"kt-start-{i}") for i in range(repeat)]
    kafka = [kafka_ready_s(work / f"kafka-start-{i}") for i in range(repeat)]
    return [Row("start-up to first answer", "s", statistics.median(kt),
                statistics.median(kafka), False, 0.2)]  # fmt: skip


def bench_recovery(work: Path, records: int) -> list[Row]:
    """Fill a fresh broker, SIGKILL it, time the restart to the first answer."""
    kt_dir = work / "kt-recovery"
    with KtBroker(kt_dir) as broker:
        create_topic(broker.bootstrap)
        librdkafka_produce(broker.bootstrap, records)
        assert broker.proc is not None
        broker.proc.kill()
        broker.proc.wait(30)
    kt_s = kt_ready_s(kt_dir)
    kafka = ReferenceKafka(work / "kafka-recovery").start()
    create_topic(kafka.bootstrap)
    librdkafka_produce(kafka.bootstrap, records)
    kafka.kill()
    start = time.perf_counter()
    kafka.spawn()
    try:
        kafka_s = until_answered(kafka.port, start)
    finally:
        kafka.stop()
    return [Row(f"restart after kill -9, {records:,} records", "s", kt_s, kafka_s, False)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    scenarios = ["produce", "perf", "transactions", "latency", "startup", "recovery"]
    parser.add_argument("which", nargs="*", choices=[*scenarios, []])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--txn-ms", type=int, default=5, help="--transaction-duration-ms")
    args = parser.parse_args()
    reason = unavailable_reason()
    if reason is not None:
        sys.exit(f"vs_kafka: {reason}")
    which = args.which or scenarios
    work = Path(tempfile.mkdtemp(prefix="kt-vs-kafka-"))
    rows: list[Row] = []
    try:
        if {"produce", "perf", "transactions", "latency"} & set(which):
            with KtBroker(work / "kt-logs") as kt_broker:
                kafka = ReferenceKafka(work / "kafka").start()
                try:
                    assert kt_broker.proc is not None and kafka.proc is not None
                    sides = [Side("kt", kt_broker.bootstrap, kt_broker.proc.pid),
                             Side("kafka", kafka.bootstrap, kafka.proc.pid)]  # fmt: skip
                    for side in sides:
                        create_topic(side.bootstrap)
                    if "produce" in which:
                        rows += bench_produce(sides, args.records, args.repeat)
                    if "perf" in which:
                        rows += bench_perf_tools(sides, args.records, args.repeat)
                    if "transactions" in which:
                        for side in sides:
                            create_txn_topic(side.bootstrap)
                        rows += bench_transactions(sides, args.records, args.repeat, args.txn_ms)
                    if "latency" in which:
                        rows += bench_latency(sides, args.repeat)
                finally:
                    kafka.stop()
        if "startup" in which:
            rows += bench_startup(work, args.repeat)
        if "recovery" in which:
            rows += bench_recovery(work, args.records)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"kt vs Apache Kafka 3.9.1, {os.cpu_count()} cores, {args.records:,} records of 100 B,"
          f" median of {args.repeat}")  # fmt: skip
    print("| scenario | kt | Kafka | kt / Kafka | target |")
    print("|---|---|---|---|---|")
    for row in rows:
        print(row.line())


if __name__ == "__main__":
    main()
