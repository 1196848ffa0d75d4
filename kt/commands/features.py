"""`kt features` (kafka-features.sh): the feature flags of the cluster."""

from __future__ import annotations

import click

from kt.commands.common import admin_session


@click.group("features")
@click.option("--bootstrap-server", required=True,
              help="A comma-separated list of host:port pairs to use for establishing the "
              "connection to the Kafka cluster.")  # fmt: skip
@click.option(
    "--command-config",
    type=click.Path(dir_okay=False),
    help="Property file containing configs to be passed to Admin Client.",
)
@click.pass_context
def features(ctx: click.Context, bootstrap_server: str, command_config: str | None) -> None:
    """This tool manages feature flags in Kafka."""
    ctx.obj = (bootstrap_server, command_config)


@features.command("describe")
@click.pass_context
def describe(ctx: click.Context) -> None:
    """Describes the current active feature flags."""
    from kt.tools.features import describe_lines

    with admin_session(*ctx.obj) as admin:
        lines = describe_lines(admin.client)
    for line in lines:
        click.echo(line)
