"""The logic of `kt topics` (Kafka's TopicCommand): create, list, describe, alter, delete.

Functions take an AdminClient and return lines or raise TopicCommandError with Kafka's
message; the click command prints them, in TopicCommand.java's formats (Kafka 3.9).
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

from kt.client.admin import TOPIC_RESOURCE, AdminClient
from kt.client.client import PartitionInfo, TopicInfo
from kt.errors import InvalidTopicError, KafkaError, error_for
from kt.metadata.znodes import ZERO_UUID, uuid_from_str, uuid_to_str
from kt.storage.names import validate_topic_name
from kt.tools.include_list import InvalidRegex, include_list

DEFAULT_CONFIG_SOURCE = 5
LEGAL = re.compile(r"[a-zA-Z0-9._-]+")


class TopicCommandError(Exception):
    """One line for `Error while executing topic command : <message>`."""


def topic_id_str(topic_id: object) -> str:
    return uuid_to_str(topic_id) if isinstance(topic_id, uuid.UUID) else str(topic_id)


def validate_name(name: str) -> None:
    """Kafka's Topic.validate messages, as TopicCommand prints them."""
    try:
        validate_topic_name(name)
    except InvalidTopicError as e:
        raise TopicCommandError(str(e)) from None


def parse_replica_assignment(text: str) -> dict[int, list[int]]:
    """`0:1,1:2,2:0`: partitions separated by commas, replicas by colons."""
    assignment: dict[int, list[int]] = {}
    for partition, group in enumerate(text.split(",")):
        try:
            replicas = [int(b.strip()) for b in group.split(":")]
        except ValueError:
            raise TopicCommandError(f"Invalid replica assignment '{text}'") from None
        if len(set(replicas)) != len(replicas):
            raise TopicCommandError(
                f"Partition replica lists may not contain duplicate entries: {group}"
            )
        assignment[partition] = replicas
    sizes = {len(r) for r in assignment.values()}
    if len(sizes) > 1:
        raise TopicCommandError(
            f"Partition {max(assignment)} has different replication factor: "
            f"{assignment[max(assignment)]}"
        )
    return assignment


@dataclass
class CreateOptions:
    topic: str
    partitions: int | None = None
    replication_factor: int | None = None
    replica_assignment: str | None = None
    configs: dict[str, str] | None = None
    if_not_exists: bool = False


def create_topic(admin: AdminClient, opts: CreateOptions) -> list[str]:
    validate_name(opts.topic)
    if opts.replication_factor is not None and not 1 <= opts.replication_factor <= 32767:
        raise TopicCommandError("The replication factor must be between 1 and 32767 inclusive")
    lines = []
    if "." in opts.topic or "_" in opts.topic:
        lines.append(
            "WARNING: Due to limitations in metric names, topics with a period ('.') or "
            "underscore ('_') could collide. To avoid issues it is best to use either, but "
            "not both."
        )
    assignment = (
        parse_replica_assignment(opts.replica_assignment) if opts.replica_assignment else None
    )
    result = admin.create_topic(
        opts.topic,
        -1 if assignment else (opts.partitions if opts.partitions is not None else -1),
        -1 if assignment else (opts.replication_factor or -1),
        assignment,
        opts.configs,
    )
    if result.error_code:
        name = error_for(result.error_code).name
        if name == "TOPIC_ALREADY_EXISTS":
            if opts.if_not_exists:
                return lines
            raise TopicCommandError(f"Topic '{opts.topic}' already exists.")
        raise TopicCommandError(result.error_message or error_for(result.error_code).message)
    lines.append(f"Created topic {opts.topic}.")
    return lines


def matching_topics(
    admin: AdminClient, pattern: str | None, exclude_internal: bool
) -> dict[str, TopicInfo]:
    topics = admin.describe_topics(None)
    try:
        regex = include_list(pattern) if pattern else None
    except InvalidRegex as e:
        raise TopicCommandError(str(e)) from None
    return {
        name: info
        for name, info in sorted(topics.items())
        if (regex is None or regex.fullmatch(name)) and not (exclude_internal and info.is_internal)
    }


def list_topics(admin: AdminClient, pattern: str | None, exclude_internal: bool) -> list[str]:
    return list(matching_topics(admin, pattern, exclude_internal))


@dataclass
class DescribeFilters:
    under_replicated: bool = False
    unavailable: bool = False
    under_min_isr: bool = False
    at_min_isr: bool = False
    topics_with_overrides: bool = False

    @property
    def any_partition_filter(self) -> bool:
        return self.under_replicated or self.unavailable or self.under_min_isr or self.at_min_isr


def describe_topics(
    admin: AdminClient,
    pattern: str | None,
    exclude_internal: bool,
    filters: DescribeFilters,
    if_exists: bool = False,
    topic_id: str | None = None,
) -> list[str]:
    """The describe lines; a non-zero `topic_id` (--topic-id) wins over `pattern`."""
    wanted_id = _parse_topic_id(topic_id) if topic_id is not None else ZERO_UUID
    if wanted_id != ZERO_UUID:
        topics = {
            name: info
            for name, info in matching_topics(admin, None, exclude_internal).items()
            if info.topic_id == wanted_id
        }
        if not topics and not if_exists:
            raise TopicCommandError(f"TopicId '{topic_id}' does not exist as expected")
    else:
        topics = matching_topics(admin, pattern, exclude_internal)
        if pattern and not topics and not if_exists and not _is_regex(pattern):
            raise TopicCommandError(f"Topic '{pattern}' does not exist as expected")
    live = set(admin.client.brokers)
    moves = _reassignments(admin, topics)
    lines: list[str] = []
    for name, info in topics.items():
        _, _, configs = admin.describe_configs(TOPIC_RESOURCE, name)
        overrides = [c for c in configs if c.source != DEFAULT_CONFIG_SOURCE]
        min_isr = next(
            (int(c.value) for c in configs if c.name == "min.insync.replicas" and c.value), 1
        )
        partitions = [info.partitions[p] for p in sorted(info.partitions)]
        # DescribeOptions: partition filters hide the topic line, --topics-with-overrides
        # hides the partition lines.
        if not filters.any_partition_filter and (not filters.topics_with_overrides or overrides):
            first = partitions[0] if partitions else None
            rf = _replication_factor(first, moves.get((name, first.partition))) if first else 0
            config_text = ",".join(f"{c.name}={c.value}" for c in overrides)
            lines.append(
                f"Topic: {name}\tTopicId: {topic_id_str(info.topic_id)}\t"
                f"PartitionCount: {len(partitions)}\tReplicationFactor: {rf}\t"
                f"Configs: {config_text}"
            )
        if filters.topics_with_overrides:
            continue
        for p in partitions:
            move = moves.get((name, p.partition))
            if _keep(p, move, filters, live, min_isr):
                lines.append(_partition_line(name, p, move))
    return lines


Move = tuple[list[int], list[int], list[int]]  # replicas, adding, removing


def _reassignments(admin: AdminClient, topics: dict[str, TopicInfo]) -> dict[tuple[str, int], Move]:
    """TopicCommand's listAllReassignments: the moves in progress, none if not allowed."""
    wanted = [(name, p) for name, info in topics.items() for p in info.partitions]
    if not wanted:
        return {}
    try:
        return admin.list_partition_reassignments(wanted)
    except KafkaError as e:
        if e.name in ("UNSUPPORTED_VERSION", "CLUSTER_AUTHORIZATION_FAILED"):
            return {}
        raise


def _in_progress(p: PartitionInfo, move: Move | None) -> bool:
    return move is not None and bool(set(p.replicas) & (set(move[1]) | set(move[2])))


def _replication_factor(p: PartitionInfo, move: Move | None) -> int:
    """The target's size while a move is in progress (getReplicationFactor)."""
    if move is not None and _in_progress(p, move):
        return len(move[0]) - len(move[1])
    return len(p.replicas)


def _keep(
    p: PartitionInfo, move: Move | None, filters: DescribeFilters, live: set[int], min_isr: int
) -> bool:
    """DescribeOptions.shouldPrintTopicPartition: any filter given that matches."""
    if not filters.any_partition_filter:
        return True
    no_leader = p.leader < 0
    return (
        (filters.under_replicated and _replication_factor(p, move) > len(p.isr))
        or (filters.unavailable and (no_leader or p.leader not in live))
        or (filters.under_min_isr and (no_leader or len(p.isr) < min_isr))
        or (filters.at_min_isr and len(p.isr) == min_isr)
    )


def _partition_line(topic: str, p: PartitionInfo, move: Move | None) -> str:
    leader = str(p.leader) if p.leader >= 0 else "none"
    line = (
        f"\tTopic: {topic}\tPartition: {p.partition}\tLeader: {leader}\t"
        f"Replicas: {_ids(p.replicas)}\tIsr: {_ids(p.isr)}"
    )
    if move is not None:
        line += f"\tAdding Replicas: {_ids(move[1])}\tRemoving Replicas: {_ids(move[2])}"
    return line + "\tElr: N/A\tLastKnownElr: N/A"


def _ids(brokers: list[int]) -> str:
    return ",".join(map(str, brokers))


def _is_regex(pattern: str) -> bool:
    return not LEGAL.fullmatch(pattern)


def _parse_topic_id(text: str) -> uuid.UUID:
    try:
        return uuid_from_str(text)
    except ValueError:
        raise TopicCommandError(
            f"Input string '{text}' is not a valid topic id (22 base64url characters)"
        ) from None


def alter_topic(
    admin: AdminClient, pattern: str, partitions: int | None, replica_assignment: str | None,
    if_exists: bool = False,
) -> list[str]:  # fmt: skip
    topics = matching_topics(admin, pattern, False)
    if not topics:
        if if_exists:
            return []
        raise TopicCommandError(f"Topic '{pattern}' does not exist as expected")
    if partitions is None:
        raise TopicCommandError("--partitions is required to alter a topic")
    for name, info in topics.items():
        assignment = None
        if replica_assignment:
            full = parse_replica_assignment(replica_assignment)
            assignment = [full[p] for p in sorted(full) if p >= len(info.partitions)]
        result = admin.create_partitions(name, partitions, assignment)
        if result.error_code:
            raise TopicCommandError(result.error_message or error_for(result.error_code).message)
    return []


def delete_topics(admin: AdminClient, pattern: str, if_exists: bool = False) -> list[str]:
    topics = matching_topics(admin, pattern, False)
    if not topics:
        if if_exists:
            return []
        raise TopicCommandError(f"Topic '{pattern}' does not exist as expected")
    internal = [n for n, i in topics.items() if i.is_internal]
    if internal:
        raise TopicCommandError(
            f"Topic {internal[0]} is a kafka internal topic and is not allowed to be marked "
            "for deletion."
        )
    for result in admin.delete_topics(list(topics)):
        if result.error_code:
            raise TopicCommandError(result.error_message or error_for(result.error_code).message)
    return []
