"""`kt leader-election` (kafka-leader-election.sh) and `kt preferred-replica-election`
(kafka-preferred-replica-election.sh, Kafka 2.x)."""

from __future__ import annotations

import click

from kt.commands.common import INT, KafkaCommand, admin_session, fail


@click.command("leader-election", cls=KafkaCommand)
@click.option("--bootstrap-server", help="REQUIRED: the server(s) to connect to.")
@click.option("--admin.config", "admin_config", type=click.Path(dir_okay=False),
              help="Admin client properties file.")  # fmt: skip
@click.option("--election-type", type=click.Choice(["PREFERRED", "UNCLEAN"], case_sensitive=False),
              help="REQUIRED: preferred (the first replica leads) or unclean (a partition "
              "without a leader elects one, from outside the ISR if it must).")  # fmt: skip
@click.option("--topic", help="The topic of the partition to elect (with --partition).")
@click.option("--partition", type=INT, help="The partition of --topic to elect.")
@click.option("--all-topic-partitions", is_flag=True, help="Every partition that needs it.")
@click.option("--path-to-json-file", type=click.Path(dir_okay=False),
              help='{"partitions":[{"topic":"t","partition":1}]}')  # fmt: skip
def leader_election(
    bootstrap_server: str | None, admin_config: str | None, election_type: str | None,
    topic: str | None, partition: int | None, all_topic_partitions: bool,
    path_to_json_file: str | None,
) -> None:  # fmt: skip
    """Elect leaders: preferred replicas, or unclean for partitions without a leader."""
    from kt.tools import leader_election as le

    missing = [n for n, v in (("bootstrap-server", bootstrap_server),
                              ("election-type", election_type)) if v is None]  # fmt: skip
    if missing:
        fail("Missing required option(s): " + ", ".join(missing))
    chosen = sum(1 for on in (topic is not None, all_topic_partitions, path_to_json_file) if on)
    if chosen != 1:
        fail("One and only one of the following options is required: topic, "
             "all-topic-partitions, path-to-json-file")  # fmt: skip
    if topic is not None and partition is None:
        fail("Missing required option(s): partition")
    if topic is None and partition is not None:
        fail("Option partition is only allowed if topic is used")
    assert bootstrap_server is not None and election_type is not None
    partitions = None
    try:
        if path_to_json_file is not None:
            partitions = le.parse_election_data(_read(path_to_json_file))
        elif topic is not None:
            partitions = [(topic, partition)]
    except le.ElectionError as e:
        fail(str(e))
    _elect(bootstrap_server, admin_config, election_type.upper(), partitions)


@click.command("preferred-replica-election", cls=KafkaCommand)
@click.option("--bootstrap-server", help="The server(s) to connect to.")
@click.option("--admin.config", "admin_config", type=click.Path(dir_okay=False),
              help="Admin client properties file.")  # fmt: skip
@click.option(
    "--path-to-json-file",
    type=click.Path(dir_okay=False),
    help='{"partitions":[{"topic":"t","partition":1}]}; all partitions by default.',
)
def preferred_replica_election(
    bootstrap_server: str | None, admin_config: str | None, path_to_json_file: str | None
) -> None:
    """Move leadership back to the preferred replicas (the older tool)."""
    from kt.tools import leader_election as le

    click.echo("This tool is deprecated. Please use kafka-leader-election tool. Tracking issue: "
               "KAFKA-8405")  # fmt: skip
    if bootstrap_server is None:
        fail('Missing required argument "[bootstrap-server]"')
    partitions = None
    try:
        if path_to_json_file is not None:
            partitions = le.parse_election_data(_read(path_to_json_file))
    except le.ElectionError as e:
        fail(str(e))
    _elect(bootstrap_server, admin_config, "PREFERRED", partitions)


def _elect(
    bootstrap_server: str, admin_config: str | None, election_type: str,
    partitions: list[tuple[str, int]] | None,
) -> None:  # fmt: skip
    """Run the election and print its lines; a failure prints them, then the count of
    partitions not elected on stderr, and exits 1."""
    from kt.tools import leader_election as le

    with admin_session(bootstrap_server, admin_config) as admin:
        try:
            lines = le.elect(admin, election_type, partitions)
        except le.ElectionError as e:
            *printed, last = str(e).split("\n")
            for line in printed:
                click.echo(line)
            fail(last)
    for line in lines:
        click.echo(line)


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError as e:
        fail(f"{path} ({e.strerror})")
