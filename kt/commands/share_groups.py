"""`kt share-groups` (kafka-share-groups.sh): list, describe and delete share groups,
reset or delete their offsets."""

from __future__ import annotations

import click

from kt.commands.common import (
    INT,
    KafkaCommand,
    run_group_command,
    usage_error,
)

ACTIONS = ("list", "describe", "delete", "reset_offsets", "delete_offsets")
SCENARIOS = ("--from-file", "--to-current", "--to-datetime", "--to-earliest", "--to-latest",
             "--to-offset")  # fmt: skip


@click.command("share-groups", cls=KafkaCommand)
@click.option("--bootstrap-server", required=True, help="REQUIRED: The server(s) to connect to.")
@click.option("--group", "groups", multiple=True, help="The share group id.")
@click.option("--topic", "topics", multiple=True,
              help="The topic (t or t:0,1) to delete offsets of or to reset.")  # fmt: skip
@click.option("--all-topics", is_flag=True, help="Apply to all topics (reset-offsets).")
@click.option("--all-groups", is_flag=True, help="Apply to all share groups.")
@click.option("--list", "list", is_flag=True, help="List all share groups.")
@click.option("--describe", is_flag=True,
              help="Describe share group, members and offset information.")  # fmt: skip
@click.option("--delete", is_flag=True, help="Delete share group.")
@click.option("--delete-offsets", is_flag=True, help="Delete offsets of a share group.")
@click.option("--reset-offsets", is_flag=True, help="Reset offsets of an empty share group.")
@click.option("--offsets", is_flag=True, help="With --describe: offsets and lag (default).")
@click.option("--members", is_flag=True, help="With --describe: the members.")
@click.option("--verbose", is_flag=True, help="With --describe: more columns.")
@click.option("--state", "state", is_flag=False, flag_value="", default=None,
              help="--describe: the state; --list: filter by states (s1,s2).")  # fmt: skip
@click.option("--dry-run", is_flag=True, help="Only show the new offsets.")
@click.option("--execute", is_flag=True, help="Set the new offsets.")
@click.option("--export", is_flag=True, help="Print the new offsets as CSV.")
@click.option("--to-earliest", is_flag=True, help="Reset to the earliest offsets.")
@click.option("--to-latest", is_flag=True, help="Reset to the latest offsets.")
@click.option("--to-current", is_flag=True, help="Reset to the current offsets.")
@click.option("--to-offset", type=INT, help="Reset to this offset.")
@click.option("--to-datetime", help="Reset to the offsets at 'YYYY-MM-DDThh:mm:ss.sss'.")
@click.option("--from-file", type=click.Path(dir_okay=False), help="Reset to a CSV plan.")
@click.option("--timeout", "timeout_ms", type=INT, default=5000, show_default=True,
              help="Timeout (ms) of the calls that find and ask the coordinators.")  # fmt: skip
@click.option("--command-config", type=click.Path(dir_okay=False), help="Client config file.")
def share_groups(**o: object) -> None:
    """List, describe, delete share groups, and reset or delete their offsets."""
    from kt.tools import share_groups as sg

    chosen = [a for a in ACTIONS if o[a]]
    if len(chosen) != 1:
        usage_error("Command must include exactly one action: --list, --describe, --delete, "
                    "--reset-offsets, --delete-offsets.")  # fmt: skip
    action = chosen[0]
    _check(o, action)
    scenario = _scenarios(o)[0] if action == "reset_offsets" else None
    run_group_command(sg, o, action, scenario, "share", sg.ShareGroupCommandError)


def _check(o: dict, action: str) -> None:
    """ShareGroupCommandOptions.checkArgs, the checks a user meets."""
    groups, all_groups = o["groups"], o["all_groups"]
    if action == "describe" and not groups and not all_groups:
        usage_error("Option [describe] takes one of these options: [all-groups], [group]")
    if action == "delete":
        if not groups and not all_groups:
            usage_error("Option [delete] takes the options [group] or [all-groups].")
        if groups and all_groups:
            usage_error("Option [delete] takes either [group] or [all-groups], not both.")
        if o["topics"] or o["all_topics"]:
            usage_error("Option [delete] does not take the options [topic] or [all-topics].")
    if action == "delete_offsets" and (len(groups) != 1 or not o["topics"]):
        usage_error("Option [delete-offsets] takes the following options: [group], [topic]")
    if action == "reset_offsets":
        if o["dry_run"] and o["execute"]:
            usage_error("Option [reset-offsets] only accepts one of [execute] and [dry-run]")
        if not o["dry_run"] and not o["execute"]:
            usage_error("Option [reset-offsets] takes the option: [execute] or [dry-run]")
        if len(groups) != 1:
            usage_error("Option [reset-offsets] takes the option: [group]")
        if not o["topics"] and not o["all_topics"] and not o["from_file"]:
            usage_error("Option [reset-offsets] takes one of these options: [all-topics], "
                        "[from-file], [topic]")  # fmt: skip
        if len(_scenarios(o)) != 1:
            usage_error("Option [reset-offsets] takes one of these options: "
                        + ", ".join(f"[{s[2:]}]" for s in SCENARIOS))  # fmt: skip


def _scenarios(o: dict) -> list[tuple[str, object]]:
    return [(k, v) for k, v in (
        ("earliest", o["to_earliest"] or None), ("latest", o["to_latest"] or None),
        ("current", o["to_current"] or None), ("offset", o["to_offset"]),
        ("datetime", o["to_datetime"]), ("file", o["from_file"]),
    ) if v is not None]  # fmt: skip
