"""`kt spark-export`: topics to Parquet, JSON or CSV files through PySpark and the kt source.

The export is planned before Spark starts (so a bad option or an unknown topic is one
clear line, not a JVM stack trace), then Spark reads one input partition per
topic-partition (or offset range) in parallel and writes the files. Rows written are
counted by the write itself (an Observation), so nothing is read twice.

Output columns, by --value-format:
  raw     key binary, value binary                     (Parquet, JSON: base64 in JSON)
  string  key string, value string                     (UTF-8 decoded)
  json    key string, value struct inferred from a sample of the values
then topic, partition, offset, timestamp, timestampType, and headers (an array of
{key, value} structs; a JSON string in CSV, which holds no nested columns).
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kt.errors import KafkaError
from kt.spark.offsets import SourceOptionError
from kt.spark.options import parse_options
from kt.spark.planning import DataLossError, OffsetRange, open_catalog, plan_batch

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

FORMATS = ("parquet", "json", "csv")
VALUE_FORMATS = ("raw", "string", "json")
JSON_SAMPLE_ROWS = 1000
SPARK_EXTRA_HINT = "kt spark-export needs the spark extra: pip install 'kt[spark]'"
JAVA_HINT = (
    "kt spark-export needs Java 17 or later for Spark: install a JDK "
    "(e.g. apt-get install openjdk-17-jre-headless) and put java on PATH or set JAVA_HOME"
)

ProgressCallback = Callable[[int, int], None]


class SparkExportError(Exception):
    """An export that cannot run; str() is the one line shown to the user."""


@dataclass
class ExportRequest:
    """What `kt spark-export` was asked, options already split into lists."""

    topics: list[str]
    output: str
    format: str = "parquet"
    log_dirs: list[str] = field(default_factory=list)
    bootstrap_server: str | None = None
    starting_offsets: str = "earliest"
    ending_offsets: str = "latest"
    value_format: str = "raw"
    partition_by: list[str] = field(default_factory=list)
    master: str = "local[*]"
    max_records_per_partition: int | None = None
    conf: dict[str, str] = field(default_factory=dict)  # spark.* settings (--conf)
    verbose: bool = False  # Spark's own logs and warnings, as Spark prints them


@dataclass
class ExportResult:
    rows: int
    seconds: float
    input_partitions: int

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else 0.0


def check_spark_available() -> None:
    """Raise SparkExportError saying what to install when the spark extra or Java is missing."""
    try:
        import numpy  # noqa: F401
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError:
        raise SparkExportError(SPARK_EXTRA_HINT) from None
    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.access(os.path.join(java_home, "bin", "java"), os.X_OK):
        return
    if shutil.which("java") is None:
        raise SparkExportError(JAVA_HINT)


def prepare_python_workers() -> None:
    """Make Spark's Python workers run this interpreter, with this kt importable.

    Workers run `python3` from PATH unless told otherwise; one without pyarrow or kt
    dies with "Python worker exited unexpectedly".
    """
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    import kt

    root = os.path.dirname(os.path.dirname(os.path.abspath(kt.__file__)))
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([root, *paths])


def spark_session(
    master: str, app_name: str = "kt spark-export", log_level: str = "ERROR",
    verbose: bool = False, register: bool = True, **conf: str,
) -> SparkSession:  # fmt: skip
    """A SparkSession on `master` with the kt source registered (unless not `register`:
    Spark looks the source up in a Python process of its own, a second or so); unless
    `verbose`, Spark logs only its errors and the Python workers stop quietly
    (kt.spark.quiet)."""
    check_spark_available()
    prepare_python_workers()
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # no warning about the hostname
    from pyspark.sql import SparkSession

    import kt.spark

    builder = SparkSession.builder.master(master).appName(app_name)
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        # The JVM talks to its Python workers over loopback TCP by default, without
        # TCP_NODELAY: each task's small input message then waits ~40 ms for a delayed
        # ACK (strace of a worker: 4 tasks of 1000 records, ~5 ms of work each). A Unix
        # domain socket has no Nagle delay (Spark 4.1+).
        "spark.python.unix.domain.socket.enabled": "true",
        # Python workers forked with pyspark.sql and kt's sink already imported
        "spark.python.daemon.module": "kt.spark.daemon",
        **conf,
    }
    if not verbose:
        from kt.spark.quiet import quiet_java_options

        given = settings.get("spark.driver.extraJavaOptions")
        options = quiet_java_options()
        settings["spark.driver.extraJavaOptions"] = f"{given} {options}" if given else options
    for key, value in settings.items():
        builder = builder.config(key, value)
    if verbose:
        spark = builder.getOrCreate()
    else:
        from kt.spark.quiet import filtered_jvm_stderr

        with filtered_jvm_stderr():
            spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    if register:
        kt.spark.register(spark)
    return spark


def source_options(request: ExportRequest) -> dict[str, str]:
    """The `kt` source options for the request."""
    options = {
        "subscribe": ",".join(request.topics),
        "startingOffsets": request.starting_offsets,
        "endingOffsets": request.ending_offsets,
        "includeHeaders": "true",
    }
    if request.bootstrap_server:
        options["kafka.bootstrap.servers"] = request.bootstrap_server
    else:
        options["log.dirs"] = ",".join(request.log_dirs)
    if request.max_records_per_partition:
        options["maxRecordsPerPartition"] = str(request.max_records_per_partition)
    return options


def plan(request: ExportRequest) -> list[OffsetRange]:
    """Validate the request and plan its offset ranges, without Spark."""
    if request.format not in FORMATS:
        raise SparkExportError(f"--format must be one of {', '.join(FORMATS)}")
    if request.value_format not in VALUE_FORMATS:
        raise SparkExportError(f"--value-format must be one of {', '.join(VALUE_FORMATS)}")
    if request.format == "csv" and request.value_format == "raw":
        raise SparkExportError(
            "--format csv cannot hold binary keys and values: use --value-format string or json"
        )
    if os.path.exists(request.output):
        raise SparkExportError(f"--output {request.output} already exists")
    where = request.bootstrap_server or ", ".join(request.log_dirs)
    try:
        options = parse_options(source_options(request), streaming=False)
        catalog = open_catalog(options)
        try:
            known = {topic for topic, _ in catalog.topic_partitions()}
            missing = [t for t in request.topics if t not in known]
            if missing:
                raise SparkExportError(f"no topic {', '.join(missing)} in {where}")
            return plan_batch(options, catalog)
        finally:
            close = getattr(catalog, "close", None)
            if close is not None:
                close()
    except (SourceOptionError, DataLossError) as e:
        raise SparkExportError(str(e)) from None
    except KafkaError as e:
        raise SparkExportError(f"{where}: {e}") from None


def shape(df: DataFrame, request: ExportRequest) -> DataFrame:
    """The exported columns for --value-format and --format (see the module docstring)."""
    from pyspark.sql import functions as F

    if request.value_format in ("string", "json"):
        df = df.withColumn("key", F.col("key").cast("string"))
        df = df.withColumn("value", F.col("value").cast("string"))
    if request.value_format == "json":
        sample = df.select("value").where(F.col("value").isNotNull()).limit(JSON_SAMPLE_ROWS)
        inferred = df.sparkSession.read.json(sample.rdd.map(lambda row: row[0])).schema
        df = df.withColumn("value", F.from_json("value", inferred))
    if request.format == "csv":
        df = df.withColumn("headers", F.to_json("headers"))
        if request.value_format == "json":
            df = df.select(*[c for c in df.columns if c != "value"], "value.*")
    missing = [c for c in request.partition_by if c not in df.columns]
    if missing:
        raise SparkExportError(f"--partition-by: no column {', '.join(missing)}")
    return df


def export(
    request: ExportRequest,
    spark: SparkSession | None = None,
    progress: ProgressCallback | None = None,
) -> ExportResult:
    """Run the export; `progress(done, total)` is called with finished input partitions."""
    if spark is None:
        check_spark_available()  # before any work: the spark extra, and Java
    ranges = plan(request)
    if spark is not None:
        import kt.spark

        kt.spark.register(spark)
        return _write(request, spark, len(ranges), progress)
    from pyspark import SparkContext

    running = SparkContext._active_spark_context is not None  # then getOrCreate reuses it
    # Failures come back as one SparkExportError line; the JVM need not log them too.
    spark = spark_session(request.master, log_level="WARN" if request.verbose else "OFF",
                          verbose=request.verbose, **request.conf)  # fmt: skip
    try:
        return _write(request, spark, len(ranges), progress)
    finally:
        # A session of our own is stopped before the process exits: the JVM then ends its
        # Python workers first. Left to exit with the process, it closes their sockets
        # under them, and a worker still writing (over a Unix domain socket the write
        # fails at once) prints a BrokenPipeError trace after the export's last line.
        if not running:
            spark.stop()


def _write(
    request: ExportRequest, spark: SparkSession, partitions: int, progress: ProgressCallback | None
) -> ExportResult:
    """The export itself, on a session with the kt source registered."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    # Spark's default, INT96, is a legacy type; readers other than Spark want micros.
    spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    reader = spark.read.format("kt")
    for key, value in source_options(request).items():
        reader = reader.option(key, value)
    observation = Observation("kt spark-export")
    df = shape(reader.load(), request).observe(observation, F.count(F.lit(1)).alias("rows"))
    writer = df.write.format(request.format).mode("errorifexists")
    if request.format == "csv":
        writer = writer.option("header", "true")  # the names, for readers and spark-import
    if request.partition_by:
        writer = writer.partitionBy(*request.partition_by)
    started = time.perf_counter()
    with ProgressWatcher(spark, partitions, progress):
        try:
            writer.save(request.output)
        except Exception as e:  # py4j and PySpark errors carry a whole trace
            raise SparkExportError(f"Spark failed: {last_line(str(e))}") from e
    seconds = time.perf_counter() - started
    return ExportResult(int(observation.get["rows"]), seconds, partitions)


def last_line(message: str) -> str:
    """The line that says what went wrong in a Python worker's or the JVM's trace."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    for line in reversed(lines):
        if "Error" in line.split(":")[0] or "Exception" in line.split(":")[0]:
            return line
    return lines[-1] if lines else "unknown error"


class ProgressWatcher:
    """Polls Spark's status tracker while a job runs and reports finished tasks."""

    def __init__(
        self, spark: SparkSession, total: int | None, callback: ProgressCallback | None
    ) -> None:
        """`total`: the job's tasks, or None: those of its stage, once it runs."""
        self.tracker = spark.sparkContext.statusTracker()
        self.total = None if total is None else max(total, 1)
        self.callback = callback
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        assert self.callback is not None
        while not self.done.wait(0.2):
            finished = 0
            for stage_id in self.tracker.getActiveStageIds():
                info = self.tracker.getStageInfo(stage_id)
                if info is not None:
                    finished = max(finished, info.numCompletedTasks)
                    if self.total is None:
                        self.total = max(info.numTasks, 1)
            if self.total is not None:
                self.callback(min(finished, self.total), self.total)

    def __enter__(self) -> ProgressWatcher:
        if self.callback is not None:
            self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.done.set()
        if self.callback is not None:
            self.thread.join()
            if self.total is not None:
                self.callback(self.total, self.total)
