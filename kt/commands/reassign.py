"""`kt reassign-partitions`, alias `kt reassign` (kafka-reassign-partitions.sh)."""

from __future__ import annotations

from typing import Any

import click

from kt.commands.common import INT, KafkaCommand, admin_session, fail, given_options, usage_error

ACTIONS = ["generate", "execute", "verify", "cancel", "list"]
REQUIRED = {
    "verify": ["reassignment-json-file"],
    "generate": ["topics-to-move-json-file", "broker-list"],
    "execute": ["reassignment-json-file"],
    "cancel": ["reassignment-json-file"],
    "list": [],
}
PERMITTED = {
    "verify": ["bootstrap-server", "command-config", "preserve-throttles", "zookeeper"],
    "generate": ["bootstrap-server", "broker-list", "command-config", "disable-rack-aware",
                 "zookeeper"],
    "execute": ["additional", "bootstrap-server", "command-config", "throttle",
                "replica-alter-log-dirs-throttle", "timeout", "zookeeper"],
    "cancel": ["bootstrap-server", "command-config", "preserve-throttles", "timeout"],
    "list": ["bootstrap-server", "command-config"],
}  # fmt: skip


@click.command("reassign-partitions", cls=KafkaCommand)
@click.option("--bootstrap-server", help="The server(s) to use for bootstrapping.")
@click.option("--zookeeper", help="DEPRECATED (Kafka 2.x): work on ZooKeeper directly, "
              "host:port[/chroot]; generate, execute and verify only.")  # fmt: skip
@click.option("--command-config", type=click.Path(dir_okay=False),
              help="Admin client property file.")  # fmt: skip
@click.option("--generate", is_flag=True, help="Generate a candidate partition reassignment.")
@click.option("--execute", is_flag=True, help="Kick off the reassignment in the JSON file.")
@click.option("--verify", is_flag=True,
              help="Verify the reassignment; once complete, remove the throttles.")  # fmt: skip
@click.option("--cancel", is_flag=True, help="Cancel an active reassignment.")
@click.option("--list", "list_", is_flag=True, help="List all active partition reassignments.")
@click.option(
    "--reassignment-json-file",
    type=click.Path(dir_okay=False),
    help='{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}',
)
@click.option("--topics-to-move-json-file", type=click.Path(dir_okay=False),
              help='(generate) {"topics":[{"topic":"t"}],"version":1}')  # fmt: skip
@click.option("--broker-list", help='(generate) The brokers to move to, "0,1,2".')
@click.option("--disable-rack-aware", is_flag=True, help="(generate) Ignore broker.rack.")
@click.option("--throttle", type=INT, default=-1,
              help="(execute) Inter-broker throttle in bytes/s; at least 1 KB/s.")  # fmt: skip
@click.option("--replica-alter-log-dirs-throttle", type=INT, default=-1,
              help="(execute) Throttle of moves between log dirs, bytes/s.")  # fmt: skip
@click.option("--timeout", type=INT, default=10000,
              help="Ms to wait for log directory moves to begin.")  # fmt: skip
@click.option("--additional", is_flag=True,
              help="(execute) Run in addition to ongoing reassignments.")  # fmt: skip
@click.option("--preserve-throttles", is_flag=True,
              help="(verify, cancel) Do not modify broker or topic throttles.")  # fmt: skip
def reassign_partitions(**o: Any) -> None:
    """Move partitions between brokers, with throttles, and follow the moves."""
    from kt.tools import reassign as r

    given = given_options(click.get_current_context())
    chosen = [a for a in ACTIONS if a in given]
    if len(chosen) != 1:
        usage_error("Command must include exactly one action: "
                    + ", ".join(f"--{a}" for a in ACTIONS))  # fmt: skip
    action = chosen[0]
    if "bootstrap-server" not in given and "zookeeper" not in given:
        usage_error("Please specify either --bootstrap-server or --bootstrap-controller")
    for required in REQUIRED[action]:
        if required not in given:
            usage_error(f'Missing required argument "[{required}]"')
    for option in sorted(given):
        if option != action and option not in REQUIRED[action] + PERMITTED[action]:
            usage_error(f'Option "[{option}]" can\'t be used with action "[{action}]"')
    if "bootstrap-server" not in given:
        _run_on_zookeeper(r, action, o)
        return
    if "zookeeper" in given:
        from kt.tools.reassign_zk import IGNORED_WARNING

        click.echo(IGNORED_WARNING)
    with admin_session(o["bootstrap_server"], o["command_config"]) as admin:
        try:
            _run(r, admin, action, o)
        except r.ReassignError as e:
            fail(str(e), err=False)  # TerseException: the message, on stdout
        except r.ReassignFailure as e:
            fail(f"Error: {e}", err=False)


def _run_on_zookeeper(r: Any, action: str, o: dict[str, Any]) -> None:
    """Kafka 2.8's --zookeeper mode: the same steps, through ZooKeeper."""
    from kt.metadata.store import MetadataStoreError
    from kt.tools import reassign_zk as rz

    click.echo(rz.ZOOKEEPER_WARNING)
    text = _read(
        o["topics_to_move_json_file" if action == "generate" else "reassignment_json_file"]
    )
    if action != "generate" and r.parse_plan(text)[1]:
        fail("Error: bootstrap-server needs to be provided when replica reassignments are "
             "present.", err=False)  # fmt: skip
    try:
        with rz.zk_admin(o["zookeeper"]) as admin:
            if action == "verify":
                click.echo(rz.VERIFY_WARNING)
            _run(r, admin, action, o, text)
    except MetadataStoreError as e:
        fail(f"Error: {e}", err=False)
    except r.ReassignError as e:
        fail(str(e), err=False)
    except r.ReassignFailure as e:
        fail(f"Error: {e}", err=False)


def _run(r: Any, admin: Any, action: str, o: dict[str, Any], text: str | None = None) -> None:
    if action == "list":
        _echo(r.list_reassignments(admin))
        return
    if action == "generate":
        text = text if text is not None else _read(o["topics_to_move_json_file"])
        _echo(r.generate(admin, text, o["broker_list"], not o["disable_rack_aware"]))
        return
    text = text if text is not None else _read(o["reassignment_json_file"])
    if action == "execute":
        _echo(r.execute(admin, text, o["additional"], o["throttle"],
                        o["replica_alter_log_dirs_throttle"], o["timeout"]))  # fmt: skip
    elif action == "verify":
        lines, _ = r.verify(admin, text, o["preserve_throttles"])
        _echo(lines)
    else:
        click.echo(r.cancel(admin, text, o["preserve_throttles"], o["timeout"]), nl=False)


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError as e:
        fail(f"Error: {path} ({e.strerror})", err=False)


def _echo(lines: list[str]) -> None:
    for line in lines:
        click.echo(line)
