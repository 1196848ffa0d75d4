"""The `kt` PySpark data source: batch and micro-batch reads of kt topics, and writes
into them (kt.spark.sink).

    spark.dataSource.register(KtDataSource)
    spark.read.format("kt").option("log.dirs", "/var/kt/data").option("subscribe", "t").load()

Spark runs each method where it belongs: `schema`, `reader().partitions()` and every
DataSourceStreamReader method but `read` in a planner Python process on the driver;
`read` in a Python worker per input partition on the executors. Readers are pickled
between them, so they hold only options and a catalog of paths.

A streaming offset is Spark's Kafka JSON, {"topic": {"partition": offset}}: the next
offset to read of every partition. With a checkpoint, a restarted query resumes from
the last committed one.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from kt.spark import planning
from kt.spark.offsets import (
    EARLIEST,
    TopicPartition,
    format_partition_offsets,
    offsets_from_json,
)
from kt.spark.options import SourceOptions, parse_options
from kt.spark.planning import DATA_LOSS_HINT, Bounds, DataLossError, OffsetRange
from kt.spark.schema import arrow_schema, spark_schema


class OffsetRangePartition(InputPartition):
    """One Spark input partition: an OffsetRange of one topic-partition."""

    def __init__(self, offsets: OffsetRange) -> None:
        super().__init__(offsets)
        self.offsets = offsets


class KtDataSource(DataSource):
    """`format("kt")`: rows with the schema of Spark's Kafka source (kt.spark.schema)."""

    @classmethod
    def name(cls) -> str:
        return "kt"

    def schema(self) -> StructType:
        return spark_schema(_include_headers(self.options))

    def reader(self, schema: StructType) -> DataSourceReader:
        return KtBatchReader(parse_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KtStreamReader(parse_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from kt.spark.sink import KtBatchWriter, SinkError, parse_sink_options

        if overwrite:
            raise SinkError("Save mode Overwrite not allowed for Kafka. Allowed save modes are "
                            "Append and ErrorIfExists (default).")  # fmt: skip
        return KtBatchWriter(parse_sink_options(self.options, schema))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from kt.spark.sink import KtStreamWriter, parse_sink_options

        return KtStreamWriter(parse_sink_options(self.options, schema))


def _include_headers(options: dict) -> bool:
    lowered = {k.lower(): v for k, v in options.items()}
    return lowered.get("includeheaders", "false").strip().lower() == "true"


def read_partition(
    catalog: planning.Catalog, partition: InputPartition, options: SourceOptions
) -> Iterator:
    """The Arrow record batches of one input partition (on an executor)."""
    if not isinstance(partition, OffsetRangePartition):
        return  # Spark's stand-in partition when the plan has none: nothing to read
    schema = arrow_schema(options.include_headers)
    yield from catalog.read(partition.offsets, schema, options.fail_on_data_loss)


class KtBatchReader(DataSourceReader):
    """A batch query: the offset ranges are fixed when the query is planned."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self.catalog = planning.open_catalog(options)

    def partitions(self) -> Sequence[InputPartition]:
        ranges = planning.plan_batch(self.options, self.catalog)
        return [OffsetRangePartition(r) for r in ranges]

    def read(self, partition: InputPartition) -> Iterator:
        return read_partition(self.catalog, partition, self.options)


class KtStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """A micro-batch stream: each trigger reads from the last end offsets to the latest
    stable offsets (at most maxOffsetsPerTrigger of them).

    Invariants: offsets handed to Spark are >= 0 and never decrease per partition;
    with Trigger.AvailableNow the ends never pass the target taken when it began.
    """

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self.catalog = planning.open_catalog(options)
        self.target: dict[TopicPartition, int] | None = None

    def initialOffset(self) -> dict:
        tps = planning.subscribed(self.catalog, self.options.subscription)
        bounds = Bounds.of(self.catalog, tps)
        start = planning.resolve(
            self.options.starting, self.catalog, bounds, EARLIEST, self.options, "startingOffsets"
        )
        return format_partition_offsets(start)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_offsets_per_trigger is None:
            return ReadAllAvailable()
        return ReadMaxRows(self.options.max_offsets_per_trigger)

    def prepareForTriggerAvailableNow(self) -> None:
        tps = planning.subscribed(self.catalog, self.options.subscription)
        self.target = self.catalog.latest(tps)

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = self._starts(offsets_from_json(start))
        latest = self.catalog.latest(list(begin), begin)
        if self.target is not None:
            latest = {tp: min(end, self.target.get(tp, begin[tp])) for tp, end in latest.items()}
        latest = {tp: max(end, begin[tp]) for tp, end in latest.items()}
        if isinstance(limit, ReadMaxRows):
            latest = planning.rate_limit(begin, latest, limit.max_rows)
        return format_partition_offsets(latest)

    def _starts(self, known: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
        """`known` plus the partitions that appeared since, from their earliest offset."""
        tps = planning.subscribed(self.catalog, self.options.subscription)
        new = [tp for tp in tps if tp not in known]
        starts = dict(known)
        starts.update(self.catalog.earliest(new))
        gone = set(known) - set(tps)
        if gone and self.options.fail_on_data_loss:
            listed = ", ".join(f"{t}-{p}" for t, p in sorted(gone))
            raise DataLossError(f"{listed} no longer exist; {DATA_LOSS_HINT}")
        for tp in gone:
            del starts[tp]
        return starts

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        begin, stop = offsets_from_json(start), offsets_from_json(end)
        new = [tp for tp in stop if tp not in begin]
        begin.update(self.catalog.earliest(new))
        ranges = [OffsetRange(t, p, begin[(t, p)], e) for (t, p), e in sorted(stop.items())]
        ranges = planning.split(ranges, self.options.max_records_per_partition)
        return [OffsetRangePartition(r) for r in ranges]

    def read(self, partition: InputPartition) -> Iterator:
        return read_partition(self.catalog, partition, self.options)

    def commit(self, end: dict) -> None:
        """Nothing to release: the log keeps its data by retention, not by our progress."""
