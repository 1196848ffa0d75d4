"""`kt share-groups`: Kafka 4.4's kafka-share-groups.sh (ShareGroupCommand) over kt's
client, with its output: list share groups, describe their offsets (start offset and
lag), members or state, delete groups, reset or delete their offsets."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

from kt.client.groups import GroupAdmin
from kt.client.share_groups import ShareGroupAdmin, ShareGroupDescription
from kt.errors import KafkaError
from kt.metadata.jvm_order import java_hash_set_order, topic_partition_hash
from kt.tools import consumer_groups as cg

SHARE_STATES = ("Unknown", "Stable", "Dead", "Empty")  # GroupState.groupStatesForType(SHARE)


class ShareGroupCommandError(Exception):
    """Printed as `Error: ...` (ShareGroupCommand.printError), exit code 1."""


def _format(widths: Sequence[int], values: Sequence[object]) -> str:
    """Java's printf("%-Ns ...") of `values`: each but the last padded to its width."""
    cells = [str(v).ljust(w) for w, v in zip(widths, values[:-1], strict=False)]
    return " ".join([*cells, str(values[-1])])


print_error = cg.print_error


def java_text(e: KafkaError) -> str:
    """The error as the Java tool prints its exception: `class: message`."""
    return f"{cg.JAVA_EXCEPTIONS.get(e.name, e.error.java_exception)}: {e}"


def parse_states(text: str) -> list[str]:
    """groupStatesFromString: case-insensitive, the share group states only."""
    by_lower = {s.lower(): s for s in SHARE_STATES}
    wanted = [s.strip() for s in text.split(",")]
    unknown = [s for s in wanted if s.lower() not in by_lower]
    if unknown:
        raise ValueError(f"Invalid state list '{text}'. Valid states are: "
                         + ", ".join(SHARE_STATES))  # fmt: skip
    return [by_lower[s.lower()] for s in wanted]


def list_groups(admin: ShareGroupAdmin, out: TextIO, states: str | None) -> None:
    if states is None:
        for group, _ in admin.list_groups():
            out.write(f"{group}\n")
        return
    wanted = parse_states(states) if states else []
    listed = admin.list_groups(wanted)
    width = max([15, *(len(g) for g, _ in listed)])
    out.write(_format([width], ["GROUP", "STATE"]) + "\n")
    for group, state in listed:
        out.write(_format([width], [group, state]) + "\n")


def _described(admin: ShareGroupAdmin, groups: list[str]) -> dict[str, ShareGroupDescription]:
    return {g: admin.describe(g) for g in sorted(groups)}


def _maybe_print_empty(out: TextIO, err: TextIO, d: ShareGroupDescription, rows: int) -> bool:
    """maybePrintEmptyGroupState."""
    if d.state == "Dead":
        print_error(out, f"Share group '{d.group_id}' does not exist.")
    elif d.state == "Empty":
        err.write(f"\nShare group '{d.group_id}' has no active members.\n")
    return d.state != "Dead" and rows > 0


def describe_offsets(admin: ShareGroupAdmin, out: TextIO, groups: list[str],
                     verbose: bool) -> None:  # fmt: skip
    for group in _described(admin, groups):
        offsets = admin.offsets(group)
        if not offsets:
            out.write(f"\nShare group '{group}' has no offset information.\n")
            continue
        rows = sorted(offsets.items())
        widths = [max(15, len(group)), max([15, *(len(t) for (t, _), _ in rows)]), 10, 13, 13]
        header = ["GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "START-OFFSET", "LAG"]
        if not verbose:
            del header[3], widths[3]
        out.write("\n" + _format(widths, header))
        for (topic, partition), o in rows:
            values = [group, topic, partition, _or_dash(o.leader_epoch), _or_dash(o.start_offset),
                      _or_dash(o.lag)]  # fmt: skip
            if not verbose:
                del values[3]
            out.write("\n" + _format(widths, values))
        out.write("\n")


def _or_dash(value: int | None) -> str:
    return "-" if value is None else str(value)


def describe_state(admin: ShareGroupAdmin, out: TextIO, err: TextIO, groups: list[str],
                   verbose: bool) -> None:  # fmt: skip
    for group, d in _described(admin, groups).items():
        _maybe_print_empty(out, err, d, 1)
        node, host, port = d.coordinator
        coordinator = f"{host}:{port}  ({node})"
        widths = [max(15, len(group)), max(25, len(coordinator)), 15]
        if verbose:
            widths += [12, 17]
            header = ["GROUP", "COORDINATOR (ID)", "STATE", "GROUP-EPOCH", "ASSIGNMENT-EPOCH",
                      "#MEMBERS"]  # fmt: skip
            values = [group, coordinator, d.state, d.group_epoch, d.assignment_epoch,
                      len(d.members)]  # fmt: skip
        else:
            header = ["GROUP", "COORDINATOR (ID)", "STATE", "#MEMBERS"]
            values = [group, coordinator, d.state, len(d.members)]
        out.write("\n" + _format(widths, header) + "\n" + _format(widths, values) + "\n")


def _assignment(partitions: list[tuple[str, int]]) -> str:
    """getAssignmentString: `topic:0,1;other:2`, topics sorted."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    return ";".join(sorted(f"{t}:" + ",".join(map(str, sorted(ps))) for t, ps in by_topic.items()))


def describe_members(admin: ShareGroupAdmin, out: TextIO, err: TextIO, groups: list[str],
                     verbose: bool) -> None:  # fmt: skip
    for group, d in _described(admin, groups).items():
        members = sorted(d.members, key=lambda m: m.member_id)
        if not _maybe_print_empty(out, err, d, len(members)):
            continue
        widths = [max(15, len(group)), max([15, *(len(m.member_id) for m in members)]),
                  max([15, *(len(m.client_host) for m in members)]),
                  max([15, *(len(m.client_id) for m in members)]), 12]  # fmt: skip
        header = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
        if verbose:
            widths.append(13)
            header.append("MEMBER-EPOCH")
        out.write("\n" + _format(widths, [*header, "ASSIGNMENT"]))
        for m in members:
            values: list[object] = [group, m.member_id, m.client_host, m.client_id,
                                    len(m.assignment)]  # fmt: skip
            if verbose:
                values.append(m.member_epoch)
            out.write("\n" + _format(widths, [*values, _assignment(m.assignment)]))
        out.write("\n")


def delete_groups(admin: ShareGroupAdmin, out: TextIO, groups: list[str] | None) -> bool:
    """deleteShareGroups: only listed, Empty share groups are asked for; `groups` None:
    all of them."""
    listed = dict(admin.list_groups())
    wanted = list(dict.fromkeys(groups if groups is not None else listed))
    failed: dict[str, str] = {}
    for group in wanted:
        state = listed.get(group)
        if state is None:
            failed[group] = ("org.apache.kafka.common.errors.GroupIdNotFoundException: "
                             f"Group '{group}' is not a share group.")  # fmt: skip
        elif state == "Dead":
            failed[group] = (f"java.lang.IllegalStateException: Share group '{group}' group "
                             "state is DEAD.")  # fmt: skip
        elif state != "Empty":
            failed[group] = ("org.apache.kafka.common.errors.GroupNotEmptyException: Share "
                             f"group '{group}' is not EMPTY.")  # fmt: skip
    deleted = []
    for group, code in admin.groups.delete_groups([g for g in wanted if g not in failed]).items():
        if code:
            failed[group] = java_text(KafkaError(code))
        else:
            deleted.append(group)
    names = ", ".join(f"'{g}'" for g in deleted)
    if not failed:
        out.write(f"Deletion of requested share groups ({names}) was successful.\n")
        return True
    print_error(out, "Deletion of some share groups failed:")
    for group, error in failed.items():
        out.write(f"* Group '{group}' could not be deleted due to: {error}\n")
    if deleted:
        out.write(f"\nThese share groups were deleted successfully: {names}\n")
    return False


def delete_offsets(admin: ShareGroupAdmin, out: TextIO, group: str, topics: list[str]) -> bool:
    top, by_topic = admin.delete_offsets(group, list(dict.fromkeys(topics)))
    if top is not None:
        if top.name in ("INVALID_GROUP_ID", "GROUP_ID_NOT_FOUND", "GROUP_AUTHORIZATION_FAILED",
                        "NON_EMPTY_GROUP"):  # fmt: skip
            print_error(out, str(top))
        elif top.name not in ("TOPIC_AUTHORIZATION_FAILED", "UNKNOWN_TOPIC_OR_PARTITION"):
            print_error(out, f"Encounter some unknown error: {top}")
    if by_topic:
        width = max([15, *(len(t) for t in by_topic)])
        out.write("\n" + _format([width], ["TOPIC", "STATUS"]))
        for topic, error in sorted(by_topic.items()):
            out.write(
                "\n" + _format([width], [topic, f"Error: {error}" if error else "Successful"])
            )
    out.write("\n")
    return top is None and not any(by_topic.values())


def reset_offsets(
    admin: ShareGroupAdmin, out: TextIO, group: str, topics: list[str], all_topics: bool,
    scenario: cg.ResetScenario, execute: bool, export: bool,
) -> None:  # fmt: skip
    """resetOffsets: only an Empty (or unknown) share group; the new start offsets printed
    (or as CSV), and set with --execute."""
    try:
        state = admin.describe(group).state
    except KafkaError as e:
        if e.name != "GROUP_ID_NOT_FOUND":
            raise
        state = "Dead"
    if state not in ("Empty", "Dead"):
        raise ShareGroupCommandError(f"Share group '{group}' is not empty.")
    groups = admin.groups
    if scenario.kind == "file":
        partitions = sorted(cg.parse_reset_file(str(scenario.value), group).get(group, {}))
    elif all_topics:
        partitions = sorted(admin.offsets(group))
    else:
        partitions = cg.parse_topic_partitions(groups, topics)
    if scenario.kind == "current":
        current = admin.offsets(group)
        known = {tp: o.start_offset for tp, o in current.items() if o.start_offset is not None}
        ends = cg.log_offsets(groups, [tp for tp in partitions if tp not in known], cg.LATEST)
        offsets = {tp: known[tp] if tp in known else cg._required(ends, tp, "ending")
                   for tp in partitions}  # fmt: skip
    else:
        offsets = cg.prepare_offsets(groups, out, group, partitions, scenario)
    # a HashMap of TopicPartition: Kafka's tool prints in its order
    offsets = {tp: offsets[tp] for tp in java_hash_set_order(list(offsets), topic_partition_hash)}
    if execute:
        admin.alter_offsets(group, offsets)
    if export:
        out.write("".join(f"{t},{p},{o}\n" for (t, p), o in offsets.items()) + "\n")
        return
    widths = [max(15, len(group)), max([15, *(len(t) for t, _ in offsets)]), 10]
    if offsets:
        out.write("\n" + _format(widths, ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]))
    for (topic, partition), offset in offsets.items():
        out.write("\n" + _format(widths, [group, topic, partition, offset]))
    out.write("\n")


def run(admin: GroupAdmin, action: str, o: dict, scenario: cg.ResetScenario | None) -> bool:
    """Run one action; whether it fully succeeded."""
    share = ShareGroupAdmin(admin)
    out, err = sys.stdout, sys.stderr
    groups = list(o["groups"])
    if o["all_groups"] and action in ("describe", "delete"):
        groups = [g for g, _ in share.list_groups()]
    if action == "list":
        list_groups(share, out, o["state"])
    elif action == "describe":
        if o["members"]:
            describe_members(share, out, err, groups, bool(o["verbose"]))
        elif o["state"] is not None and not o["offsets"]:
            describe_state(share, out, err, groups, bool(o["verbose"]))
        else:
            describe_offsets(share, out, groups, bool(o["verbose"]))
    elif action == "delete":
        return delete_groups(share, out, None if o["all_groups"] else groups)
    elif action == "delete_offsets":
        return delete_offsets(share, out, groups[0], list(o["topics"]))
    else:
        assert scenario is not None
        reset_offsets(share, out, groups[0], list(o["topics"]), bool(o["all_topics"]), scenario,
                      bool(o["execute"]), bool(o["export"]))  # fmt: skip
    return True
