"""`kt log-dirs` (kafka-log-dirs.sh): the log dirs of brokers and the replicas in them."""

from __future__ import annotations

import click

from kt.commands.common import KafkaCommand, admin_session, fail, usage_error


@click.command("log-dirs", cls=KafkaCommand)
@click.option("--bootstrap-server", help="REQUIRED: the server(s) to use for bootstrapping.")
@click.option("--command-config", type=click.Path(dir_okay=False),
              help="Admin client property file.")  # fmt: skip
@click.option("--describe", is_flag=True, help="Describe the log dirs of the brokers.")
@click.option("--topic-list", default="", help='Topics to show, "t1,t2" (all by default).')
@click.option("--broker-list", default="", help='Brokers to query, "0,1,2" (all by default).')
def log_dirs(
    bootstrap_server: str | None, command_config: str | None, describe: bool, topic_list: str,
    broker_list: str,
) -> None:  # fmt: skip
    """Describe the log dirs of brokers: each replica's size and offset lag, as JSON."""
    from kt.tools import log_dirs as ld

    for name, value in (("bootstrap-server", bootstrap_server), ("describe", describe)):
        if not value:
            usage_error(f'Missing required argument "[{name}]"')
    try:
        brokers = {int(b) for b in broker_list.split(",") if b}
    except ValueError:
        fail(f'For input string: "{broker_list}"')
    topics = {t for t in topic_list.split(",") if t}
    assert bootstrap_server is not None
    with admin_session(bootstrap_server, command_config) as admin:
        try:
            lines = ld.describe(admin, brokers, topics)
        except ld.LogDirsError as e:
            fail(str(e))
    for line in lines:
        click.echo(line)
