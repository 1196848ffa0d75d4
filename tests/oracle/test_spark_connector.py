"""Spark's own Kafka connector (spark-sql-kafka, `format("kafka")`) against kt and against
Apache Kafka 3.9: the same PySpark job (tests/oracle/spark_kafka_job.py) reads, writes
and streams on each, and every step gives the same rows. kt's own `format("kt")` source
reads both brokers too, with the rows of Spark's connector.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kt.reference_kafka import spark_kafka_jars
from tests._environment import unavailable

JOB = Path(__file__).with_name("spark_kafka_job.py")
TOPICS = (
    "orders",
    "written",
    "streamed",
    "streamed-by-kt",
    "written-by-kt",
    "streamed-into-kt",
    "txns",
)
RECORDS = 20
BASE_MS = 1_700_000_000_000


def prepare(bootstrap: str) -> None:
    """The job's topics, two partitions each, and RECORDS records in `orders`: keys (some
    null), values (one null), headers (one with a null value), timestamps a second apart.
    The timestamps are of 2023, so retention is off: Kafka's first retention check, 30 s
    after it starts, deleted them on a loaded machine, and the job then read nothing."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = [NewTopic(t, 2, 1, config={"retention.ms": "-1"}) for t in TOPICS]
    for future in admin.create_topics(new).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(RECORDS):
        producer.produce(
            "orders",
            key=None if i % 5 == 0 else f"key-{i}".encode(),
            value=None if i == 7 else f"value-{i}".encode() * (i + 1),
            partition=i % 2,
            timestamp=BASE_MS + i * 1000,
            headers=[("i", str(i).encode()), ("empty", None)] if i % 3 == 0 else None,
        )
        producer.flush(30)  # one record per batch: offsets as the loop gives them
    assert producer.flush(30) == 0
    transactional = Producer({"bootstrap.servers": bootstrap, "transactional.id": "spark-txn",
                              "linger.ms": 0})  # fmt: skip
    transactional.init_transactions(30)
    for n, commit in enumerate((True, False, True)):
        transactional.begin_transaction()
        for i in range(4):
            transactional.produce("txns", f"txn-{n}-{i}".encode(), partition=i % 2,
                                  timestamp=BASE_MS + n * 10 + i)  # fmt: skip
            transactional.flush(30)
        (transactional.commit_transaction if commit else transactional.abort_transaction)(30)
        wait_for_markers(bootstrap, (n + 1) * 3)


def wait_for_markers(bootstrap: str, end: int) -> None:
    """EndTxn answers before the markers are written: wait until each partition ends at
    `end` (the same offsets on both brokers)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "markers",
                         "isolation.level": "read_uncommitted"})  # fmt: skip
    deadline = time.monotonic() + 30
    for p in (0, 1):
        while consumer.get_watermark_offsets(TopicPartition("txns", p), 10)[1] < end:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    consumer.close()


@pytest.fixture
def connector_jars() -> list[Path]:
    jars = spark_kafka_jars()
    if not jars:
        unavailable("Spark's Kafka connector is not in the cache: run interop/fetch-kafka.sh")
    return jars


def test_spark_kafka_connector_reads_writes_and_streams_as_on_kafka(
    connector_jars: list[Path], broker, kafka, tmp_path: Path
) -> None:
    prepare(broker.bootstrap)
    prepare(kafka.bootstrap)
    job = subprocess.run(
        [sys.executable, str(JOB), str(tmp_path), f"kt={broker.bootstrap}",
         f"kafka={kafka.bootstrap}"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert job.returncode == 0, job.stderr[-6000:]
    results = json.loads((tmp_path / "results.json").read_text())
    on_kt, on_kafka = results["kt"], results["kafka"]

    # What the job saw is what was produced, on Kafka itself.
    read = on_kafka["read"]
    assert len(read) == RECORDS
    assert [r["timestamp_ms"] for r in read if r["partition"] == 0] == [
        BASE_MS + i * 1000 for i in range(0, RECORDS, 2)]  # fmt: skip
    assert [r["offset"] for r in on_kafka["range"] if r["partition"] == 0] == [1, 2, 3]
    assert len(on_kafka["range"]) == 3 + RECORDS // 2
    assert 0 < len(on_kafka["from_timestamp"]) < RECORDS
    for step in ("written", "streamed", "streamed_by_kt", "written_by_kt", "streamed_into_kt"):
        assert len(on_kafka[step]) == RECORDS, step
    # Transactions: every data record by default (read_uncommitted), the committed ones
    # only at read_committed; never a marker.
    assert len(on_kafka["txn_default"]) == 12
    assert sorted(r["value"] for r in on_kafka["txn_read_committed"]) == sorted(
        f"txn-{n}-{i}".encode().hex() for n in (0, 2) for i in range(4))  # fmt: skip

    for step in on_kafka.keys() - {"sink_errors"}:  # the errors name Spark's objects
        assert on_kt[step] == on_kafka[step], step
    # kt's source gives Spark's connector's rows, from either broker; kt's sink writes
    # what Spark's Kafka sink writes (same partitions, offsets, keys, values, headers).
    for results in (on_kt, on_kafka):
        assert results["kt_source"] == results["read"]
        assert results["kt_source_txn_default"] == results["txn_default"]
        assert results["kt_source_txn_read_committed"] == results["txn_read_committed"]
        assert untopiced(results["written_by_kt"]) == untopiced(results["written"])
        assert untopiced(results["streamed_into_kt"]) == untopiced(results["streamed"])
    # A bad write fails with Spark's Kafka sink's message (kt's comes through PySpark).
    for case, messages in on_kt["sink_errors"].items():
        assert SPARK_MESSAGE[case] in messages["kafka"], (case, messages)
        assert SPARK_MESSAGE[case] in messages["kt"], (case, messages)


def untopiced(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if k != "topic"} for row in rows]


SPARK_MESSAGE = {
    "no value": "Required attribute 'value' not found",
    "null topic": "The Kafka message data sent to the producer contains a null topic. Use the "
    "`topic` option for setting a default topic.",
    "no topic": "topic option required when no 'topic' attribute is present. Use the topic "
    "option for setting a topic.",
    "overwrite": "Save mode Overwrite not allowed for Kafka. Allowed save modes are Append and "
    "ErrorIfExists (default).",
    "int key": "key attribute unsupported type int. key must be a(n) string or binary",
    "string partition": "partition attribute unsupported type string. partition must be a(n) int",
}
