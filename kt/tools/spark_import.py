"""`kt spark-import`: Parquet, JSON or CSV files become the records of a topic, through
PySpark and the kt sink's producer (kt.spark.sink), the mirror of `kt spark-export`.

Each Spark task produces its rows as the `kt` data source's writer does, but the job is
a map of Arrow batches (DataFrame.mapInArrow) whose one row per task counts the records
acknowledged, rather than a data source write: PySpark runs a Python data source's
writer creation and its commit each in a Python process of its own, about 3 s of a
1M-record import (benchmarks/spark_import.py), and a map needs neither.

The columns of a record, each found by name unless an option names another:
  value      --value-column, else `value`, else the whole row as JSON; a column that is
             neither string nor binary (a struct read from JSON) is written as JSON
  key        --key-column, else `key` when there is one (else none); non-string/binary
             columns are cast to string
  headers    --headers-column, else `headers`: an array of {key, value}, or its JSON (CSV)
  partition  --partition-column only: otherwise the key's murmur2 hash decides, as the
             Java producer does (a spark-export's `partition` is the source's)
  timestamp  --timestamp-column, else `timestamp` when it is a timestamp (or, in CSV, its
             text): the records keep their CreateTime
so a directory written by `kt spark-export` imports with no column option and gives back
the same keys, values, headers and timestamps: byte for byte from Parquet; from JSON and
CSV, whose keys and values were written as text (--value-format string), as that text in
UTF-8 (binary values in JSON are base64 text: header values are decoded back, keys and
values are taken as they read).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from kt.tools.spark_export import (
    FORMATS,
    ProgressCallback,
    ProgressWatcher,
    SparkExportError,
    check_spark_available,
    last_line,
    spark_session,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

HEADERS_TYPE = "array<struct<key:string,value:binary>>"
# Parquet's vectored reads take each row group (128 MB as Spark writes them) into a direct
# buffer, and the JVM's direct memory is capped at its heap: a 2 GiB import with 512 MB
# for Spark ran out of it ("Cannot reserve 133298688 bytes of direct buffer memory") in a
# reader thread, and its task then waited for that read for ever. Plain reads use heap.
IMPORT_SETTINGS = {"spark.hadoop.parquet.hadoop.vectored.io.enabled": "false"}


class SparkImportError(SparkExportError):
    """An import that cannot run; str() is the one line shown to the user."""


@dataclass
class ImportRequest:
    input: str
    topic: str
    bootstrap_server: str
    format: str = "parquet"
    key_column: str | None = None
    value_column: str | None = None
    headers_column: str | None = None
    partition_column: str | None = None
    timestamp_column: str | None = None
    master: str = "local[*]"
    conf: dict[str, str] = field(default_factory=dict)
    producer: dict[str, str] = field(default_factory=dict)  # kafka.-prefixed sink options
    verbose: bool = False  # Spark's own logs and warnings, as Spark prints them


@dataclass
class ImportResult:
    rows: int
    seconds: float
    tasks: int  # the tasks that produced rows

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else 0.0


def check_request(request: ImportRequest) -> None:
    """What can be refused before Spark starts."""
    if request.format not in FORMATS:
        raise SparkImportError(f"--format must be one of {', '.join(FORMATS)}")
    if not os.path.exists(request.input):
        raise SparkImportError(f"--input {request.input}: no such file or directory")


def read_input(spark: SparkSession, request: ImportRequest) -> DataFrame:
    check_request(request)
    reader = spark.read.format(request.format)
    if request.format == "csv":
        reader = reader.option("header", "true")
    try:
        return reader.load(request.input)
    except Exception as e:  # an unreadable input: py4j's whole trace otherwise
        raise SparkImportError(f"cannot read {request.input}: {last_line(str(e))}") from e


def record_columns(df: DataFrame, request: ImportRequest) -> tuple[DataFrame, str | None]:
    """The kt sink's columns of `df`, and the name of its timestamp column if any."""
    from pyspark.sql import functions as F

    types = dict(df.dtypes)

    def named(option: str | None, flag: str, default: str | None) -> str | None:
        if option is not None:
            if option not in types:
                raise SparkImportError(f"{flag}: no column {option} in {request.input}")
            return option
        return default if default in types else None

    value = named(request.value_column, "--value-column", "value")
    key = named(request.key_column, "--key-column", "key")
    headers = named(request.headers_column, "--headers-column", "headers")
    partition = named(request.partition_column, "--partition-column", None)
    timestamp = named(request.timestamp_column, "--timestamp-column", "timestamp")
    columns: list[Column] = []
    if value is None:
        columns.append(F.to_json(F.struct(*[F.col(f"`{c}`") for c in df.columns])).alias("value"))
    else:
        columns.append(_bytes_or_json(value, types[value]).alias("value"))
    if key is not None:
        as_is = types[key] in ("string", "binary")
        columns.append((F.col(key) if as_is else F.col(key).cast("string")).alias("key"))
    if headers is not None:
        column = F.col(headers)
        if types[headers] == "string":  # CSV holds them as JSON
            column = F.from_json(column, HEADERS_TYPE)
        elif types[headers] == "array<struct<key:string,value:string>>":
            # JSON files hold binary header values in base64 (Spark's JSON writer)
            column = F.transform(column, lambda h: F.struct(
                h["key"].alias("key"), F.unbase64(h["value"]).alias("value")))  # fmt: skip
        columns.append(column.alias("headers"))
    if partition is not None:
        columns.append(F.col(partition).cast("int").alias("partition"))
    stamp = None
    if timestamp is not None and types[timestamp] in ("timestamp", "timestamp_ntz", "string"):
        column = F.col(timestamp)
        if types[timestamp] == "string":
            column = F.to_timestamp(column)
        columns.append(column.alias("kt_timestamp"))
        stamp = "kt_timestamp"
    elif request.timestamp_column is not None:
        raise SparkImportError(f"--timestamp-column: {timestamp} is not a timestamp")
    return df.select(*columns), stamp


def _bytes_or_json(name: str, dtype: str) -> Column:
    from pyspark.sql import functions as F

    if dtype in ("string", "binary"):
        return F.col(name)
    if dtype.startswith(("struct", "array", "map")):
        return F.to_json(F.col(name))
    return F.col(name).cast("string")


def import_files(
    request: ImportRequest, spark: SparkSession | None = None,
    progress: ProgressCallback | None = None,
) -> ImportResult:  # fmt: skip
    """Write the input's rows to the topic; `progress(done, total)` with finished tasks."""
    if spark is None:
        check_spark_available()  # before any work: the spark extra, and Java
    check_request(request)
    if spark is not None:
        return _import(request, spark, progress)
    from pyspark import SparkContext

    running = SparkContext._active_spark_context is not None
    spark = spark_session(
        request.master, app_name="kt spark-import", verbose=request.verbose, register=False,
        log_level="WARN" if request.verbose else "OFF", **{**IMPORT_SETTINGS, **request.conf},
    )  # fmt: skip
    try:
        return _import(request, spark, progress)
    finally:
        if not running:  # as spark-export: the workers end before the process does
            spark.stop()


def _import(
    request: ImportRequest, spark: SparkSession, progress: ProgressCallback | None
) -> ImportResult:
    from kt.spark.sink import SinkError, parse_sink_options, write_task

    df, stamp = record_columns(read_input(spark, request), request)
    options = {"kafka.bootstrap.servers": request.bootstrap_server, "topic": request.topic}
    if stamp is not None:
        options["timestampColumn"] = stamp
    options.update({f"kafka.{key}": value for key, value in request.producer.items()})
    try:  # the checks of the sink's writer, with its messages
        sink_options = parse_sink_options(options, df.schema)
    except SinkError as e:
        raise SparkImportError(str(e)) from None
    counts = _map_in_arrow(df, partial(write_task, sink_options), "records long")
    started = time.perf_counter()
    with ProgressWatcher(spark, None, progress):
        try:  # one row per task: no stage more to sum them
            written = [row.records for row in counts.collect()]
        except Exception as e:
            raise SparkImportError(f"Spark failed: {last_line(str(e))}") from e
    return ImportResult(sum(written), time.perf_counter() - started, len(written))


def _map_in_arrow(df: DataFrame, function: Callable, schema: str) -> DataFrame:
    """df.mapInArrow(function, schema) without pandas: PySpark's mapInArrow builds its
    function through pandas_udf, which insists on pandas, though the Arrow map itself
    (MapInArrowExec and its Python worker) never uses it."""
    from pyspark.sql import DataFrame
    from pyspark.sql.udf import UserDefinedFunction
    from pyspark.util import PythonEvalType

    udf = UserDefinedFunction(function, returnType=schema,
                              evalType=PythonEvalType.SQL_MAP_ARROW_ITER_UDF)  # fmt: skip
    column = udf(*[df[name] for name in df.columns])
    return DataFrame(df._jdf.mapInArrow(column._jc, False, None), df.sparkSession)
