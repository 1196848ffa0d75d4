"""A ConsumerGroupHeartbeat as the coordinator takes it: the request, its answer, its
checks (GroupMetadataManager.throwIfConsumerGroupHeartbeatRequestIsInvalid), the
subscription's regular expression, and what the request changes in its member."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, replace
from typing import Any

from kt.broker.group.consumer_group import (
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    Assignment,
    ConsumerGroupMember,
)
from kt.broker.group.modern_group import LEAVE_GROUP_MEMBER_EPOCH

# RE2/J (Kafka's regex engine) has no lookaround and no backreferences; Python's `re`
# has both, so a pattern using them would match differently: refused, as RE2/J does.
_NOT_RE2 = re.compile(r"\(\?<?[=!]|\\[1-9]|\(\?P[=>]")


class GroupError(Exception):
    """An error answer: a Kafka error name and its message."""

    def __init__(self, error: str, message: str | None = None) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


@dataclass
class HeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    rebalance_timeout_ms: int
    subscribed_topic_names: list[str] | None
    subscribed_topic_regex: str | None
    server_assignor: str | None
    owned: list[tuple[uuid.UUID, list[int]]] | None
    client_id: str
    client_host: str


@dataclass
class HeartbeatResult:
    error: str = "NONE"
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


def refuse_empty(*fields: tuple[str | None, str]) -> None:
    """INVALID_REQUEST for the first (value, name) given but blank."""
    for value, what in fields:
        if value is not None and not value.strip():
            raise GroupError("INVALID_REQUEST", f"{what} can't be empty.")


def validate(request: HeartbeatRequest, assignors: tuple[str, ...]) -> None:
    """throwIfConsumerGroupHeartbeatRequestIsInvalid: GroupError if the request is not one."""
    refuse_empty((request.group_id, "GroupId"), (request.instance_id, "InstanceId"),
                 (request.rack_id, "RackId"))  # fmt: skip
    epoch = request.member_epoch
    if epoch > 0 or epoch == LEAVE_GROUP_MEMBER_EPOCH:
        if not request.member_id.strip():
            raise GroupError("INVALID_REQUEST", "MemberId can't be empty.")
    elif epoch == 0:
        if request.rebalance_timeout_ms == -1:
            raise GroupError(
                "INVALID_REQUEST", "RebalanceTimeoutMs must be provided in first request."
            )
        if request.owned is None or request.owned:
            raise GroupError("INVALID_REQUEST", "TopicPartitions must be empty when (re-)joining.")
        if not request.subscribed_topic_names and not request.subscribed_topic_regex:
            raise GroupError(
                "INVALID_REQUEST",
                "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.",
            )
    elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if not request.member_id.strip():
            raise GroupError("INVALID_REQUEST", "MemberId can't be empty.")
        if request.instance_id is None:
            raise GroupError("INVALID_REQUEST", "InstanceId can't be null.")
    else:
        raise GroupError("INVALID_REQUEST", "MemberEpoch is invalid.")
    if request.server_assignor is not None and request.server_assignor not in assignors:
        raise GroupError(
            "UNSUPPORTED_ASSIGNOR",
            f"ServerAssignor {request.server_assignor} is not supported. "
            f"Supported assignors: {', '.join(assignors)}.",
        )
    pattern = request.subscribed_topic_regex
    if pattern:
        compile_regex(pattern)


def compile_regex(pattern: str) -> re.Pattern:
    """The subscription regex, or INVALID_REGULAR_EXPRESSION (GroupError)."""
    if _NOT_RE2.search(pattern):
        raise GroupError(
            "INVALID_REGULAR_EXPRESSION",
            f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: "
            "lookaround and backreferences are not supported (RE2/J syntax).",
        )
    try:
        return re.compile(pattern)
    except re.error as e:
        raise GroupError(
            "INVALID_REGULAR_EXPRESSION",
            f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: {e}.",
        ) from None


def with_request(member: ConsumerGroupMember, request: HeartbeatRequest) -> ConsumerGroupMember:
    """The member with what the heartbeat sets (a null field keeps the member's)."""

    def given(value: Any, current: Any) -> Any:
        return current if value is None else value

    names = request.subscribed_topic_names
    return replace(
        member,
        instance_id=given(request.instance_id, member.instance_id),
        rack_id=given(request.rack_id, member.rack_id),
        rebalance_timeout_ms=member.rebalance_timeout_ms if request.rebalance_timeout_ms == -1
        else request.rebalance_timeout_ms,
        server_assignor=given(request.server_assignor, member.server_assignor),
        subscribed_topic_names=member.subscribed_topic_names if names is None else tuple(names),
        subscribed_topic_regex=new_regex(request.subscribed_topic_regex,
                                          member.subscribed_topic_regex),
        client_id=request.client_id,
        client_host=request.client_host,
    )  # fmt: skip


def new_regex(received: str | None, current: str | None) -> str | None:
    """A heartbeat's SubscribedTopicRegex: null keeps the member's, empty clears it
    (librdkafka sends an empty one when it subscribes by name; "" is no regex)."""
    return current if received is None else received


def check_static_member(
    existing: ConsumerGroupMember | None, member_id: str, instance_id: str | None
) -> ConsumerGroupMember:
    """throwIfStaticMemberIsUnknown, throwIfInstanceIdIsFenced: `existing`, the member
    holding the instance id, must be there and be `member_id`; it is returned."""
    if existing is None:
        raise GroupError("UNKNOWN_MEMBER_ID", f"Instance id {instance_id} is unknown.")
    if existing.member_id != member_id:
        raise GroupError("FENCED_INSTANCE_ID",
                         f"Static member {member_id} with instance id {instance_id} was "
                         f"fenced by member {existing.member_id}.")  # fmt: skip
    return existing


def check_member_epoch(
    member: ConsumerGroupMember, received: int, owned: list[tuple[uuid.UUID, list[int]]] | None
) -> None:
    """throwIfConsumerGroupMemberEpochIsInvalid: a member a step behind whose answer was
    lost may come with its previous epoch if it owns only what it was given."""
    if received > member.member_epoch:
        raise GroupError(
            "FENCED_MEMBER_EPOCH",
            f"The consumer group member has a greater member epoch ({received}) "
            f"than the one known by the group coordinator ({member.member_epoch})."
            " The member must abandon all its partitions and rejoin.",
        )
    lost_answer = received == member.previous_member_epoch and _is_subset(owned, member.assigned)
    if received < member.member_epoch and not lost_answer:
        raise GroupError(
            "FENCED_MEMBER_EPOCH",
            f"The consumer group member has a smaller member epoch ({received}) "
            f"than the one known by the group coordinator ({member.member_epoch})."
            " The member must abandon all its partitions and rejoin.",
        )


def _is_subset(owned: list[tuple[uuid.UUID, list[int]]] | None, assigned: Assignment) -> bool:
    if owned is None:
        return False
    return all(p in assigned.get(topic_id, ()) for topic_id, ps in owned for p in ps)
