"""`kt transactions` (kafka-transactions.sh): list, describe, describe-producers, abort and
find-hanging, with Kafka's options and tables."""

from __future__ import annotations

import time

import click

from kt.commands.common import INT, admin_session, fail


class TransactionsGroup(click.Group):
    """The subcommands run in the order Kafka lists them."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return ["list", "describe", "describe-producers", "abort", "find-hanging"]


@click.group("transactions", cls=TransactionsGroup)
@click.option("--bootstrap-server", required=True,
              help="REQUIRED: hostname and port for the broker to connect to, in the form "
              "`host:port` (multiple comma-separated entries can be given)")  # fmt: skip
@click.option("--command-config", type=click.Path(dir_okay=False),
              help="property file containing configs to be passed to admin client")  # fmt: skip
@click.pass_context
def transactions(ctx: click.Context, bootstrap_server: str, command_config: str | None) -> None:
    """This tool is used to analyze the transactional state of producers in the cluster. It
    can be used to detect and recover from hanging transactions."""
    ctx.obj = (bootstrap_server, command_config)


def _run(ctx: click.Context, produce_lines) -> None:  # type: ignore[no-untyped-def]
    from kt.tools.transactions import TransactionsError

    bootstrap_server, command_config = ctx.obj
    with admin_session(bootstrap_server, command_config) as admin:
        try:
            lines = produce_lines(admin)
        except TransactionsError as e:
            fail(str(e))
    for line in lines:
        click.echo(line)


@transactions.command("list")
@click.option("--duration-filter", type=INT,
              help="Duration (in millis) to filter by: if < 0, all transactions will be "
              "returned; otherwise, only transactions running longer than this duration will "
              "be returned")  # fmt: skip
@click.pass_context
def list_(ctx: click.Context, duration_filter: int | None) -> None:
    """list transactions"""
    from kt.tools import transactions as tx

    _run(ctx, lambda admin: tx.list_lines(admin, duration_filter))


@transactions.command("describe")
@click.option("--transactional-id", required=True, help="transactional id")
@click.pass_context
def describe(ctx: click.Context, transactional_id: str) -> None:
    """describe the state of an active transactional-id"""
    from kt.tools import transactions as tx

    _run(ctx, lambda admin: tx.describe_lines(admin, transactional_id, int(time.time() * 1000)))


@transactions.command("describe-producers")
@click.option(
    "--broker-id",
    type=INT,
    help="optional broker id to describe the producer state on a specific replica",
)
@click.option("--topic", required=True, help="topic name")
@click.option("--partition", type=INT, required=True, help="partition number")
@click.pass_context
def describe_producers(
    ctx: click.Context, broker_id: int | None, topic: str, partition: int
) -> None:
    """describe the states of active producers for a topic partition"""
    from kt.tools import transactions as tx

    _run(ctx, lambda admin: tx.producers_lines(admin, topic, partition, broker_id))


@transactions.command("abort")
@click.option("--topic", required=True, help="topic name")
@click.option("--partition", type=INT, required=True, help="partition number")
@click.option(
    "--start-offset",
    type=INT,
    help="start offset of the transaction to abort (brokers 3.0 and above)",
)
@click.option("--producer-id", type=INT, help="producer id (brokers older than 3.0)")
@click.option("--producer-epoch", type=INT, help="producer epoch (brokers older than 3.0)")
@click.option("--coordinator-epoch", type=INT,
              help="coordinator epoch (brokers older than 3.0)")  # fmt: skip
@click.pass_context
def abort(
    ctx: click.Context, topic: str, partition: int, start_offset: int | None,
    producer_id: int | None, producer_epoch: int | None, coordinator_epoch: int | None,
) -> None:  # fmt: skip
    """abort a hanging transaction (requires administrative privileges)"""
    from kt.tools import transactions as tx

    if start_offset is None and producer_id is None:
        fail("The transaction to abort must be identified either with --start-offset (for "
             "brokers on 3.0 or above) or with --producer-id, --producer-epoch, and "
             "--coordinator-epoch (for older brokers)")  # fmt: skip
    if start_offset is None:
        if producer_epoch is None:
            fail("Missing required argument --producer-epoch")
        if coordinator_epoch is None:
            fail("Missing required argument --coordinator-epoch")

    def run(admin):  # type: ignore[no-untyped-def]
        if start_offset is None:
            spec = tx.AbortTransactionSpec(topic, partition, producer_id, producer_epoch,
                                           max(coordinator_epoch, 0))  # fmt: skip
        else:
            spec = tx.abort_spec_at(admin, topic, partition, start_offset)
        tx.abort_transaction(admin, spec)
        return []

    _run(ctx, run)


@transactions.command("find-hanging")
@click.option("--broker-id", type=INT, help="broker id to search for hanging transactions")
@click.option(
    "--max-transaction-timeout",
    type=INT,
    default=15,
    show_default=True,
    help="maximum transaction timeout in minutes to limit the scope of the search",
)
@click.option("--topic", help="topic name to limit search to (required if --partition is "
              "specified)")  # fmt: skip
@click.option("--partition", type=INT, help="partition number")
@click.pass_context
def find_hanging(
    ctx: click.Context, broker_id: int | None, max_transaction_timeout: int, topic: str | None,
    partition: int | None,
) -> None:  # fmt: skip
    """find hanging transactions"""
    from kt.tools import transactions as tx

    if topic is None and broker_id is None:
        fail("The `find-hanging` command requires either --topic or --broker-id to limit the "
             "scope of the search")  # fmt: skip
    if partition is not None and topic is None:
        fail("The --partition argument requires --topic to be provided")
    _run(
        ctx,
        lambda admin: tx.find_hanging(
            admin, topic, partition, broker_id, max_transaction_timeout, int(time.time() * 1000)
        ),
    )
