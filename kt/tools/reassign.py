"""The logic of `kt reassign-partitions` (Kafka's ReassignPartitionsCommand): generate,
execute, verify, cancel and list partition reassignments, with the throttles.

Functions take an AdminClient and return the lines to print, or raise ReassignError
(Kafka's TerseException: the message alone) or ReassignFailure (anything else: Kafka
prints `Error: <message>`). Formats: Kafka 3.9's ReassignPartitionsCommand.java.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kt.broker.admin.assign_replicas import assign_replicas_to_brokers
from kt.client.admin import BROKER_RESOURCE, DELETE, SET, TOPIC_RESOURCE, AdminClient
from kt.errors import BY_NAME, KafkaError, error_for
from kt.metadata.jvm_order import java_hash_order

ANY_LOG_DIR = "any"
BROKER_LEVEL_THROTTLES = (
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
    "replica.alter.log.dirs.io.max.bytes.per.second",
)
TOPIC_LEVEL_THROTTLES = (
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
)
CANNOT_EXECUTE = (
    "Cannot execute because there is an existing partition assignment.  Use --additional to "
    "override this and create a new partition assignment in addition to the existing one. The "
    "--additional flag can also be used to change the throttle by resubmitting the current "
    "reassignment."
)
VERIFY_WARNING = (
    "Warning: You must run --verify periodically, until the reassignment completes, to ensure "
    "the throttle is removed."
)
UNKNOWN_TOPIC = BY_NAME["UNKNOWN_TOPIC_OR_PARTITION"].java_exception
REPLICA_NOT_AVAILABLE = 9

Partition = tuple[str, int]
Plan = dict[Partition, list[int]]


class ReassignError(Exception):
    """TerseException: printed as it is."""


class ReassignFailure(Exception):
    """Any other failure: printed as `Error: <message>`."""


def tp_str(tp: Partition) -> str:
    return f"{tp[0]}-{tp[1]}"


def format_plan(plan: Mapping[Partition, list[int]]) -> str:
    """formatAsReassignmentJson: sorted by topic and partition, `log_dirs` all "any"."""
    partitions = [
        {"topic": t, "partition": p, "replicas": plan[(t, p)],
         "log_dirs": [ANY_LOG_DIR] * len(plan[(t, p)])}
        for t, p in sorted(plan)
    ]  # fmt: skip
    return json.dumps({"version": 1, "partitions": partitions}, separators=(",", ":"))


def _load(text: str) -> dict:
    try:
        doc = json.loads(text)
    except ValueError:
        raise ReassignFailure("The input string is not a valid JSON") from None
    if not isinstance(doc, dict):
        raise ReassignFailure("The input string is not a valid JSON")
    version = doc.get("version", 1)
    if version != 1:
        raise ReassignFailure(f"Not supported version field value {version}")
    return doc


def parse_topics_to_move(text: str) -> list[str]:
    """{"topics":[{"topic":"foo"}],"version":1}"""
    try:
        return [str(entry["topic"]) for entry in _load(text).get("topics") or []]
    except KeyError as e:
        raise ReassignFailure(f"No such field exists: `{e.args[0]}`") from None
    except TypeError:
        raise ReassignFailure("The input string is not a valid JSON") from None


Replica = tuple[str, int, int]  # topic, partition, broker (TopicPartitionReplica)


def parse_plan(text: str) -> tuple[list[tuple[Partition, list[int]]], dict[Replica, str]]:
    """The partitions of a reassignment JSON in file order, duplicates kept (the checks
    come after), and the log dir asked for each replica whose `log_dirs` entry is not
    "any". `log_dirs`, when given, must be as long as `replicas`."""
    out = []
    dirs: dict[Replica, str] = {}
    try:
        for entry in _load(text).get("partitions") or []:
            tp = (str(entry["topic"]), int(entry["partition"]))
            replicas = [int(r) for r in entry["replicas"]]
            log_dirs = entry.get("log_dirs", [ANY_LOG_DIR] * len(replicas))
            if len(log_dirs) != len(replicas):
                raise ReassignFailure(
                    f"Size of replicas list {_java_list(replicas)} is different from size of "
                    f"log dirs list {_java_list(log_dirs)} for partition {tp_str(tp)}"
                )
            for replica, log_dir in zip(replicas, log_dirs, strict=True):
                if log_dir != ANY_LOG_DIR:
                    dirs[(tp[0], tp[1], replica)] = str(log_dir)
            out.append((tp, replicas))
    except KeyError as e:  # JsonObject.apply's words
        raise ReassignFailure(f"No such field exists: `{e.args[0]}`") from None
    except (TypeError, ValueError):
        raise ReassignFailure("The input string is not a valid JSON") from None
    return out, dirs


def replica_str(replica: Replica) -> str:
    """TopicPartitionReplica.toString: topic-partition-broker."""
    return f"{replica[0]}-{replica[1]}-{replica[2]}"


def _java_list(items: Iterable[object]) -> str:
    return "[" + ", ".join(map(str, items)) + "]"


def check_execute_plan(entries: list[tuple[Partition, list[int]]]) -> Plan:
    """parseExecuteAssignmentArgs' checks."""
    if not entries:
        raise ReassignFailure("Partition reassignment list cannot be empty")
    if any(not replicas for _, replicas in entries):
        raise ReassignFailure("Partition replica list cannot be empty")
    seen: set[Partition] = set()
    duplicates = [tp for tp, _ in entries if tp in seen or seen.add(tp)]  # type: ignore[func-returns-value]
    if duplicates:
        raise ReassignFailure(
            "Partition reassignment contains duplicate topic partitions: "
            + ",".join(tp_str(tp) for tp in dict.fromkeys(duplicates))
        )
    repeated = []
    for tp, replicas in entries:
        twice = sorted({r for r in replicas if replicas.count(r) > 1})
        if twice:
            repeated.append(
                f"{tp_str(tp)} contains multiple entries for {','.join(map(str, twice))}"
            )
    if repeated:
        raise ReassignFailure(
            "Partition replica lists may not contain duplicate entries: " + ". ".join(repeated)
        )
    return dict(entries)


def _current_assignment(admin: AdminClient, topics: Iterable[str]) -> Plan:
    described = admin.describe_topics(sorted(set(topics)))
    current: Plan = {}
    for topic in sorted(set(topics)):
        info = described.get(topic)
        if info is None or info.error_code:
            raise ReassignFailure(f"{UNKNOWN_TOPIC}: Topic {topic} not found.")
        for p, part in info.partitions.items():
            current[(topic, p)] = list(part.replicas)
    return current


# -- generate ------------------------------------------------------------------------------


def generate(admin: AdminClient, topics_json: str, broker_list: str, rack_aware: bool) -> list[str]:
    try:
        brokers = [int(b) for b in broker_list.split(",")]
    except ValueError:
        raise ReassignFailure(f'For input string: "{broker_list}"') from None
    twice = sorted({b for b in brokers if brokers.count(b) > 1})
    if twice:
        raise ReassignFailure(f"Broker list contains duplicate entries: {_java_set(twice)}")
    topics = parse_topics_to_move(topics_json)
    twice_topics = sorted({t for t in topics if topics.count(t) > 1})
    if twice_topics:
        raise ReassignFailure(
            f"List of topics to reassign contains duplicate entries: {_java_set(twice_topics)}"
        )
    current = _current_assignment(admin, topics)
    admin.client.metadata([])
    live = {b: rack for b, (_, _, rack) in admin.client.brokers.items() if b in brokers}
    racks = {b: (r if rack_aware else None) for b, r in live.items()}
    rackless = sum(1 for r in racks.values() if r is None)
    if rack_aware and 0 < rackless < len(racks):
        raise ReassignFailure(
            "Not all brokers have rack information. Add --disable-rack-aware in command line to "
            "make replica assignment without rack information."
        )
    proposed: Plan = {}
    for topic in topics:
        partitions = sorted(p for t, p in current if t == topic)
        rf = len(current[(topic, partitions[0])])
        try:
            assignment = assign_replicas_to_brokers(
                len(partitions), rf, sorted(live), racks=racks if rackless == 0 else None
            )
        except KafkaError as e:
            raise ReassignFailure(str(e)) from None
        proposed.update({(topic, p): r for p, r in assignment.items()})
    return [
        "Current partition replica assignment", format_plan(current), "",
        "Proposed partition reassignment configuration", format_plan(proposed),
    ]  # fmt: skip


def _java_set(items: Iterable[object]) -> str:
    return "[" + ", ".join(map(str, items)) + "]"


# -- execute -------------------------------------------------------------------------------


@dataclass
class PartitionMove:
    sources: set[int]
    destinations: set[int]


def move_map(
    ongoing: Mapping[Partition, tuple[list[int], list[int], list[int]]],
    proposed: Plan, current: Plan,
) -> dict[str, dict[int, PartitionMove]]:  # fmt: skip
    """calculateProposedMoveMap: the ongoing moves, then the proposed ones (whose sources
    are an ongoing move's sources, else the current replicas)."""
    moves: dict[str, dict[int, PartitionMove]] = {}
    for (topic, p), (replicas, adding, _) in ongoing.items():
        moves.setdefault(topic, {})[p] = PartitionMove(set(replicas) - set(adding), set(adding))
    for (topic, p), replicas in proposed.items():
        by_partition = moves.setdefault(topic, {})
        sources = by_partition[p].sources if p in by_partition else set(current[(topic, p)])
        by_partition[p] = PartitionMove(set(sources), set(replicas) - set(sources))
    return moves


def leader_throttles(moves: Mapping[str, Mapping[int, PartitionMove]]) -> dict[str, str]:
    return {
        topic: ",".join(sorted(f"{p}:{s}" for p, move in parts.items() for s in move.sources))
        for topic, parts in moves.items()
    }


def follower_throttles(moves: Mapping[str, Mapping[int, PartitionMove]]) -> dict[str, str]:
    return {
        topic: ",".join(sorted(
            f"{p}:{d}" for p, move in parts.items() for d in move.destinations
            if d not in move.sources
        ))
        for topic, parts in moves.items()
    }  # fmt: skip


def _alter(admin: AdminClient, resource: int, name: str, ops: list) -> None:
    code, message = admin.incremental_alter_configs(resource, name, ops)
    if code:
        raise ReassignFailure(message or error_for(code).message)


def execute(
    admin: AdminClient, plan_json: str, additional: bool, throttle: int,
    log_dir_throttle: int = -1, timeout_ms: int = 10_000,
) -> list[str]:  # fmt: skip
    """executeAssignment; the lines are printed as they come (the current assignment
    first, so that a later failure still shows what to roll back to)."""
    entries, replica_dirs = parse_plan(plan_json)
    proposed = check_execute_plan(entries)
    ongoing = admin.list_partition_reassignments()
    if ongoing and not additional:
        raise ReassignError(CANNOT_EXECUTE)
    admin.client.metadata([])
    known = set(admin.client.brokers)
    for broker in sorted({b for replicas in proposed.values() for b in replicas}):
        if broker not in known:
            raise ReassignFailure(f"Unknown broker id {broker}")
    current = _current_assignment(admin, {t for t, _ in proposed})
    missing = [tp for tp in proposed if tp not in current]
    if missing:
        raise ReassignFailure(
            f"{UNKNOWN_TOPIC}: Unable to find partition: " + ", ".join(map(tp_str, missing))
        )
    lines = [
        "Current partition replica assignment", "",
        format_plan({tp: current[tp] for tp in proposed}), "",
        "Save this to use as the --reassignment-json-file option during rollback",
    ]  # fmt: skip
    if throttle >= 0 or log_dir_throttle >= 0:
        lines.append(VERIFY_WARNING)
    if throttle >= 0:
        moves = move_map(ongoing, proposed, current)
        leaders, followers = leader_throttles(moves), follower_throttles(moves)
        for topic in java_hash_order(set(leaders) | set(followers)):
            _alter(admin, TOPIC_RESOURCE, topic, [
                (SET, "leader.replication.throttled.replicas", leaders[topic]),
                (SET, "follower.replication.throttled.replicas", followers[topic]),
            ])  # fmt: skip
        brokers = sorted({b for parts in moves.values() for m in parts.values()
                          for b in m.sources | m.destinations})  # fmt: skip
        for broker in brokers:
            _alter(admin, BROKER_RESOURCE, str(broker), [
                (SET, "leader.replication.throttled.rate", str(throttle)),
                (SET, "follower.replication.throttled.rate", str(throttle)),
            ])  # fmt: skip
        lines.append(f"The inter-broker throttle limit was set to {throttle} B/s")
    if log_dir_throttle >= 0:
        for broker in sorted({b for _, _, b in replica_dirs}):
            _alter(admin, BROKER_RESOURCE, str(broker), [
                (SET, "replica.alter.log.dirs.io.max.bytes.per.second", str(log_dir_throttle)),
            ])  # fmt: skip
        lines.append(f"The replica-alter-dir throttle limit was set to {log_dir_throttle} B/s")
    results = admin.alter_partition_reassignments(dict(proposed))
    failed = {tp: r for tp, r in results.items() if r[0]}
    if failed:
        raise ReassignError("\n".join(lines) + "\nError reassigning partition(s):\n" + "\n".join(
            f"{tp_str(tp)}: {message or error_for(code).message}"
            for tp, (code, message) in sorted(failed.items())
        ))  # fmt: skip
    plural = "" if len(proposed) == 1 else "s"
    lines.append(f"Successfully started partition reassignment{plural} for "
                 + ",".join(tp_str(tp) for tp in sorted(proposed)))  # fmt: skip
    if replica_dirs:
        lines += execute_moves(admin, replica_dirs, timeout_ms, lines)
    return lines


def _replica_order(replica: Replica) -> tuple[int, str, int]:
    return replica[2], replica[0], replica[1]  # compareTopicPartitionReplicas


def execute_moves(
    admin: AdminClient, wanted: dict[Replica, str], timeout_ms: int, printed: list[str]
) -> list[str]:
    """executeMoves: AlterReplicaLogDirs until every replica's move has started (a replica
    not on its broker yet answers REPLICA_NOT_AVAILABLE: asked again every 100 ms)."""
    import time

    deadline = time.monotonic() + timeout_ms / 1000
    pending = dict(wanted)
    lines: list[str] = []
    while True:
        started = []
        by_broker: dict[int, dict[Partition, str]] = {}
        for (topic, partition, broker), path in pending.items():
            by_broker.setdefault(broker, {})[(topic, partition)] = path
        for broker, dirs in by_broker.items():
            for (topic, partition), code in admin.alter_replica_log_dirs(broker, dirs).items():
                replica = (topic, partition, broker)
                if code == 0:
                    started.append(replica)
                elif code != REPLICA_NOT_AVAILABLE:
                    raise ReassignFailure(
                        f"Failed to alter dir for {replica_str(replica)}: {error_for(code).message}"
                    )
        for replica in sorted(started, key=_replica_order):
            lines.append(
                f"Successfully started moving log directory to {pending[replica]} for replica "
                f"{replica[0]}-{replica[1]} with broker {replica[2]} "
            )
            del pending[replica]
        if not pending:
            return lines
        if time.monotonic() >= deadline:
            left = ",".join(replica_str(r) for r in sorted(pending, key=_replica_order))
            plural = "" if len(pending) == 1 else "s"
            raise ReassignError("\n".join([*printed, *lines, (
                f"Timed out before log directory move{plural} could be started for: {left}"
            )]))  # fmt: skip
        time.sleep(0.1)


def log_dir_move_states(admin: AdminClient, wanted: dict[Replica, str]) -> dict[Replica, tuple]:
    """findLogDirMoveStates: per replica (state, current dir, future dir, target dir)."""
    states: dict[Replica, tuple] = {}
    described: dict[int, list] = {}
    for replica, target in wanted.items():
        broker = replica[2]
        if broker not in described:
            try:
                described[broker] = admin.describe_log_dirs(broker)
            except KafkaError:
                described[broker] = []
        current = future = None
        for log_dir, _, replicas in described[broker]:
            for topic, partition, _, _, is_future in replicas:
                if (topic, partition) == replica[:2]:
                    if is_future:
                        future = log_dir
                    else:
                        current = log_dir
        if current is None and future is None:
            states[replica] = ("missing", None, None, target)
        elif future is None:
            states[replica] = ("completed" if current == target else "cancelled", current, None,
                               target)  # fmt: skip
        else:
            states[replica] = ("active", current, future, target)
    return states


def move_states_lines(states: dict[Replica, tuple]) -> list[str]:
    """replicaMoveStatesToString."""
    lines = []
    for replica in sorted(states, key=_replica_order):
        state, current, future, target = states[replica]
        topic, partition, broker = replica
        if state == "missing":
            lines.append(f"Partition {topic}-{partition} cannot be found in any live log "
                         f"directory on broker {broker}.")  # fmt: skip
        elif state == "active" and future == target:
            lines.append(f"Reassignment of replica {replica_str(replica)} is still in progress.")
        elif state == "active":
            lines.append(f"Partition {topic}-{partition} on broker {broker} is being moved to "
                         f"log dir {future} instead of {target}.")  # fmt: skip
        elif state == "cancelled":
            lines.append(f"Partition {topic}-{partition} on broker {broker} is not being moved "
                         f"from log dir {current} to {target}.")  # fmt: skip
        else:
            lines.append(f"Reassignment of replica {replica_str(replica)} completed successfully.")
    return lines


# -- verify, cancel, list ------------------------------------------------------------------


def verify(admin: AdminClient, plan_json: str, preserve_throttles: bool) -> tuple[list[str], bool]:
    """(lines, whether any reassignment or log dir move is still in progress)."""
    targets, replica_dirs = parse_plan(plan_json)
    ongoing = admin.list_partition_reassignments()
    lines = ["Status of partition reassignment:"]
    missing = [tp for tp, _ in targets if tp not in ongoing]
    described = admin.describe_topics(sorted({t for t, _ in missing})) if missing else {}
    for tp, target in sorted(targets):
        if tp in ongoing:
            lines.append(f"Reassignment of partition {tp_str(tp)} is still in progress.")
            continue
        info = described.get(tp[0])
        part = info.partitions.get(tp[1]) if info is not None and not info.error_code else None
        current = list(part.replicas) if part is not None else []
        if current == target:
            lines.append(f"Reassignment of partition {tp_str(tp)} is completed.")
        else:
            lines.append(
                f"There is no active reassignment of partition {tp_str(tp)}, but replica set is "
                f"{','.join(map(str, current))} rather than {','.join(map(str, target))}."
            )
    moves = log_dir_move_states(admin, replica_dirs)
    lines.append("\n".join(move_states_lines(moves)))  # a blank line when there are none
    in_progress = bool(ongoing) or any(state == "active" for state, *_ in moves.values())
    if not in_progress and not preserve_throttles:
        lines += clear_throttles(admin, targets)
    return lines, in_progress


def clear_throttles(admin: AdminClient, targets: list[tuple[Partition, list[int]]]) -> list[str]:
    """clearAllThrottles: the broker keys on every live broker and every broker of the
    plan, the topic keys on every topic of the plan."""
    admin.client.metadata([])
    brokers = sorted(set(admin.client.brokers) | {b for _, r in targets for b in r})
    topics = java_hash_order({t for (t, _), _ in targets})
    for broker in brokers:
        _alter(
            admin, BROKER_RESOURCE, str(broker), [(DELETE, k, None) for k in BROKER_LEVEL_THROTTLES]
        )
    for topic in topics:
        _alter(admin, TOPIC_RESOURCE, topic, [(DELETE, k, None) for k in TOPIC_LEVEL_THROTTLES])
    return [
        f"Clearing broker-level throttles on broker{'' if len(brokers) == 1 else 's'} "
        + ",".join(map(str, brokers)),
        f"Clearing topic-level throttles on topic{'' if len(topics) == 1 else 's'} "
        + ",".join(topics),
    ]


def cancel(
    admin: AdminClient, plan_json: str, preserve_throttles: bool, timeout_ms: int = 10_000
) -> str:
    """cancelAssignment's output, as one text: Kafka prints "None of the specified
    partition moves are active." without a newline, so a Clearing line follows on it."""
    targets, replica_dirs = parse_plan(plan_json)
    ongoing = admin.list_partition_reassignments([tp for tp, _ in targets])
    cancellable = sorted(tp for tp, (_, adding, removing) in ongoing.items()
                         if not adding or removing)  # fmt: skip
    out = ""
    if cancellable:
        results = admin.alter_partition_reassignments({tp: None for tp in cancellable})
        failed = {tp: r for tp, r in results.items() if r[0]}
        if failed:
            raise ReassignError(
                f"Error cancelling partition reassignment{'' if len(failed) == 1 else 's'} for:\n"
                + "\n".join(f"{tp_str(tp)}: {m or error_for(c).message}"
                            for tp, (c, m) in sorted(failed.items()))
            )  # fmt: skip
        plural = "" if len(cancellable) == 1 else "s"
        out += (f"Successfully cancelled partition reassignment{plural} for: "
                + ",".join(map(tp_str, cancellable)) + "\n")  # fmt: skip
    else:
        out += "None of the specified partition reassignments are active.\n"
    moving = {r: current for r, (state, current, _, _) in
              log_dir_move_states(admin, replica_dirs).items() if state == "active"}  # fmt: skip
    if moving:  # moved back to where each replica is now
        out += "\n".join(execute_moves(admin, moving, timeout_ms, [])) + "\n"
    else:
        out += "None of the specified partition moves are active."
    if not preserve_throttles:
        out += "\n".join(clear_throttles(admin, targets))
    return out + "\n"


def list_reassignments(admin: AdminClient) -> list[str]:
    ongoing = admin.list_partition_reassignments()
    if not ongoing:
        return ["No partition reassignments found."]
    lines = ["Current partition reassignments:"]
    for tp, (replicas, adding, removing) in sorted(ongoing.items()):
        line = f"{tp_str(tp)}: replicas: {','.join(map(str, replicas))}."
        if adding:
            line += f" adding: {','.join(map(str, adding))}."
        if removing:
            line += f" removing: {','.join(map(str, removing))}."
        lines.append(line)
    return lines
