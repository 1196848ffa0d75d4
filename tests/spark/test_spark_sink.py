"""Writing into kt through Spark: the `kt` sink and `kt spark-import`.

A topic goes out with `kt spark-export` and comes back into a new topic with `kt
spark-import`, and every record is compared (keys, values, headers, CreateTime, per-key
order, and partitions, the source having been written with the Java producer's
murmur2 partitioner). The sink puts keyed rows where a Java producer would, takes its
records' timestamps from `timestampColumn`, and fails bad rows with Spark's words.
(tests/oracle/test_spark_connector.py runs Spark's own Kafka sink beside it.)
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import confluent_kafka as ck
import confluent_kafka.admin as ck_admin
import pytest

from kt.client.partitioner import partition_for_key
from kt.spark.sink import SinkOptions, write_batches
from kt.tools.spark_export import ExportRequest, export
from kt.tools.spark_import import ImportRequest, SparkImportError, import_files
from tests.spark._broker import Broker

pytestmark = pytest.mark.slow

BASE_MS = int(time.time() * 1000) - 3_600_000  # recent: retention keeps them


@pytest.fixture
def broker(tmp_path: Path):
    log_dir = tmp_path / "kt-logs"
    log_dir.mkdir()
    broker = Broker(log_dir).start()
    yield broker
    broker.stop()


def create(broker: Broker, *topics: str, partitions: int = 3) -> None:
    admin = ck_admin.AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics(
        [ck_admin.NewTopic(t, partitions, 1) for t in topics]
    ).values():
        future.result(30)


def produce_source(broker: Broker, topic: str, count: int) -> None:
    """Keys repeating (some null), values (some null), headers (some with a null value),
    CreateTimes of our own; partitioned as the Java producer partitions."""
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap, "partitioner": "murmur2_random"})
    for i in range(count):
        producer.produce(
            topic,
            key=None if i % 10 == 0 else b"key-%d" % (i % 37),
            value=None if i % 50 == 7 else b"value-%d" % i * (i % 5 + 1),
            headers=[("i", b"%d" % i), ("none", None)] if i % 4 == 0 else None,
            timestamp=BASE_MS + i,
        )
    assert producer.flush(30) == 0


def records(broker: Broker, topic: str, partitions: int = 3) -> list[tuple]:
    """(partition, key, value, headers, CreateTime) of every record, in offset order."""
    out = []
    for partition in range(partitions):
        consumer = ck.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "sink-test",
                                "enable.partition.eof": True})  # fmt: skip
        consumer.assign([ck.TopicPartition(topic, partition, 0)])
        while True:
            msg = consumer.poll(30)
            assert msg is not None, "no end of partition within 30 s"
            if msg.error() is not None:
                assert msg.error().code() == ck.KafkaError._PARTITION_EOF, msg.error()
                break
            timestamp_type, timestamp = msg.timestamp()
            assert timestamp_type == ck.TIMESTAMP_CREATE_TIME
            out.append((partition, msg.key(), msg.value(), msg.headers(), timestamp))
        consumer.close()
    return out


def by_key(rows: list[tuple]) -> dict:
    """Each key's records in order. Null keys have neither an order nor a partition (a
    sticky one, drawn at random): those records are compared as a multiset."""
    grouped: dict = {}
    for row in rows:
        grouped.setdefault(row[1], []).append(row)
    grouped[None] = sorted((row[1:] for row in grouped.get(None, [])), key=repr)
    return grouped


def kt(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "kt", *args], capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_export_to_parquet_and_import_into_a_new_topic_gives_every_record_back(
    broker: Broker, tmp_path: Path
) -> None:
    create(broker, "source", "copy")
    produce_source(broker, "source", 2000)
    out = tmp_path / "exported"
    kt("spark-export", "--bootstrap-server", broker.bootstrap, "--topic", "source",
       "--output", str(out), "--master", "local[2]")  # fmt: skip
    line = kt("spark-import", "--bootstrap-server", broker.bootstrap, "--topic", "copy",
              "--input", str(out), "--master", "local[2]").strip()  # fmt: skip
    assert line.startswith("2000 records written to copy in "), line
    assert line.endswith(" tasks)") and " records/s, " in line, line
    source, copy = records(broker, "source"), records(broker, "copy")
    assert len(copy) == 2000
    assert by_key(copy) == by_key(source)  # partitions included: murmur2 as Java's


def test_csv_and_json_exports_import_too(spark, broker: Broker, tmp_path: Path) -> None:
    create(broker, "text")
    produce_source(broker, "text", 300)
    expected = by_key(records(broker, "text"))
    # CSV through the command (its --format and --value-format), JSON in the tests' Spark
    # session (a JVM fewer); the same export either way
    kt("spark-export", "--bootstrap-server", broker.bootstrap, "--topic", "text",
       "--output", str(tmp_path / "csv"), "--format", "csv", "--value-format", "string",
       "--master", "local[2]")  # fmt: skip
    export(ExportRequest(topics=["text"], output=str(tmp_path / "json"), format="json",
                         bootstrap_server=broker.bootstrap, value_format="string"),
           spark=spark)  # fmt: skip
    for fmt in ("csv", "json"):
        out = tmp_path / fmt
        create(broker, f"from-{fmt}")
        request = ImportRequest(input=str(out), topic=f"from-{fmt}", format=fmt,
                                bootstrap_server=broker.bootstrap)  # fmt: skip
        assert import_files(request, spark=spark).rows == 300
        imported = by_key(records(broker, f"from-{fmt}"))
        # Text formats keep a null value as null, and a value's bytes as UTF-8 text.
        assert imported == expected, fmt


def test_the_sink_partitions_by_key_as_java_and_stamps_from_a_column(spark, broker) -> None:
    create(broker, "keyed", partitions=5)
    rows = [(f"user-{i % 50}", f"v{i}", BASE_MS + i) for i in range(500)]
    df = spark.createDataFrame(rows, "key string, value string, ms long")
    (df.write.format("kt").option("kafka.bootstrap.servers", broker.bootstrap)
     .option("topic", "keyed").option("timestampColumn", "ms").mode("append").save())  # fmt: skip
    written = records(broker, "keyed", partitions=5)
    assert len(written) == 500
    for partition, key, value, _, timestamp in written:
        assert partition == partition_for_key(key, 5), key
        assert timestamp == BASE_MS + int(value[1:])
    # Per key, the rows' order (one task: coalesce) is the records' order.
    ordered = spark.createDataFrame(rows, "key string, value string, ms long").coalesce(1)
    ordered.write.format("kt").option("kafka.bootstrap.servers", broker.bootstrap).option(
        "topic", "keyed").mode("append").save()  # fmt: skip
    again = [r for r in records(broker, "keyed", partitions=5) if r[4] > BASE_MS + 10_000]
    for key in {r[1] for r in again}:
        values = [int(r[2][1:]) for r in again if r[1] == key]
        assert values == sorted(values), key


def test_rows_with_and_without_keys_keep_their_order_in_one_partition(broker) -> None:
    """One partition: the keyless rows' sticky partition is the keyed rows' partition too,
    so the records' order there must be the rows' order (as the Java producer's send
    order), key or no key. The sink's task is called without Spark."""
    import pyarrow as pa

    create(broker, "mixed", partitions=1)
    keys = [None if i % 7 in (0, 1) else b"key-%d" % (i % 3) for i in range(300)]
    values = [b"v%d" % i for i in range(300)]
    batch = pa.record_batch({"key": pa.array(keys, pa.binary()),
                             "value": pa.array(values, pa.binary())})  # fmt: skip
    assert write_batches(SinkOptions(broker.bootstrap, "mixed", {}), iter([batch])).records == 300
    assert [r[2] for r in records(broker, "mixed", partitions=1)] == values


def test_a_row_without_a_topic_fails_the_write(spark, broker) -> None:
    df = spark.createDataFrame([(None, "v")], "topic string, value string")
    with pytest.raises(Exception, match="contains a null topic. Use the `topic` option"):
        df.write.format("kt").option("kafka.bootstrap.servers", broker.bootstrap).mode(
            "append").save()  # fmt: skip


def test_a_task_whose_records_are_not_acknowledged_fails(spark, broker) -> None:
    """acks=all on a topic that wants two in-sync replicas of its one: the broker refuses
    every batch (NOT_ENOUGH_REPLICAS), so no task may report success."""
    admin = ck_admin.AdminClient({"bootstrap.servers": broker.bootstrap})
    topic = ck_admin.NewTopic("unsafe", 1, 1, config={"min.insync.replicas": "2"})
    admin.create_topics([topic])["unsafe"].result(30)
    df = spark.createDataFrame([("v",)], "value string")
    with pytest.raises(Exception, match="NOT_ENOUGH_REPLICAS"):
        (df.write.format("kt").option("kafka.bootstrap.servers", broker.bootstrap)
         .option("topic", "unsafe").option("kafka.retries", "1").mode("append").save())  # fmt: skip
    # acks=1 does not wait for the other replicas: the same write succeeds.
    (df.write.format("kt").option("kafka.bootstrap.servers", broker.bootstrap)
     .option("topic", "unsafe").option("kafka.acks", "1").mode("append").save())  # fmt: skip
    assert [r[2] for r in records(broker, "unsafe", partitions=1)] == [b"v"]


def test_an_import_whose_records_are_not_acknowledged_fails(spark, broker, tmp_path) -> None:
    """kt spark-import's tasks (a map of Arrow batches, not a data source write) fail as the
    sink's do: a refused batch fails the import, with the broker's error in one line."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    admin = ck_admin.AdminClient({"bootstrap.servers": broker.bootstrap})
    topic = ck_admin.NewTopic("unsafe", 1, 1, config={"min.insync.replicas": "2"})
    admin.create_topics([topic])["unsafe"].result(30)
    (tmp_path / "in").mkdir()
    pq.write_table(pa.table({"value": [b"a", b"b"]}), tmp_path / "in" / "part-0.parquet")
    request = ImportRequest(input=str(tmp_path / "in"), topic="unsafe",
                            bootstrap_server=broker.bootstrap,
                            producer={"retries": "1"})  # fmt: skip
    with pytest.raises(SparkImportError, match=r"^Spark failed: .*NOT_ENOUGH_REPLICAS"):
        import_files(request, spark=spark)
    assert records(broker, "unsafe", partitions=1) == []
    request.producer["acks"] = "1"  # not waiting for the other replicas: it succeeds
    assert import_files(request, spark=spark).rows == 2
    assert [r[2] for r in records(broker, "unsafe", partitions=1)] == [b"a", b"b"]


def test_a_security_setting_kt_lacks_fails_the_write(spark, broker) -> None:
    """kafka.security.protocol=SSL asks for TLS, which kt's producer cannot do yet: the
    write fails with one line naming the option, rather than sending in plaintext."""
    df = spark.createDataFrame([("v",)], "value string")
    with pytest.raises(Exception, match="kafka.security.protocol=SSL: kt does not support TLS"):
        (df.write.format("kt").option("kafka.bootstrap.servers", broker.bootstrap)
         .option("topic", "secure").option("kafka.security.protocol", "SSL")
         .mode("append").save())  # fmt: skip
