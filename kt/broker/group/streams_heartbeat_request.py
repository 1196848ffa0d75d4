"""A StreamsGroupHeartbeat as the streams group coordinator takes it: the request, its
answer, its checks (GroupCoordinatorService.throwIfStreamsGroupHeartbeatRequestIsInvalid,
GroupMetadataManager's epoch and task checks), and what it changes in its member
(StreamsGroupMember.Builder's maybeUpdate*)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from kt.broker.group import streams_topology as st
from kt.broker.group.heartbeat_request import GroupError, refuse_empty
from kt.broker.group.streams_group import StreamsGroupMember

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2

Tasks = dict[str, set[int]]


@dataclass
class StreamsHeartbeatRequest:
    """A StreamsGroupHeartbeat as the coordinator reads it: tasks as {subtopology:
    partitions} (None: unchanged), the topology as a StreamsGroupTopologyValue."""

    group_id: str
    member_id: str
    member_epoch: int
    endpoint_information_epoch: int = 0
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    topology: Any = None
    active_tasks: Tasks | None = None
    standby_tasks: Tasks | None = None
    warmup_tasks: Tasks | None = None
    process_id: str | None = None
    user_endpoint: tuple[str, int] | None = None
    client_tags: dict[str, str] | None = None
    task_offsets: dict[str, dict[int, int]] | None = None
    task_end_offsets: dict[str, dict[int, int]] | None = None
    shutdown_application: bool = False
    client_id: str = ""
    client_host: str = ""
    api_version: int = 1


@dataclass
class EndpointPartitions:
    """One member's user endpoint and the source partitions of its tasks (for IQ)."""

    endpoint: tuple[str, int]
    active: list[tuple[str, list[int]]]
    standby: list[tuple[str, list[int]]]


@dataclass
class StreamsHeartbeatResult:
    error: str = "NONE"
    message: str | None = None
    member_id: str = ""
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    task_offset_interval_ms: int = 0
    acceptable_recovery_lag: int = 0
    statuses: list[tuple[int, str]] = field(default_factory=list)
    assignment: tuple[Tasks, Tasks, Tasks] | None = None  # active, standby, warm-up
    endpoint_information_epoch: int = 0
    partitions_by_user_endpoint: list[EndpointPartitions] | None = None
    topics_to_create: dict[str, st.InternalTopic] = field(default_factory=dict)


def validate(request: StreamsHeartbeatRequest) -> None:
    """throwIfStreamsGroupHeartbeatRequestIsUsingUnsupportedFeatures and
    throwIfStreamsGroupHeartbeatRequestIsInvalid."""
    topology = request.topology
    if topology is not None and any(s.source_topic_regex for s in topology.subtopologies):
        raise GroupError(
            "INVALID_REQUEST", "Regular expressions for source topics are not supported yet."
        )
    refuse_empty(
        (request.member_id, "MemberId"),
        (request.group_id, "GroupId"),
        (request.instance_id, "InstanceId"),
        (request.rack_id, "RackId"),
    )
    tasks = (request.active_tasks, request.standby_tasks, request.warmup_tasks)
    epoch = request.member_epoch
    if epoch == 0:
        if request.rebalance_timeout_ms == -1:
            raise GroupError(
                "INVALID_REQUEST", "RebalanceTimeoutMs must be provided in first request."
            )
        for owned, kind in zip(tasks, ("ActiveTasks", "StandbyTasks", "WarmupTasks"), strict=True):
            if owned:
                raise GroupError("INVALID_REQUEST", f"{kind} must be empty when (re-)joining.")
        if topology is None:
            raise GroupError("INVALID_REQUEST", "Topology must be non-null when (re-)joining.")
        for s in topology.subtopologies:
            for t in s.state_changelog_topics:
                if t.partitions != 0:
                    raise GroupError(
                        "STREAMS_INVALID_TOPOLOGY",
                        f"Changelog topic {t.name} must "
                        "have an undefined partition count, but it is set to "
                        f"{t.partitions}.",
                    )
    elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if request.instance_id is None:
            raise GroupError("INVALID_REQUEST", "InstanceId can't be null.")
    elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise GroupError(
            "INVALID_REQUEST", f"MemberEpoch is {epoch}, but must be greater than or equal to -2."
        )
    if any(t is not None for t in tasks) and any(t is None for t in tasks):
        raise GroupError("INVALID_REQUEST", "If one task-type is non-null, all must be non-null.")
    if epoch != 0 and topology is not None:
        raise GroupError("INVALID_REQUEST", "Topology can only be provided when (re-)joining.")


def updated_member(
    member: StreamsGroupMember, request: StreamsHeartbeatRequest, joining: bool
) -> StreamsGroupMember:
    """The member with what the request changes (StreamsGroupMember.Builder's
    maybeUpdate*: a null field keeps the value)."""

    def keep(new: Any, old: Any) -> Any:
        return old if new is None else new

    topology = request.topology
    timeout = request.rebalance_timeout_ms
    return replace(
        member,
        instance_id=keep(request.instance_id, member.instance_id),
        rack_id=keep(request.rack_id, member.rack_id),
        rebalance_timeout_ms=member.rebalance_timeout_ms if timeout == -1 else timeout,
        topology_epoch=member.topology_epoch if topology is None else topology.epoch,
        client_id=request.client_id,
        client_host=request.client_host,
        process_id=keep(request.process_id, member.process_id),
        client_tags=keep(request.client_tags, member.client_tags),
        user_endpoint=request.user_endpoint
        if joining
        else keep(request.user_endpoint, member.user_endpoint),
    )


def check_epoch(member: StreamsGroupMember, request: StreamsHeartbeatRequest) -> None:
    """throwIfStreamsGroupMemberEpochIsInvalid."""
    received = request.member_epoch
    if received == 0:
        return
    if received > member.member_epoch:
        raise GroupError(
            "FENCED_MEMBER_EPOCH",
            "The streams group member has a greater member "
            f"epoch ({received}) than the one known by the group coordinator "
            f"({member.member_epoch}). The member must abandon all its partitions "
            "and rejoin.",
        )
    if received < member.member_epoch:
        held = member.assigned
        if (
            received != member.previous_member_epoch
            or not _contained(request.active_tasks, {s: set(ps) for s, ps in held.active.items()})
            or not _contained(request.standby_tasks, held.standby)
            or not _contained(request.warmup_tasks, held.warmup)
        ):
            raise GroupError(
                "FENCED_MEMBER_EPOCH",
                "The streams group member has a smaller "
                f"member epoch ({received}) than the one known by the group "
                f"coordinator ({member.member_epoch}). The member must abandon all "
                "its partitions and rejoin.",
            )


def _contained(owned: Tasks | None, assigned: Tasks) -> bool:
    """areOwnedTasksContainedInAssignedTasks: null owns nothing."""
    if owned is None:
        return True
    return all(set(ps) <= assigned.get(s, set()) for s, ps in owned.items())


def throw_if_invalid_tasks(subtopologies: dict[str, Any], tasks: Tasks | None) -> None:
    """throwIfRequestContainsInvalidTasks."""
    for s, ps in (tasks or {}).items():
        sub = subtopologies.get(s)
        if sub is None:
            raise GroupError("INVALID_REQUEST", f"Subtopology {s} does not exist in the topology.")
        for p in ps:
            if p < 0 or p >= sub.number_of_tasks:
                raise GroupError(
                    "INVALID_REQUEST",
                    f"Task {p} for subtopology {s} is invalid. "
                    f"Number of tasks for this subtopology: {sub.number_of_tasks}",
                )
