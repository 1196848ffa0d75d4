"""`kt acls` (kafka-acls.sh): add, remove and list ACLs through the admin API."""

from __future__ import annotations

from typing import Any

import click

from kt.commands.common import KafkaCommand, admin_session, fail, usage_error

MULTIPLE = {"multiple": True}


@click.command("acls", cls=KafkaCommand)
@click.option("--bootstrap-server", required=True,
              help="A list of host/port pairs to use for establishing the connection to the "
              "Kafka cluster.")  # fmt: skip
@click.option("--command-config", help="A property file containing configs to be passed to "
              "Admin Client.")  # fmt: skip
@click.option("--add", is_flag=True, help="Indicates you are trying to add ACLs.")
@click.option("--remove", is_flag=True, help="Indicates you are trying to remove ACLs.")
@click.option("--list", "list_", is_flag=True,
              help="List ACLs for the specified resource, use --topic <topic> or --group "
              "<group> or --cluster to specify a resource.")  # fmt: skip
@click.option("--topic", **MULTIPLE, help="topic to which ACLs should be added or removed.")
@click.option("--group", **MULTIPLE, help="Consumer Group to which the ACLs should be added "
              "or removed.")  # fmt: skip
@click.option("--cluster", is_flag=True, help="Add/Remove cluster ACLs.")
@click.option("--transactional-id", **MULTIPLE, help="The transactionalId to which ACLs "
              "should be added or removed.")  # fmt: skip
@click.option("--resource-pattern-type", help="The type of the resource pattern or pattern "
              "filter: ANY, MATCH, LITERAL or PREFIXED (LITERAL when adding or removing, ANY "
              "when listing).")  # fmt: skip
@click.option("--allow-principal", **MULTIPLE, help="principal in PrincipalType:name format.")
@click.option("--deny-principal", **MULTIPLE, help="principal in PrincipalType:name format.")
@click.option("--principal", **MULTIPLE, help="List ACLs for the specified principal.")
@click.option("--allow-host", **MULTIPLE, help="Host from which principals listed in "
              "--allow-principal will have access (default: all hosts).")  # fmt: skip
@click.option("--deny-host", **MULTIPLE, help="Host from which principals listed in "
              "--deny-principal will be denied access (default: all hosts).")  # fmt: skip
@click.option("--operation", **MULTIPLE, help="Operation that is being allowed or denied "
              "(default: All).")  # fmt: skip
@click.option("--producer", is_flag=True, help="Convenience option to add/remove ACLs for "
              "producer role.")  # fmt: skip
@click.option("--consumer", is_flag=True, help="Convenience option to add/remove ACLs for "
              "consumer role.")  # fmt: skip
@click.option("--idempotent", is_flag=True, help="Enable idempotence for the producer "
              "(with --producer).")  # fmt: skip
@click.option("--force", is_flag=True, help="Assume Yes to all queries and do not prompt.")
def acls(**o: Any) -> None:
    """This tool helps to manage acls on kafka."""
    from kt.errors import KafkaError
    from kt.tools import acls as tool

    actions = [name for name in ("add", "remove", "list_") if o[name]]
    if len(actions) != 1:
        usage_error("Command must include exactly one action: --list, --add, --remove. ")
    if o["consumer"] and not o["group"] and o["add"]:
        usage_error("With --consumer you must specify a --group")
    options = tool.Options(
        topics=o["topic"], groups=o["group"], cluster=o["cluster"],
        transactional_ids=o["transactional_id"], pattern_type=o["resource_pattern_type"],
        allow_principals=o["allow_principal"], deny_principals=o["deny_principal"],
        allow_hosts=o["allow_host"], deny_hosts=o["deny_host"], operations=o["operation"],
        producer=o["producer"], consumer=o["consumer"], idempotent=o["idempotent"],
        principals=o["principal"],
    )  # fmt: skip
    run = {"add": tool.add, "remove": tool.remove, "list_": tool.list_acls}[actions[0]]
    with admin_session(o["bootstrap_server"], o["command_config"]) as admin:
        try:
            lines = run(admin, options)
        except tool.AclCommandError as e:
            usage_error(str(e))
        except KafkaError as e:
            fail(f"Error while executing ACL command: {e}", err=False)
    for line in lines:
        click.echo(line)
