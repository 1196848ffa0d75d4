"""One PySpark job, run against several brokers: Spark's own Kafka connector
(`format("kafka")`) and kt's source (`format("kt")`) read, write and stream the topics
that tests/oracle/test_spark_connector.py prepared on each, and the rows come back as JSON.

    python tests/oracle/spark_kafka_job.py WORK_DIR NAME=BOOTSTRAP [NAME=BOOTSTRAP ...]

It runs in a process of its own so that its SparkSession, which needs the connector on
spark.jars from the start, is not the one the other Spark tests share. The job writes
`WORK_DIR/results.json`: for each NAME, each step's rows, sorted by partition and offset.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from kt.reference_kafka import spark_kafka_jars
from kt.tools.spark_export import spark_session

SOURCE = "orders"  # 2 partitions, prepared by the test
WRITTEN = "written"  # 2 partitions, empty
STREAMED = "streamed"  # 2 partitions, empty
STREAMED_BY_KT = "streamed-by-kt"  # 2 partitions, empty
WRITTEN_BY_KT = "written-by-kt"  # 2 partitions, empty: the batch write, by kt's sink
STREAMED_INTO_KT = "streamed-into-kt"  # 2 partitions, empty: the stream, into kt's sink
TRANSACTIONS = "txns"  # 2 partitions: committed and aborted transactions


def as_rows(df: Any, with_time: bool = True) -> list[dict[str, Any]]:
    """A DataFrame of Kafka's source schema as JSON-able rows (bytes in hex)."""
    rows = []
    for row in df.collect():
        record = row.asDict()
        record["key"] = None if record["key"] is None else record["key"].hex()
        record["value"] = None if record["value"] is None else record["value"].hex()
        record["headers"] = [
            [h["key"], None if h["value"] is None else h["value"].hex()]
            for h in record.get("headers") or []
        ]
        stamp = record.pop("timestamp")
        if with_time:  # milliseconds since the epoch, as the record carries them
            record["timestamp_ms"] = round(stamp.timestamp() * 1000)
        rows.append(record)
    return sorted(rows, key=lambda r: (r["partition"], r["offset"]))


def run(spark: Any, bootstrap: str, work: Path) -> dict[str, Any]:
    def reader(fmt: str = "kafka", topic: str = SOURCE) -> Any:
        return (
            spark.read.format(fmt)
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .option("includeHeaders", "true")
        )

    def stream(fmt: str, target: str, sink: str = "kafka") -> None:
        source = (
            spark.readStream.format(fmt)
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", SOURCE)
            .option("startingOffsets", "earliest")
            .option("includeHeaders", "true")
            .load()
        )
        query = (
            source.select("key", "value", "headers", "partition")
            .writeStream.format(sink)
            .option("kafka.bootstrap.servers", bootstrap)
            .option("topic", target)
            .option("checkpointLocation", str(work / f"checkpoint-{target}"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()

    results: dict[str, Any] = {}
    # Transactions, at each isolation level, through Spark's connector and kt's source.
    for fmt, prefix in (("kafka", "txn"), ("kt", "kt_source_txn")):
        results[f"{prefix}_default"] = as_rows(reader(fmt, TRANSACTIONS).load())
        committed = reader(fmt, TRANSACTIONS).option("kafka.isolation.level", "read_committed")
        results[f"{prefix}_read_committed"] = as_rows(committed.load())
    read = reader().load()
    results["read"] = as_rows(read)
    results["kt_source"] = as_rows(reader("kt").load())
    # Offsets by partition (-2 earliest, -1 latest), and by the records' own timestamps.
    ranged = {"startingOffsets": json.dumps({SOURCE: {"0": 1, "1": -2}}),
              "endingOffsets": json.dumps({SOURCE: {"0": 4, "1": -1}})}  # fmt: skip
    results["range"] = as_rows(reader().options(**ranged).load())
    middle = sorted(r["timestamp_ms"] for r in results["read"])[len(results["read"]) // 2]
    results["from_timestamp"] = as_rows(reader().option("startingTimestamp", str(middle)).load())
    # A batch write of what was read, in one task so that the offsets are the same on
    # every broker; the record timestamps are the write's, so they are left out.
    # kt's sink takes the same job with only the format changed.
    for sink, target in (("kafka", WRITTEN), ("kt", WRITTEN_BY_KT)):
        (
            read.select("key", "value", "headers", "partition")
            .coalesce(1)
            .write.format(sink)
            .option("kafka.bootstrap.servers", bootstrap)
            .option("topic", target)
            .mode("append")
            .save()
        )
    results["written"] = as_rows(reader(topic=WRITTEN).load(), with_time=False)
    results["written_by_kt"] = as_rows(reader(topic=WRITTEN_BY_KT).load(), with_time=False)
    stream("kafka", STREAMED)
    results["streamed"] = as_rows(reader(topic=STREAMED).load(), with_time=False)
    stream("kt", STREAMED_BY_KT)
    results["streamed_by_kt"] = as_rows(reader(topic=STREAMED_BY_KT).load(), with_time=False)
    stream("kafka", STREAMED_INTO_KT, sink="kt")
    results["streamed_into_kt"] = as_rows(reader(topic=STREAMED_INTO_KT).load(), with_time=False)
    results["sink_errors"] = sink_errors(spark, bootstrap)
    return results


def sink_errors(spark: Any, bootstrap: str) -> dict[str, dict[str, str]]:
    """What Spark's Kafka sink and kt's say of bad writes (nothing gets written)."""

    def write(fmt: str, rows: list, schema: str, mode: str = "append", **options: str) -> None:
        writer = spark.createDataFrame(rows, schema).write.format(fmt).mode(mode)
        writer.options(**{"kafka.bootstrap.servers": bootstrap, **options}).save()

    cases = {
        "no value": lambda f: write(f, [("a",)], "key string", topic=SOURCE),
        "null topic": lambda f: write(f, [(None, "v")], "topic string, value string"),
        "no topic": lambda f: write(f, [("v",)], "value string"),
        "overwrite": lambda f: write(f, [("v",)], "value string", "overwrite", topic=SOURCE),
        "int key": lambda f: write(f, [(1, "v")], "key int, value string", topic=SOURCE),
        "string partition": lambda f: write(
            f, [("1", "v")], "partition string, value string", topic=SOURCE
        ),  # fmt: skip
    }
    errors: dict[str, dict[str, str]] = {}
    for name, case in cases.items():
        for fmt in ("kafka", "kt"):
            try:
                case(fmt)
                message = "no error"
            except Exception as e:  # noqa: BLE001 - the message is the result
                message = str(e)
            errors.setdefault(name, {})[fmt] = message
    return errors


def main(argv: list[str]) -> None:
    work = Path(argv[0])
    targets = dict(arg.split("=", 1) for arg in argv[1:])
    jars = ",".join(str(j) for j in spark_kafka_jars())
    spark = spark_session("local[2]", app_name="kt oracle: Spark's Kafka connector",
                          **{"spark.jars": jars, "spark.sql.shuffle.partitions": "2"})  # fmt: skip
    try:
        results = {name: run(spark, bootstrap, work / name) for name, bootstrap in targets.items()}
    finally:
        spark.stop()
    (work / "results.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
