"""`kt consumer-groups` (kafka-consumer-groups.sh): list, describe, delete and reset groups."""

from __future__ import annotations

import sys

import click

from kt.commands.common import (
    INT,
    KafkaCommand,
    client_security,
    fail,
    load_client_config,
    usage_error,
)

ACTIONS = ("--list", "--describe", "--delete", "--reset-offsets", "--delete-offsets")


@click.command("consumer-groups", cls=KafkaCommand)
@click.option("--bootstrap-server", required=True, help="REQUIRED: The server(s) to connect to.")
@click.option("--group", "groups", multiple=True, help="The consumer group we wish to act on.")
@click.option("--topic", "topics", multiple=True,
              help="The topic (t or t:0,1) to delete offsets of or to reset.")  # fmt: skip
@click.option("--all-topics", is_flag=True, help="All topics the group has offsets for (reset).")
@click.option("--all-groups", is_flag=True, help="Apply to all consumer groups.")
@click.option("--list", "list_", is_flag=True, help="List all consumer groups.")
@click.option("--describe", is_flag=True, help="Describe groups: offsets and lag.")
@click.option("--delete", is_flag=True, help="Delete the groups (they must be empty).")
@click.option("--delete-offsets", is_flag=True, help="Delete offsets of a consumer group.")
@click.option("--reset-offsets", is_flag=True, help="Reset offsets of inactive groups.")
@click.option("--offsets", is_flag=True, help="With --describe: offsets and lag (default).")
@click.option("--members", is_flag=True, help="With --describe: the members.")
@click.option(
    "--verbose",
    is_flag=True,
    help="With --members: the partitions of each; with --state: the epochs.",
)
@click.option(
    "--type",
    "types",
    is_flag=False,
    flag_value="",
    default=None,
    help="--list: the group types, or only these (consumer,classic).",
)
@click.option("--state", "state", is_flag=False, flag_value="", default=None,
              help="--describe: the state; --list: filter by states (s1,s2).")  # fmt: skip
@click.option("--dry-run", is_flag=True, help="Only show the new offsets (the default).")
@click.option("--execute", is_flag=True, help="Commit the new offsets.")
@click.option("--export", is_flag=True, help="Print the new offsets as CSV.")
@click.option("--to-earliest", is_flag=True, help="Reset to the earliest offsets.")
@click.option("--to-latest", is_flag=True, help="Reset to the latest offsets.")
@click.option("--to-current", is_flag=True, help="Reset to the current offsets.")
@click.option("--to-offset", type=INT, help="Reset to this offset.")
@click.option("--shift-by", type=INT, help="Shift the current offsets by n (may be negative).")
@click.option("--to-datetime", help="Reset to the offsets at 'YYYY-MM-DDTHH:mm:SS.sss'.")
@click.option("--by-duration", help="Reset to the offsets this long ago: 'PnDTnHnMnS'.")
@click.option("--from-file", type=click.Path(dir_okay=False), help="Reset to a CSV plan.")
@click.option("--timeout", "timeout_ms", type=INT, default=5000, show_default=True,
              help="Timeout (ms) of the calls that find and ask the coordinators.")  # fmt: skip
@click.option("--command-config", type=click.Path(dir_okay=False), help="Client config file.")
def consumer_groups(**o: object) -> None:
    """List, describe, delete consumer groups, and reset or delete their offsets."""
    from kt.tools import consumer_groups as cg

    actions = [o["list_"], o["describe"], o["delete"], o["reset_offsets"], o["delete_offsets"]]
    if sum(map(bool, actions)) != 1:
        usage_error("Command must include exactly one action: " + ", ".join(ACTIONS))
    try:
        _run(cg, o)
    except cg.ConsumerGroupCommandError as e:
        fail(str(e))


def _run(cg, o: dict) -> None:  # type: ignore[no-untyped-def]
    from kt.client.client import KafkaClient
    from kt.client.groups import GroupAdmin
    from kt.errors import KafkaError

    groups = list(o["groups"])
    needs_group = o["describe"] or o["delete"] or o["reset_offsets"]
    if needs_group and not groups and not o["all_groups"]:
        usage_error("Option '[describe|delete|reset-offsets]' takes one of these options: "
             "[all-groups], [group]")  # fmt: skip
    if o["delete_offsets"] and (len(groups) != 1 or not o["topics"]):
        usage_error("Option [delete-offsets] takes the following options: [topic], [group]")
    scenario = _scenario(cg, o) if o["reset_offsets"] else None
    props = load_client_config(o["command_config"])  # type: ignore[arg-type]
    out, err = sys.stdout, sys.stderr
    try:
        client = KafkaClient(o["bootstrap_server"], client_id=props.get("client.id", "kt-admin"),
                             **client_security(props))  # fmt: skip
    except KafkaError as e:
        fail(f"Error connecting to {o['bootstrap_server']}: {e}")
    admin = GroupAdmin(client, o["timeout_ms"])  # type: ignore[arg-type]
    ok = True
    try:
        if o["all_groups"]:
            groups = [g for g, _, _ in admin.list_groups()]
        if o["list_"]:
            cg.list_groups(admin, out, o["state"], o["types"])
        elif o["describe"]:
            # A missing group exits 1 (Kafka's tool exits 0 after its error line).
            if o["members"]:
                ok = cg.describe_members(admin, out, err, groups, bool(o["verbose"]))
            elif o["state"] is not None and not o["offsets"]:
                ok = cg.describe_state(admin, out, err, groups, bool(o["verbose"]))
            else:
                ok = cg.describe_offsets(admin, out, err, groups)
        elif o["delete"]:
            ok = cg.delete_groups(admin, out, groups)
        elif o["delete_offsets"]:
            ok = cg.delete_offsets(admin, out, groups[0], list(o["topics"]))
        else:
            _, ok = cg.reset_offsets(admin, out, groups, list(o["topics"]),
                                     bool(o["all_topics"]), scenario, bool(o["execute"]),
                                     bool(o["export"]))  # fmt: skip
    except KafkaError as e:
        cg.print_error(out, f"Executing consumer group command failed due to {e}")
        ok = False
    finally:
        client.close()
    if not ok:
        raise SystemExit(1)


def _scenario(cg, o: dict):  # type: ignore[no-untyped-def]
    chosen = [(k, v) for k, v in (
        ("earliest", o["to_earliest"] or None), ("latest", o["to_latest"] or None),
        ("current", o["to_current"] or None), ("offset", o["to_offset"]),
        ("shift", o["shift_by"]), ("datetime", o["to_datetime"]),
        ("duration", o["by_duration"]), ("file", o["from_file"]),
    ) if v is not None]  # fmt: skip
    if len(chosen) != 1:
        usage_error("Option '[reset-offsets]' requires one of the following scenarios: "
             "[to-offset], [to-datetime], [by-duration], [to-earliest], [to-latest], "
             "[shift-by], [from-file], [to-current]")  # fmt: skip
    if o["execute"] and o["dry_run"]:
        usage_error("Option [reset-offsets] only accepts one of [execute, dry-run]")
    if not o["topics"] and not o["all_topics"] and chosen[0][0] != "file":
        usage_error("One of the reset scopes should be defined: --all-topics, --topic.")
    kind, value = chosen[0]
    if kind == "file":
        try:
            with open(value) as f:
                value = f.read()
        except OSError as e:
            fail(f"Cannot read {o['from_file']}: {e.strerror}")
    return cg.ResetScenario(kind, value)
