"""The `kt` sink: `df.write.format("kt")` and `writeStream.format("kt")`, as Spark's Kafka
sink writes.

    df.selectExpr("CAST(id AS STRING) AS key", "to_json(struct(*)) AS value")
      .write.format("kt").option("kafka.bootstrap.servers", "127.0.0.1:9092")
      .option("topic", "orders").mode("append").save()

The columns are those of Spark's Kafka sink (KafkaWriter): `value` (string or binary,
required), `key` (string or binary), `topic` (string; the `topic` option, when given,
wins over it), `headers` (array of struct<key: string, value: binary>), `partition`
(int; otherwise the key's murmur2 hash, as the Java producer partitions, or a sticky
partition for null keys). Other columns are ignored, as Spark's sink ignores them,
except the one the kt option `timestampColumn` names (timestamp, or long milliseconds):
it becomes each record's CreateTime (kt spark-import keeps the exported timestamps so).

Each Spark task produces its rows through kt's producer, with acks=all unless
`kafka.acks` says otherwise: each Arrow batch's rows are split by partition and encoded
as records a column at a time (kt.spark.record_encoder), straight into the producer's
batches; rows that name their topics go record by record. A task's
commit message is sent only when every record it sent was acknowledged: a failed task
raises, Spark retries it, and what the failed attempt wrote stays written. At least
once, as Spark's Kafka sink promises.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from kt.client.producer_config import idempotence
from kt.errors import InvalidConfigError, KafkaError
from kt.spark.options import BOOTSTRAP_SERVERS
from kt.unsupported import refuse_client_features

if TYPE_CHECKING:
    import pyarrow as pa

    from kt.client.sender import PipelinedProducer


TOPIC_REQUIRED = (
    "topic option required when no 'topic' attribute is present. Use the topic option for "
    "setting a topic."
)
NULL_TOPIC = (
    "The Kafka message data sent to the producer contains a null topic. Use the `topic` "
    "option for setting a default topic."
)
VALUE_REQUIRED = "Required attribute 'value' not found"


class SinkError(Exception):
    """A write that cannot run, in the words of Spark's Kafka sink."""


@dataclass(frozen=True)
class SinkOptions:
    bootstrap_servers: str
    topic: str | None
    producer: dict[str, str]  # the kafka.-prefixed options, prefix removed
    timestamp_column: str | None = None


def parse_sink_options(options: dict[str, str], schema: StructType) -> SinkOptions:
    """The options and the columns, checked as KafkaWriter.validateQuery checks them."""
    lowered = {k.lower(): v for k, v in options.items()}
    bootstrap = lowered.get(BOOTSTRAP_SERVERS)
    if not bootstrap:
        raise SinkError(
            "Kafka option bootstrap.servers is not set. Please make sure it is set and retry."
        )
    topic = options.get("topic") or lowered.get("topic")
    producer = {k[len("kafka.") :]: v for k, v in options.items() if k.lower().startswith("kafka.")}
    producer.pop("bootstrap.servers", None)
    try:  # kafka.security.protocol=SSL and the like: refused, never sent in plaintext
        refuse_client_features(producer, spark=True)
    except InvalidConfigError as e:
        raise SinkError(f"kafka.{e}") from None
    try:  # idempotent unless kafka.enable.idempotence=false, as Kafka's producer
        idempotence(producer)
    except ValueError as e:
        raise SinkError(str(e)) from None
    for name in ("key.serializer", "value.serializer"):
        if name in producer:
            raise SinkError(
                f"Kafka option '{name}' is not supported as keys are serialized with "
                "ByteArraySerializer or use DataFrame operations to explicitly serialize them."
            )
    fields = {f.name: f.dataType for f in schema.fields}
    if topic is None:
        if "topic" not in fields:
            raise SinkError(TOPIC_REQUIRED)
        _check_type("topic", fields["topic"], [StringType()])
    if "value" not in fields:
        raise SinkError(VALUE_REQUIRED)
    _check_type("value", fields["value"], [StringType(), BinaryType()])
    if "key" in fields:
        _check_type("key", fields["key"], [StringType(), BinaryType()])
    if "partition" in fields:
        _check_type("partition", fields["partition"], [IntegerType()])
    if "headers" in fields:
        header = StructType().add("key", StringType()).add("value", BinaryType())
        _check_type("headers", fields["headers"], [ArrayType(header)])
    column = lowered.get("timestampcolumn")
    if column is not None:
        if column not in fields:
            raise SinkError(f"timestampColumn '{column}' is not a column of the data")
        _check_type(column, fields[column], [TimestampType(), TimestampNTZType(), LongType()])
    return SinkOptions(bootstrap, topic, producer, column)


def _check_type(name: str, actual: DataType, allowed: list[DataType]) -> None:
    def simple(t: DataType) -> DataType:  # nullability is not the sink's business
        if isinstance(t, ArrayType) and isinstance(t.elementType, StructType):
            return ArrayType(StructType([f.__class__(f.name, f.dataType) for f in t.elementType]))
        return t

    if simple(actual) not in [simple(t) for t in allowed]:
        names = " or ".join(t.simpleString() for t in allowed)
        raise SinkError(f"{name} attribute unsupported type {actual.simpleString()}. "
                        f"{name} must be a(n) {names}")  # fmt: skip


@dataclass
class KtCommitMessage(WriterCommitMessage):
    """What one task wrote, every record acknowledged."""

    records: int


def write_batches(options: SinkOptions, batches: Iterator[pa.RecordBatch]) -> KtCommitMessage:
    """Produce the rows of one task through the pipelined producer (batches gathered
    while requests are in flight, retried as the Java producer does); returns only when
    all of them are acknowledged, else raises the first refusal (a failed task: Spark
    runs it again)."""
    from kt.client.client import KafkaClient
    from kt.client.producer import Producer
    from kt.client.producer_config import acks_number
    from kt.client.sender import PipelinedProducer

    props = options.producer
    client = KafkaClient(options.bootstrap_servers, client_id=props.get("client.id", "kt-spark"))
    refused: list[KafkaError] = []

    def on_delivery(error: KafkaError | None, _offset: int) -> None:
        if error is not None:
            refused.append(error)

    try:
        base = Producer(
            client, acks=acks_number(props.get("acks", "all")),
            compression=props.get("compression.type", "none"),
            batch_size=int(props.get("batch.size", 16384)),
            request_timeout_ms=int(props.get("request.timeout.ms", 30000)),
            retry_backoff_ms=int(props.get("retry.backoff.ms", 100)),
            max_block_ms=int(props.get("max.block.ms", 60000)),
            idempotent=idempotence(props),
        )  # fmt: skip
        producer = PipelinedProducer(
            base, linger_ms=float(props.get("linger.ms", 5)),
            max_in_flight=int(props.get("max.in.flight.requests.per.connection", 5)),
            buffer_memory=int(props.get("buffer.memory", 33554432)),
            retries=int(props.get("retries", 2**31 - 1)),
            delivery_timeout_ms=int(props.get("delivery.timeout.ms", 120000)),
        )  # fmt: skip
        written = 0
        for batch in batches:
            written += _produce(producer, options, batch, on_delivery)
            _raise_first(refused)
        producer.flush(max(60.0, base.request_timeout_ms / 1000 * 4))
        _raise_first(refused)
    finally:
        client.close()
    return KtCommitMessage(written)


def write_task(options: SinkOptions, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """One task of `kt spark-import` (a map of Arrow batches, kt.tools.spark_import): its
    rows produced as write_batches produces them, then one row, `records`: how many were
    acknowledged."""
    import pyarrow as pa

    written = write_batches(options, batches).records
    yield pa.RecordBatch.from_arrays([pa.array([written], pa.int64())], names=["records"])


def _produce(producer: PipelinedProducer, options: SinkOptions, batch: pa.RecordBatch,
             on_delivery: Callable[[KafkaError | None, int], None]) -> int:  # fmt: skip
    """The batch's rows produced: per partition, encoded a column at a time, unless the
    rows name their topics, carry a header without a key or lack some timestamps (then
    row by row)."""
    if options.topic is not None and _encodable(batch, options.timestamp_column):
        return _produce_encoded(producer, options.topic, batch, options.timestamp_column,
                                on_delivery)  # fmt: skip
    return _produce_rows(producer, options, batch, on_delivery)


def _encodable(batch: pa.RecordBatch, timestamp_column: str | None) -> bool:
    import pyarrow.compute as pc

    names = batch.schema.names
    if "headers" in names:  # a null header key is refused record by record
        keys = pc.list_flatten(batch.column("headers")).field("key")
        if keys.null_count:
            return False
    if "partition" in names and (pc.min(batch.column("partition")).as_py() or 0) < 0:
        return False  # refused record by record, as the producer refuses it
    return timestamp_column is None or batch.column(timestamp_column).null_count == 0


def _produce_encoded(
    producer: PipelinedProducer, topic: str, batch: pa.RecordBatch,
    timestamp_column: str | None, on_delivery: Callable[[KafkaError | None, int], None],
) -> int:  # fmt: skip
    """Each partition's rows as one run of records (kt.spark.record_encoder): the
    `partition` column's, else the key's murmur2 partition, else (no key) the sticky
    partitioner's."""
    import numpy as np

    from kt.spark.record_encoder import ArrowRecords, partitions_for_keys

    names = batch.schema.names
    n = batch.num_rows
    keys = batch.column("key") if "key" in names else None
    values = batch.column("value")
    headers = batch.column("headers") if "headers" in names else None
    stamps = None
    if timestamp_column is not None:
        stamps = _timestamps(batch, timestamp_column).to_numpy()
    parts = np.full(n, -1, np.int64)
    if "partition" in names:
        column = batch.column("partition")
        parts = np.asarray(column.fill_null(-1).to_numpy(zero_copy_only=False), np.int64)
    if keys is not None and (parts < 0).any():
        by_key = partitions_for_keys(keys.cast("binary"), producer.partition_count(topic))
        parts = np.where(parts < 0, by_key, parts)
    sticky = parts < 0
    # Rows without a key go where the sticky partitioner puts them when they are sent, which
    # may be a partition that keyed rows of this batch go to too: the batch is sent in runs
    # of keyed and keyless rows, in row order, so that each partition gets its rows in order.
    for segment in np.split(np.arange(n), np.flatnonzero(np.diff(sticky)) + 1):
        for partition in np.unique(parts[segment]):
            rows = segment[parts[segment] == partition]
            whole = len(rows) == n
            run = ArrowRecords(
                None if keys is None else keys if whole else keys.take(rows),
                values if whole else values.take(rows),
                None if stamps is None else stamps[rows],
                None if headers is None else headers if whole else headers.take(rows),
            )  # fmt: skip
            target = None if partition < 0 else int(partition)
            producer.send_encoded(topic, run, target, on_delivery)
    return n


def _produce_rows(producer: PipelinedProducer, options: SinkOptions, batch: pa.RecordBatch,
                  on_delivery: Callable[[KafkaError | None, int], None]) -> int:  # fmt: skip
    import pyarrow as pa
    import pyarrow.compute as pc

    def column(name: str) -> list | None:
        if name not in batch.schema.names:
            return None
        array = batch.column(name)
        if pa.types.is_string(array.type) or pa.types.is_large_string(array.type):
            array = pc.cast(array, pa.binary())  # UTF-8 bytes, as Spark's sink casts
        return array.to_pylist()

    n = batch.num_rows
    values = column("value")
    keys = column("key") or [None] * n
    if options.topic is not None:
        topics = [options.topic] * n
    else:
        topics = [t.decode() if t is not None else None for t in column("topic")]  # type: ignore[union-attr]
    headers = column("headers") or [None] * n
    partitions = column("partition") or [None] * n
    stamps = None
    if options.timestamp_column is not None:
        stamps = _timestamps(batch, options.timestamp_column).to_pylist()
    for i in range(n):
        topic = topics[i]
        if topic is None:
            raise SinkError(NULL_TOPIC)
        record_headers = [(h["key"], h["value"]) for h in headers[i]] if headers[i] else ()
        producer.send(topic, values[i], keys[i], on_delivery=on_delivery,  # type: ignore[index]
                      partition=partitions[i], headers=record_headers,
                      timestamp_ms=stamps[i] if stamps is not None else None)  # fmt: skip
        if i % 256 == 255:
            producer.poll(0)
    return n


def _timestamps(batch: pa.RecordBatch, name: str) -> pa.Array:
    """The column as int64 milliseconds since the epoch."""
    import pyarrow as pa

    array = batch.column(name)
    if pa.types.is_timestamp(array.type):
        # to whole milliseconds (a record's timestamp): finer units are truncated
        return array.cast(pa.timestamp("ms", tz=array.type.tz), safe=False).cast(pa.int64())
    return array.cast(pa.int64())


def _raise_first(refused: list[KafkaError]) -> None:
    """Raise the first record the broker did not take (a failed task: Spark retries)."""
    if refused:
        error = refused[0]
        raise KafkaError(error.code, f"{error.name}: {error}")


class KtBatchWriter(DataSourceArrowWriter):
    """`df.write.format("kt")`: each task's rows produced; nothing to do on commit."""

    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KtCommitMessage:
        return write_batches(self.options, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Every task's records are in the topics already (at least once)."""

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """What the tasks that succeeded wrote stays written, as with Spark's Kafka sink."""


class KtStreamWriter(DataSourceStreamArrowWriter):
    """`writeStream.format("kt")`: each micro-batch's tasks produce their rows; the
    checkpoint then records the batch, so a restart redoes at most the last one."""

    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KtCommitMessage:
        return write_batches(self.options, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        """Nothing to finish: the records are acknowledged."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        """Records already written stay (at least once)."""
