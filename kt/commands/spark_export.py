"""`kt spark-export`: write topics to Parquet, JSON or CSV files with PySpark."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import click

from kt.commands.common import KafkaCommand, fail, parse_key_values


def spark_options(command: Callable) -> Callable:
    """--master, --conf and --verbose, as both Spark commands take them."""
    command = click.option("--verbose", is_flag=True,
                           help="Show Spark's own logs and warnings (by default only its "
                           "errors).")(command)  # fmt: skip
    command = click.option("--conf", "confs", multiple=True, metavar="KEY=VALUE",
                           help="A Spark setting (spark.executor.memory=2g, ...); repeat "
                           "for more.")(command)  # fmt: skip
    return click.option("--master", default="local[*]", show_default=True,
                        help="The Spark master: local[N], or spark://HOST:PORT of a "
                        "cluster.")(command)  # fmt: skip


@click.command("spark-export", cls=KafkaCommand)
@click.option("--bootstrap-server", metavar="HOST:PORT", help="Read through a running broker.")
@click.option(
    "--log-dirs",
    metavar="DIR1,DIR2,...",
    help="Read the segment files of these log dirs directly (a stopped broker's data).",
)
@click.option(
    "--topic", "topics", multiple=True, required=True, help="A topic to export; repeat for more."
)
@click.option(
    "--output", required=True, metavar="DIR", help="The directory to write (must not exist)."
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["parquet", "json", "csv"]),
    default="parquet",
    show_default=True,
    help="The file format.",
)
@click.option(
    "--starting-offsets",
    default="earliest",
    show_default=True,
    help='earliest, or JSON like {"topic":{"0":23}} (-2 earliest).',
)
@click.option(
    "--ending-offsets",
    default="latest",
    show_default=True,
    help='latest, or JSON like {"topic":{"0":50}} (-1 latest).',
)
@click.option(
    "--value-format",
    type=click.Choice(["raw", "string", "json"]),
    default="raw",
    show_default=True,
    help="raw: binary key and value; string: UTF-8 text; json: value parsed into columns.",
)
@click.option(
    "--partition-by",
    metavar="COL1,COL2,...",
    default="",
    help="Output columns to partition the files by (e.g. topic,partition).",
)
@click.option(
    "--max-records-per-partition",
    type=click.IntRange(min=1),
    default=None,
    help="Split a topic-partition into Spark partitions of at most this many offsets.",
)
@spark_options
def spark_export(
    bootstrap_server: str | None, log_dirs: str | None, topics: tuple[str, ...], output: str,
    fmt: str, starting_offsets: str, ending_offsets: str, value_format: str, partition_by: str,
    max_records_per_partition: int | None, master: str, confs: tuple[str, ...], verbose: bool,
) -> None:  # fmt: skip
    """Export topics to files with PySpark, one Spark partition per topic-partition."""
    from kt.tools.spark_export import ExportRequest, SparkExportError, export

    if bool(bootstrap_server) == bool(log_dirs):
        fail("exactly one of --bootstrap-server and --log-dirs is needed")
    request = ExportRequest(
        topics=list(topics),
        output=output,
        format=fmt,
        log_dirs=[d for d in (log_dirs or "").split(",") if d],
        bootstrap_server=bootstrap_server,
        starting_offsets=starting_offsets,
        ending_offsets=ending_offsets,
        value_format=value_format,
        partition_by=[c for c in partition_by.split(",") if c],
        master=master,
        max_records_per_partition=max_records_per_partition,
        conf=parse_key_values(confs, "--conf"),
        verbose=verbose,
    )
    try:
        with spark_progress("exporting", "partitions") as progress:
            result = export(request, progress=progress)
    except SparkExportError as e:
        fail(str(e))
    click.echo(
        f"{result.rows} rows written to {output} in {result.seconds:.1f} s "
        f"({result.rows_per_second:,.0f} rows/s, {result.input_partitions} input partitions)"
    )


@contextmanager
def spark_progress(doing: str, unit: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar of Spark tasks on stderr (none when it is not a terminal); yields
    the callback that moves it."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    columns = (TextColumn(doing), BarColumn(), MofNCompleteColumn(), TextColumn(unit),
               TimeElapsedColumn())  # fmt: skip
    with Progress(*columns, console=console, transient=True,
                  disable=not console.is_terminal) as bar:  # fmt: skip
        task = bar.add_task(doing, total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)
