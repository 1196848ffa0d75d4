"""`kt consumer-groups`: Kafka's ConsumerGroupCommand (kafka-consumer-groups.sh).

Every function writes what the Kafka tool prints, to `out` (stdout) and `err` (stderr),
with its column layouts: Java's `%-Ns` is `str.ljust(N)`, and each table line is
written as "\\n" + row, the table ending with one "\\n". Kafka's printError writes
"\\nError: <message>" to stdout.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TextIO

from kt.client.groups import GroupAdmin, GroupDescription
from kt.config_def import parse_iso_duration_ms
from kt.errors import KafkaError, error_for

MISSING = "-"
EARLIEST, LATEST = -2, -1
STATES = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty")
JAVA_EXCEPTIONS = {
    "NON_EMPTY_GROUP": "org.apache.kafka.common.errors.GroupNotEmptyException",
    "GROUP_ID_NOT_FOUND": "org.apache.kafka.common.errors.GroupIdNotFoundException",
}


class ConsumerGroupCommandError(Exception):
    """Bad options or input: one line, exit 1."""


def _row(widths: Iterable[int], values: Iterable[object]) -> str:
    """Java's "%-w1s %-w2s ... %s" (the last column unpadded when its width is 0)."""
    cells = [str(v).ljust(w) for w, v in zip(widths, values, strict=True)]
    return " ".join(cells)


def print_error(out: TextIO, message: str) -> None:
    out.write(f"\nError: {message}\n")


def parse_states(text: str) -> list[str]:
    by_lower = {s.lower(): s for s in STATES}
    states = []
    for item in text.split(","):
        state = by_lower.get(item.strip().lower())
        if state is None:
            raise ConsumerGroupCommandError(
                f"Invalid state list '{text}'. Valid states are: {', '.join(STATES)}"
            )
        states.append(state)
    return states


# -- list -------------------------------------------------------------------------------


def list_groups(
    admin: GroupAdmin, out: TextIO, states: str | None, types: str | None = None
) -> None:
    """The group ids; with --state and/or --type (Kafka 4's), a table with those columns
    (and the groups of the states and types given, when given)."""
    if states is None and types is None:
        for group_id, _, _ in admin.list_groups():
            out.write(group_id + "\n")
        return
    wanted = parse_states(states) if states else []
    kinds = parse_types(types) if types else []
    groups = [g for g in admin.list_typed_groups(wanted) if not kinds or g[3] in kinds]
    width = max([15] + [len(g[0]) for g in groups]) + 10
    header, columns = ["GROUP"], [0]
    if types is not None:
        header.append("TYPE")
        columns.append(3)
    if states is not None:
        header.append("STATE")
        columns.append(2)
    widths = [width] + [20] * (len(header) - 1)
    # Kafka 4's printGroupInfo pads every column ("%-Ns %-20s%n"); Kafka 3.9's listing of
    # states (the only table it has) leaves the last one unpadded.
    last = "" if types is not None else None
    out.write(_row(widths, header).rstrip(last) + "\n")
    for group in groups:
        cells = [_shown_type(group[i]) if i == 3 else group[i] for i in columns]
        out.write(_row(widths, cells).rstrip(last) + "\n")


GROUP_TYPES = ("consumer", "classic")


def parse_types(text: str) -> list[str]:
    types = [item.strip().lower() for item in text.split(",")]
    for t in types:
        if t not in GROUP_TYPES:
            raise ConsumerGroupCommandError(
                f"Invalid types list '{text}'. Valid types are: {', '.join(GROUP_TYPES)}"
            )
    return types


def _shown_type(group_type: str) -> str:
    """GroupType.toString: Consumer, Classic."""
    return group_type.capitalize()


# -- describe ---------------------------------------------------------------------------


def _should_print(out: TextIO, err: TextIO, group: str, state: str, rows: int) -> bool:
    if state == "Dead":
        print_error(out, f"Consumer group '{group}' does not exist.")
        return False
    if state == "Empty":
        err.write(f"\nConsumer group '{group}' has no active members.\n")
    elif state in ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"):
        err.write(f"\nWarning: Consumer group '{group}' is rebalancing.\n")
    return rows > 0


def offsets_rows(
    admin: GroupAdmin, d: GroupDescription
) -> list[tuple[str, str, str, str, str, str, str, str, str]]:
    """PartitionAssignmentState rows: assigned partitions by member (most first), then
    committed partitions nobody owns."""
    committed = admin.fetch_offsets(d.group_id)
    owned: list[tuple[tuple[str, int], tuple[str, str, str]]] = []
    members = sorted((x for x in d.members if x.assignment), key=lambda x: -len(x.assignment))
    for x in members:
        for tp in sorted(x.assignment, key=lambda tp: (tp[1], tp[0])):
            owned.append((tp, (x.member_id, x.host, x.client_id)))
    assigned = {tp for tp, _ in owned}
    for tp in sorted(set(committed) - assigned):
        owned.append((tp, (MISSING, MISSING, MISSING)))
    ends = log_offsets(admin, [tp for tp, _ in owned], LATEST)
    rows = []
    for tp, (member, host, client) in owned:
        offset, end = committed.get(tp), ends.get(tp)
        lag = end - offset if offset is not None and end is not None else None
        rows.append((
            d.group_id, tp[0], str(tp[1]), MISSING if offset is None else str(offset),
            MISSING if end is None else str(end), MISSING if lag is None else str(lag),
            member, host, client,
        ))  # fmt: skip
    return rows


def describe_offsets(admin: GroupAdmin, out: TextIO, err: TextIO, groups: list[str]) -> bool:
    """The offsets table of each group; False when one of them does not exist."""
    found = True
    for group in sorted(groups):
        d = admin.describe_group(group)
        found = found and d.state != "Dead"
        rows = offsets_rows(admin, d) if d.state != "Dead" else []
        if not _should_print(out, err, group, d.state, len(rows)):
            continue
        header = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                  "CONSUMER-ID", "HOST", "CLIENT-ID")  # fmt: skip
        w = [max([15] + [len(r[i]) for r in rows]) for i in (0, 1, 6, 7)]
        widths = [w[0], w[1], 10, 15, 15, 15, w[2], w[3], 0]
        for row in (header, *rows):
            out.write("\n" + _row(widths, row))
        out.write("\n")
    return found


def describe_members(
    admin: GroupAdmin, out: TextIO, err: TextIO, groups: list[str], verbose: bool
) -> bool:
    """The members table of each group; False when one of them does not exist."""
    found = True
    for group in sorted(groups):
        d = admin.describe_group(group)
        found = found and d.state != "Dead"
        if not _should_print(out, err, group, d.state, len(d.members)):
            continue
        if d.group_type == "consumer":
            _consumer_group_members(out, d, verbose)
            continue
        with_instance = any(x.group_instance_id for x in d.members)
        rows = []
        for x in d.members:
            row = [group, x.member_id]
            if with_instance:
                row.append(x.group_instance_id or "")
            rows.append((row + [x.host, x.client_id, str(len(x.assignment))], x.assignment))
        header = ["GROUP", "CONSUMER-ID"] + (["GROUP-INSTANCE-ID"] if with_instance else [])
        header += ["HOST", "CLIENT-ID", "#PARTITIONS"]
        minimum = [15, 15] + ([17] if with_instance else []) + [15, 15]
        widths = [max([m] + [len(r[i]) for r, _ in rows]) for i, m in enumerate(minimum)]
        widths.append(15)
        out.write("\n" + _row(widths, header) + " " + ("ASSIGNMENT" if verbose else "") + "\n")
        for row, assignment in rows:
            line = _row(widths, row) + " "
            if verbose:
                line += _assignment_text(assignment)
            out.write(line + "\n")
    return found


def _assignment_text(assignment: list[tuple[str, int]]) -> str:
    if not assignment:
        return MISSING
    by_topic: dict[str, list[str]] = {}
    for topic, partition in assignment:
        by_topic.setdefault(topic, []).append(str(partition))
    return ", ".join(sorted("(" + ",".join(sorted(ps)) + ")" for ps in by_topic.values()))


def describe_state(
    admin: GroupAdmin, out: TextIO, err: TextIO, groups: list[str], verbose: bool = False
) -> bool:
    """The state line of each group; False when one of them does not exist."""
    found = True
    for group in sorted(groups):
        d = admin.describe_group(group)
        found = found and d.state != "Dead"
        if not _should_print(out, err, group, d.state, 1):
            continue
        node, host, port = d.coordinator
        coordinator = f"{host}:{port}  ({node})"
        if d.group_type == "consumer":
            _consumer_group_state(out, d, coordinator, verbose)
            continue
        widths = [max(25, len(coordinator)), 25, 20, 15, 0]
        out.write("\n" + _row(widths, ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY",
                                       "STATE", "#MEMBERS"]))  # fmt: skip
        out.write("\n" + _row(widths, [group, coordinator, d.assignor, d.state, len(d.members)]))
        out.write("\n")
    return found


def _consumer_group_members(out: TextIO, d: GroupDescription, verbose: bool) -> None:
    """Kafka 4's members table of a consumer group: with --verbose each member's epoch
    and assignment, and its target epoch and assignment (topic:p,p;topic:p)."""
    with_instance = any(x.group_instance_id for x in d.members)
    rows = []
    for x in d.members:
        row = [d.group_id, x.member_id] + ([x.group_instance_id or ""] if with_instance else [])
        rows.append((row + [x.host, x.client_id, str(len(x.assignment))], x))
    minimum = [15, 15] + ([17] if with_instance else []) + [15, 15]
    widths = [max([m] + [len(r[i]) for r, _ in rows]) for i, m in enumerate(minimum)] + [15]
    header = ["GROUP", "CONSUMER-ID"] + (["GROUP-INSTANCE-ID"] if with_instance else [])
    header += ["HOST", "CLIENT-ID", "#PARTITIONS"]
    texts = [(_epoch_assignment(x.assignment), _epoch_assignment(x.target or []))
             for _, x in rows]  # fmt: skip
    current = max([20] + [len(c) for c, _ in texts])
    target = max([20] + [len(t) for _, t in texts])
    epochs = [15, current, 15, target]
    # A group in migration (members of both protocols) shows which members are upgraded.
    kinds = {x.upgraded for _, x in rows}
    migrating = True in kinds and False in kinds
    if migrating:
        epochs.append(0)
    line = "\n" + _row(widths, header) + " "
    if verbose:
        titles = ["CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"]
        line += _row(epochs, titles + ["UPGRADED"] * migrating)
    out.write(line + "\n")
    for (row, x), (current_text, target_text) in zip(rows, texts, strict=True):
        line = _row(widths, row) + " "
        if verbose:
            epoch = MISSING if x.member_epoch is None else str(x.member_epoch)
            target_epoch = MISSING if d.assignment_epoch is None else str(d.assignment_epoch)
            values = [epoch, current_text, target_epoch, target_text]
            if migrating:
                values.append(MISSING if x.upgraded is None else str(x.upgraded).lower())
            line += _row(epochs, values)
        out.write(line + "\n")


def _epoch_assignment(assignment: list[tuple[str, int]]) -> str:
    """getAssignmentString: topic:p,p per topic (partitions sorted as text), the topics
    sorted, joined by `;`."""
    if not assignment:
        return MISSING
    by_topic: dict[str, list[str]] = {}
    for topic, partition in assignment:
        by_topic.setdefault(topic, []).append(str(partition))
    return ";".join(sorted(f"{t}:" + ",".join(sorted(ps)) for t, ps in by_topic.items()))


def _consumer_group_state(
    out: TextIO, d: GroupDescription, coordinator: str, verbose: bool
) -> None:
    """Kafka 4's state line: with --verbose the group epoch and the target assignment's."""
    widths = [max(15, len(d.group_id)), max(25, len(coordinator)), 20, 20]
    header = ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE"]
    values: list[object] = [d.group_id, coordinator, d.assignor, d.state]
    if verbose:
        widths += [15, 25]
        header += ["GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH"]
        values += [_or_missing(d.group_epoch), _or_missing(d.assignment_epoch)]
    widths.append(0)
    out.write("\n" + _row(widths, [*header, "#MEMBERS"]))
    out.write("\n" + _row(widths, [*values, len(d.members)]) + "\n")


def _or_missing(value: int | None) -> str:
    return MISSING if value is None else str(value)


# -- delete -----------------------------------------------------------------------------


def delete_groups(admin: GroupAdmin, out: TextIO, groups: list[str]) -> bool:
    results = admin.delete_groups(groups)
    failed = {g: c for g, c in results.items() if c}
    ok = [g for g, c in results.items() if not c]
    if not failed:
        out.write(f"Deletion of requested consumer groups ('{', '.join(ok)}') was successful.\n")
        return True
    print_error(out, "Deletion of some consumer groups failed:")
    for group, code in failed.items():
        e = error_for(code)
        name = JAVA_EXCEPTIONS.get(e.name, e.name)
        out.write(f"* Group '{group}' could not be deleted due to: {name}: {e.message}\n")
    if ok:
        out.write(f"\nThese consumer groups were deleted successfully: '{', '.join(ok)}'\n")
    return False


def delete_offsets(admin: GroupAdmin, out: TextIO, group: str, topics: list[str]) -> bool:
    partitions = parse_topic_partitions(admin, topics)
    top, results = admin.delete_offsets(group, partitions)
    if not top:
        top = next((c for c in results.values() if c), 0)
    name = error_for(top).name
    messages = {
        "INVALID_GROUP_ID": f"'{group}' is not valid.",
        "GROUP_ID_NOT_FOUND": f"'{group}' does not exist.",
        "NON_EMPTY_GROUP": f"Deleting offsets of a consumer group '{group}' is forbidden if "
        "the group is not empty.",
    }
    if top == 0:
        out.write(f"Request succeed for deleting offsets with topic {', '.join(topics)} "
                  f"group {group}\n")  # fmt: skip
    elif name in messages:
        print_error(out, messages[name])
    elif name in ("GROUP_SUBSCRIBED_TO_TOPIC", "UNKNOWN_TOPIC_OR_PARTITION"):
        print_error(out, "Encounter some partition level error, see the follow-up details:")
    else:
        print_error(out, f"Encounter some unknown error: {name}")
    rows = [("TOPIC", "PARTITION", "STATUS")]
    for tp in sorted(results, key=lambda tp: tp[0] + str(tp[1])):
        code = results[tp]
        rows.append((tp[0], str(tp[1]), "Error: :" + error_for(code).message if code else
                     "Successful"))  # fmt: skip
    if name not in messages:
        for row in rows:
            out.write("\n" + _row([30, 15, 0], row))
        out.write("\n")
    return top == 0


def parse_topic_partitions(admin: GroupAdmin, topics: list[str]) -> list[tuple[str, int]]:
    """`t` (all its partitions) or `t:0,1`."""
    out: list[tuple[str, int]] = []
    whole = []
    for arg in topics:
        if ":" not in arg:
            whole.append(arg)
            continue
        topic, _, parts = arg.partition(":")
        for p in parts.split(","):
            if not p.strip().lstrip("-").isdigit():
                raise ConsumerGroupCommandError(
                    f"Invalid partition '{p}' specified in topic arg '{arg}''"
                )
            out.append((topic, int(p)))
    if whole:
        for name, info in admin.client.metadata(whole).items():
            if info.error_code:
                raise KafkaError(info.error_code, f"Topic '{name}' does not exist")
            out += [(name, p) for p in sorted(info.partitions)]
    return out


def log_offsets(
    admin: GroupAdmin, partitions: list[tuple[str, int]], spec: int
) -> dict[tuple[str, int], int]:
    """ListOffsets `spec` (-2 earliest, -1 latest, or a timestamp) for each partition;
    partitions without an answer are missing from the result."""
    from kt.client.admin import AdminClient

    if not partitions:
        return {}
    topics = sorted({t for t, _ in partitions})
    leaders = {
        (name, p): info.leader
        for name, t in admin.client.metadata(topics).items()
        for p, info in t.partitions.items()
    }
    known = {tp: spec for tp in partitions if leaders.get(tp, -1) >= 0}
    found = AdminClient(admin.client).list_offsets(known, leaders)
    return {tp: offset for tp, (code, offset, _) in found.items() if code == 0 and offset >= 0}


# -- reset ------------------------------------------------------------------------------


@dataclass
class ResetScenario:
    """Exactly one of the --to-*/--shift-by/--by-duration/--from-file options."""

    kind: str  # earliest, latest, current, offset, shift, datetime, duration, file
    value: str | int | None = None


def reset_offsets(
    admin: GroupAdmin,
    out: TextIO,
    groups: list[str],
    topics: list[str],
    all_topics: bool,
    scenario: ResetScenario,
    execute: bool,
    export: bool,
) -> tuple[dict[str, dict[tuple[str, int], int]], bool]:
    """The new offsets by group (printed or committed), and whether every group could be
    reset: only an inactive (Empty or Dead) group can."""
    result: dict[str, dict[tuple[str, int], int]] = {}
    refused = False
    for group in groups:
        d = admin.describe_group(group)
        if d.state not in ("Empty", "Dead"):
            print_error(out, f"Assignments can only be reset if the group '{group}' is "
                             f"inactive, but the current state is {d.state}.")  # fmt: skip
            result[group] = {}
            refused = True
            continue
        if all_topics:
            partitions = sorted(admin.fetch_offsets(group))
        else:
            partitions = parse_topic_partitions(admin, topics)
        offsets = prepare_offsets(admin, out, group, partitions, scenario)
        if execute:
            errors = admin.commit_offsets(group, offsets)
            failed = {tp: c for tp, c in errors.items() if c}
            if failed:
                tp, c = next(iter(failed.items()))
                raise KafkaError(c, f"Error committing offsets for {tp[0]}-{tp[1]}")
        result[group] = offsets
    if export:
        single = len(groups) == 1
        for group, offsets in result.items():
            for (topic, partition), offset in offsets.items():
                prefix = "" if single else f"{group},"
                out.write(f"{prefix}{topic},{partition},{offset}\n")
    else:
        print_reset_plan(out, result)
    return result, not refused


def print_reset_plan(out: TextIO, result: dict[str, dict[tuple[str, int], int]]) -> None:
    widths = [30, 30, 10, 15]
    if result:
        out.write("\n" + _row(widths, ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]))
    for group, offsets in result.items():
        for (topic, partition), offset in offsets.items():
            out.write("\n" + _row(widths, [group, topic, partition, offset]))
    out.write("\n")


def prepare_offsets(
    admin: GroupAdmin,
    out: TextIO,
    group: str,
    partitions: list[tuple[str, int]],
    s: ResetScenario,
) -> dict[tuple[str, int], int]:
    """The new offset of every partition under the scenario (ConsumerGroupCommand's
    prepareOffsetsToReset), clamped to [log start, log end] where Kafka clamps."""
    if s.kind in ("earliest", "latest"):
        found = log_offsets(admin, partitions, EARLIEST if s.kind == "earliest" else LATEST)
        return {tp: _required(found, tp, s.kind) for tp in partitions}
    if s.kind == "offset":
        return _clamped(admin, {tp: int(s.value) for tp in partitions})  # type: ignore[arg-type]
    if s.kind == "shift":
        committed = admin.fetch_offsets(group)
        for tp in partitions:
            if tp not in committed:
                raise ConsumerGroupCommandError(
                    f"Cannot shift offset for partition {tp[0]}-{tp[1]} since there is no "
                    "current committed offset"
                )
        return _clamped(admin, {tp: committed[tp] + int(s.value) for tp in partitions})  # type: ignore[arg-type]
    if s.kind in ("datetime", "duration"):
        ts = parse_datetime(str(s.value)) if s.kind == "datetime" else _duration_ago(str(s.value))
        found = log_offsets(admin, partitions, ts)
        missing = [tp for tp in partitions if tp not in found]
        for topic, partition in missing:
            out.write(f"\nWarn: Partition {partition} from topic {topic} is empty. Falling "
                      "back to latest known offset.\n")  # fmt: skip
        found.update(log_offsets(admin, missing, LATEST))
        return {tp: _required(found, tp, "by timestamp") for tp in partitions}
    if s.kind == "current":
        committed = admin.fetch_offsets(group)
        ends = log_offsets(admin, [tp for tp in partitions if tp not in committed], LATEST)
        return {tp: committed[tp] if tp in committed else _required(ends, tp, "latest")
                for tp in partitions}  # fmt: skip
    if s.kind == "file":
        plan = parse_reset_file(str(s.value), group)
        return _clamped(admin, plan.get(group, {}))
    raise ConsumerGroupCommandError(f"Unknown reset scenario {s.kind}")


def _required(found: dict[tuple[str, int], int], tp: tuple[str, int], what: str) -> int:
    if tp not in found:
        raise ConsumerGroupCommandError(f"Error getting {what} offset of topic partition: "
                                        f"{tp[0]}-{tp[1]}")  # fmt: skip
    return found[tp]


def _clamped(admin: GroupAdmin, wanted: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
    starts = log_offsets(admin, list(wanted), EARLIEST)
    ends = log_offsets(admin, list(wanted), LATEST)
    out = {}
    for tp, offset in wanted.items():
        if tp in ends and offset > ends[tp]:
            offset = ends[tp]
        elif tp in starts and offset < starts[tp]:
            offset = starts[tp]
        out[tp] = offset
    return out


def parse_reset_file(text: str, group: str) -> dict[str, dict[tuple[str, int], int]]:
    """CSV lines `topic,partition,offset` (one group) or `group,topic,partition,offset`."""
    plan: dict[str, dict[tuple[str, int], int]] = {}
    for line in filter(None, (x.strip() for x in text.splitlines())):
        cells = line.split(",")
        try:
            if len(cells) == 3:
                g, (t, p, o) = group, cells
            elif len(cells) == 4:
                g, t, p, o = cells
            else:
                raise ValueError
            plan.setdefault(g, {})[(t, int(p))] = int(o)
        except ValueError:
            raise ConsumerGroupCommandError(f"Invalid reset plan line '{line}'") from None
    return plan


_DATETIME = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,3})?)(.*)$")


def parse_datetime(text: str) -> int:
    """Utils.getDateTime: `YYYY-MM-DDTHH:mm:SS[.sss]` with an optional zone (Z, +hh:mm,
    +hhmm); without one, the local time zone."""
    match = _DATETIME.match(text.strip())
    if match is None:
        raise ConsumerGroupCommandError(
            f"Error parsing timestamp '{text}'. Format: 'YYYY-MM-DDTHH:mm:SS.sss'"
        )
    stamp, zone = match.groups()
    value = dt.datetime.fromisoformat(stamp)
    zone = zone.strip()
    if zone:
        if zone == "Z":
            zone = "+00:00"
        elif re.fullmatch(r"[+-]\d{4}", zone):
            zone = zone[:3] + ":" + zone[3:]
        try:
            value = dt.datetime.fromisoformat(stamp + zone)
        except ValueError:
            raise ConsumerGroupCommandError(f"Error parsing timestamp '{text}'") from None
    else:
        value = value.astimezone()
    return int(value.timestamp() * 1000)


def parse_duration_ms(text: str) -> int:
    """ISO-8601 `PnDTnHnMnS` (java.time.Duration.parse) in milliseconds."""
    try:
        return parse_iso_duration_ms(text)
    except ValueError as e:
        raise ConsumerGroupCommandError(str(e)) from None


def _duration_ago(text: str) -> int:
    return int(time.time() * 1000) - parse_duration_ms(text)
