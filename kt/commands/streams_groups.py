"""`kt streams-groups` (kafka-streams-groups.sh): list, describe and delete streams groups,
reset or delete their input topics' offsets."""

from __future__ import annotations

import click

from kt.commands.common import (
    INT,
    KafkaCommand,
    run_group_command,
    usage_error,
)

ACTIONS = ("list", "describe", "delete", "reset_offsets", "delete_offsets")
SCENARIOS = ("--to-datetime", "--by-duration", "--to-earliest", "--to-latest", "--shift-by",
             "--from-file", "--to-current", "--to-offset")  # fmt: skip


@click.command("streams-groups", cls=KafkaCommand)
@click.option("--bootstrap-server", required=True, help="REQUIRED: The server(s) to connect to.")
@click.option("--group", "groups", multiple=True, help="The streams group id.")
@click.option("--all-groups", is_flag=True, help="Apply to all streams groups.")
@click.option("--input-topic", "input_topics", multiple=True,
              help="The input topic (t or t:0,1) whose offsets to delete or reset.")  # fmt: skip
@click.option(
    "--all-input-topics",
    is_flag=True,
    help="All input topics of the group's topology (delete-offsets, reset-offsets).",
)
@click.option("--list", "list", is_flag=True, help="List all streams groups.")
@click.option(
    "--describe",
    is_flag=True,
    help="Describe streams group and list offset lag related to given group.",
)
@click.option("--delete", is_flag=True, help="Delete streams groups (they must be empty).")
@click.option("--delete-offsets", is_flag=True, help="Delete offsets of one streams group.")
@click.option(
    "--reset-offsets",
    is_flag=True,
    help="Reset offsets of an inactive streams group (--dry-run or --execute).",
)
@click.option("--offsets", is_flag=True, help="With --describe: offsets and lag (default).")
@click.option("--members", is_flag=True, help="With --describe: the members and their tasks.")
@click.option("--verbose", is_flag=True, help="With --describe: epochs and targets.")
@click.option("--state", "state", is_flag=False, flag_value="", default=None,
              help="--describe: the state; --list: filter by states (s1,s2).")  # fmt: skip
@click.option("--dry-run", is_flag=True, help="Only show the new offsets.")
@click.option("--execute", is_flag=True, help="Set the new offsets.")
@click.option("--export", is_flag=True, help="Print the new offsets as CSV.")
@click.option("--to-earliest", is_flag=True, help="Reset to the earliest offsets.")
@click.option("--to-latest", is_flag=True, help="Reset to the latest offsets.")
@click.option("--to-current", is_flag=True, help="Reset to the current offsets.")
@click.option("--to-offset", type=INT, help="Reset to this offset.")
@click.option("--shift-by", type=INT, help="Reset shifting the current offsets by n.")
@click.option("--to-datetime", help="Reset to the offsets at 'YYYY-MM-DDThh:mm:ss.sss'.")
@click.option("--by-duration", help="Reset to the offsets of 'PnDTnHnMnS' ago.")
@click.option("--from-file", type=click.Path(dir_okay=False), help="Reset to a CSV plan.")
@click.option("--delete-internal-topic", "delete_internal_topics", multiple=True,
              help="With --reset-offsets --execute: delete this internal topic.")  # fmt: skip
@click.option(
    "--delete-all-internal-topics",
    is_flag=True,
    help="Delete the group's internal topics (delete; reset-offsets --execute).",
)
@click.option("--timeout", "timeout_ms", type=INT, default=5000, show_default=True,
              help="Timeout (ms) of the calls that find and ask the coordinators.")  # fmt: skip
@click.option("--command-config", type=click.Path(dir_okay=False), help="Client config file.")
def streams_groups(**o: object) -> None:
    """List, describe, delete streams groups, and reset or delete their offsets."""
    from kt.tools import streams_groups as sg

    chosen = [a for a in ACTIONS if o[a]]
    if len(chosen) != 1:
        usage_error("Command must include exactly one action: --list, --describe, --delete, "
                    "--reset-offsets, or --delete-offsets.")  # fmt: skip
    action = chosen[0]
    _check(o, action)
    scenario = _scenarios(o)[0] if action == "reset_offsets" else None
    run_group_command(sg, o, action, scenario, "streams", sg.StreamsGroupCommandError)


def _check(o: dict, action: str) -> None:
    """StreamsGroupCommandOptions.checkArgs, the checks a user meets."""
    groups, all_groups = o["groups"], o["all_groups"]
    if action in ("describe", "delete") and not groups and not all_groups:
        usage_error(f"Option [{action}] takes one of these options: [all-groups], [group]")
    if action == "delete_offsets":
        if len(groups) != 1:
            usage_error("Option [delete-offsets] takes the option: [group]")
        if not o["input_topics"] and not o["all_input_topics"]:
            usage_error("Option [delete-offsets] takes one of these options: "
                        "[all-input-topics], [input-topic]")  # fmt: skip
    if action == "reset_offsets":
        if o["dry_run"] and o["execute"]:
            usage_error("Option [reset-offsets] only accepts one of [execute] and [dry-run]")
        if not o["dry_run"] and not o["execute"]:
            usage_error("Option [reset-offsets] takes the option: [execute] or [dry-run]")
        if not groups and not all_groups:
            usage_error("Option [reset-offsets] takes one of these options: [all-groups], [group]")
        if not o["input_topics"] and not o["all_input_topics"] and not o["from_file"]:
            usage_error("One of the reset scopes should be defined: --all-input-topics, "
                        "--input-topic.")  # fmt: skip
        if len(_scenarios(o)) != 1:
            usage_error("Option '[reset-offsets]' requires one of the following scenarios: "
                        + ", ".join(f"[{s[2:]}]" for s in SCENARIOS))  # fmt: skip


def _scenarios(o: dict) -> list[tuple[str, object]]:
    return [(k, v) for k, v in (
        ("datetime", o["to_datetime"]), ("duration", o["by_duration"]),
        ("earliest", o["to_earliest"] or None), ("latest", o["to_latest"] or None),
        ("shift", o["shift_by"]), ("file", o["from_file"]),
        ("current", o["to_current"] or None), ("offset", o["to_offset"]),
    ) if v is not None]  # fmt: skip
