"""The streaming pipeline of examples/spark_pipeline.py, killed and started again.

Events go into kt; the pipeline (its own process, its own Spark) is killed with SIGKILL
once its first micro-batch is committed, more events arrive, and it is started again on
the same checkpoint. Every window total must then come out of kt with exactly the counts
and sums of the events sent: nothing lost, and a total written twice only as at least
once allows (the same record again).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import confluent_kafka as ck
import pytest

from tests.spark._broker import Broker
from tests.spark.test_spark_sink import create

pytestmark = pytest.mark.slow

PIPELINE = Path(__file__).parents[2] / "examples" / "spark_pipeline.py"
BASE_MS = (int(time.time() * 1000) // 5000 - 720) * 5000  # an hour ago, on a window's start
USERS = 10


def event(i: int) -> dict:
    return {"user": f"u{i % USERS}", "amount": i % 5, "time": BASE_MS + i * 10}


def produce(broker: Broker, events: list[dict]) -> None:
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap})
    for e in events:
        producer.produce("events", key=e["user"].encode(), value=json.dumps(e).encode())
    assert producer.flush(30) == 0


def expected_totals(events: list[dict]) -> dict[tuple[str, int], tuple[int, int]]:
    totals: dict[tuple[str, int], tuple[int, int]] = {}
    for e in events:
        if e["amount"] > 0:
            window = e["time"] - e["time"] % 5000
            count, amount = totals.get((e["user"], window), (0, 0))
            totals[(e["user"], window)] = (count + 1, amount + e["amount"])
    return totals


def written_totals(broker: Broker) -> list[dict]:
    consumer = ck.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "pipeline-test",
                            "enable.partition.eof": True})  # fmt: skip
    consumer.assign([ck.TopicPartition("totals", p, 0) for p in range(2)])
    out, ended = [], set()
    while len(ended) < 2:
        msg = consumer.poll(30)
        assert msg is not None, "no end of the totals topic within 30 s"
        if msg.error() is not None:
            assert msg.error().code() == ck.KafkaError._PARTITION_EOF, msg.error()
            ended.add(msg.partition())
            continue
        total = json.loads(msg.value())
        assert msg.key() == total["user"].encode()
        out.append(total)
    consumer.close()
    return out


def start(broker: Broker, checkpoint: Path, log: Path, master: str) -> subprocess.Popen:
    with open(log, "a") as out:
        return subprocess.Popen(
            [sys.executable, str(PIPELINE), "--bootstrap-server", broker.bootstrap,
             "--input", "events", "--output", "totals", "--checkpoint", str(checkpoint),
             "--master", master],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip


def wait_for(condition, what: str, proc: subprocess.Popen, log: Path, timeout_s: float = 240):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert proc.poll() is None, f"the pipeline exited: {log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"{what} not within {timeout_s} s"
        time.sleep(0.5)


def test_the_pipeline_killed_and_restarted_loses_no_event(tmp_path: Path) -> None:
    kill_and_restart(tmp_path, "local[2]")


def kill_and_restart(tmp_path: Path, master: str) -> None:
    """The test, on any Spark master."""
    log_dir = tmp_path / "kt-logs"
    log_dir.mkdir()
    broker = Broker(log_dir).start()
    checkpoint, log = tmp_path / "checkpoint", tmp_path / "pipeline.log"
    try:
        create(broker, "events", "totals", partitions=2)
        events = [event(i) for i in range(3000)]  # 30 s of events: 6 windows per user
        produce(broker, events[:1500])
        first = start(broker, checkpoint, log, master)
        try:
            wait_for(lambda: (checkpoint / "commits" / "0").exists(), "a committed batch",
                     first, log)  # fmt: skip
        finally:
            os.killpg(first.pid, signal.SIGKILL)  # the driver and its JVM, as kill -9
            first.wait(30)
        # The rest, and one event 20 s later, which moves the watermark past every window.
        late = {"user": "flush", "amount": 1, "time": BASE_MS + 50_000}
        produce(broker, events[1500:] + [late])
        expected = expected_totals(events)
        second = start(broker, checkpoint, log, master)
        try:

            def complete() -> bool:
                seen = {(t["user"], t["window_start"]) for t in written_totals(broker)}
                return set(expected) <= seen

            wait_for(complete, "every window's total", second, log)
        finally:
            os.killpg(second.pid, signal.SIGTERM)
            second.wait(60)
        by_window: dict[tuple[str, int], set[tuple[int, int]]] = {}
        for total in written_totals(broker):
            key = (total["user"], total["window_start"])
            by_window.setdefault(key, set()).add((total["events"], total["amount"]))
        assert set(by_window) == set(expected)  # the flush window is still open
        for key, seen in by_window.items():
            assert seen == {expected[key]}, key  # written once, or again the same
    finally:
        broker.stop()
