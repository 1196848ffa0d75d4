"""Who a StreamsGroupHeartbeat is from (GroupMetadataManager's streams member look-ups):
the group, created when a member joins (an empty classic group giving way); a dynamic or
static member, a static one rejoining under a new member id replacing the old (its
records); whether the member's metadata changed (hasStreamsMemberMetadataChanged); the
topology the group keeps (maybeUpdateTopology)."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from kt.broker.group import streams_group as sg
from kt.broker.group import streams_group_records as sr
from kt.broker.group.group_metadata import GroupState
from kt.broker.group.group_metadata_manager import GroupMetadataManager
from kt.broker.group.heartbeat_request import GroupError
from kt.broker.group.streams_current_assignment import TasksTuple
from kt.broker.group.streams_group import StreamsGroup, StreamsGroupMember
from kt.broker.group.streams_heartbeat_request import (
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    StreamsHeartbeatRequest,
    check_epoch,
)

log = logging.getLogger("kt.broker.group.streams_group_coordinator")


def group_for(
    manager: GroupMetadataManager, group_id: str, create: bool, records: list[sr.StreamsRecord]
) -> tuple[StreamsGroup, bool]:
    """getOrCreateStreamsGroup / getStreamsGroupOrThrow: (the group, whether it
    exists already). An empty classic group gives way (its metadata deleted, its
    offsets kept)."""
    holder = manager.get_group(group_id)
    if holder is not None and holder.streams is not None:
        return holder.streams, True
    if holder is not None and (holder.consumer is not None or holder.share is not None):
        raise GroupError("GROUP_ID_NOT_FOUND", f"Group {group_id} is not a streams group.")
    if not create:
        raise GroupError("GROUP_ID_NOT_FOUND", f"Streams group {group_id} not found.")
    if holder is not None and holder.protocol_type is not None:
        if not holder.is_(GroupState.EMPTY):
            raise GroupError("GROUP_ID_NOT_FOUND", f"Group {group_id} is not a streams group.")
        from kt.broker.group import consumer_group_records as cr

        records.append(cr.classic_groupmember_removal(group_id))  # type: ignore[arg-type]
        log.info("[GroupId %s] Converted the empty classic group to a streams group.", group_id)
    return StreamsGroup(group_id), False


def throw_if_full(group: StreamsGroup, instance_id: str | None, member_id: str,
                  max_size: int) -> None:  # fmt: skip
    if instance_id is not None and instance_id in group.static_members:
        return
    limit = max_size
    if len(group.members) >= limit and (not member_id or member_id not in group.members):
        raise GroupError(
            "GROUP_MAX_SIZE_REACHED",
            f"The streams group has reached its maximum capacity of {limit} members.",
        )


def dynamic_member(
    group: StreamsGroup, request: StreamsHeartbeatRequest, joining: bool
) -> StreamsGroupMember:
    member = group.members.get(request.member_id)
    if member is None:
        if not joining:
            raise GroupError(
                "UNKNOWN_MEMBER_ID",
                f"Member {request.member_id} is not a member of group {group.group_id}.",
            )
        member = StreamsGroupMember(request.member_id)
    check_epoch(member, request)
    if joining:
        log.info(
            "[GroupId %s][MemberId %s] Member joins the streams group.",
            group.group_id,
            request.member_id,
        )
    return member


def static_member(
    group: StreamsGroup,
    request: StreamsHeartbeatRequest,
    joining: bool,
    records: list[sr.StreamsRecord],
) -> StreamsGroupMember:
    group_id, member_id, instance_id = group.group_id, request.member_id, request.instance_id
    assert instance_id is not None
    existing = group.members.get(group.static_members.get(instance_id, ""))
    if joining:
        if existing is None:
            log.info(
                "[GroupId %s][MemberId %s] Static member %s with instance id %s joins "
                "the streams group.",
                group_id,
                member_id,
                member_id,
                instance_id,
            )
            return group.members.get(member_id) or StreamsGroupMember(member_id)
        if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise GroupError(
                "UNRELEASED_INSTANCE_ID",
                f"Static member {member_id} with "
                f"instance id {instance_id} cannot join the group because the "
                f"instance id is owned by {existing.member_id} member.",
            )
        new = replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0)
        records.extend(member_removal(group_id, existing.member_id))
        records.append(sg.member_record(group_id, new))
        records.append(
            sg.target_record(
                group_id,
                member_id,
                group.target_assignment.get(existing.member_id, TasksTuple()),
            )
        )
        records.append(sg.current_assignment_record(group_id, new))
        log.info(
            "[GroupId %s][MemberId %s] Static member with instance id %s re-joins the "
            "streams group using the streams protocol. Created a new member %s to "
            "replace the existing member %s.",
            group_id,
            member_id,
            instance_id,
            member_id,
            existing.member_id,
        )
        return new
    existing = check_static_member(existing, member_id, instance_id)
    check_epoch(existing, request)
    return existing


def check_static_member(
    existing: StreamsGroupMember | None, member_id: str, instance_id: str
) -> StreamsGroupMember:
    """GroupMetadataManager.throwIfStaticMemberIsUnknown and throwIfInstanceIdIsFenced:
    the member holding `instance_id`, which must be `member_id`."""
    if existing is None:
        raise GroupError("UNKNOWN_MEMBER_ID", f"Instance id {instance_id} is unknown.")
    if existing.member_id != member_id:
        raise GroupError(
            "FENCED_INSTANCE_ID",
            f"Static member {member_id} with instance "
            f"id {instance_id} was fenced by member {existing.member_id}.",
        )
    return existing


def member_changed(
    group_id: str,
    instance_id: str | None,
    member: StreamsGroupMember,
    updated: StreamsGroupMember,
    records: list[sr.StreamsRecord],
) -> bool:
    """hasStreamsMemberMetadataChanged: a record when the member's metadata changed; a
    new assignment for a dynamic member, for a static one only when what the
    assignment reads changed."""
    if updated == member:
        return False
    records.append(sg.member_record(group_id, updated))
    log.info(
        "[GroupId %s][MemberId %s] Member updated its member metadata.",
        group_id,
        updated.member_id,
    )
    if instance_id is None:
        return True
    return (member.topology_epoch, member.rack_id, member.client_tags, member.process_id) != (
        updated.topology_epoch,
        updated.rack_id,
        updated.client_tags,
        updated.process_id,
    )


def group_topology(
    group: StreamsGroup, member_id: str, topology: Any, records: list[sr.StreamsRecord]
) -> Any:
    """maybeUpdateTopology: the first member's topology is the group's."""
    stored = group.topology
    if topology is None:
        if stored is None:
            raise GroupError(
                "UNKNOWN_SERVER_ERROR",
                "The topology is null and the group topology is also null.",
            )
        return stored
    if stored is None:
        log.info(
            "[GroupId %s][MemberId %s] Member initialized the topology with epoch %d",
            group.group_id,
            member_id,
            topology.epoch,
        )
        records.append(sr.StreamsRecord(sr.TOPOLOGY, group.group_id, None, topology))
        return topology
    if stored.epoch > topology.epoch:
        log.info(
            "[GroupId %s][MemberId %s] Member joined with stale topology epoch %d",
            group.group_id,
            member_id,
            topology.epoch,
        )
        return stored
    if not same_topology(stored, topology):
        raise GroupError("INVALID_REQUEST", "Topology updates are not supported yet.")
    return stored


def member_removal(group_id: str, member_id: str) -> list[sr.StreamsRecord]:
    """removeStreamsMember: the member's current assignment, target and metadata."""
    return [
        sg.tombstone(sr.CURRENT_MEMBER_ASSIGNMENT, group_id, member_id),
        sg.tombstone(sr.TARGET_ASSIGNMENT_MEMBER, group_id, member_id),
        sg.tombstone(sr.MEMBER_METADATA, group_id, member_id),
    ]


def same_topology(a: Any, b: Any) -> bool:
    """StreamsTopology.equals: the epoch, and the subtopologies by id."""
    return a.epoch == b.epoch and (
        {s.subtopology_id: s for s in a.subtopologies}
        == {s.subtopology_id: s for s in b.subtopologies}
    )
