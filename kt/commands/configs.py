"""`kt configs` (kafka-configs.sh): describe and alter topic, broker, group and quota configs."""

from __future__ import annotations

import sys
from typing import Any

import click

from kt.commands.common import (
    KafkaCommand,
    admin_session,
    fail,
    load_client_config,
    usage_error,
)

ENTITY_TYPES = ["topics", "brokers", "users", "clients", "ips", "groups"]
QUOTA_TYPES = ("users", "clients", "ips")


@click.command("configs", cls=KafkaCommand)
@click.option("--bootstrap-server", required=True, help="The Kafka server to connect to.")
@click.option("--command-config", type=click.Path(dir_okay=False), help="Client config file.")
@click.option("--entity-type", "entity_types", multiple=True, type=click.Choice(ENTITY_TYPES),
              help="topics, brokers, groups, users, clients or ips.")  # fmt: skip
@click.option("--entity-name", "entity_names", multiple=True,
              help="The entity's name (topic, broker id, group, user, client id, ip).")  # fmt: skip
@click.option("--entity-default", is_flag=True, help="The default entity (brokers, quotas).")
@click.option("--topic", help="Shorthand for --entity-type topics --entity-name <topic>.")
@click.option("--broker", help="Shorthand for --entity-type brokers --entity-name <id>.")
@click.option("--broker-defaults", is_flag=True, help="Shorthand for the default broker entity.")
@click.option("--user", help="Shorthand for --entity-type users --entity-name <user>.")
@click.option("--user-defaults", is_flag=True, help="Shorthand for the default user entity.")
@click.option("--client", help="Shorthand for --entity-type clients --entity-name <id>.")
@click.option("--client-defaults", is_flag=True, help="Shorthand for the default client.")
@click.option("--ip", help="Shorthand for --entity-type ips --entity-name <ip>.")
@click.option("--ip-defaults", is_flag=True, help="Shorthand for the default ip entity.")
@click.option("--describe", is_flag=True, help="List configs for the given entity.")
@click.option("--all", "show_all", is_flag=True, help="With --describe: every config.")
@click.option("--alter", is_flag=True, help="Alter the configuration of the entity.")
@click.option("--add-config", help="Configs to set: 'k1=v1,k2=[v1,v2,v2],k3=v3'.")
@click.option("--add-config-file", type=click.Path(dir_okay=False),
              help="A properties file of configs to add.")  # fmt: skip
@click.option("--delete-config", help="Config keys to remove: 'k1,k2'.")
def configs(**o: Any) -> None:
    """Add, remove or describe configs of topics, brokers, groups and client quotas."""
    from kt.tools import configs as c

    types, names = list(o["entity_types"]), list(o["entity_names"])
    for option, kind in (("topic", "topics"), ("broker", "brokers"), ("user", "users"),
                         ("client", "clients"), ("ip", "ips")):  # fmt: skip
        if o[option] is not None:
            types.append(kind)
            names.append(o[option])
        if o.get(f"{option}_defaults"):
            types.append(kind)
            names.append("")
    if o["entity_default"]:
        names.append("")
    if not types:
        fail("Must specify --entity-type (or --topic, --broker, --broker-defaults)")
    if o["describe"] == o["alter"]:
        fail("Command must include exactly one action: --describe, --alter")
    quota = types[0] in QUOTA_TYPES
    if quota and not set(types) <= {"users", "clients"} and len(types) > 1:
        fail("Only 'users' and 'clients' may be combined as entity types")
    if not quota and (len(types) > 1 or len(names) > 1):
        fail(f"Only one entity of type {types[0]} may be named")
    if o["entity_default"] and types[0] in ("topics", "groups"):
        fail("--entity-default is only valid with --entity-type brokers, users, clients or ips")
    add: dict[str, str] = {}
    delete: list[str] = []
    if o["alter"]:
        if o["add_config"] and o["add_config_file"]:
            usage_error("Only one of --add-config or --add-config-file must be specified")
        add = c.parse_add_config(o["add_config"]) if o["add_config"] else {}
        add |= load_client_config(o["add_config_file"])
        delete = [k.strip() for k in (o["delete_config"] or "").split(",") if k.strip()]
    with admin_session(o["bootstrap_server"], o["command_config"]) as admin:
        try:
            if quota:
                entities = [(t, names[i] if i < len(names) else None)
                            for i, t in enumerate(types)]  # fmt: skip
                if o["describe"]:
                    lines = c.describe_quotas(admin, entities)
                else:
                    lines = c.alter_quotas(admin, entities, add, delete)
            else:
                lines = _topic_or_broker(admin, c, types[0], names[0] if names else None, o,
                                         add, delete)  # fmt: skip
        except c.ConfigBrokerError as e:
            click.echo(f"Error while executing config command with args '{_args()}'", err=True)
            fail(str(e))
        except c.ConfigCommandError as e:
            fail(str(e))
    for line in lines:
        click.echo(line)


def _topic_or_broker(
    admin: Any, c: Any, entity_type: str, entity_name: str | None, o: dict[str, Any],
    add: dict[str, str], delete: list[str],
) -> list[str]:  # fmt: skip
    if o["describe"]:
        if entity_name is None and entity_type == "topics":
            names = sorted(admin.describe_topics(None))
        elif entity_name is None and entity_type == "groups":
            fail("An entity name must be specified with --describe of groups")
        elif entity_name is None:
            names = [str(b) for b in sorted(admin.client.brokers)]
        else:
            names = [entity_name]
        return c.describe(admin, entity_type, names, o["show_all"])
    if entity_name is None:
        fail("An entity name must be specified with --alter")
    return c.alter(admin, entity_type, entity_name, add, delete)


def _args() -> str:
    """The arguments after `configs`, as ConfigCommand prints its own."""
    argv = sys.argv
    return " ".join(argv[argv.index("configs") + 1 :] if "configs" in argv else argv[1:])
