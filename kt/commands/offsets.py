"""`kt get-offsets` (kafka-get-offsets.sh) and `kt delete-records` (kafka-delete-records.sh)."""

from __future__ import annotations

import click

from kt.commands.common import KafkaCommand, admin_session, fail


@click.command("get-offsets", cls=KafkaCommand)
@click.option("--bootstrap-server", required=True, help="The Kafka server to connect to.")
@click.option("--topic", help="A regex of the topics to get offsets of (all by default).")
@click.option("--topic-partitions", help="Topic-partition specs, e.g. 't:0-2,u'.")
@click.option("--partitions", help="Comma-separated partition ids (with --topic).")
@click.option("--time", "time_", default="-1", show_default=True,
              help="-1/latest, -2/earliest, -3/max-timestamp, or a timestamp in ms.")  # fmt: skip
@click.option("--exclude-internal-topics", is_flag=True, help="Skip internal topics.")
@click.option("--command-config", type=click.Path(dir_okay=False), help="Client config file.")
def get_offsets(
    bootstrap_server: str,
    topic: str | None,
    topic_partitions: str | None,
    partitions: str | None,
    time_: str,
    exclude_internal_topics: bool,
    command_config: str | None,
) -> None:
    """Print the offset of each partition at a time (latest by default)."""
    from kt.tools import offsets as o

    try:
        spec = o.parse_time(time_)
        filters = o.parse_topic_partitions(topic, topic_partitions, partitions)
    except o.OffsetsCommandError as e:
        fail(f"Error occurred: {e}")  # GetOffsetShell's TerseException line
    with admin_session(bootstrap_server, command_config) as admin:
        try:
            lines = o.get_offsets(admin, filters, spec, exclude_internal_topics)
        except o.OffsetsCommandError as e:
            fail(f"Error occurred: {e}")
    for line in lines:
        click.echo(line)


@click.command("delete-records", cls=KafkaCommand)
@click.option("--bootstrap-server", required=True, help="The Kafka server to connect to.")
@click.option(
    "--offset-json-file",
    required=True,
    type=click.Path(dir_okay=False),
    help='JSON: {"partitions":[{"topic":"t","partition":0,"offset":10}],"version":1}',
)
@click.option("--command-config", type=click.Path(dir_okay=False), help="Client config file.")
def delete_records(
    bootstrap_server: str, offset_json_file: str, command_config: str | None
) -> None:
    """Delete records before the given offsets (offset -1: the high watermark)."""
    from kt.tools import offsets as o

    try:
        with open(offset_json_file) as f:
            wanted = o.parse_offset_json(f.read())
    except OSError as e:
        fail(f"Cannot read {offset_json_file}: {e.strerror}")
    except o.OffsetsCommandError as e:
        fail(str(e))
    with admin_session(bootstrap_server, command_config) as admin:
        lines = o.delete_records(admin, wanted)
    for line in lines:
        click.echo(line)
    if any("\terror: " in line for line in lines):
        raise SystemExit(1)  # Kafka's tool exits 0 here; a failed partition is a failure
