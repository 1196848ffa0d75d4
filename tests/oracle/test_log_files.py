"""kt's files are Kafka's files: Kafka's DumpLogSegments reads what kt wrote, `kt dump-log`
reads what Kafka wrote, and on the same files the two print the same lines.

The same workload goes to each broker through the same client: every compression codec,
keys, null values, headers, an idempotent producer (producer ids and sequences), and
small segments so that there are several, each with offset and time index entries. The
broker is stopped cleanly (its active indexes trimmed), then both tools dump every
segment, index and time index, one run each, and the outputs are compared line for line.
Any difference would have to be named in docs/oracle.md; there is none today.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kt.reference_kafka import SIGTERM_EXIT, run_tool

TOPIC = "files"
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
# Retention off: the records' timestamps are of 2023, and Kafka's first retention check,
# 30 s after it starts, would delete the segments on a slow run.
TOPIC_CONFIG = {"segment.bytes": "16384", "index.interval.bytes": "1024", "retention.ms": "-1"}


def produce_workload(bootstrap: str) -> int:
    """Send the workload with acks=all; return the number of records acknowledged."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1, config=TOPIC_CONFIG)])[TOPIC].result(30)
    acked = 0
    for n, codec in enumerate(CODECS):
        producer = Producer({
            "bootstrap.servers": bootstrap, "acks": "all", "compression.type": codec,
            "enable.idempotence": n % 2 == 0, "linger.ms": 5, "batch.num.messages": 50,
        })  # fmt: skip
        for i in range(400):
            key = None if i % 7 == 0 else f"key-{codec}-{i}".encode()
            value = None if i % 11 == 0 else f"{codec} value {i} ".encode() * (1 + i % 9)
            headers = [("h", f"{i}".encode()), ("codec", codec.encode())] if i % 3 else None
            producer.produce(TOPIC, key=key, value=value, headers=headers, partition=0,
                             timestamp=1_700_000_000_000 + n * 1000 + i)  # fmt: skip
        assert producer.flush(30) == 0
        acked += 400
    return acked


def segment_files(partition_dir: Path) -> list[str]:
    files = [p for p in partition_dir.iterdir() if p.suffix in (".log", ".index", ".timeindex")]
    assert len([p for p in files if p.suffix == ".log"]) >= 3, "the workload rolls segments"
    return sorted(str(p) for p in files)


def dump_both(files: list[str]) -> tuple[list[str], list[str]]:
    """(Kafka's DumpLogSegments lines, kt dump-log lines) over the same files."""
    args = ["--files", ",".join(files), "--print-data-log", "--deep-iteration"]
    kafka = run_tool("kafka-dump-log", *args)
    assert kafka.returncode == 0, kafka.stderr
    kt = subprocess.run([sys.executable, "-m", "kt", "dump-log", *args],
                        capture_output=True, text=True, timeout=120)  # fmt: skip
    assert kt.returncode == 0, kt.stderr
    return kafka.stdout.splitlines(), kt.stdout.splitlines()


def assert_same_lines(kafka: list[str], kt: list[str]) -> None:
    for number, (theirs, ours) in enumerate(zip(kafka, kt, strict=False), 1):
        assert ours == theirs, f"line {number} differs:\nKafka: {theirs}\nkt:    {ours}"
    assert len(kt) == len(kafka)


def test_kafka_dump_log_segments_reads_what_kt_wrote(broker) -> None:
    assert produce_workload(broker.bootstrap) == 2000
    assert broker.stop() == 0
    kafka, kt = dump_both(segment_files(broker.log_dir / f"{TOPIC}-0"))
    assert sum(line.startswith("| offset: ") for line in kafka) == 2000
    assert_same_lines(kafka, kt)


def test_kt_dump_log_reads_what_kafka_wrote(kafka) -> None:
    assert produce_workload(kafka.bootstrap) == 2000
    assert kafka.stop() == SIGTERM_EXIT
    kafka_lines, kt = dump_both(segment_files(kafka.log_dir / f"{TOPIC}-0"))
    assert sum(line.startswith("| offset: ") for line in kafka_lines) == 2000
    assert_same_lines(kafka_lines, kt)


@pytest.mark.parametrize("suffix", [".index", ".timeindex"])
def test_index_checks_agree(broker, suffix: str) -> None:
    """--verify-index-only: both tools find nothing wrong with kt's indexes."""
    produce_workload(broker.bootstrap)
    assert broker.stop() == 0
    files = [f for f in segment_files(broker.log_dir / f"{TOPIC}-0") if f.endswith(suffix)]
    args = ["--files", ",".join(files), "--verify-index-only"]
    kafka = run_tool("kafka-dump-log", *args)
    kt = subprocess.run([sys.executable, "-m", "kt", "dump-log", *args],
                        capture_output=True, text=True, timeout=120)  # fmt: skip
    assert (kt.returncode, kafka.returncode) == (0, 0), kt.stderr + kafka.stderr
    assert kt.stdout.splitlines() == kafka.stdout.splitlines()
