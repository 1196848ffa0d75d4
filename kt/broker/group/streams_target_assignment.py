"""A streams group's target assignment (TargetAssignmentBuilder.build and the
UpdatedMembersAndTargetAssignmentView it is given): the sticky assignor over the configured
topology, each member's target; and TasksTuple.sameTasks, which the refinement path reads."""

from __future__ import annotations

from kt.broker.group import streams_assignor
from kt.broker.group import streams_topology as st
from kt.broker.group.heartbeat_request import GroupError
from kt.broker.group.streams_current_assignment import TasksTuple
from kt.broker.group.streams_group import StreamsGroup, StreamsGroupMember


def updated_view(group: StreamsGroup, updated: StreamsGroupMember | None
                  ) -> tuple[dict[str, StreamsGroupMember], dict[str, TasksTuple]]:  # fmt: skip
    """UpdatedMembersAndTargetAssignmentView: the members and targets with `updated` in;
    a static member replacing another under a new member id takes its target."""
    members, targets = dict(group.members), dict(group.target_assignment)
    if updated is None:
        return members, targets
    members[updated.member_id] = updated
    previous = group.static_members.get(updated.instance_id or "")
    if updated.instance_id is not None and previous not in (None, updated.member_id):
        if previous in targets:
            targets[updated.member_id] = targets[previous]
        members.pop(previous, None)
        targets.pop(previous, None)
    return members, targets


def same_tasks(target: TasksTuple, member: StreamsGroupMember) -> bool:
    """TasksTuple.sameTasks: the same tasks whatever their epochs."""
    held = member.assigned
    return (
        target.standby == held.standby
        and target.warmup == held.warmup
        and target.active == {s: set(ps) for s, ps in held.active.items()}
    )


def build_target_assignment(
    members: dict[str, StreamsGroupMember],
    task_offsets: dict[str, tuple[dict, dict]],
    configured: st.ConfiguredTopology,
    configs: dict[str, str],
) -> dict[str, TasksTuple]:
    """TargetAssignmentBuilder.build: the sticky assignor over the configured topology
    (every member without tasks while it is not ready); no warm-up tasks in a target."""
    if not configured.is_ready or not configured.subtopologies:
        return {m: TasksTuple() for m in members}
    specs = {
        member_id: streams_assignor.MemberSpec(
            m.process_id,
            {s: set(ps) for s, ps in m.assigned.active.items()},
            m.assigned.standby,
            task_offsets.get(member_id, ({}, {}))[0],
        )
        for member_id, m in members.items()
    }
    subtopologies = {
        s: streams_assignor.SubtopologySpec(sub.number_of_tasks, bool(sub.state_changelog_topics))
        for s, sub in configured.subtopologies.items()
    }
    try:
        assigned = streams_assignor.assign(
            specs, subtopologies, int(configs.get("num.standby.replicas", "0"))
        )
    except streams_assignor.TaskAssignorError as e:
        raise GroupError(
            "UNKNOWN_SERVER_ERROR", f"Failed to compute a new target assignment: {e}"
        ) from None
    return {m: TasksTuple(a.active, a.standby, {}) for m, a in assigned.items()}
