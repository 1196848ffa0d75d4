"""SASL and quotas: issue 30's targets that are not about TLS throughput.

  python benchmarks/security.py [--quota-seconds 10]

- SCRAM-SHA-256 authentication of a new connection: the median time of kt's client
  connecting to a SASL_PLAINTEXT listener (connect, ApiVersions, SaslHandshake, the two
  SaslAuthenticate round trips) minus the same connection to a PLAINTEXT listener
  (connect, ApiVersions), over 200 connections each (target < 5 ms).
- A quota of 1 MB/s: a librdkafka producer (client.id limited, 1,000-byte values, acks=1)
  produces as fast as it can; the bytes acknowledged during --quota-seconds (33: three of
  the quota's 11-second sample spans, which Kafka's Rate lets a client fill in a burst and
  then throttles for), measured after the first span, divided by the quota (target within
  10 %); meanwhile a producer with another client id produces alongside, and its rate is
  compared with its rate alone (never stalled).
- What a request quota costs the client it applies to: the same producer (client.id
  free) alone with no quota, then with a request_percentage quota it never reaches (its
  requests' handlers are then timed step by step, kt/broker/api/request_time.py; a client
  without a quota is not timed at all): the ratio of its acknowledged bytes a second,
  over --pairs interleaved pairs of 6-second runs (single runs vary by up to 25 %).
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
import threading
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from kt.client.admin import AdminClient as KtAdmin  # noqa: E402
from kt.client.client import KafkaClient  # noqa: E402
from kt.client.connection import BrokerConnection  # noqa: E402
from kt.security.sasl_client import ClientSasl  # noqa: E402

QUOTA = 1_000_000


def start_broker(log_dir: Path) -> tuple[subprocess.Popen, int, int]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "kt", "server-start", "--override",
         "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", "--override",
         f"log.dirs={log_dir}", "--override", "sasl.enabled.mechanisms=SCRAM-SHA-256"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    plain, sasl = (int(p) for p in re.findall(r"//127\.0\.0\.1:(\d+)", line))
    return proc, plain, sasl


def connect_ms(port: int, sasl: ClientSasl | None, count: int) -> float:
    times = []
    for _ in range(count):
        began = time.perf_counter()
        BrokerConnection("127.0.0.1", port, sasl=sasl).close()
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


def produce(bootstrap: str, client: str, seconds: float, marks: dict) -> None:
    """Produce for `seconds`; marks[client] = [(time, acknowledged bytes), ...]."""
    acked = [0]
    samples: list[tuple[float, int]] = []

    def delivered(error, message) -> None:  # type: ignore[no-untyped-def]
        if error is None:
            acked[0] += len(message.value())

    producer = Producer({"bootstrap.servers": bootstrap, "client.id": client, "acks": 1,
                         "linger.ms": 5, "batch.size": 65536,
                         "queue.buffering.max.kbytes": 1024})  # fmt: skip
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            producer.produce("quota", b"v" * 1000, on_delivery=delivered)
        except BufferError:
            producer.poll(0.01)
        producer.poll(0)
        samples.append((time.monotonic(), acked[0]))
    producer.flush(60)
    marks[client] = samples


def produce_alone(bootstrap: str, seconds: float) -> float:
    """The bytes a second client `free` has acknowledged, after its first second."""
    marks: dict = {}
    produce(bootstrap, "free", seconds, marks)
    began = marks["free"][0][0]
    return acked_between(marks["free"], began + 1, began + seconds) / (seconds - 1)


def set_client_quota(bootstrap: str, config: str, client: str, delete: bool = False) -> None:
    change = "--delete-config" if delete else "--add-config"
    subprocess.run([sys.executable, "-m", "kt", "configs", "--bootstrap-server", bootstrap,
                    "--alter", change, config, "--entity-type", "clients",
                    "--entity-name", client], check=True, capture_output=True)  # fmt: skip
    time.sleep(1)  # the notification reaches the broker


def acked_between(samples: list[tuple[float, int]], start: float, end: float) -> int:
    before = max((b for t, b in samples if t <= start), default=0)
    after = max((b for t, b in samples if t <= end), default=0)
    return after - before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quota-seconds", type=float, default=33.0)
    parser.add_argument("--pairs", type=int, default=4)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kt-security-bench-"))
    proc, plain, sasl_port = start_broker(work / "logs")
    try:
        with KafkaClient(f"127.0.0.1:{plain}") as client:
            KtAdmin(client).alter_user_scram_credentials(
                "bench", {"SCRAM-SHA-256": (4096, "bench-secret")}, []
            )
        scram = ClientSasl("SCRAM-SHA-256", "bench", "bench-secret")
        connect_ms(sasl_port, scram, 20)  # warm-up
        plain_ms = connect_ms(plain, None, 200)
        scram_ms = connect_ms(sasl_port, scram, 200)

        bootstrap = f"127.0.0.1:{plain}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("quota", 1, 1)])["quota"].result(30)
        untimed, timed = [], []
        for _ in range(args.pairs):
            untimed.append(produce_alone(bootstrap, 6))
            set_client_quota(bootstrap, "request_percentage=1000000", "free")
            timed.append(produce_alone(bootstrap, 6))
            set_client_quota(bootstrap, "request_percentage", "free", delete=True)
        free_alone, free_timed = statistics.mean(untimed), statistics.mean(timed)
        set_client_quota(bootstrap, f"producer_byte_rate={QUOTA}", "limited")
        total = 12 + args.quota_seconds + 1
        marks: dict = {}
        threads = [
            threading.Thread(target=produce, args=(bootstrap, "limited", total, marks)),
            threading.Thread(target=produce, args=(bootstrap, "free", total, marks)),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        start = marks["limited"][0][0] + 12
        end = start + args.quota_seconds
        limited = acked_between(marks["limited"], start, end) / args.quota_seconds
        free = acked_between(marks["free"], start, end) / args.quota_seconds
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(work, ignore_errors=True)
    print(f"SASL and quotas, {os.cpu_count()} cores")
    print("| measure | value | target |")
    print("|---|---|---|")
    print(
        f"| SCRAM-SHA-256 authentication of a connection | {scram_ms - plain_ms:.2f} ms "
        f"({scram_ms:.2f} vs {plain_ms:.2f} ms PLAINTEXT) | < 5 ms |"
    )
    print(
        f"| producer at a 1 MB/s quota, {args.quota_seconds:.0f} s | {limited:,.0f} B/s = "
        f"{limited / QUOTA:.3f}x the quota | within 10 % |"
    )
    print(
        f"| another producer meanwhile / alone | {free:,.0f} / {free_alone:,.0f} B/s = "
        f"{free / free_alone:.2f}x | never stalled |"
    )
    print(
        f"| a producer with a request quota it never reaches / with none "
        f"({args.pairs} pairs) | {free_timed:,.0f} / {free_alone:,.0f} B/s = "
        f"{free_timed / free_alone:.3f}x | |"
    )


if __name__ == "__main__":
    main()
