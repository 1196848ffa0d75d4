"""What /metrics costs: issue 31's targets.

  python benchmarks/metrics.py [--pairs 5] [--partitions 10000]

- Produce throughput with metrics on (metrics.listeners set, scraped every second by
  curl, as a busy Prometheus would) over metrics off: one librdkafka producer (100-byte
  values, acks=1), records acknowledged a second over 6-second runs, alternating between
  the two brokers over --pairs interleaved pairs; the ratio of the medians (target >=
  0.98). Single runs vary by up to 30 % on 2 cores, so the records a second per broker
  CPU second are given too: the steadier measure of what the metrics cost.
- A scrape of a broker with --partitions partitions (one topic, one replica): the
  median time of GET /metrics over 10 scrapes (target < 200 ms), and its size.
- Produce latency during scrapes on that broker: a producer at a steady 2,000 records a
  second (acks=1, linger.ms=0), each record's time from produce() to its delivery
  report, 10 s without scrapes, then 10 s with curl scraping every second (a busy
  Prometheus), then back to back; the ratios of the p99s (target within 1.5x).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_broker(log_dir: Path, metrics_port: int | None) -> tuple[subprocess.Popen, str]:
    overrides = ["--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override",
                 f"log.dirs={log_dir}"]  # fmt: skip
    if metrics_port is not None:
        overrides += ["--override", f"metrics.listeners=http://127.0.0.1:{metrics_port}"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "kt", "server-start", *overrides],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    port = re.search(r"//127\.0\.0\.1:(\d+)", proc.stdout.readline())
    assert port is not None
    return proc, f"127.0.0.1:{port.group(1)}"


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(600)


def scrape(port: int) -> bytes:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60) as answer:
        return answer.read()


def throughput(bootstrap: str, seconds: float) -> float:
    """Records acknowledged a second by one producer going as fast as it can."""
    acked = [0]

    def delivered(error, message) -> None:  # type: ignore[no-untyped-def]
        if error is None:
            acked[0] += 1

    producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 5,
                         "batch.size": 65536})  # fmt: skip
    value = b"v" * 100
    began = time.monotonic()
    deadline = began + seconds
    while time.monotonic() < deadline:
        try:
            producer.produce("perf", value, on_delivery=delivered)
        except BufferError:
            producer.poll(0.005)
        producer.poll(0)
    producer.flush(60)
    return acked[0] / (time.monotonic() - began)


class Scraper:
    """Another process scraping /metrics (as Prometheus does): every `interval_s`, or
    back to back with 0; counts its scrapes."""

    def __init__(self, port: int, interval_s: float) -> None:
        script = (f"while :; do curl -s -o /dev/null http://127.0.0.1:{port}/metrics; "
                  f"echo; sleep {interval_s}; done")  # fmt: skip
        self.proc = subprocess.Popen(["bash", "-c", script], stdout=subprocess.PIPE)
        self.scrapes = 0
        self._reader = threading.Thread(target=self._count, daemon=True)
        self._reader.start()

    def _count(self) -> None:
        assert self.proc.stdout is not None
        for _ in self.proc.stdout:
            self.scrapes += 1

    def stop(self) -> int:
        self.proc.kill()
        self.proc.wait()
        return self.scrapes


def cpu_seconds(pid: int) -> float:
    """A process's user and system CPU time so far (/proc/<pid>/stat)."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def latencies(bootstrap: str, seconds: float, rate: int) -> list[float]:
    """Milliseconds from produce() to each delivery report, at `rate` records a second."""
    out: list[float] = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 0})
    began = time.monotonic()
    sent = 0
    while time.monotonic() - began < seconds:
        while sent < (time.monotonic() - began) * rate:
            at = time.perf_counter()
            producer.produce("wide", b"v" * 100, partition=sent % 100,
                             on_delivery=lambda e, m, at=at: out.append(
                                 (time.perf_counter() - at) * 1000))  # fmt: skip
            sent += 1
        producer.poll(0.001)
    producer.flush(60)
    return out


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--partitions", type=int, default=10_000)
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # 10,000 partitions' files
    base = Path(tempfile.mkdtemp(prefix="kt-metrics-bench-"))
    procs = []
    try:
        port = free_port()
        on, on_bootstrap = start_broker(base / "on", port)
        off, off_bootstrap = start_broker(base / "off", None)
        procs += [on, off]
        for bootstrap in (on_bootstrap, off_bootstrap):
            create_topic(bootstrap, "perf", 1)
            throughput(bootstrap, 2)  # warm up
        ratios, cpu_ratios, rates = [], [], {"on": [], "off": []}
        for _ in range(args.pairs):
            scraper = Scraper(port, 1.0)
            cpu = cpu_seconds(on.pid)
            rates["on"].append(throughput(on_bootstrap, 6))
            on_cpu = (cpu_seconds(on.pid) - cpu) / (rates["on"][-1] * 6)
            scraper.stop()
            cpu = cpu_seconds(off.pid)
            rates["off"].append(throughput(off_bootstrap, 6))
            off_cpu = (cpu_seconds(off.pid) - cpu) / (rates["off"][-1] * 6)
            ratios.append(rates["on"][-1] / rates["off"][-1])
            cpu_ratios.append(off_cpu / on_cpu)
        on_median, off_median = statistics.median(rates["on"]), statistics.median(rates["off"])
        print(
            f"produce, metrics on (scraped each second): {on_median:,.0f} records/s; "
            f"off: {off_median:,.0f} records/s; on/off {on_median / off_median:.3f} "
            f"(pairs: {', '.join(f'{r:.3f}' for r in ratios)})"
        )
        print(
            f"records per broker CPU second, on/off: median {statistics.median(cpu_ratios):.3f}"
            f" (pairs: {', '.join(f'{r:.3f}' for r in cpu_ratios)})"
        )
        for proc in (on, off):
            proc.terminate()
            proc.wait(60)
        procs = []

        port = free_port()
        wide, wide_bootstrap = start_broker(base / "wide", port)
        procs.append(wide)
        began = time.monotonic()
        create_topic(wide_bootstrap, "wide", args.partitions)
        print(f"{args.partitions:,} partitions created in {time.monotonic() - began:.1f} s")
        scrape(port)
        times = []
        for _ in range(10):
            at = time.perf_counter()
            size = len(scrape(port))
            times.append((time.perf_counter() - at) * 1000)
        print(
            f"scrape of {args.partitions:,} partitions: median {statistics.median(times):.0f} ms"
            f" (min {min(times):.0f}, max {max(times):.0f}), {size / 1e6:.1f} MB"
        )
        quiet = latencies(wide_bootstrap, 10, 2000)
        for interval in (1.0, 0):
            scraper = Scraper(port, interval)
            busy = latencies(wide_bootstrap, 10, 2000)
            scrapes = scraper.stop()
            how = "back to back" if interval == 0 else f"every {interval:g} s"
            print(
                f"produce p99 at 2,000 records/s: {p99(quiet):.2f} ms without scrapes, "
                f"{p99(busy):.2f} ms with {scrapes} scrapes {how}: "
                f"{p99(busy) / p99(quiet):.2f}x"
            )
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
        shutil.rmtree(base, ignore_errors=True)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


if __name__ == "__main__":
    main()
