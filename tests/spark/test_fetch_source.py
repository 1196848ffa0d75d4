"""The `kt` source through a running broker (`kafka.bootstrap.servers`, the Fetch API).

Records are produced by a real client (confluent-kafka) and read back through Spark and
`kt spark-export --bootstrap-server`; the same data is then exported from the stopped
broker's segment files with `--log-dirs`.
"""

from __future__ import annotations

import subprocess
import sys
import time

import confluent_kafka as ck
import confluent_kafka.admin as ck_admin
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kt.client.admin import AdminClient
from kt.client.client import KafkaClient
from kt.spark.fetch_catalog import FetchCatalog
from kt.spark.planning import DataLossError, OffsetRange
from kt.spark.schema import arrow_schema
from kt.tools.spark_export import ExportRequest, export
from tests.spark import _topics as topics
from tests.spark._broker import Broker

pytestmark = pytest.mark.slow

RECORDS = 200_000
PARTITIONS = 4
# Recent create times: the broker's retention deletes segments of records older than 7 days.
BASE_MS = int(time.time() * 1000) - 3_600_000


def stamp(partition: int, i: int) -> int:
    return BASE_MS + partition * 250_000 + i


@pytest.fixture
def broker(tmp_path):
    log_dir = tmp_path / "kt-logs"
    log_dir.mkdir()
    broker = Broker(log_dir).start()
    yield broker
    broker.stop()


def create_topic(broker: Broker, name: str, partitions: int) -> None:
    admin = ck_admin.AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([ck_admin.NewTopic(name, partitions, 1)]).values():
        future.result(timeout=30)


def produce(broker: Broker, topic: str, first: int, count: int, partitions: int) -> dict:
    """Records first..first+count-1 of tests.spark._topics, record i to partition
    i % partitions; returns {(partition, offset): i} from the delivery reports."""
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 20,
                            "compression.type": "lz4", "enable.idempotence": True})  # fmt: skip
    placed: dict[tuple[int, int], int] = {}
    failed: list = []

    def delivered(err, msg, i: int) -> None:
        if err is not None:
            failed.append(err)
        else:
            placed[(msg.partition(), msg.offset())] = i

    for i in range(first, first + count):
        p = i % partitions
        record = {"key": topics.key(p, i), "value": topics.value(p, i), "partition": p,
                  "headers": topics.headers(p, i), "timestamp": stamp(p, i),
                  "on_delivery": lambda err, msg, i=i: delivered(err, msg, i)}  # fmt: skip
        while True:
            try:
                producer.produce(topic, **record)
                break
            except BufferError:  # the client's queue is full: let deliveries drain it
                producer.poll(0.1)
        if i % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    assert not failed, failed[:3]
    return placed


def exported_rows(path: str, topic: str) -> list[tuple]:
    """(partition, offset, key, value, headers, timestamp ms, type) sorted, from Parquet."""
    table = pq.read_table(path)
    assert set(table.column("topic").unique().to_pylist()) == {topic}
    millis = table.column("timestamp").cast(pa.timestamp("ms")).cast(pa.int64()).to_pylist()
    columns = [table.column(c).to_pylist() for c in
               ("partition", "offset", "key", "value", "headers", "timestampType")]  # fmt: skip
    rows = [(p, o, k, v, [(h["key"], h["value"]) for h in hs or ()], ms, t)
            for p, o, k, v, hs, t, ms in zip(*columns, millis, strict=True)]  # fmt: skip
    return sorted(rows)


def expected_rows(placed: dict) -> list[tuple]:
    return sorted(
        (p, o, topics.key(p, i), topics.value(p, i), topics.headers(p, i), stamp(p, i), 0)
        for (p, o), i in placed.items()
    )  # fmt: skip


def test_export_200k_records_through_the_broker_then_from_its_log_dirs(spark, broker, tmp_path):
    create_topic(broker, "orders", PARTITIONS)
    placed = produce(broker, "orders", 0, RECORDS, PARTITIONS)
    assert len(placed) == RECORDS
    want = expected_rows(placed)
    output = str(tmp_path / "through-fetch")
    done = subprocess.run(
        [sys.executable, "-m", "kt", "spark-export", "--bootstrap-server", broker.bootstrap,
         "--topic", "orders", "--output", output, "--master", "local[2]"],
        capture_output=True, text=True, timeout=280,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no log4j notices, no worker's BrokenPipeError at the end
    assert f"{RECORDS} rows written to {output}" in done.stdout
    assert exported_rows(output, "orders") == want

    # The same export from the stopped broker's files (in the shared session: the
    # command itself is run above and in test_spark_source).
    assert broker.stop() == 0
    offline = str(tmp_path / "from-log-dirs")
    request = ExportRequest(["orders"], offline, log_dirs=[str(broker.log_dir)])
    assert export(request, spark=spark).rows == RECORDS
    assert exported_rows(offline, "orders") == want


def test_streaming_over_the_broker_writes_only_new_records(spark, broker, tmp_path):
    sink, checkpoint = str(tmp_path / "sink"), str(tmp_path / "checkpoint")
    create_topic(broker, "clicks", 2)
    placed = produce(broker, "clicks", 0, 3000, 2)

    def run() -> list[int]:
        df = (spark.readStream.format("kt")
              .option("kafka.bootstrap.servers", broker.bootstrap)
              .option("subscribe", "clicks").option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", "2000").option("includeHeaders", "true")
              .load())  # fmt: skip
        query = (df.writeStream.format("parquet").option("checkpointLocation", checkpoint)
                 .trigger(availableNow=True).start(sink))  # fmt: skip
        query.awaitTermination(180)
        assert query.exception() is None
        return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]

    assert run() == [2000, 1000]
    assert exported_rows(sink, "clicks") == expected_rows(placed)
    with KafkaClient(broker.bootstrap) as client:  # a partition added between the runs
        assert AdminClient(client).create_partitions("clicks", 3).error_code == 0
    more = produce(broker, "clicks", 3000, 900, 3)
    assert run() == [900]
    assert exported_rows(sink, "clicks") == expected_rows({**placed, **more})


def test_fetch_catalog_offsets_timestamps_and_data_loss(broker):
    create_topic(broker, "events", 2)
    placed = produce(broker, "events", 0, 2000, 2)
    catalog = FetchCatalog(broker.bootstrap)
    tps = [("events", 0), ("events", 1)]
    assert catalog.topic_partitions() == tps
    assert catalog.earliest(tps) == {("events", 0): 0, ("events", 1): 0}
    assert catalog.latest(tps) == {("events", 0): 1000, ("events", 1): 1000}
    # Record i of partition 1 is stamped stamp(1, i); odd i go to partition 1.
    found = catalog.offsets_for_timestamp(tps, stamp(1, 1001))
    assert found == {("events", 0): None, ("events", 1): 500}

    with KafkaClient(broker.bootstrap) as client:
        leaders = {tp: 0 for tp in tps}
        assert AdminClient(client).delete_records({("events", 0): 300}, leaders) == {
            ("events", 0): (0, 300)
        }
    assert catalog.earliest(tps)[("events", 0)] == 300
    schema = arrow_schema(include_headers=False)
    with pytest.raises(DataLossError, match="offsets 100 to 300 of events-0 were deleted"):
        list(catalog.read(OffsetRange("events", 0, 100, 400), schema, fail_on_data_loss=True))
    batches = catalog.read(OffsetRange("events", 0, 100, 400), schema, fail_on_data_loss=False)
    offsets = [o for b in batches for o in b.column("offset").to_pylist()]
    assert offsets == list(range(300, 400))
    rows = [r for b in catalog.read(OffsetRange("events", 1, 10, 13), schema, True)
            for r in b.to_pylist()]  # fmt: skip
    assert [(r["offset"], r["key"], r["value"]) for r in rows] == [
        (o, topics.key(1, placed[(1, o)]), topics.value(1, placed[(1, o)])) for o in (10, 11, 12)
    ]
    catalog.close()


def test_read_committed_through_the_broker(spark, tmp_path):
    """Transactions written into a topic's log while its broker was stopped: with
    kafka.isolation.level=read_committed the broker serves up to the last stable offset
    and the reader drops aborted batches; by default (read_uncommitted, as Kafka's
    consumer and Spark's connector) every data record up to the high watermark."""
    log_dir = tmp_path / "kt-logs"
    log_dir.mkdir()
    broker = Broker(log_dir).start()
    create_topic(broker, "txns", 1)
    broker.stop()
    log = topics.open_log(str(log_dir), "txns", 0)
    topics.append(log, 0, 0, 10)  # offsets 0-9
    r = [topics.record(0, i) for i in range(10, 20)]
    topics.append_transaction(log, 7, 0, r[:5], commit=False)  # 10-14, marker 15
    topics.append_transaction(log, 8, 0, r[5:], commit=True)  # 16-20, marker 21
    open_txn = build_batch_of(9, [topics.record(0, 99)])
    log.append_as_leader(open_txn, leader_epoch=0)  # 22, never ended
    log.close()
    broker.start()
    try:
        df = (spark.read.format("kt").option("kafka.bootstrap.servers", broker.bootstrap)
              .option("subscribe", "txns").option("kafka.isolation.level", "read_committed")
              .load())  # fmt: skip
        got = sorted((r.offset, r.value) for r in df.select("offset", "value").collect())
        want = [(i, topics.value(0, i)) for i in range(10)]
        want += [(16 + j, topics.value(0, 15 + j)) for j in range(5)]
        assert got == want
        catalog = FetchCatalog(broker.bootstrap, read_committed=True)
        assert catalog.latest([("txns", 0)]) == {("txns", 0): 22}  # where the open one starts
        catalog.close()
        df = (spark.read.format("kt").option("kafka.bootstrap.servers", broker.bootstrap)
              .option("subscribe", "txns").load())  # fmt: skip
        got = sorted(r.offset for r in df.select("offset").collect())
        assert got == [*range(0, 15), *range(16, 21), 22]  # every data record, no marker
    finally:
        broker.stop()


def build_batch_of(pid: int, records: list) -> bytes:
    from kt.storage.record_batch import build_batch

    return build_batch(records, producer_id=pid, producer_epoch=0, base_sequence=0,
                       is_transactional=True)  # fmt: skip
