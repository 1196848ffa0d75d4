"""`kt spark-import`: write Parquet, JSON or CSV files into a topic with PySpark."""

from __future__ import annotations

import click

from kt.commands.common import KafkaCommand, fail, parse_key_values
from kt.commands.spark_export import spark_options, spark_progress


@click.command("spark-import", cls=KafkaCommand)
@click.option("--bootstrap-server", required=True, metavar="HOST:PORT",
              help="The broker(s) to produce to.")  # fmt: skip
@click.option("--topic", required=True, help="The topic to write the records to.")
@click.option("--input", "input_path", required=True, metavar="PATH",
              help="A file, or a directory of them (a spark-export's output).")  # fmt: skip
@click.option("--format", "fmt", type=click.Choice(["parquet", "json", "csv"]),
              default="parquet", show_default=True, help="The files' format.")  # fmt: skip
@click.option("--key-column", help="The records' keys (default: a column named key, if any).")
@click.option(
    "--value-column",
    help="The records' values (default: a column named value, else the row as JSON).",
)
@click.option(
    "--headers-column", help="An array of {key, value} (default: a column named headers, if any)."
)
@click.option(
    "--partition-column",
    help="The partition of each record (default: by key, as the Java producer).",
)
@click.option(
    "--timestamp-column",
    help="The records' CreateTime (default: a timestamp column named timestamp).",
)
@click.option(
    "--producer-property",
    "producer_props",
    multiple=True,
    metavar="KEY=VALUE",
    help="A producer setting (acks, compression.type, batch.size); repeat for more.",
)
@spark_options
def spark_import(
    bootstrap_server: str, topic: str, input_path: str, fmt: str, key_column: str | None,
    value_column: str | None, headers_column: str | None, partition_column: str | None,
    timestamp_column: str | None, producer_props: tuple[str, ...], master: str,
    confs: tuple[str, ...], verbose: bool,
) -> None:  # fmt: skip
    """Write the rows of files to a topic with PySpark: a record per row, acks=all."""
    from kt.errors import InvalidTopicError
    from kt.storage.names import validate_topic_name
    from kt.tools.spark_export import SparkExportError
    from kt.tools.spark_import import ImportRequest, import_files

    try:
        validate_topic_name(topic)
    except InvalidTopicError as e:
        fail(f"--topic: {e}")
    request = ImportRequest(
        input=input_path, topic=topic, bootstrap_server=bootstrap_server, format=fmt,
        key_column=key_column, value_column=value_column, headers_column=headers_column,
        partition_column=partition_column, timestamp_column=timestamp_column, master=master,
        conf=parse_key_values(confs, "--conf"),
        producer=parse_key_values(producer_props, "--producer-property"), verbose=verbose,
    )  # fmt: skip
    try:
        with spark_progress("importing", "tasks") as progress:
            result = import_files(request, progress=progress)
    except SparkExportError as e:  # SparkImportError too
        fail(str(e))
    click.echo(
        f"{result.rows} records written to {topic} in {result.seconds:.1f} s "
        f"({result.rows_per_second:,.0f} records/s, {result.tasks} tasks)"
    )
