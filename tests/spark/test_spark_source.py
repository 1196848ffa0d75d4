"""The `kt` data source and `kt spark-export` on a real local Spark."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from kt.tools.spark_export import ExportRequest, export
from tests.spark import _topics as topics

pytestmark = pytest.mark.slow

COUNTS = [1500, 1200, 900, 1300]  # 4 partitions; every batch of 100 cycles the codecs


def expected(partition: int, i: int) -> dict:
    return {
        "key": topics.key(partition, i),
        "value": topics.value(partition, i),
        "topic": "orders",
        "partition": partition,
        "offset": i,
        "timestamp_ms": topics.timestamp(partition, i),
        "timestampType": 0,
        "headers": [{"key": k, "value": v} for k, v in topics.headers(partition, i)] or None,
    }


def exported(path: str) -> list[dict]:
    table = pq.read_table(path)
    millis = table.column("timestamp").cast("int64").to_pylist()
    rows = table.drop_columns(["timestamp"]).to_pylist()
    for row, us in zip(rows, millis, strict=True):
        row["timestamp_ms"] = us // 1000
    return sorted(rows, key=lambda r: (r["partition"], r["offset"]))


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory) -> str:
    directory = str(tmp_path_factory.mktemp("kt-logs"))
    topics.write_topic(directory, "orders", COUNTS)
    return directory


def test_kt_spark_export_writes_every_record_once(log_dir, tmp_path):
    output = str(tmp_path / "orders.parquet")
    done = subprocess.run(
        [sys.executable, "-m", "kt", "spark-export", "--log-dirs", log_dir, "--topic", "orders",
         "--output", output, "--format", "parquet", "--master", "local[2]"],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # Spark's start-up notices and warnings are not the user's
    assert f"{sum(COUNTS)} rows written to {output}" in done.stdout
    assert "rows/s, 4 input partitions" in done.stdout
    want = [expected(p, i) for p, count in enumerate(COUNTS) for i in range(count)]
    assert exported(output) == want


def test_verbose_shows_what_spark_says(log_dir, tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "kt", "spark-export", "--log-dirs", log_dir, "--topic", "orders",
         "--output", str(tmp_path / "verbose"), "--master", "local[1]", "--verbose"],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Using Spark's default log4j profile" in done.stderr


def _read(spark, log_dir: str, **options: str):
    reader = spark.read.format("kt").option("log.dirs", log_dir)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def test_offset_ranges_and_max_records_per_partition(spark, log_dir):
    starting = {"orders": {"0": 100, "1": -2, "2": 850, "3": 1299}}
    ending = {"orders": {"0": 1100, "1": 50, "2": -1, "3": -1}}
    df = _read(spark, log_dir, subscribe="orders", startingOffsets=json.dumps(starting),
               endingOffsets=json.dumps(ending), maxRecordsPerPartition="300")  # fmt: skip
    # 1000 offsets of partition 0 in 4 pieces, 50 + 50 + 1 in one piece each.
    assert df.rdd.getNumPartitions() == 7
    got = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())
    assert got == (
        [(0, i) for i in range(100, 1100)] + [(1, i) for i in range(50)]
        + [(2, i) for i in range(850, 900)] + [(3, 1299)]
    )  # fmt: skip
    assigned = _read(spark, log_dir, assign='{"orders":[2]}',
                     startingTimestamp=str(topics.timestamp(2, 890)))  # fmt: skip
    assert sorted(r.offset for r in assigned.select("offset").collect()) == list(range(890, 900))


def test_value_formats_and_partitioned_json_output(spark, tmp_path):
    log_dir = str(tmp_path / "logs")
    log = topics.open_log(log_dir, "events", 0)
    from kt.storage.record_batch import Record, build_batch

    docs = [Record(None, topics.TS + i, b"k%d" % i, json.dumps({"n": i, "s": "x" * i}).encode())
            for i in range(20)]  # fmt: skip
    log.append_as_leader(build_batch(docs), leader_epoch=0)
    log.close()
    output = str(tmp_path / "events")
    request = ExportRequest(topics=["events"], output=output, format="json", log_dirs=[log_dir],
                            value_format="json", partition_by=["partition"])  # fmt: skip
    result = export(request, spark=spark)
    assert (result.rows, result.input_partitions) == (20, 1)
    assert os.listdir(output) and os.path.isdir(os.path.join(output, "partition=0"))
    rows = []
    for name in os.listdir(os.path.join(output, "partition=0")):
        if name.endswith(".json"):
            with open(os.path.join(output, "partition=0", name)) as f:
                rows += [json.loads(line) for line in f]
    assert sorted((r["key"], r["value"]["n"], r["value"]["s"]) for r in rows) == sorted(
        (f"k{i}", i, "x" * i) for i in range(20)
    )


def _stream(spark, log_dir: str, sink: str, checkpoint: str) -> list[int]:
    df = (
        spark.readStream.format("kt")
        .option("log.dirs", log_dir)
        .option("subscribe", "clicks")
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "500")
        .option("includeHeaders", "true")
        .load()
    )
    query = (
        df.writeStream.format("parquet")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start(sink)
    )
    query.awaitTermination(180)
    assert query.exception() is None
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]


def test_streaming_restarts_exactly_where_it_stopped(spark, tmp_path):
    log_dir, sink, checkpoint = (str(tmp_path / n) for n in ("logs", "sink", "checkpoint"))
    topics.write_topic(log_dir, "clicks", [600, 400])
    # maxOffsetsPerTrigger shares 500 offsets by lag: 300 + 200, twice.
    assert _stream(spark, log_dir, sink, checkpoint) == [500, 500]
    assert len(pq.read_table(sink)) == 1000
    for partition, (first, count) in enumerate([(600, 250), (400, 0)]):
        log = topics.open_log(log_dir, "clicks", partition)
        topics.append(log, partition, first, count)
        log.close()
    log = topics.open_log(log_dir, "clicks", 2)  # a partition added since: read from its start
    topics.append(log, 2, 0, 50)
    log.close()
    assert _stream(spark, log_dir, sink, checkpoint) == [300]
    table = pq.read_table(sink)
    got = sorted(zip(table.column("partition").to_pylist(), table.column("offset").to_pylist(),
                     strict=True))  # fmt: skip
    want = [(0, i) for i in range(850)] + [(1, i) for i in range(400)] + [(2, i) for i in range(50)]
    assert got == want
