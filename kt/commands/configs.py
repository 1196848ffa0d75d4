"""`kt configs` (kafka-configs.sh): describe and alter topic and broker configs."""

from __future__ import annotations

import sys

import click

from kt.commands.common import (
    KafkaCommand,
    admin_session,
    fail,
    load_client_config,
    usage_error,
)


@click.command("configs", cls=KafkaCommand)
@click.option("--bootstrap-server", required=True, help="The Kafka server to connect to.")
@click.option("--command-config", type=click.Path(dir_okay=False), help="Client config file.")
@click.option("--entity-type", type=click.Choice(["topics", "brokers"]), help="Entity type.")
@click.option("--entity-name", help="Name of the entity (topic name or broker id).")
@click.option("--entity-default", is_flag=True, help="The default entity (brokers).")
@click.option("--topic", help="Shorthand for --entity-type topics --entity-name <topic>.")
@click.option("--broker", help="Shorthand for --entity-type brokers --entity-name <id>.")
@click.option("--broker-defaults", is_flag=True, help="Shorthand for the default broker entity.")
@click.option("--describe", is_flag=True, help="List configs for the given entity.")
@click.option("--all", "show_all", is_flag=True, help="With --describe: every config.")
@click.option("--alter", is_flag=True, help="Alter the configuration of the entity.")
@click.option("--add-config", help="Configs to set: 'k1=v1,k2=[v1,v2,v2],k3=v3'.")
@click.option("--add-config-file", type=click.Path(dir_okay=False),
              help="A properties file of configs to add.")  # fmt: skip
@click.option("--delete-config", help="Config keys to remove: 'k1,k2'.")
def configs(
    bootstrap_server: str,
    command_config: str | None,
    entity_type: str | None,
    entity_name: str | None,
    entity_default: bool,
    topic: str | None,
    broker: str | None,
    broker_defaults: bool,
    describe: bool,
    show_all: bool,
    alter: bool,
    add_config: str | None,
    add_config_file: str | None,
    delete_config: str | None,
) -> None:
    """Add, remove or describe configs of topics and brokers."""
    from kt.tools import configs as c

    if topic is not None:
        entity_type, entity_name = "topics", topic
    elif broker is not None:
        entity_type, entity_name = "brokers", broker
    elif broker_defaults:
        entity_type, entity_default = "brokers", True
    if entity_type is None:
        fail("Must specify --entity-type (or --topic, --broker, --broker-defaults)")
    if describe == alter:
        fail("Command must include exactly one action: --describe, --alter")
    if entity_default:
        if entity_type != "brokers":
            fail("--entity-default is only valid with --entity-type brokers")
        entity_name = ""
    with admin_session(bootstrap_server, command_config) as admin:
        try:
            if describe:
                if entity_name is None and entity_type == "topics":
                    names = sorted(admin.describe_topics(None))
                elif entity_name is None:
                    names = [str(b) for b in sorted(admin.client.brokers)]
                else:
                    names = [entity_name]
                lines = c.describe(admin, entity_type, names, show_all)
            else:
                if entity_name is None:
                    fail("An entity name must be specified with --alter")
                if add_config and add_config_file:
                    usage_error("Only one of --add-config or --add-config-file must be specified")
                add = c.parse_add_config(add_config) if add_config else {}
                add |= load_client_config(add_config_file)
                delete = [k.strip() for k in (delete_config or "").split(",") if k.strip()]
                lines = c.alter(admin, entity_type, entity_name, add, delete)
        except c.ConfigBrokerError as e:
            click.echo(f"Error while executing config command with args '{_args()}'", err=True)
            fail(str(e))
        except c.ConfigCommandError as e:
            fail(str(e))
    for line in lines:
        click.echo(line)


def _args() -> str:
    """The arguments after `configs`, as ConfigCommand prints its own."""
    argv = sys.argv
    return " ".join(argv[argv.index("configs") + 1 :] if "configs" in argv else argv[1:])
