"""Streams group membership (KIP-1071): StreamsGroupHeartbeat, its timers, and
StreamsGroupDescribe (Kafka 4.4's GroupMetadataManager.streamsGroupHeartbeat and
streamsGroupLeave, GroupCoordinatorService's request checks).

A Kafka Streams member joins (epoch 0) with its application's topology; the first one
stores it (the topology record), later ones must send the same. The coordinator fits the
topology to the cluster's topics (streams_topology.configure_topics): the internal topics
still missing are reported in the answer's status and named for the broker to create;
once every topic fits, the topology epoch is validated and the group epoch bumped. A
member whose metadata changes, a change of the required topics or of the assignment
configs (num.standby.replicas) bumps the group epoch too; the target assignment follows
by the sticky task assignor (streams_assignor.py), at most once per
streams.assignment.interval.ms and not before streams.initial.rebalance.delay.ms after
the first member of an empty group joins (ASSIGNMENT_DELAYED meanwhile). Each member
then moves to its target one heartbeat at a time (streams_current_assignment.py): a task
another process still runs is held back until that process releases it. Members leave
(epoch -1; -2 for a static member that comes back), or are fenced when their session
expires or they do not revoke within their rebalance timeout.

Every change is a list of records (streams_group_records.py), computed from the group as
it was, replayed into it and appended to `__consumer_offsets` with acks=all before the
answer. A streams group lives in the GroupMetadata of its id (`.streams`); a group of
another kind under the id answers GROUP_ID_NOT_FOUND, as on Kafka.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from kt.broker.group import streams_group as sg
from kt.broker.group import streams_group_records as sr
from kt.broker.group import streams_topology as st
from kt.broker.group.group_config import GroupConfigs
from kt.broker.group.group_metadata import GroupMetadata, GroupState
from kt.broker.group.group_metadata_manager import GroupMetadataManager, now_ms
from kt.broker.group.heartbeat_request import GroupError
from kt.broker.group.java_collections import java_hash_map_order
from kt.broker.group.member_timers import MemberTimers
from kt.broker.group.streams_current_assignment import (
    EMPTY,
    FencedMemberEpochError,
    MemberAssignment,
    MemberState,
    TasksTuple,
    reconcile,
)
from kt.broker.group.streams_endpoints import endpoints
from kt.broker.group.streams_group import StreamsGroup, StreamsGroupMember
from kt.broker.group.streams_group_members import (
    check_static_member,
    dynamic_member,
    group_for,
    group_topology,
    member_changed,
    member_removal,
    static_member,
    throw_if_full,
)
from kt.broker.group.streams_heartbeat_request import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    StreamsHeartbeatRequest,
    StreamsHeartbeatResult,
    throw_if_invalid_tasks,
    updated_member,
    validate,
)
from kt.broker.group.streams_target_assignment import (
    build_target_assignment,
    same_tasks,
    updated_view,
)
from kt.broker.group.subscribed_topics import TopicsView, topics_digest
from kt.broker.task_set import TaskSet

log = logging.getLogger(__name__)

STICKY_ASSIGNOR = "sticky"
# Group configs (GroupConfig.STREAMS_*) and the broker keys behind them.
SESSION_TIMEOUT = "streams.session.timeout.ms"
HEARTBEAT_INTERVAL = "streams.heartbeat.interval.ms"
NUM_STANDBY_REPLICAS = "streams.num.standby.replicas"
INITIAL_REBALANCE_DELAY = "streams.initial.rebalance.delay.ms"
ASSIGNMENT_INTERVAL = "streams.assignment.interval.ms"
RACK_AWARE_ASSIGNMENT_TAGS = "streams.rack.aware.assignment.tags"


@dataclass(frozen=True)
class StreamsGroupSettings:
    """The broker's group.streams.* settings (GroupCoordinatorConfig, Kafka 4.4's
    defaults)."""

    max_size: int = 2**31 - 1
    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 5000
    num_standby_replicas: int = 0
    initial_rebalance_delay_ms: int = 3000
    assignment_interval_ms: int = 1000
    task_offset_interval_ms: int = 60000
    acceptable_recovery_lag: int = 10000
    rack_aware_assignment_tags: tuple[str, ...] = ()


class StreamsGroupCoordinator:
    """Streams groups of the `__consumer_offsets` partitions `manager` holds."""

    def __init__(
        self,
        manager: GroupMetadataManager,
        topics: TopicsView,
        settings: StreamsGroupSettings,
        *,
        group_configs: GroupConfigs | None = None,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.manager = manager
        self.topics = topics
        self.settings = settings
        self.group_configs = group_configs  # each group's streams.* overrides
        self.clock = clock
        self.session_timers = MemberTimers()
        self.rebalance_timers = MemberTimers()
        self.initial_delay_timers = MemberTimers()  # keyed (group id, "")
        self._tasks = TaskSet()

    # -- StreamsGroupHeartbeat ---------------------------------------------------------

    async def heartbeat(self, request: StreamsHeartbeatRequest) -> StreamsHeartbeatResult:
        try:
            validate(request)
            status = self.manager.group_status(request.group_id)
            if status != "NONE":
                raise GroupError(status)
            if request.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                result, records = self._leave(request)
            else:
                result, records = self._heartbeat(request)
        except GroupError as e:
            return StreamsHeartbeatResult(e.error, e.message)
        except FencedMemberEpochError as e:
            return StreamsHeartbeatResult("FENCED_MEMBER_EPOCH", str(e))
        except st.InvalidTopologyError as e:
            return StreamsHeartbeatResult("STREAMS_INVALID_TOPOLOGY", str(e))
        error = await self.manager.write(request.group_id, records)
        if error != "NONE":
            return StreamsHeartbeatResult(error)
        return result

    def _heartbeat(
        self, request: StreamsHeartbeatRequest
    ) -> tuple[StreamsHeartbeatResult, list[sr.StreamsRecord]]:
        records: list[sr.StreamsRecord] = []
        statuses: list[tuple[int, str]] = []
        group_id, member_id = request.group_id, request.member_id
        joining = request.member_epoch == 0
        group, existed = group_for(self.manager, group_id, joining, records)
        if joining:
            throw_if_full(group, request.instance_id, member_id, self.settings.max_size)
        replaced = None
        if request.instance_id is None:
            member = dynamic_member(group, request, joining)
        else:
            old_static = group.members.get(group.static_members.get(request.instance_id, ""))
            if old_static is not None and old_static.member_id != member_id:
                replaced = old_static
            member = static_member(group, request, joining, records)
        updated = updated_member(member, request, joining)
        recompute = member_changed(group_id, request.instance_id, member, updated, records)
        topology = group_topology(group, member_id, request.topology, records)
        if group.topology is not None and updated.topology_epoch < group.topology.epoch:
            statuses.append(
                (
                    st.STALE_TOPOLOGY,
                    f"The member's topology epoch "
                    f"{updated.topology_epoch} is behind the group's topology epoch "
                    f"{group.topology.epoch}.",
                )
            )
        reconfigure = group.topology is None
        metadata_hash = group.metadata_hash
        configured = group.configured_topology
        if reconfigure or configured is None or self._metadata_expired(group):
            metadata_hash = topics_digest(self.topics, st.required_topics(topology.subtopologies))
            group.metadata_topics_version = self.topics.topics_version
            if metadata_hash != group.metadata_hash:
                log.info(
                    "[GroupId %s][MemberId %s] Computed new metadata hash: %d.",
                    group_id,
                    member_id,
                    metadata_hash,
                )
                recompute = reconfigure = True
            if reconfigure or configured is None:
                log.info(
                    "[GroupId %s][MemberId %s] Configuring the topology %d",
                    group_id,
                    member_id,
                    topology.epoch,
                )
                configured = st.configure_topics(topology, metadata_hash, self._partition_count)
                group.configured_topology = configured
        assert configured is not None
        validated_epoch = -1
        if configured.is_ready:
            validated_epoch = topology.epoch
            assert configured.subtopologies is not None
            for owned in (request.active_tasks, request.standby_tasks, request.warmup_tasks):
                throw_if_invalid_tasks(configured.subtopologies, owned)
        if request.task_offsets is not None or request.task_end_offsets is not None:
            offsets, end_offsets = group.task_offsets.get(member_id, ({}, {}))
            group.task_offsets[member_id] = (
                offsets if request.task_offsets is None else request.task_offsets,
                end_offsets if request.task_end_offsets is None else request.task_end_offsets,
            )
        if validated_epoch != group.validated_topology_epoch:
            recompute = True
        assignment_configs = self.assignment_configs(group_id)
        if not recompute and assignment_configs != group.last_assignment_configs:
            log.info(
                "[GroupId %s][MemberId %s] Assignment configurations changed to %s. "
                "Triggering rebalance.",
                group_id,
                member_id,
                _java_map(assignment_configs),
            )
            recompute = True
        refined = False
        if not recompute and group.state == sg.STABLE:
            # Kafka 4.4's AssignmentRefiner hands the target back unchanged
            target = group.target_assignment.get(member_id, TasksTuple())
            refined = not same_tasks(target, updated)
        group_epoch = group.group_epoch
        if recompute or refined:
            group_epoch += 1
            records.append(
                sg.group_epoch_record(
                    group_id,
                    group_epoch,
                    metadata_hash,
                    validated_epoch,
                    assignment_configs,
                    group.stored_description_topology_epoch,
                    group.failed_description_topology_epoch,
                )
            )
            log.info(
                "[GroupId %s][MemberId %s] Bumped streams group epoch to %d with metadata "
                "hash %d and validated topic epoch %d.",
                group_id,
                member_id,
                group_epoch,
                metadata_hash,
                validated_epoch,
            )
        if group.state == sg.EMPTY_STATE:
            delay = self._setting(group_id, INITIAL_REBALANCE_DELAY)
            if delay > 0:
                self.initial_delay_timers.schedule_if_absent(
                    (group_id, ""), delay, self._delayed_target_assignment, group_id
                )
        target_epoch, targets = self._target_assignment(
            group,
            group_epoch,
            updated,
            configured,
            records,
            statuses,
            assignment_configs,
            refine_only=refined and not recompute,
        )
        updated = self._reconcile(
            group_id,
            group,
            updated,
            target_epoch,
            targets.get(member_id, TasksTuple()),
            request,
            records,
        )
        self._schedule_session_timeout(group_id, member_id)
        if request.shutdown_application and group.shutdown_request_member_id is None:
            log.info(
                "[GroupId %s][MemberId %s] Shutdown requested for the streams application.",
                group_id,
                member_id,
            )
            group.shutdown_request_member_id = member_id
        result = StreamsHeartbeatResult(
            member_id=updated.member_id,
            member_epoch=updated.member_epoch,
            heartbeat_interval_ms=self._setting(group_id, HEARTBEAT_INTERVAL),
            task_offset_interval_ms=self.settings.task_offset_interval_ms,
            acceptable_recovery_lag=self.settings.acceptable_recovery_lag,
        )
        tasks_changed = updated.assigned != member.assigned
        if joining or tasks_changed:
            held = updated.assigned
            result.assignment = (
                {s: set(ps) for s, ps in held.active.items()},
                held.standby,
                held.warmup,
            )
        endpoint_changed = member.user_endpoint != updated.user_endpoint
        if endpoint_changed or (tasks_changed and updated.user_endpoint is not None):
            group.endpoint_information_epoch += 1
        self.apply(group_id, records, group)
        if group.endpoint_information_epoch != request.endpoint_information_epoch:
            result.partitions_by_user_endpoint = endpoints(group, updated, replaced, self.topics)
        if existed:
            result.endpoint_information_epoch = group.endpoint_information_epoch
        if configured.error is not None:
            result.topics_to_create = dict(configured.topics_to_create)
            statuses.append((configured.error.status, configured.error.message))
        if group.shutdown_request_member_id is not None:
            statuses.append(
                (
                    st.SHUTDOWN_APPLICATION,
                    f"Streams group member "
                    f"{group.shutdown_request_member_id} encountered a fatal error and "
                    "requested a shutdown for the entire application.",
                )
            )
        tags = assignment_configs.get("rack.aware.assignment.tags", "").strip()
        if request.api_version >= 1 and tags:
            missing = [
                t for t in (x.strip() for x in tags.split(",")) if t not in updated.client_tags
            ]
            if missing:
                statuses.append(
                    (
                        st.MISSING_CLIENT_TAGS,
                        "Missing required client tags for "
                        f"rack-aware standby assignment: [{', '.join(missing)}]. "
                        "Configure them via 'client.tag.<tagKey>' in your Streams "
                        "config.",
                    )
                )
        result.statuses = statuses
        return result, records

    # -- the member ----------------------------------------------------------------------

    def _metadata_expired(self, group: StreamsGroup) -> bool:
        return group.metadata_topics_version != self.topics.topics_version

    def _partition_count(self, topic: str) -> int | None:
        return len(self.topics.topic_partitions(topic)) or None

    # -- the target assignment and reconciliation -----------------------------------------

    def _target_assignment(
        self,
        group: StreamsGroup,
        group_epoch: int,
        updated: StreamsGroupMember | None,
        configured: st.ConfiguredTopology,
        records: list[sr.StreamsRecord],
        statuses: list[tuple[int, str]] | None,
        assignment_configs: dict[str, str],
        refine_only: bool = False,
    ) -> tuple[int, dict[str, TasksTuple]]:
        """maybeUpdateStreamsTargetAssignment: (the target's epoch, each member's target)."""
        group_id = group.group_id
        if self.initial_delay_timers.is_scheduled((group_id, "")):
            if statuses is not None:
                statuses.append(
                    (
                        st.ASSIGNMENT_DELAYED,
                        "Assignment delayed due to the configured initial rebalance delay.",
                    )
                )
            return group.assignment_epoch, {}
        members, targets = updated_view(group, updated)
        if group.assignment_epoch >= group_epoch:
            return group.assignment_epoch, targets
        if refine_only and group.assignment_epoch >= group.group_epoch:
            records.append(
                sg.target_epoch_record(group_id, group_epoch, group.assignment_timestamp)
            )
            return group_epoch, targets
        now = self.clock()
        interval = self._setting(group_id, ASSIGNMENT_INTERVAL)
        timestamp = group.assignment_timestamp
        if timestamp != 0 and interval != 0 and now < timestamp + interval:
            if statuses is not None:
                statuses.append(
                    (
                        st.ASSIGNMENT_DELAYED,
                        "Assignment delayed due to the configured assignment interval.",
                    )
                )
            return group.assignment_epoch, targets
        new = build_target_assignment(members, group.task_offsets, configured, assignment_configs)
        for member_id in java_hash_map_order(members):
            target = new[member_id]
            if targets.get(member_id) != target:
                records.append(sg.target_record(group_id, member_id, target))
        records.append(sg.target_epoch_record(group_id, group_epoch, now))
        log.info(
            "[GroupId %s] Computed a new target assignment for epoch %d with '%s' assignor.",
            group_id,
            group_epoch,
            STICKY_ASSIGNOR,
        )
        return group_epoch, new

    def _reconcile(
        self,
        group_id: str,
        group: StreamsGroup,
        member: StreamsGroupMember,
        target_epoch: int,
        target: TasksTuple,
        request: StreamsHeartbeatRequest,
        records: list[sr.StreamsRecord],
    ) -> StreamsGroupMember:
        """maybeReconcile: the member one step towards its target (CurrentAssignmentBuilder)."""
        if member.is_reconciled_to(target_epoch):
            return member
        owned = None
        if None not in (request.active_tasks, request.standby_tasks, request.warmup_tasks):
            owned = TasksTuple(
                request.active_tasks or {}, request.standby_tasks or {}, request.warmup_tasks or {}
            )
        moved = reconcile(
            MemberAssignment(
                member.process_id,
                member.state,
                member.member_epoch,
                member.previous_member_epoch,
                member.assigned,
                member.pending_revocation,
            ),
            target_epoch,
            target,
            group.active_owner,
            group.standby_owners,
            group.warmup_owners,
            owned,
        )
        updated = replace(
            member,
            state=moved.state,
            member_epoch=moved.member_epoch,
            previous_member_epoch=moved.previous_member_epoch,
            assigned=moved.assigned,
            pending_revocation=moved.pending_revocation,
        )
        if updated != member:
            records.append(sg.current_assignment_record(group_id, updated))
            log.info(
                "[GroupId %s][MemberId %s] Member's new assignment state: epoch=%d, "
                "previousEpoch=%d, state=%s.",
                group_id,
                updated.member_id,
                updated.member_epoch,
                updated.previous_member_epoch,
                updated.state.name,
            )
            if updated.state == MemberState.UNREVOKED_TASKS:
                self.rebalance_timers.schedule(
                    (group_id, updated.member_id),
                    updated.rebalance_timeout_ms,
                    self._rebalance_timeout,
                    group_id,
                    updated.member_id,
                    updated.member_epoch,
                    updated.rebalance_timeout_ms,
                )
            else:
                self.rebalance_timers.cancel((group_id, updated.member_id))
        return updated

    def _delayed_target_assignment(self, group_id: str) -> None:
        """computeDelayedTargetAssignment: the initial rebalance delay is over."""
        group = self.streams_group_or_none(group_id)
        if group is None or self.manager.group_status(group_id) != "NONE":
            return
        if group.state == sg.EMPTY_STATE or group.group_epoch <= group.assignment_epoch:
            return
        if group.configured_topology is None:
            log.warning(
                "[GroupId %s] Cannot compute delayed target assignment: configured "
                "topology is not present",
                group_id,
            )
            return
        records: list[sr.StreamsRecord] = []
        self._target_assignment(
            group,
            group.group_epoch,
            None,
            group.configured_topology,
            records,
            None,
            group.last_assignment_configs,
        )
        self.apply(group_id, records)
        self._tasks.spawn(self.manager.write(group_id, records))

    def assignment_configs(self, group_id: str) -> dict[str, str]:
        """streamsGroupAssignmentConfigs: what the assignor reads, by name."""
        configs = {"num.standby.replicas": str(self._setting(group_id, NUM_STANDBY_REPLICAS))}
        tags = self._tags(group_id)
        if tags:
            configs["rack.aware.assignment.tags"] = ",".join(tags)
        return dict(sorted(configs.items()))

    # -- leaving and fencing ---------------------------------------------------------------

    def _leave(
        self, request: StreamsHeartbeatRequest
    ) -> tuple[StreamsHeartbeatResult, list[sr.StreamsRecord]]:
        group_id, member_id, instance_id = request.group_id, request.member_id, request.instance_id
        group, _ = group_for(self.manager, group_id, False, [])
        if request.shutdown_application and group.shutdown_request_member_id is None:
            group.shutdown_request_member_id = member_id
        result = StreamsHeartbeatResult(member_id=member_id, member_epoch=request.member_epoch)
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                raise GroupError(
                    "UNKNOWN_MEMBER_ID", f"Member {member_id} is not a member of group {group_id}."
                )
            log.info(
                "[GroupId %s][MemberId %s] Member %s left the streams group.",
                group_id,
                member_id,
                member_id,
            )
            return result, self._fence(group, member)
        static_id = group.static_members.get(instance_id)
        member = group.members.get(static_id) if static_id is not None else None
        member = check_static_member(member, member_id, instance_id)
        if request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            log.info(
                "[GroupId %s][MemberId %s] Static member %s with instance id %s temporarily "
                "left the streams group.",
                group_id,
                member_id,
                member_id,
                instance_id,
            )
            leaving = replace(
                member,
                member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                pending_revocation=EMPTY,
                assigned=replace(
                    member.assigned,
                    active={s: dict.fromkeys(ps, 0) for s, ps in member.assigned.active.items()},
                ),
            )
            records = [sg.current_assignment_record(group_id, leaving)]
            self.apply(group_id, records)
            return StreamsHeartbeatResult(
                member_id=member_id, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH
            ), records
        log.info(
            "[GroupId %s][MemberId %s] Static member %s with instance id %s left the "
            "streams group.",
            group_id,
            member_id,
            member_id,
            instance_id,
        )
        return result, self._fence(group, member)

    def _fence(self, group: StreamsGroup, member: StreamsGroupMember) -> list[sr.StreamsRecord]:
        """streamsGroupFenceMember: the member's records deleted, the group epoch bumped."""
        group_id = group.group_id
        records = member_removal(group_id, member.member_id)
        epoch = group.group_epoch + 1
        records.append(
            sg.group_epoch_record(
                group_id,
                epoch,
                group.metadata_hash,
                group.validated_topology_epoch,
                group.last_assignment_configs,
                group.stored_description_topology_epoch,
                group.failed_description_topology_epoch,
            )
        )
        if len(group.members) == 1:
            records.append(sg.target_epoch_record(group_id, epoch, 0))
        self.session_timers.cancel((group_id, member.member_id))
        self.rebalance_timers.cancel((group_id, member.member_id))
        self.apply(group_id, records)
        return records

    def _fence_later(self, group_id: str, member_id: str, reason: str) -> None:
        group = self.streams_group_or_none(group_id)
        if group is None or member_id not in group.members:
            return
        if self.manager.group_status(group_id) != "NONE":
            return
        log.info(
            "[GroupId %s] Streams member %s fenced from the group because %s.",
            group_id,
            member_id,
            reason,
        )
        self._tasks.spawn(
            self.manager.write(group_id, self._fence(group, group.members[member_id]))
        )

    def _rebalance_timeout(
        self, group_id: str, member_id: str, epoch: int, timeout_ms: int
    ) -> None:
        group = self.streams_group_or_none(group_id)
        member = group.members.get(member_id) if group is not None else None
        if member is None or member.member_epoch != epoch:
            return
        self._fence_later(
            group_id, member_id, f"it failed to transition from epoch {epoch} within {timeout_ms}ms"
        )

    def _schedule_session_timeout(self, group_id: str, member_id: str) -> None:
        self.session_timers.schedule(
            (group_id, member_id),
            self._setting(group_id, SESSION_TIMEOUT),
            self._fence_later,
            group_id,
            member_id,
            "the member session expired",
        )

    # -- settings ------------------------------------------------------------------------

    def _setting(self, group_id: str, name: str) -> int:
        """A streams.* int setting: the group's config, else the broker's."""
        if self.group_configs is not None:
            return self.group_configs.value(group_id, name)
        s = self.settings
        return {
            SESSION_TIMEOUT: s.session_timeout_ms,
            HEARTBEAT_INTERVAL: s.heartbeat_interval_ms,
            NUM_STANDBY_REPLICAS: s.num_standby_replicas,
            INITIAL_REBALANCE_DELAY: s.initial_rebalance_delay_ms,
            ASSIGNMENT_INTERVAL: s.assignment_interval_ms,
        }[name]

    def _tags(self, group_id: str) -> list[str]:
        if self.group_configs is not None:
            text = self.group_configs.text(group_id, RACK_AWARE_ASSIGNMENT_TAGS)
            return [t.strip() for t in text.split(",") if t.strip()]
        return list(self.settings.rack_aware_assignment_tags)

    # -- endpoints for interactive queries -------------------------------------------------

    # -- state and the log ---------------------------------------------------------------

    def streams_group_or_none(self, group_id: str) -> StreamsGroup | None:
        holder = self.manager.get_group(group_id)
        return holder.streams if holder is not None else None

    def apply(self, group_id: str, records: list[Any], group: StreamsGroup | None = None) -> None:
        """Replay `records` into the group: `group` (a new one built by the heartbeat) is
        installed by the first record that is not a tombstone; the group's tombstone drops
        it. A classic group's tombstone among them deletes the classic metadata."""
        holder = self.manager.get_group(group_id)
        for record in records:
            if not isinstance(record, sr.StreamsRecord):
                if holder is not None:
                    from kt.broker.group import consumer_group_records as cr

                    cr.apply(holder, record)
                continue
            if holder is None:
                if record.value is None:
                    continue
                holder = self.manager.add_group(
                    GroupMetadata(group_id, GroupState.EMPTY, self.clock())
                )
            sg.apply(holder, record, group)
        if (
            holder is not None
            and holder.streams is None
            and holder.consumer is None
            and holder.share is None
            and not (holder.offsets or holder.members or holder.protocol_type)
        ):
            self.manager.remove_group(holder)

    def on_loaded(self, groups: Iterable[GroupMetadata]) -> None:
        for holder in groups:
            if holder.streams is not None:
                for member_id, member in holder.streams.members.items():
                    self._schedule_session_timeout(holder.group_id, member_id)
                    if member.state == MemberState.UNREVOKED_TASKS:
                        self.rebalance_timers.schedule(
                            (holder.group_id, member_id),
                            member.rebalance_timeout_ms,
                            self._rebalance_timeout,
                            holder.group_id,
                            member_id,
                            member.member_epoch,
                            member.rebalance_timeout_ms,
                        )

    def on_unloaded(self, groups: Iterable[GroupMetadata]) -> None:
        for holder in groups:
            if holder.streams is not None:
                for member_id in holder.streams.members:
                    self.session_timers.cancel((holder.group_id, member_id))
                    self.rebalance_timers.cancel((holder.group_id, member_id))
                self.initial_delay_timers.cancel((holder.group_id, ""))

    def shutdown(self) -> None:
        self.session_timers.cancel_all()
        self.rebalance_timers.cancel_all()
        self.initial_delay_timers.cancel_all()
        self._tasks.cancel_all()

    # -- StreamsGroupDescribe -----------------------------------------------------------

    def describe(self, group_id: str) -> tuple[str, str | None, StreamsGroup | None]:
        status = self.manager.group_status(group_id)
        if status != "NONE":
            return status, None, None
        holder = self.manager.get_group(group_id)
        if holder is None or holder.streams is None:
            message = (
                f"Group {group_id} not found."
                if holder is None
                else f"Group {group_id} is not a streams group."
            )
            return "GROUP_ID_NOT_FOUND", message, None
        return "NONE", None, holder.streams


def _java_map(configs: dict[str, str]) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in configs.items()) + "}"
