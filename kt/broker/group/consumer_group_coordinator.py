"""The consumer group protocol (KIP-848): ConsumerGroupHeartbeat and its timers.

Kafka's GroupMetadataManager.consumerGroupHeartbeat, consumerGroupLeave and the session
and rebalance timeouts. A heartbeat does three things (in Kafka's words):
1. the member is created or updated; the group epoch is bumped when a member joins,
   changes its subscription, or the subscribed topics' partitions change;
2. the target assignment is recomputed when the group epoch is ahead of it;
3. the member's current assignment is reconciled one step towards its target: partitions
   another member still holds are given only once that member has revoked them.

Every change is a list of coordinator records: replayed into the group at once (so the
next heartbeat sees it), then appended to `__consumer_offsets` with acks=all before the
answer goes out. A member that stops heartbeating for its session timeout, or that does
not revoke within its rebalance timeout, is fenced: removed, and the group epoch bumped.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from kt.broker.group import assignors, group_migration
from kt.broker.group import consumer_group_records as cr
from kt.broker.group.consumer_group import (
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    Assignment,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    from_scratch,
    new_member_id,
)
from kt.broker.group.current_assignment import reconcile
from kt.broker.group.group_config import HEARTBEAT_INTERVAL, SESSION_TIMEOUT, GroupConfigs
from kt.broker.group.group_coordinator import GroupCoordinator
from kt.broker.group.group_metadata import GroupMetadata, GroupState
from kt.broker.group.group_metadata_manager import (
    GroupMetadataManager,
    now_ms,
)
from kt.broker.group.heartbeat_request import (
    GroupError,
    HeartbeatRequest,
    HeartbeatResult,
    check_member_epoch,
    check_static_member,
    validate,
    with_request,
)
from kt.broker.group.member_timers import MemberTimers
from kt.broker.group.modern_group import LEAVE_GROUP_MEMBER_EPOCH
from kt.broker.group.offsets_records import group_metadata_value
from kt.broker.group.subscribed_topics import TopicsView, refresh_regexes, subscription_hash
from kt.broker.group.target_assignment import preferred_assignor, target_assignment
from kt.broker.task_set import TaskSet

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConsumerGroupSettings:
    """The broker's group.consumer.* settings."""

    max_size: int = 2147483647
    assignors: tuple[str, ...] = (assignors.UNIFORM, assignors.RANGE)
    migration_policy: str = group_migration.BIDIRECTIONAL  # group.consumer.migration.policy
    classic_max_size: int = 2147483647  # group.max.size, for a downgrade


class ConsumerGroupCoordinator:
    """Consumer groups of the `__consumer_offsets` partitions `manager` holds. A
    consumer group lives in the manager's GroupMetadata of its id (`.consumer`), beside
    the group's committed offsets."""

    def __init__(
        self,
        manager: GroupMetadataManager,
        topics: TopicsView,
        settings: ConsumerGroupSettings,
        group_configs: GroupConfigs,
        classic: GroupCoordinator,
        *,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.manager = manager
        self.topics = topics
        self.settings = settings
        self.group_configs = group_configs  # each group's overrides of the two timings
        self.classic = classic  # takes over a group downgraded to the classic protocol
        self.clock = clock
        self.session_timers = MemberTimers()
        self.rebalance_timers = MemberTimers()
        # A classic member of a consumer group must rejoin (join) and then sync within its
        # rebalance timeout once told to.
        self.join_timers = MemberTimers()
        self.sync_timers = MemberTimers()
        self._all_timers = (self.session_timers, self.rebalance_timers, self.join_timers,
                            self.sync_timers)  # fmt: skip
        self._tasks = TaskSet()

    # -- ConsumerGroupHeartbeat ---------------------------------------------------------

    async def heartbeat(self, request: HeartbeatRequest) -> HeartbeatResult:
        try:
            validate(request, self.settings.assignors)
            status = self.manager.group_status(request.group_id)
            if status != "NONE":
                raise GroupError(status)
            if request.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                result, records = self._leave(request)
            else:
                result, records = self._heartbeat(request)
        except GroupError as e:
            return HeartbeatResult(e.error, e.message, request.member_id or None,
                                   request.member_epoch)  # fmt: skip
        error = await self.manager.write(request.group_id, records)
        if error != "NONE":
            return HeartbeatResult(error, None, result.member_id, result.member_epoch)
        return result

    def _heartbeat(self, request: HeartbeatRequest) -> tuple[HeartbeatResult, list]:
        records: list[cr.CoordinatorRecord] = []
        group_id = request.group_id
        joining = request.member_epoch == 0
        group = self.consumer_group(group_id, joining, records)
        member_id = request.member_id or new_member_id()
        if joining:
            self.check_size(group, member_id, request.instance_id)
        if request.instance_id is None:
            member = self._dynamic_member(group, member_id, request)
        else:
            member = self._static_member(group, member_id, request, records)
        updated = with_request(member, request)
        group_epoch, members = self.update_subscription(group, member, updated, records, joining)
        reconciled = self.assign_and_reconcile(group, updated, members, group_epoch,
                                               request.owned, records)  # fmt: skip
        self.apply(group_id, records)
        self.start_upgraded_sessions(group, records)
        self._schedule_session_timeout(group_id, member_id)

        full = joining or (request.rebalance_timeout_ms != -1
                           and request.subscribed_topic_names is not None
                           and request.owned is not None)  # fmt: skip
        result = HeartbeatResult(
            member_id=member_id, member_epoch=reconciled.member_epoch,
            heartbeat_interval_ms=self.group_configs.value(group_id, HEARTBEAT_INTERVAL),
        )  # fmt: skip
        if full or reconciled.assigned != member.assigned:
            result.assignment = reconciled.assigned
        return result, records

    def start_upgraded_sessions(
        self, group: ConsumerGroup, records: list[cr.CoordinatorRecord]
    ) -> None:
        """After an online upgrade, each classic member's session runs on in the consumer
        group, with its own session timeout."""
        if any(r.type == cr.CLASSIC_GROUP_METADATA for r in records):
            for member in group.classic_members():
                self.schedule_member_session(group.group_id, member)

    def check_size(self, group: ConsumerGroup, member_id: str, instance_id: str | None) -> None:
        """throwIfConsumerGroupIsFull, for a member that is not in the group yet."""
        if (
            member_id not in group.members
            and group.static_member(instance_id) is None
            and len(group.members) >= self.settings.max_size
        ):
            raise GroupError(
                "GROUP_MAX_SIZE_REACHED",
                "The consumer group has reached its "
                f"maximum capacity of {self.settings.max_size} members.",
            )

    def update_subscription(
        self,
        group: ConsumerGroup,
        member: ConsumerGroupMember,
        updated: ConsumerGroupMember,
        records: list[cr.CoordinatorRecord],
        refresh: bool,
    ) -> tuple[int, dict[str, ConsumerGroupMember]]:
        """Step 1 of a heartbeat (or a classic member's JoinGroup): the member's record if
        it changed, the group epoch bumped when a subscription or the subscribed topics
        changed. Returns the group epoch and the members as they will be."""
        group_id, member_id = group.group_id, updated.member_id
        bump = False
        if updated != member:
            records.append(cr.member_subscription(group_id, updated))
            bump = (updated.subscribed_topic_names != member.subscribed_topic_names
                    or updated.subscribed_topic_regex != member.subscribed_topic_regex)  # fmt: skip
        members = dict(group.members)
        previous_static = group.static_members.get(updated.instance_id or "")
        if previous_static is not None and previous_static != member_id:
            members.pop(previous_static, None)
        members[member_id] = updated
        group_epoch = group.group_epoch
        metadata_hash = group.metadata_hash
        version = self.topics.topics_version
        if bump or refresh or group.metadata_refresh_deadline != version:
            # Kafka refreshes on an interval; kt when a topic or a subscription changed.
            bump |= refresh_regexes(self.topics, group, members.values(), self.clock(), records)
            metadata_hash = subscription_hash(self.topics, group, members.values())
            group.metadata_refresh_deadline = version
        if bump or metadata_hash != group.metadata_hash:
            group_epoch += 1
            records.append(cr.group_epoch(group_id, group_epoch, metadata_hash))
            log.info("[GroupId %s] Bumped group epoch to %d.", group_id, group_epoch)
        return group_epoch, members

    def assign_and_reconcile(
        self,
        group: ConsumerGroup,
        updated: ConsumerGroupMember,
        members: dict[str, ConsumerGroupMember],
        group_epoch: int,
        owned: list[tuple[uuid.UUID, list[int]]] | None,
        records: list[cr.CoordinatorRecord],
    ) -> ConsumerGroupMember:
        """Steps 2 and 3: the target assignment recomputed when the group epoch is ahead of
        it, then the member moved one step towards its target."""
        member_id = updated.member_id
        if group_epoch > group.assignment_epoch:
            target_epoch = group_epoch
            default = self.settings.assignors[0]
            targets = target_assignment(group, members, self.topics, default, records,
                                        group_epoch, self.clock())  # fmt: skip
            target = targets.get(member_id, {})
        else:
            target_epoch = group.assignment_epoch
            target = self._current_target(group, updated)
        return self._reconcile(group, updated, target_epoch, target, owned, records)

    def _current_target(self, group: ConsumerGroup, member: ConsumerGroupMember) -> Assignment:
        """ConsumerGroup.targetAssignment(memberId, instanceId): a static member replacing
        its predecessor has the predecessor's target (the records moving it are not
        replayed yet)."""
        previous_static = group.static_members.get(member.instance_id or "")
        return group.target_of(previous_static or member.member_id)

    def reconcile_to_current(
        self,
        group: ConsumerGroup,
        updated: ConsumerGroupMember,
        owned: list[tuple[uuid.UUID, list[int]]] | None,
        records: list[cr.CoordinatorRecord],
    ) -> ConsumerGroupMember:
        """The member reconciled towards the current target assignment (no new one)."""
        target = self._current_target(group, updated)
        return self._reconcile(group, updated, group.assignment_epoch, target, owned, records)

    def _reconcile(
        self,
        group: ConsumerGroup,
        updated: ConsumerGroupMember,
        target_epoch: int,
        target: Assignment,
        owned: list[tuple[uuid.UUID, list[int]]] | None,
        records: list[cr.CoordinatorRecord],
    ) -> ConsumerGroupMember:
        """maybeReconcile: the member's next assignment, and its record if it moved. Only a
        consumer-protocol member has a rebalance timeout to revoke within (a classic member
        has its join and sync timeouts)."""
        if updated.is_reconciled_to(target_epoch):
            return updated
        reconciled = reconcile(updated, target_epoch, target, group.current_partition_epoch, owned)
        if reconciled != updated:
            records.append(cr.current_assignment(group.group_id, reconciled))
            if reconciled.classic is None:
                key = (group.group_id, reconciled.member_id)
                if reconciled.state == MemberState.UNREVOKED_PARTITIONS:
                    self._schedule_rebalance_timeout(group.group_id, reconciled)
                else:
                    self.rebalance_timers.cancel(key)
        return reconciled

    def consumer_group(
        self, group_id: str, create: bool, records: list[cr.CoordinatorRecord]
    ) -> ConsumerGroup:
        """getOrMaybeCreateConsumerGroup: an empty classic group gives way (its metadata
        deleted, its offsets kept); a classic group with members becomes a consumer group
        when the migration policy allows (an online upgrade: the conversion's records go
        into `records`, and the group returned is built apart until they are applied)."""
        holder = self.manager.get_group(group_id)
        if holder is not None and holder.consumer is not None:
            return holder.consumer
        if holder is not None and (holder.share is not None or holder.streams is not None):
            raise GroupError("GROUP_ID_NOT_FOUND", f"Group {group_id} is not a consumer group.")
        if not create:
            raise GroupError("GROUP_ID_NOT_FOUND", f"Consumer group {group_id} not found.")
        if holder is None or holder.is_(GroupState.DEAD):
            return ConsumerGroup(group_id)
        if holder.is_(GroupState.EMPTY):
            if holder.protocol_type is not None:
                records.append(cr.classic_group_removal(group_id))
                log.info("[GroupId %s] Converted the empty classic group to a consumer group.",
                         group_id)  # fmt: skip
            return ConsumerGroup(group_id)
        group_migration.validate_online_upgrade(holder, self.settings.migration_policy,
                                                self.settings.max_size)  # fmt: skip
        group = group_migration.consumer_group_from_classic(holder, self.topics)
        records.append(cr.classic_group_removal(group_id))
        records.extend(group_migration.consumer_group_records(group))
        log.info("[GroupId %s] Converted the classic group to a consumer group.", group_id)
        return group

    def _dynamic_member(
        self, group: ConsumerGroup, member_id: str, request: HeartbeatRequest
    ) -> ConsumerGroupMember:
        member = group.members.get(member_id)
        if request.member_epoch == 0:
            if member is None:
                log.info("[GroupId %s] Member %s joins the consumer group using the consumer "
                         "protocol.", group.group_id, member_id)  # fmt: skip
                return ConsumerGroupMember(member_id)
            # A member that lost its epoch (fenced, or its answer lost) rejoins under the
            # id it keeps (KIP-1082): from scratch, owning nothing.
            return from_scratch(member, member_id)
        if member is None:
            raise GroupError(
                "UNKNOWN_MEMBER_ID",
                f"Member {member_id} is not a member of group {group.group_id}.",
            )
        check_member_epoch(member, request.member_epoch, request.owned)
        return member

    def _static_member(
        self,
        group: ConsumerGroup,
        member_id: str,
        request: HeartbeatRequest,
        records: list[cr.CoordinatorRecord],
    ) -> ConsumerGroupMember:
        """getOrMaybeSubscribeStaticConsumerGroupMember: a static member rejoining takes
        over its instance's place (and target assignment) once the previous one left."""
        instance_id = request.instance_id
        existing = group.static_member(instance_id)
        if request.member_epoch == 0:
            if existing is None or existing.member_id == member_id:
                if existing is not None:
                    return self._dynamic_member(group, member_id, request)
                log.info("[GroupId %s] Static member %s with instance id %s joins the consumer "
                         "group.", group.group_id, member_id, instance_id)  # fmt: skip
                return ConsumerGroupMember(member_id)
            if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                raise GroupError("UNRELEASED_INSTANCE_ID",
                                 f"Static member {member_id} with instance id {instance_id} "
                                 "cannot join the group because the instance id is owned by "
                                 f"{existing.member_id} member.")  # fmt: skip
            new = from_scratch(existing, member_id)
            self.replace_static_member(group, existing, new, records)
            return new
        existing = check_static_member(existing, member_id, instance_id)
        check_member_epoch(existing, request.member_epoch, request.owned)
        return existing

    def replace_static_member(
        self,
        group: ConsumerGroup,
        existing: ConsumerGroupMember,
        new: ConsumerGroupMember,
        records: list[cr.CoordinatorRecord],
    ) -> None:
        """replaceMember: `new` takes `existing`'s place and target assignment."""
        group_id = group.group_id
        records.extend(cr.member_removal(group_id, existing.member_id))
        records.append(cr.member_subscription(group_id, new))
        records.append(cr.target_member(group_id, new.member_id,
                                        group.target_of(existing.member_id)))  # fmt: skip
        records.append(cr.current_assignment(group_id, new))
        self._cancel_timers(group_id, existing.member_id)
        log.info("[GroupId %s] Static member with instance id %s re-joins the consumer group. "
                 "Created a new member %s to replace the existing member %s.", group_id,
                 new.instance_id, new.member_id, existing.member_id)  # fmt: skip

    # -- leaving and fencing -------------------------------------------------------------

    def _leave(self, request: HeartbeatRequest) -> tuple[HeartbeatResult, list]:
        group = self.consumer_group(request.group_id, False, [])
        result = HeartbeatResult(member_id=request.member_id, member_epoch=request.member_epoch)
        if request.instance_id is None:
            member = group.members.get(request.member_id)
            if member is None:
                raise GroupError("UNKNOWN_MEMBER_ID", f"Member {request.member_id} is not a "
                                 f"member of group {group.group_id}.")  # fmt: skip
            log.info("[GroupId %s] Member %s left the consumer group.",
                     group.group_id, member.member_id)  # fmt: skip
            return result, self.fence(group, [member])
        member = group.static_member(request.instance_id)
        if member is None:
            raise GroupError("UNKNOWN_MEMBER_ID", f"Instance id {request.instance_id} is unknown.")
        if member.member_id != request.member_id:
            raise GroupError(
                "FENCED_INSTANCE_ID",
                f"Static member {request.member_id} with instance id "
                f"{request.instance_id} was fenced by member {member.member_id}.",
            )
        if request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            # Temporarily away: the member keeps its place until its session times out.
            leaving = replace(member, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                              pending_revocation={})  # fmt: skip
            records = [cr.current_assignment(group.group_id, leaving)]
            self.apply(group.group_id, records)
            log.info(
                "[GroupId %s] Static Member %s with instance id %s temporarily left the "
                "consumer group.",
                group.group_id,
                member.member_id,
                request.instance_id,
            )
            return result, records
        return result, self.fence(group, [member])

    def fence(self, group: ConsumerGroup, leaving: list[ConsumerGroupMember]) -> list:
        """consumerGroupFenceMembers: remove the members and bump the group epoch; or,
        when only members of the classic protocol would remain, downgrade the group to a
        classic one that rebalances (KIP-848's online downgrade)."""
        if not leaving:
            return []
        group_id = group.group_id
        gone = {m.member_id for m in leaving}
        if group_migration.can_downgrade_after_leaving(
            group, gone, self.settings.migration_policy, self.settings.classic_max_size
        ):
            return self.downgrade(group, gone, None,
                                  f"Downgrade group {group_id} from consumer to classic for "
                                  "member leaving.")  # fmt: skip
        records = [r for member_id in gone for r in cr.member_removal(group_id, member_id)]
        remaining = [m for m in group.members.values() if m.member_id not in gone]
        metadata_hash = subscription_hash(self.topics, group, remaining)
        epoch = group.group_epoch + 1
        records.append(cr.group_epoch(group_id, epoch, metadata_hash))
        if not remaining:  # the assignment epoch catches up (KAFKA-20442)
            records.append(cr.target_epoch(group_id, epoch, 0))
        for member_id in gone:
            self._cancel_timers(group_id, member_id)
        self.apply(group_id, records)
        return records

    def downgrade(
        self,
        group: ConsumerGroup,
        leaving: set[str],
        joining: ConsumerGroupMember | None,
        rebalance_reason: str | None,
    ) -> list:
        """convertToClassicGroup: the consumer group's records deleted and the classic
        group's metadata written in their place; the classic coordinator takes the group
        over (and rebalances it unless `rebalance_reason` is None). The state is set here,
        not replayed from the records."""
        group_id = group.group_id
        holder = self.manager.get_group(group_id)
        assert holder is not None and holder.consumer is group
        replaced = group.static_member(joining.instance_id) if joining is not None else None
        records = group_migration.classic_group_tombstones(
            group, replaced.member_id if replaced else None, joining.member_id if joining else None
        )
        for member_id in group.members:
            self._cancel_timers(group_id, member_id)
        holder.consumer = None
        assignments = group_migration.fill_classic_group(holder, group, leaving, joining,
                                                         self.topics, self.clock())  # fmt: skip
        value = group_metadata_value(holder.to_record(assignments))
        records.append(cr.CoordinatorRecord(cr.CLASSIC_GROUP_METADATA, group_id, None, value))
        self.classic.adopt(holder, rebalance_reason)
        log.info("[GroupId %s] Converted the consumer group to a classic group.", group_id)
        return records

    def fence_later(self, group_id: str, member_id: str, epoch: int | None, why: str) -> None:
        """A timer fired: fence the member if it is still there (in `epoch`, when given)."""
        holder = self.manager.get_group(group_id)
        group = holder.consumer if holder is not None else None
        member = group.members.get(member_id) if group is not None else None
        if group is None or member is None:
            return
        if epoch is not None and member.member_epoch != epoch:
            return
        if self.manager.group_status(group_id) != "NONE":
            return
        log.info("[GroupId %s] Member %s fenced from the group because %s",
                 group_id, member_id, why)  # fmt: skip
        records = self.fence(group, [member])
        self._tasks.spawn(self.manager.write(group_id, records))

    # -- assignment ----------------------------------------------------------------------

    # -- state and the log ---------------------------------------------------------------

    def apply(self, group_id: str, records: list[cr.CoordinatorRecord]) -> None:
        """Replay `records` into the group (creating it, or dropping it on its tombstone)."""
        holder = self.manager.get_group(group_id)
        for record in records:
            if holder is None:
                holder = self.manager.add_group(GroupMetadata(group_id, GroupState.EMPTY,
                                                              self.clock()))  # fmt: skip
            cr.apply(holder, record)
        if (
            holder is not None
            and holder.consumer is None
            and holder.streams is None
            and not holder.offsets
            and holder.is_(GroupState.EMPTY)
            and not holder.members
        ):
            self.manager.remove_group(holder)

    # -- timers --------------------------------------------------------------------------

    def _schedule_session_timeout(
        self, group_id: str, member_id: str, timeout_ms: int | None = None
    ) -> None:
        """The member's next session deadline: a classic member's own session timeout
        (`timeout_ms`), the group's for a consumer-protocol member."""
        if timeout_ms is None:
            timeout_ms = self.group_configs.value(group_id, SESSION_TIMEOUT)
        self.session_timers.schedule((group_id, member_id), timeout_ms,
                                     self.fence_later, group_id, member_id, None,
                                     "the member session expired.")  # fmt: skip

    def schedule_member_session(self, group_id: str, member: ConsumerGroupMember) -> None:
        classic = member.classic
        timeout = classic.session_timeout_ms if classic is not None else None
        self._schedule_session_timeout(group_id, member.member_id, timeout)

    def _schedule_rebalance_timeout(self, group_id: str, member: ConsumerGroupMember) -> None:
        epoch, timeout = member.member_epoch, member.rebalance_timeout_ms
        self.rebalance_timers.schedule((group_id, member.member_id), timeout,
                                       self.fence_later, group_id, member.member_id, epoch,
                                       f"it failed to transition from epoch {epoch} within "
                                       f"{timeout}ms.")  # fmt: skip

    def _cancel_timers(self, group_id: str, member_id: str) -> None:
        for timers in self._all_timers:
            timers.cancel((group_id, member_id))

    def on_loaded(self, groups: Iterable[GroupMetadata]) -> None:
        """A partition's groups were loaded: their members' timers start afresh."""
        for holder in groups:
            group = holder.consumer
            if group is None:
                continue
            for member in group.members.values():
                self.schedule_member_session(group.group_id, member)
                if member.classic is None and member.state == MemberState.UNREVOKED_PARTITIONS:
                    self._schedule_rebalance_timeout(group.group_id, member)

    def on_unloaded(self, groups: Iterable[GroupMetadata]) -> None:
        for holder in groups:
            if holder.consumer is not None:
                for member_id in list(holder.consumer.members):
                    self._cancel_timers(holder.group_id, member_id)

    def shutdown(self) -> None:
        for timers in self._all_timers:
            timers.cancel_all()
        self._tasks.cancel_all()

    # -- ConsumerGroupDescribe ----------------------------------------------------------

    def describe(self, group_id: str) -> tuple[str, str | None, ConsumerGroup | None]:
        """(error, message, the group): GROUP_ID_NOT_FOUND for a group that is not a
        consumer group (or none)."""
        status = self.manager.group_status(group_id)
        if status != "NONE":
            return status, None, None
        holder = self.manager.get_group(group_id)
        if holder is None or holder.consumer is None:
            message = (
                f"Group {group_id} not found."
                if holder is None or holder.is_(GroupState.DEAD)
                else f"Group {group_id} is not a consumer group."
            )
            return "GROUP_ID_NOT_FOUND", message, None
        return "NONE", None, holder.consumer

    def assignor_of(self, group: ConsumerGroup) -> str:
        """The server assignor the group's target assignment is computed with."""
        return preferred_assignor(group.members.values()) or self.settings.assignors[0]
