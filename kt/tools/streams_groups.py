"""`kt streams-groups`: Kafka 4.4's kafka-streams-groups.sh (StreamsGroupCommand) over
kt's client, with its output: list streams groups, describe their offsets (lag of the
partitions of their active tasks), members (tasks held and targeted) or state, delete
groups (and their internal topics), reset or delete their input topics' offsets."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, TextIO

from kt.client.groups import GroupAdmin
from kt.client.streams_groups import StreamsAssignment, StreamsGroupAdmin, StreamsGroupDescription
from kt.errors import KafkaError, error_for
from kt.metadata.jvm_order import java_hash_order, java_hash_set_order, topic_partition_hash
from kt.tools import consumer_groups as cg

# GroupState.groupStatesForType(STREAMS), as the option's help lists them
STREAMS_STATES = ("Empty", "NotReady", "Stable", "Assigning", "Reconciling", "Dead")
INTERNAL_SUFFIXES = ("-changelog", "-repartition", "-subscription-registration-topic",
                     "-subscription-response-topic")  # fmt: skip

TopicPartition = tuple[str, int]


class StreamsGroupCommandError(Exception):
    """Printed as `Error: ...` (StreamsGroupCommand.printError), exit code 1."""


def print_error(out: TextIO, message: str) -> None:
    """printError: a blank line, then `Error: message`, on standard output."""
    out.write(f"\nError: {message}\n")


def java_text(e: KafkaError) -> str:
    """The error as the Java tool prints its exception: `class: message`."""
    return f"{cg.JAVA_EXCEPTIONS.get(e.name, e.error.java_exception)}: {e}"


def _format(widths: Sequence[int], values: Sequence[object]) -> str:
    """Java's printf("%-Ns ...") of `values`: each but the last padded to its width."""
    cells = [str(v).ljust(w) for w, v in zip(widths, values[:-1], strict=False)]
    return " ".join([*cells, str(values[-1])])


def _padded(widths: Sequence[int], values: Sequence[object]) -> str:
    """Java's printf("%-Ns ...") where every column, the last too, is padded."""
    return " ".join(str(v).ljust(w) for w, v in zip(widths, values, strict=True))


def parse_states(text: str) -> list[str]:
    """groupStatesFromString: case-insensitive, the streams group states only."""
    by_lower = {s.lower(): s for s in STREAMS_STATES}
    wanted = [s.strip() for s in text.split(",")]
    if any(s.lower() not in by_lower for s in wanted):
        raise ValueError(f"Invalid state list '{text}'. Valid states are: "
                         + ", ".join(STREAMS_STATES))  # fmt: skip
    return [by_lower[s.lower()] for s in wanted]


def list_groups(admin: StreamsGroupAdmin, out: TextIO, states: str | None) -> None:
    if states is None:
        for group, _ in admin.list_groups():
            out.write(f"{group}\n")
        return
    listed = admin.list_groups(parse_states(states) if states else [])
    width = max([15, *(len(g) for g, _ in listed)])
    out.write(_format([width], ["GROUP", "STATE"]) + "\n")
    for group, state in listed:
        out.write(_format([width], [group, state]) + "\n")


def _maybe_print_empty(out: TextIO, d: StreamsGroupDescription) -> None:
    """maybePrintEmptyGroupState."""
    if d.state == "Dead":
        print_error(out, f"Streams group '{d.group_id}' does not exist.")
    elif d.state == "Empty":
        print_error(out, f"Streams group '{d.group_id}' has no active members.")


def _tasks(assignment: StreamsAssignment, prefix: str = "") -> str:
    """getTasksForPrinting: `ACTIVE: 0:[0,1]; STANDBY: 1:[2]; ` (empty kinds left out)."""
    text = ""
    for kind, tasks in (("ACTIVE", assignment.active), ("STANDBY", assignment.standby),
                        ("WARMUP", assignment.warmup)):  # fmt: skip
        if tasks:
            text += f"{prefix}{kind}: " + "".join(
                f"{s}:[{','.join(map(str, ps))}]; " for s, ps in tasks)  # fmt: skip
    return text


def describe_members(out: TextIO, d: StreamsGroupDescription, verbose: bool) -> None:
    members = d.members
    if d.state == "Dead" or not members:
        return
    _maybe_print_empty(out, d)
    widths = [max(15, len(d.group_id)), max([15, *(len(m.member_id) for m in members)]),
              max([15, *(len(m.process_id) for m in members)]),
              max([15, *(len(m.client_id) for m in members)])]  # fmt: skip
    if not verbose:
        out.write(
            _format(widths, ["GROUP", "MEMBER", "PROCESS", "CLIENT-ID", "ASSIGNMENTS"]) + "\n"
        )
        for m in members:
            out.write(_format(widths, [d.group_id, m.member_id, m.process_id, m.client_id,
                                       _tasks(m.assignment)]) + "\n")  # fmt: skip
        return
    # "%-Gs %-25s %-15s%-Ms ...": no space between the topology epoch and the member
    g, mw, pw, cw = widths
    rows = [("GROUP", "TARGET-ASSIGNMENT-EPOCH", "TOPOLOGY-EPOCH", "MEMBER", "MEMBER-PROTOCOL",
             "MEMBER-EPOCH", "PROCESS", "CLIENT-ID", "ASSIGNMENTS")] + [(
        d.group_id, d.assignment_epoch, d.topology_epoch, m.member_id,
        "classic" if m.is_classic else "streams", m.member_epoch, m.process_id, m.client_id,
        _tasks(m.assignment) + _tasks(m.target, "TARGET-"),
    ) for m in members]  # fmt: skip
    for r in rows:
        out.write(f"{r[0]:<{g}} {r[1]!s:<25} {r[2]!s:<15}{r[3]:<{mw}} {r[4]:<15} {r[5]!s:<15} "
                  f"{r[6]:<{pw}} {r[7]:<{cw}} {r[8]}\n")  # fmt: skip


def describe_state(out: TextIO, d: StreamsGroupDescription, verbose: bool) -> None:
    _maybe_print_empty(out, d)
    node, host, port = d.coordinator
    coordinator = f"{host}:{port} ({node})"
    assignor = d.assignor or ""
    widths = [max(15, len(d.group_id)), max(25, len(coordinator)), max(15, len(assignor)), 25]
    header = ["GROUP", "COORDINATOR (ID)", "ASSIGNOR", "STATE", "#MEMBERS"]
    values = [d.group_id, coordinator, assignor, d.state, len(d.members)]
    if verbose:
        widths += [15, 25]
        header[4:4] = ["GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH"]
        values[4:4] = [d.group_epoch, d.assignment_epoch]
    out.write(_format(widths, header) + "\n" + _format(widths, values) + "\n")


def _active_partitions(d: StreamsGroupDescription) -> list[TopicPartition]:
    """getTopicPartitions: the source and repartition source partitions of the members'
    active tasks."""
    topics = {s.subtopology_id: [*s.source_topics, *s.repartition_source_topics]
              for s in d.subtopologies}  # fmt: skip
    found: set[TopicPartition] = set()
    for m in d.members:
        for subtopology, partitions in m.assignment.active:
            if subtopology not in topics:
                raise StreamsGroupCommandError(
                    f"Subtopology {subtopology} not found in group description!"
                )
            found.update((t, p) for t in topics[subtopology] for p in partitions)
    return java_hash_set_order(sorted(found), topic_partition_hash)


def describe_offsets(groups: GroupAdmin, out: TextIO, d: StreamsGroupDescription,
                     verbose: bool) -> None:  # fmt: skip
    partitions = _active_partitions(d)
    earliest = cg.log_offsets(groups, partitions, cg.EARLIEST)
    latest = cg.log_offsets(groups, partitions, cg.LATEST)
    committed = committed_offsets(groups, d, epochs=True)
    if d.state == "Dead" or not d.members:
        return
    _maybe_print_empty(out, d)
    rows = []
    for tp in partitions:
        if tp not in earliest or tp not in latest:
            continue
        current, epoch = committed.get(tp, (None, None))
        lag = latest[tp] - (current if current is not None else earliest[tp])
        rows.append((tp, current, epoch, latest[tp], lag))
    widths = [max(15, len(d.group_id)), max([15, *(len(tp[0]) for tp in partitions)]), 10]
    if not verbose:
        out.write(_format(widths, ["GROUP", "TOPIC", "PARTITION", "OFFSET-LAG"]) + "\n")
        for (topic, partition), _, _, _, lag in rows:
            out.write(_format(widths, [d.group_id, topic, partition, lag]) + "\n")
        return
    widths += [15, 15, 15, 15]  # "%-15s%n": the last column padded too
    lines = [["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LEADER-EPOCH", "LOG-END-OFFSET",
              "OFFSET-LAG"]] + [
        [d.group_id, tp[0], tp[1], _or_dash(current), _or_dash(epoch), end, lag]
        for tp, current, epoch, end, lag in rows]  # fmt: skip
    for cells in lines:
        out.write(_padded(widths, cells) + "\n")


def committed_offsets(groups: GroupAdmin, d: StreamsGroupDescription, repartition: bool = True,
                      epochs: bool = False) -> dict[TopicPartition, Any]:  # fmt: skip
    """getCommittedOffsets (getInputTopicOffsets without the repartition topics): the
    group's committed offsets of the topics its topology reads (with `epochs`, each with
    its leader epoch)."""
    topics = d.source_topics(repartition)
    found = (groups.fetch_offsets_and_epochs(d.group_id) if epochs
             else groups.fetch_offsets(d.group_id))  # fmt: skip
    return {tp: o for tp, o in found.items() if tp[0] in topics}


def _or_dash(value: int | None) -> str:
    return "-" if value is None else str(value)


# -- delete ---------------------------------------------------------------------------------


def _internal_topics(out: TextIO, d: StreamsGroupDescription) -> list[str]:
    """retrieveInternalTopics: the repartition and changelog topics named after the
    application; the others are reported and kept."""
    sources = [t for s in d.subtopologies for t in s.source_topics]
    topics = [t for s in d.subtopologies
              for t in (*s.repartition_source_topics, *s.state_changelog_topics)
              if t not in sources]  # fmt: skip
    kept = []
    for topic in topics:
        if topic.startswith(d.group_id + "-") and topic.endswith(INTERNAL_SUFFIXES):
            kept.append(topic)
        else:
            print_error(out, f"The internal topic '{topic}' is not inferred as internal and thus "
                             f"will not be deleted with the group '{d.group_id}'.")  # fmt: skip
    return kept


def _delete_topics(groups: GroupAdmin, topics: list[str]) -> list[tuple[str, KafkaError]]:
    from kt.client.admin import AdminClient

    results = AdminClient(groups.client).delete_topics(topics)
    return [(r.name, KafkaError(r.error_code, r.error_message)) for r in results if r.error_code]


def delete_groups(groups: GroupAdmin, out: TextIO, group_ids: list[str],
                  internal_topics: bool) -> bool:  # fmt: skip
    admin = StreamsGroupAdmin(groups)
    listed = dict(admin.list_groups())
    failed: dict[str, str] = {}
    for group in dict.fromkeys(group_ids):  # preAdminCallChecks
        state = listed.get(group)
        if state is None:
            failed[group] = (f"java.lang.IllegalArgumentException: Group '{group}' does not exist "
                             "or is not a streams group.")  # fmt: skip
        elif state == "Dead":
            failed[group] = (f"java.lang.IllegalStateException: Streams group '{group}' group "
                             "state is DEAD.")  # fmt: skip
        elif state != "Empty":
            failed[group] = ("org.apache.kafka.common.errors.GroupNotEmptyException: Streams "
                             f"group '{group}' is not EMPTY.")  # fmt: skip
    deletable = [g for g in group_ids if g not in failed]
    topics = {}
    if internal_topics:
        for group in deletable:
            found = _internal_topics(out, admin.describe(group))
            if found:
                topics[group] = found
    succeeded = []
    for group, code in groups.delete_groups(deletable).items():
        if code:
            e = error_for(code)
            failed[group] = f"{cg.JAVA_EXCEPTIONS.get(e.name, e.java_exception)}: {e.message}"
        else:
            succeeded.append(group)
    topic_failures: dict[str, str] = {}
    for group in succeeded:
        for topic, error in _delete_topics(groups, topics.get(group, [])):
            out.write(f"Failed to delete internal topic: {topic}\n")
            topic_failures[group] = java_text(error)
    done = java_hash_order(succeeded)
    if not failed:
        listed_ok = "', '".join(done)
        out.write(f"Deletion of requested streams groups ('{listed_ok}') was successful.\n")
    else:
        print_error(out, "Deletion of some streams groups failed:")
        for group in java_hash_order(list(failed)):
            out.write(f"* Group '{group}' could not be deleted due to: {failed[group]}\n")
        if succeeded:
            out.write("\nThese streams groups were deleted successfully: '"
                      + "', '".join(done) + "'.\n")  # fmt: skip
    if topics and succeeded:
        if not topic_failures:
            shown = [g for g in done if g in topics]
            out.write("Deletion of associated internal topics of the streams groups ('"
                      + "', '".join(shown) + "') was successful.\n")  # fmt: skip
        else:
            out.write("Deletion of some associated internal topics failed:\n")
            for group, error in topic_failures.items():
                out.write(f"* Internal topics of the streams group '{group}' could not be "
                          f"deleted due to: {error}\n")  # fmt: skip
    return not failed and not topic_failures


# -- offsets: delete and reset -----------------------------------------------------------


def delete_offsets(groups: GroupAdmin, out: TextIO, group: str, topics: list[str],
                   all_input_topics: bool) -> bool:  # fmt: skip
    admin = StreamsGroupAdmin(groups)
    results: dict[TopicPartition, str | None] = {}
    if all_input_topics:
        partitions = sorted(committed_offsets(groups, admin.describe(group), repartition=False))
    else:
        partitions = []
        for arg in topics:
            try:
                partitions += cg.parse_topic_partitions(groups, [arg])
            except KafkaError as e:
                results[(arg.split(":")[0], -1)] = java_text(e)
    top, codes = groups.delete_offsets(group, partitions) if partitions else (0, {})
    if not top:
        top = next((c for c in codes.values() if c), 0)
    for tp in partitions:
        code = codes.get(tp, top)
        results[tp] = None if not code else java_text(KafkaError(code))
    name = error_for(top).name
    if top == 0:
        out.write(f"Request succeeded for deleting offsets from group {group}.\n")
    elif name in ("INVALID_GROUP_ID", "GROUP_ID_NOT_FOUND", "GROUP_AUTHORIZATION_FAILED",
                  "NON_EMPTY_GROUP"):  # fmt: skip
        print_error(out, error_for(top).message)
    elif name in ("GROUP_SUBSCRIBED_TO_TOPIC", "TOPIC_AUTHORIZATION_FAILED",
                  "UNKNOWN_TOPIC_OR_PARTITION"):  # fmt: skip
        print_error(out, "Encountered some partition-level error, see the follow-up details.")
    else:
        print_error(out, f"Encountered some unknown error: {name}")
    width = max([15, *(len(t) for t, _ in results)])
    out.write("\n" + _padded([width, 10, 15], ["TOPIC", "PARTITION", "STATUS"]))
    for (topic, partition), error in sorted(
        results.items(), key=lambda kv: kv[0][0] + str(kv[0][1])
    ):
        status = "Successful" if error is None else f"Error: {error}"
        shown = partition if partition >= 0 else "-"
        out.write("\n" + _padded([width, 10, 15], [topic, shown, status]))
    out.write("\n")
    return top == 0 and all(e is None for e in results.values())


def reset_offsets(groups: GroupAdmin, out: TextIO, group_ids: list[str], topics: list[str],
                  all_input_topics: bool, scenario: cg.ResetScenario, execute: bool,
                  export: bool, delete_topics: list[str] | None) -> bool:  # fmt: skip
    """resetOffsets: only an inactive (Empty or Dead, or unknown) group's offsets; with
    --execute, the internal topics named are deleted too. `delete_topics` None: all of
    the group's internal topics."""
    admin = StreamsGroupAdmin(groups)
    result: dict[str, dict[TopicPartition, int]] = {}
    refused = False
    for group in group_ids:
        try:
            d: StreamsGroupDescription | None = admin.describe(group)
        except KafkaError as e:
            if e.name != "GROUP_ID_NOT_FOUND":
                raise
            d = None
        if d is not None and d.state not in ("Empty", "Dead"):
            print_error(out, f"Assignments can only be reset if the group '{group}' is "
                             f"inactive, but the current state is {d.state}.")  # fmt: skip
            result[group] = {}
            refused = True
            continue
        partitions = _partitions_to_reset(groups, out, group, d, topics, all_input_topics)
        offsets = cg.prepare_offsets(groups, out, group, partitions, scenario)
        offsets = {
            tp: offsets[tp] for tp in java_hash_set_order(list(offsets), topic_partition_hash)
        }
        if execute:
            errors = groups.commit_offsets(group, offsets)
            failed = {tp: c for tp, c in errors.items() if c}
            if failed:
                tp, c = next(iter(failed.items()))
                raise KafkaError(c, f"Error committing offsets for {tp[0]}-{tp[1]}")
            doomed = delete_topics if delete_topics is not None else (
                _internal_topics(out, d) if d is not None else [])  # fmt: skip
            for _, error in _delete_topics(groups, doomed) if doomed else []:
                if error.name == "UNKNOWN_TOPIC_OR_PARTITION":
                    print_error(out, f"Deleting internal topics for group '{group}' failed "
                                     "because the topics do not exist.")  # fmt: skip
                else:
                    print_error(out, f"Deleting internal topics for group '{group}' failed due "
                                     f"to {java_text(error)}")  # fmt: skip
                break
        result[group] = offsets
    result = {g: result[g] for g in java_hash_order(list(result))}
    if export:
        single = len(group_ids) == 1
        for group, offsets in result.items():
            for (topic, partition), offset in offsets.items():
                out.write(f"{'' if single else group + ','}{topic},{partition},{offset}\n")
        out.write("\n")
    else:
        cg.print_reset_plan(out, result)
    return not refused


def _partitions_to_reset(groups: GroupAdmin, out: TextIO, group: str,
                         d: StreamsGroupDescription | None, topics: list[str],
                         all_input_topics: bool) -> list[TopicPartition]:  # fmt: skip
    if all_input_topics:
        return sorted(committed_offsets(groups, d, repartition=False)) if d is not None else []
    if not topics:
        return []  # --from-file: the plan names them
    partitions = cg.parse_topic_partitions(groups, topics)
    known = groups.fetch_offsets(group)
    if not all(tp in known for tp in partitions):
        print_error(out, f"One or more topics are not part of the group '{group}'.")
        return []
    return partitions


def run(groups: GroupAdmin, action: str, o: dict, scenario: cg.ResetScenario | None) -> bool:
    """Run one action; whether it fully succeeded."""
    admin = StreamsGroupAdmin(groups)
    out = sys.stdout
    group_ids = list(o["groups"])
    if o["all_groups"]:
        group_ids = [g for g, _ in admin.list_groups()]
    if action == "list":
        list_groups(admin, out, o["state"])
        return True
    if action == "describe":
        for group in group_ids:
            d = admin.describe(group)
            if o["members"]:
                describe_members(out, d, bool(o["verbose"]))
            elif o["state"] is not None:
                describe_state(out, d, bool(o["verbose"]))
            else:
                describe_offsets(groups, out, d, bool(o["verbose"]))
        return True
    if action == "delete":
        return delete_groups(groups, out, group_ids, bool(o["delete_all_internal_topics"]))
    if action == "delete_offsets":
        return delete_offsets(groups, out, group_ids[0], list(o["input_topics"]),
                              bool(o["all_input_topics"]))  # fmt: skip
    assert scenario is not None
    doomed = None if o["delete_all_internal_topics"] else list(o["delete_internal_topics"])
    return reset_offsets(groups, out, group_ids, list(o["input_topics"]),
                         bool(o["all_input_topics"]), scenario, bool(o["execute"]),
                         bool(o["export"]), doomed)  # fmt: skip
