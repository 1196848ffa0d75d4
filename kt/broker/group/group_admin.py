"""The coordinator's offsets and administration side (GroupCoordinator.handleCommitOffsets,
handleFetchOffsets, handleDeleteOffsets, handleDescribeGroup, handleListGroups,
handleDeleteGroups).

Commits from a group member must carry its generation; a commit with generation -1 and
an empty member id is a "simple" commit from a consumer outside group management, and
creates an Empty offsets-only group when none exists. A commit counts as a heartbeat.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from kt.broker.group.consumer_group import ConsumerGroup
from kt.broker.group.consumer_group_coordinator import ConsumerGroupCoordinator
from kt.broker.group.group_coordinator import GroupCoordinator
from kt.broker.group.group_metadata import CONSUMER_PROTOCOL_TYPE, GroupMetadata, GroupState
from kt.broker.group.offsets_records import OffsetAndMetadata
from kt.client.groups import encode_assignment, encode_subscription

log = logging.getLogger(__name__)

TopicPartitionKey = tuple[str, int]
NO_OFFSET = -1


@dataclass
class OffsetFetchResult:
    """OffsetFetch for one group: a top-level error and offsets per partition."""

    error: str = "NONE"
    offsets: dict[TopicPartitionKey, OffsetAndMetadata | None] = field(default_factory=dict)
    unstable: set[TopicPartitionKey] = field(default_factory=set)  # UNSTABLE_OFFSET_COMMIT
    denied: list[TopicPartitionKey] = field(default_factory=list)  # TOPIC_AUTHORIZATION_FAILED


@dataclass
class GroupDescription:
    group_id: str
    error: str = "NONE"
    state: str = "Dead"
    protocol_type: str = ""
    protocol: str = ""
    members: list[tuple] = field(default_factory=list)


# -- OffsetCommit ------------------------------------------------------------------------


async def commit_offsets(
    coordinator: GroupCoordinator,
    group_id: str,
    member_id: str,
    group_instance_id: str | None,
    generation_id: int,
    offsets: dict[TopicPartitionKey, OffsetAndMetadata],
    api_version: int = 9,
    topic_id: Callable[[str], uuid.UUID] = lambda _: uuid.UUID(int=0),
) -> dict[TopicPartitionKey, str]:
    """An error name per partition. For a consumer group (KIP-848) `generation_id` is
    the member epoch."""

    def every(error: str) -> dict[TopicPartitionKey, str]:
        return dict.fromkeys(offsets, error)

    error = coordinator.group_error(group_id)
    if error != "NONE":
        return every(error)
    manager = coordinator.manager
    group = manager.get_group(group_id)
    if group is None:
        if generation_id >= 0:
            return every("ILLEGAL_GENERATION")  # a commit from an older generation
        group = manager.add_group(GroupMetadata(group_id, GroupState.EMPTY, coordinator.clock()))
    if group.share is not None:
        return every("GROUP_ID_NOT_FOUND")  # ShareGroup.validateOffsetCommit
    results: dict[TopicPartitionKey, str] = {}
    if group.streams is not None:
        results = group.streams.validate_offset_commit(
            member_id, group_instance_id, generation_id, False, api_version, offsets
        )
        offsets = {tp: o for tp, o in offsets.items() if results[tp] == "NONE"}
    elif group.consumer is not None:
        results = _consumer_group_commit(group.consumer, member_id, generation_id, api_version,
                                         offsets, topic_id)  # fmt: skip
        offsets = {tp: o for tp, o in offsets.items() if results[tp] == "NONE"}
    else:
        error = _commit_precheck(group, member_id, group_instance_id, generation_id)
        if error != "NONE":
            return every(error)
        if generation_id >= 0:
            coordinator.schedule_session_expiry(group, group.members[member_id])
    if not offsets:
        return results
    error = await manager.store_offsets(group, offsets)
    return {**results, **dict.fromkeys(offsets, error)}


def _consumer_group_commit(
    group: ConsumerGroup,
    member_id: str,
    member_epoch: int,
    api_version: int,
    offsets: dict[TopicPartitionKey, OffsetAndMetadata],
    topic_id: Callable[[str], uuid.UUID],
    transactional: bool = False,
) -> dict[TopicPartitionKey, str]:
    """validate_offset_commit for partitions named by topic name."""
    ids = {tp: (topic_id(tp[0]), tp[1]) for tp in offsets}
    errors = group.validate_offset_commit(member_id, member_epoch, api_version, ids.values(),
                                          transactional)  # fmt: skip
    return {tp: errors[ids[tp]] for tp in offsets}


async def txn_commit_offsets(
    coordinator: GroupCoordinator,
    group_id: str,
    producer_id: int,
    producer_epoch: int,
    member_id: str,
    group_instance_id: str | None,
    generation_id: int,
    offsets: dict[TopicPartitionKey, OffsetAndMetadata],
    topic_id: Callable[[str], uuid.UUID] = lambda _: uuid.UUID(int=0),
) -> dict[TopicPartitionKey, str]:
    """TxnOffsetCommit (handleTxnCommitOffsets): commits in a producer's transaction,
    pending until its marker. A group that does not exist is created Empty; a member id
    or generation, when given (v3, KIP-447), must be the group's current ones (for a
    consumer group: its member epoch)."""
    error = coordinator.group_error(group_id)
    if error != "NONE":
        return dict.fromkeys(offsets, error)
    manager = coordinator.manager
    group = manager.get_group(group_id)
    if group is None:
        group = manager.add_group(GroupMetadata(group_id, GroupState.EMPTY, coordinator.clock()))
    if group.is_(GroupState.DEAD):
        error = "COORDINATOR_NOT_AVAILABLE"
    elif group.share is not None:
        error = "GROUP_ID_NOT_FOUND"  # ShareGroup.validateOffsetCommit
    elif group.streams is not None:
        results = group.streams.validate_offset_commit(
            member_id, group_instance_id, generation_id, True, 9, offsets
        )
        error = next((e for e in results.values() if e != "NONE"), "NONE")
    elif group.consumer is not None:
        results = _consumer_group_commit(
            group.consumer,
            member_id,
            generation_id,
            9,
            offsets,
            lambda _: uuid.UUID(int=0),
            transactional=True,
        )
        error = next((e for e in results.values() if e != "NONE"), "NONE")
    elif generation_id >= 0 or member_id or group_instance_id is not None:
        error = _validate_current_member(group, member_id, group_instance_id)
        if error == "NONE" and generation_id != group.generation_id:
            error = "ILLEGAL_GENERATION"
    if error != "NONE":
        return dict.fromkeys(offsets, error)
    if not offsets:
        return {}
    error = await manager.store_txn_offsets(group, offsets, producer_id, producer_epoch)
    return dict.fromkeys(offsets, error)


def _commit_precheck(
    group: GroupMetadata, member_id: str, instance_id: str | None, generation_id: int
) -> str:
    """GroupCoordinator.validateOffsetCommit, then the state check of doCommitOffsets.

    The member and its generation are checked before the state: a commit that a member
    sent in generation N and that reaches the coordinator (queued behind the member's own
    JoinGroup) once generation N+1 is completing is ILLEGAL_GENERATION, as in Kafka;
    REBALANCE_IN_PROGRESS is for a member of the generation being completed."""
    if group.is_(GroupState.DEAD):
        return "COORDINATOR_NOT_AVAILABLE"
    if generation_id < 0 and group.is_(GroupState.EMPTY):
        return "NONE"  # a simple commit: the group is not managed by the coordinator
    if generation_id >= 0 or member_id or instance_id is not None:
        error = _validate_current_member(group, member_id, instance_id)
        if error != "NONE":
            return error
        if generation_id != group.generation_id:
            return "ILLEGAL_GENERATION"
    elif not group.is_(GroupState.EMPTY):
        return "UNKNOWN_MEMBER_ID"  # only members commit to a group that has members
    if group.is_(GroupState.COMPLETING_REBALANCE):
        return "REBALANCE_IN_PROGRESS"
    return "NONE"


def _validate_current_member(group: GroupMetadata, member_id: str, instance_id: str | None) -> str:
    """GroupCoordinator.validateCurrentMember: a given group.instance.id must be known and
    held by `member_id`; otherwise `member_id` must be a member."""
    if instance_id is not None:
        current = group.static_member_id(instance_id)
        if current is None:
            return "UNKNOWN_MEMBER_ID"
        return "NONE" if current == member_id else "FENCED_INSTANCE_ID"
    return "NONE" if member_id in group.members else "UNKNOWN_MEMBER_ID"


# -- OffsetFetch -------------------------------------------------------------------------


def fetch_offsets(
    coordinator: GroupCoordinator,
    group_id: str,
    partitions: list[TopicPartitionKey] | None,
    require_stable: bool = False,
    member_id: str | None = None,
    member_epoch: int = -1,
) -> OffsetFetchResult:
    """Committed offsets of `partitions` (None: all), None where nothing is committed.
    With `require_stable` (KIP-447), a partition with an offset pending in an open
    transaction is UNSTABLE_OFFSET_COMMIT (the consumer asks again). A consumer group's
    member (OffsetFetch v9) must name its current epoch."""
    error = coordinator.group_error(group_id)
    if error != "NONE":
        return OffsetFetchResult(error)
    group = coordinator.manager.get_group(group_id)
    if group is not None and (group.consumer is not None or group.streams is not None):
        modern = group.consumer if group.consumer is not None else group.streams
        assert modern is not None
        error = modern.validate_offset_fetch(member_id, member_epoch)
        if error != "NONE":
            return OffsetFetchResult(error)
    if group is None or group.is_(GroupState.DEAD):
        return OffsetFetchResult(offsets=dict.fromkeys(partitions or []))
    if partitions is None:
        result = OffsetFetchResult(offsets=dict(sorted(group.offsets.items())))
    else:
        result = OffsetFetchResult(offsets={tp: group.offsets.get(tp) for tp in partitions})
    if require_stable and group.pending_txn_offsets:
        pending = {tp for offsets in group.pending_txn_offsets.values() for tp in offsets}
        result.unstable = {tp for tp in result.offsets if tp in pending}
    return result


# -- OffsetDelete ------------------------------------------------------------------------


async def delete_offsets(
    coordinator: GroupCoordinator, group_id: str, partitions: list[TopicPartitionKey]
) -> tuple[str, dict[TopicPartitionKey, str]]:
    """(top-level error, error per partition): offsets of topics the group still
    consumes are kept (GROUP_SUBSCRIBED_TO_TOPIC)."""
    error = coordinator.group_error(group_id)
    if error != "NONE":
        return error, {}
    group = coordinator.manager.get_group(group_id)
    if group is None or group.is_(GroupState.DEAD) or group.share is not None:
        return "GROUP_ID_NOT_FOUND", {}  # a share group's: ShareGroup.validateOffsetDelete
    if group.consumer is not None:
        subscribed = group.consumer.subscribed_names()
    elif group.streams is not None:
        subscribed = group.streams.subscribed_topics()
    elif group.is_(GroupState.EMPTY):
        subscribed = set()
    else:
        topics = group.subscribed_topics()
        if topics is None:
            return "NON_EMPTY_GROUP", {}
        subscribed = topics
    results = {
        tp: "GROUP_SUBSCRIBED_TO_TOPIC" if tp[0] in subscribed else "NONE" for tp in partitions
    }
    deletable = [tp for tp, e in results.items() if e == "NONE"]
    error = await coordinator.manager.delete_offsets(group, deletable)
    if error != "NONE":
        results.update(dict.fromkeys(deletable, error))
    return "NONE", results


# -- DescribeGroups, ListGroups, DeleteGroups ----------------------------------------------


def describe_group(
    coordinator: GroupCoordinator,
    group_id: str,
    consumer_groups: ConsumerGroupCoordinator | None = None,
    topic_name: Callable[[uuid.UUID], str | None] = lambda _: None,
) -> GroupDescription:
    error = coordinator.group_error(group_id)
    if error != "NONE":
        return GroupDescription(group_id, error)
    group = coordinator.manager.get_group(group_id)
    if group is None:
        return GroupDescription(group_id)  # Kafka answers a Dead group with no error
    if group.consumer is not None:
        return _describe_consumer_group(group.consumer, consumer_groups, topic_name)
    if group.share is not None or group.streams is not None:  # not a classic group: Dead
        return GroupDescription(group_id)
    s = group.summary()
    return GroupDescription(
        group_id, "NONE", s["state"], s["protocol_type"], s["protocol"], s["members"]
    )


def list_groups(
    coordinator: GroupCoordinator, states: list[str], types: list[str]
) -> tuple[str, list[tuple[str, str, str, str]]]:
    """(error, [(group id, protocol type, state, type)]) of the groups this broker
    holds: type `classic`, `consumer` (KIP-848), `share` (KIP-932) or `streams` (KIP-1071)."""
    manager = coordinator.manager
    wanted_states = {s.lower() for s in states}
    wanted_types = {t.lower() for t in types}
    listed = []
    for g in sorted(manager.groups.values(), key=lambda g: g.group_id):
        if g.is_(GroupState.DEAD):
            continue
        if g.consumer is not None:
            row = (g.group_id, CONSUMER_PROTOCOL_TYPE, g.consumer.state, "consumer")
        elif g.share is not None:  # KIP-932: a share group's protocol type is its type
            row = (g.group_id, "share", g.share.state, "share")
        elif g.streams is not None:  # as is a streams group's (StreamsGroup.PROTOCOL_TYPE)
            row = (g.group_id, "streams", g.streams.state, "streams")
        else:
            row = (g.group_id, g.protocol_type or "", g.state.value, "classic")
        if (not wanted_states or row[2].lower() in wanted_states) and (
            not wanted_types or row[3] in wanted_types
        ):
            listed.append(row)
    error = "COORDINATOR_LOAD_IN_PROGRESS" if manager.any_loading else "NONE"
    return error, listed


async def delete_groups(coordinator: GroupCoordinator, group_ids: list[str]) -> dict[str, str]:
    results: dict[str, str] = {}
    for group_id in group_ids:
        error = coordinator.group_error(group_id)
        if error == "NONE":
            error = await _delete_group(coordinator, group_id)
        results[group_id] = error
    return results


async def _delete_group(coordinator: GroupCoordinator, group_id: str) -> str:
    group = coordinator.manager.get_group(group_id)
    if group is None or group.is_(GroupState.DEAD):
        return "GROUP_ID_NOT_FOUND"
    if group.share is not None:
        if group.share.members:
            return "NON_EMPTY_GROUP"  # ShareGroup.validateDeleteGroup
        # its share partitions' state went first (ShareGroupCoordinator.delete_state)
        await coordinator.manager.delete_group(group)
        return "NONE"
    if group.streams is not None:
        if group.streams.members:
            return "NON_EMPTY_GROUP"  # StreamsGroup.validateDeleteGroup
        await coordinator.manager.delete_group(group)
        return "NONE"
    if not group.is_(GroupState.EMPTY) or (group.consumer is not None and group.consumer.members):
        return "NON_EMPTY_GROUP"
    await coordinator.manager.delete_group(group)
    return "NONE"


def _describe_consumer_group(
    group: ConsumerGroup,
    consumer_groups: ConsumerGroupCoordinator | None,
    topic_name: Callable[[uuid.UUID], str | None],
) -> GroupDescription:
    """DescribeGroups of a consumer group (ConsumerGroup.asDescribedGroup): protocol type
    consumer, the assignor as protocol, each member's subscription and target assignment
    in the classic consumer protocol's encoding."""
    members = []
    for m in group.members.values():
        target = [(topic_name(t), p) for t, ps in group.target_of(m.member_id).items()
                  for p in ps]  # fmt: skip
        members.append((
            m.member_id, m.instance_id, m.client_id, m.client_host,
            encode_subscription(sorted(group.member_topics(m))),
            encode_assignment([(t, p) for t, p in target if t is not None]),
        ))  # fmt: skip
    return GroupDescription(group.group_id, "NONE", group.state, CONSUMER_PROTOCOL_TYPE,
                            consumer_groups.assignor_of(group) if consumer_groups else "",
                            members)  # fmt: skip
