"""The group coordinator: membership of classic groups (Kafka's GroupCoordinator).

JoinGroup answers wait until every member has rejoined (DelayedJoin, bounded by the
largest rebalance timeout = the clients' max.poll.interval.ms) or, for a group's first
rebalance, for group.initial.rebalance.delay.ms while new members keep arriving
(InitialDelayedJoin). The leader gets every member's metadata and sends the assignment
in its SyncGroup; the others' SyncGroup answers wait for it (DelayedSync removes the
members that never sync). A member that stops heartbeating for its session timeout is
removed (DelayedHeartbeat) and the group rebalances.

Delayed operations are event-loop timers (loop.call_later); their callbacks re-check
the group's state and generation, since anything may have happened meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from kt.broker.group.group_metadata import (
    GroupMetadata,
    GroupState,
    JoinResult,
    MemberMetadata,
    SyncResult,
)
from kt.broker.group.group_metadata_manager import (
    GroupMetadataManager,
    now_ms,
)
from kt.broker.task_set import TaskSet

log = logging.getLogger(__name__)

NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
EMPTY, PREPARING, COMPLETING, STABLE, DEAD = (
    GroupState.EMPTY,
    GroupState.PREPARING_REBALANCE,
    GroupState.COMPLETING_REBALANCE,
    GroupState.STABLE,
    GroupState.DEAD,
)


class GroupCoordinator:
    """Join/Sync/Heartbeat/Leave for the groups `manager` holds.

    Invariants: a group in PreparingRebalance has exactly one join timer; a group in
    CompletingRebalance or Stable whose members have not all synced has a sync timer;
    every member has a session timer while it is in the group.
    """

    def __init__(
        self,
        manager: GroupMetadataManager,
        *,
        min_session_timeout_ms: int = 6000,
        max_session_timeout_ms: int = 1800000,
        initial_rebalance_delay_ms: int = 3000,
        max_group_size: int = 2147483647,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.manager = manager
        self.min_session_timeout_ms = min_session_timeout_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        self.initial_rebalance_delay_ms = initial_rebalance_delay_ms
        self.max_group_size = max_group_size
        self.clock = clock
        self._tasks = TaskSet()

    # -- helpers --------------------------------------------------------------------

    def _later(self, delay_ms: float, callback: Callable[..., None], *args: Any) -> Any:
        return asyncio.get_running_loop().call_later(max(delay_ms, 0) / 1000, callback, *args)

    def group_error(self, group_id: str | None) -> str:
        if not group_id:
            return "INVALID_GROUP_ID"
        return self.manager.group_status(group_id)

    # -- JoinGroup ------------------------------------------------------------------

    async def join_group(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        require_known_member_id: bool,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
    ) -> JoinResult:
        error = self.group_error(group_id)
        if error != "NONE":
            return JoinResult(error, member_id)
        if not self.min_session_timeout_ms <= session_timeout_ms <= self.max_session_timeout_ms:
            return JoinResult("INVALID_SESSION_TIMEOUT", member_id)
        unknown = member_id == ""
        group = self.manager.get_group(group_id)
        if group is not None and (group.share is not None or group.streams is not None):
            return JoinResult("INCONSISTENT_GROUP_PROTOCOL", "")  # a share or streams group's
        if group is not None and group.consumer is not None:
            if group.consumer.members:  # Kafka's group.consumer.migration.policy=disabled
                return JoinResult("GROUP_ID_NOT_FOUND", member_id)
            tombstones = self.manager.drop_consumer_group(group)
            self._tasks.spawn(self.manager.append(group_id, tombstones))
        if group is None:
            if not unknown:
                return JoinResult("UNKNOWN_MEMBER_ID", member_id)
            group = self.manager.add_group(GroupMetadata(group_id, EMPTY, self.clock()))
        if group.is_(DEAD):
            return JoinResult("COORDINATOR_NOT_AVAILABLE", member_id)
        if not group.supports_protocols(protocol_type, [name for name, _ in protocols]):
            return JoinResult("INCONSISTENT_GROUP_PROTOCOL", member_id)
        if unknown and len(group.members) + len(group.pending_members) >= self.max_group_size:
            return JoinResult("GROUP_MAX_SIZE_REACHED", member_id)
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[JoinResult] = loop.create_future()
        args = (client_id, client_host, rebalance_timeout_ms, session_timeout_ms, protocol_type)
        if unknown:
            new_id = group.generate_member_id(client_id, group_instance_id)
            if group_instance_id is not None:
                self._static_new_member_join(group, new_id, group_instance_id, args, protocols,
                                             waiter)  # fmt: skip
            elif require_known_member_id:
                group.pending_members.add(new_id)
                group.pending_expiry[new_id] = self._later(
                    session_timeout_ms, self._expire_pending_member, group, new_id
                )
                return JoinResult("MEMBER_ID_REQUIRED", new_id)
            else:
                self._add_member_and_rebalance(group, new_id, None, args, protocols, waiter)
        else:
            error = self._current_member_join(group, member_id, group_instance_id, args,
                                              protocols, waiter)  # fmt: skip
            if error != "NONE":
                return JoinResult(error, member_id)
        if group.is_(PREPARING):
            self._try_complete_join(group)
        return await waiter

    def _static_new_member_join(
        self,
        group: GroupMetadata,
        new_id: str,
        instance_id: str,
        args: tuple,
        protocols: list[tuple[str, bytes]],
        waiter: asyncio.Future[JoinResult],
    ) -> None:
        old_id = group.static_member_id(instance_id)
        if old_id is None:
            self._add_member_and_rebalance(group, new_id, instance_id, args, protocols, waiter)
            return
        # A restarted static member takes its old place (and assignment) under a new id.
        member = group.replace_static_member(instance_id, old_id, new_id)
        unchanged = member.matches(protocols)
        before = (member.rebalance_timeout_ms, member.session_timeout_ms, member.protocols)
        self._update_member(member, args, protocols, waiter)
        if group.is_(STABLE) and unchanged:
            self.schedule_session_expiry(group, member)
            self._tasks.spawn(self._persist_replacement(group, member, instance_id, old_id, before))
        elif group.is_(STABLE) or group.is_(COMPLETING):
            self._prepare_rebalance(group, f"static member {instance_id} rejoined")

    async def _persist_replacement(
        self, group: GroupMetadata, member: MemberMetadata, instance_id: str, old_id: str,
        before: tuple[int, int, list[tuple[str, bytes]]],
    ) -> None:  # fmt: skip
        """A static member replaced in a Stable group is answered once the group's new
        member id is written: a coordinator that took over would otherwise hold the old id
        and fence the running instance. A failed write puts the old member back and
        answers the error (GroupCoordinator.updateStaticMemberAndRebalance)."""
        new_id = member.member_id
        assignment = {m.member_id: m.assignment for m in group.members.values()}
        error = await self.manager.store_group(group, assignment)
        if error != "NONE":
            log.warning("Failed to persist the new member id %s of static member %s in group "
                        "%s: %s", new_id, instance_id, group.group_id, error)  # fmt: skip
            waiter = member.join_waiter
            member.join_waiter = None
            member.rebalance_timeout_ms, member.session_timeout_ms, member.protocols = before
            if group.members.get(new_id) is member:
                group.replace_static_member(instance_id, new_id, old_id)
                self.schedule_session_expiry(group, member)
            if waiter is not None and not waiter.done():
                waiter.set_result(JoinResult(error, new_id))
            return
        member.complete_join(JoinResult(
            "NONE", new_id, group.generation_id, group.protocol_type, group.protocol_name,
            group.leader_id or "", [], skip_assignment=group.is_leader(new_id),
        ))  # fmt: skip

    def _current_member_join(
        self,
        group: GroupMetadata,
        member_id: str,
        instance_id: str | None,
        args: tuple,
        protocols: list[tuple[str, bytes]],
        waiter: asyncio.Future[JoinResult],
    ) -> str:
        if member_id in group.pending_members:
            self._add_member_and_rebalance(group, member_id, None, args, protocols, waiter)
            return "NONE"
        if group.is_static_member_fenced(member_id, instance_id):
            return "FENCED_INSTANCE_ID"
        member = group.members.get(member_id)
        if member is None or (instance_id is not None and instance_id not in group.static_members):
            return "UNKNOWN_MEMBER_ID"
        state = group.state
        if state is PREPARING:
            self._update_member_and_rebalance(group, member, args, protocols, waiter)
        elif state is COMPLETING and member.matches(protocols):
            # It missed the JoinGroup answer: give it the current generation again.
            waiter.set_result(self._join_result(group, member))
        elif state is STABLE and not group.is_leader(member_id) and member.matches(protocols):
            waiter.set_result(self._join_result(group, member, with_members=False))
        elif state in (COMPLETING, STABLE):
            # The leader rejoining forces a rebalance (its topic metadata may have changed).
            self._update_member_and_rebalance(group, member, args, protocols, waiter)
        else:
            return "UNKNOWN_MEMBER_ID"
        return "NONE"

    def _join_result(
        self, group: GroupMetadata, member: MemberMetadata, with_members: bool = True
    ) -> JoinResult:
        leader = group.is_leader(member.member_id)
        return JoinResult(
            "NONE", member.member_id, group.generation_id, group.protocol_type,
            group.protocol_name, group.leader_id or "",
            group.current_member_metadata() if leader and with_members else [],
        )  # fmt: skip

    def _add_member_and_rebalance(
        self,
        group: GroupMetadata,
        member_id: str,
        instance_id: str | None,
        args: tuple,
        protocols: list[tuple[str, bytes]],
        waiter: asyncio.Future[JoinResult],
    ) -> None:
        client_id, client_host, rebalance_timeout, session_timeout, protocol_type = args
        member = MemberMetadata(
            member_id, instance_id, client_id, client_host, rebalance_timeout,
            session_timeout, protocol_type, list(protocols), is_new=True, join_waiter=waiter,
        )  # fmt: skip
        if group.is_(PREPARING) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member)
        # New members cannot heartbeat yet: they expire only if they never come back.
        self.schedule_session_expiry(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance(group, f"Adding new member {member_id}")

    def _update_member(
        self,
        member: MemberMetadata,
        args: tuple,
        protocols: list[tuple[str, bytes]],
        waiter: asyncio.Future[JoinResult],
    ) -> None:
        _, _, member.rebalance_timeout_ms, member.session_timeout_ms, _ = args
        member.protocols = list(protocols)
        member.complete_join(JoinResult("UNKNOWN_MEMBER_ID", member.member_id))
        member.join_waiter = waiter

    def _update_member_and_rebalance(
        self,
        group: GroupMetadata,
        member: MemberMetadata,
        args: tuple,
        protocols: list[tuple[str, bytes]],
        waiter: asyncio.Future[JoinResult],
    ) -> None:
        self._update_member(member, args, protocols, waiter)
        self._maybe_prepare_rebalance(group, f"Updating metadata for member {member.member_id}")

    # -- rebalance ------------------------------------------------------------------

    def _maybe_prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.can_rebalance:
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.is_(COMPLETING):
            self._reset_and_propagate_assignment_error(group, "REBALANCE_IN_PROGRESS")
        self._cancel_sync_timer(group)
        initial = group.is_(EMPTY)
        group.transition_to(PREPARING, self.clock())
        log.info("Preparing to rebalance group %s in state PreparingRebalance with old "
                 "generation %d (reason: %s)", group.group_id, group.generation_id,
                 reason)  # fmt: skip
        if group.join_timer is not None:
            group.join_timer.cancel()
        group.initial_join_delay = initial
        if initial:
            delay = self.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms - delay, 0)
            group.join_timer = self._later(delay, self._initial_join_expired, group, remaining)
        else:
            group.join_timer = self._later(
                group.rebalance_timeout_ms, self._complete_join, group
            )  # fmt: skip
            self._try_complete_join(group)

    def _initial_join_expired(self, group: GroupMetadata, remaining_ms: int) -> None:
        """InitialDelayedJoin: wait again while new members keep arriving."""
        if not group.is_(PREPARING):
            return
        if group.new_member_added and remaining_ms > 0:
            group.new_member_added = False
            delay = min(self.initial_rebalance_delay_ms, remaining_ms)
            rest = max(remaining_ms - self.initial_rebalance_delay_ms, 0)
            group.join_timer = self._later(delay, self._initial_join_expired, group, rest)
        else:
            self._complete_join(group)

    def _try_complete_join(self, group: GroupMetadata) -> None:
        """DelayedJoin.tryComplete: done once every member rejoined. An InitialDelayedJoin
        never completes early: it waits for the new members that are still coming."""
        if group.is_(PREPARING) and group.has_all_members_joined and not group.initial_join_delay:
            self._complete_join(group)

    def _complete_join(self, group: GroupMetadata) -> None:
        """DelayedJoin.onComplete: drop members that did not rejoin, start a generation."""
        if not group.is_(PREPARING):
            return
        if group.join_timer is not None:
            group.join_timer.cancel()
            group.join_timer = None
        group.initial_join_delay = False
        for member in group.not_yet_rejoined_members():
            if member.group_instance_id is None:
                log.info("Member %s in group %s has failed, removing it from the group",
                         member.member_id, group.group_id)  # fmt: skip
                group.remove(member.member_id)
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Nobody rejoined: wait another round for the session timeouts to clean up.
            group.join_timer = self._later(group.rebalance_timeout_ms, self._complete_join, group)
            return
        group.init_next_generation(self.clock())
        if group.is_(EMPTY):
            self._tasks.spawn(self.manager.store_group(group, {}))
            return
        log.info("Stabilized group %s generation %d with %d members", group.group_id,
                 group.generation_id, len(group.members))  # fmt: skip
        for member in list(group.members.values()):
            member.complete_join(self._join_result(group, member))
            self.schedule_session_expiry(group, member)
            member.is_new = False
        group.pending_sync_members = set(group.members)
        group.sync_timer = self._later(
            group.rebalance_timeout_ms, self._sync_expired, group, group.generation_id
        )

    def _reset_and_propagate_assignment_error(self, group: GroupMetadata, error: str) -> None:
        for member in group.members.values():
            member.assignment = b""
            if member.is_awaiting_sync:
                member.complete_sync(SyncResult(error))
                self.schedule_session_expiry(group, member)

    def _cancel_sync_timer(self, group: GroupMetadata) -> None:
        if group.sync_timer is not None:
            group.sync_timer.cancel()
            group.sync_timer = None
        group.pending_sync_members.clear()

    def _sync_expired(self, group: GroupMetadata, generation_id: int) -> None:
        """DelayedSync: members that never sent SyncGroup are removed; rebalance."""
        group.sync_timer = None
        if generation_id != group.generation_id or not group.pending_sync_members:
            return
        if group.state not in (COMPLETING, STABLE):
            return
        for member_id in list(group.pending_sync_members):
            member = group.remove(member_id)
            if member is not None:
                member.complete_sync(SyncResult("UNKNOWN_MEMBER_ID"))
        self._prepare_rebalance(group, "members did not sync in time")

    # -- session timeouts -----------------------------------------------------------

    def schedule_session_expiry(
        self, group: GroupMetadata, member: MemberMetadata, timeout_ms: int | None = None
    ) -> None:
        """completeAndScheduleNextHeartbeatExpiration: a heartbeat (or the equivalent)
        arrived; the member now has `timeout_ms` (its session timeout) for the next."""
        member.cancel_expiry()
        timeout = member.session_timeout_ms if timeout_ms is None else timeout_ms
        member.expiry = self._later(timeout, self._expire_member, group, member)

    def _expire_member(self, group: GroupMetadata, member: MemberMetadata) -> None:
        member.expiry = None
        if group.members.get(member.member_id) is not member:
            return
        if not member.is_new and (member.is_awaiting_join or member.is_awaiting_sync):
            self.schedule_session_expiry(group, member)  # waiting on the rebalance keeps it alive
            return
        log.info("Member %s in group %s has failed, removing it from the group",
                 member.member_id, group.group_id)  # fmt: skip
        self._remove_member_and_update_group(group, member)

    def _expire_pending_member(self, group: GroupMetadata, member_id: str) -> None:
        group.pending_expiry.pop(member_id, None)
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            if group.is_(PREPARING):
                self._try_complete_join(group)

    def _remove_member_and_update_group(self, group: GroupMetadata, member: MemberMetadata) -> None:
        member.complete_join(JoinResult("UNKNOWN_MEMBER_ID", member.member_id))
        member.complete_sync(SyncResult("UNKNOWN_MEMBER_ID"))
        group.remove(member.member_id)
        if group.state in (STABLE, COMPLETING):
            self._maybe_prepare_rebalance(group, f"removing member {member.member_id}")
        elif group.is_(PREPARING):
            self._try_complete_join(group)

    # -- SyncGroup ------------------------------------------------------------------

    async def sync_group(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: dict[str, bytes],
    ) -> SyncResult:
        error = self.group_error(group_id)
        if error == "COORDINATOR_LOAD_IN_PROGRESS":
            return SyncResult("REBALANCE_IN_PROGRESS")  # the member rejoins after loading
        if error != "NONE":
            return SyncResult(error)
        group = self.manager.get_group(group_id)
        if group is None:
            return SyncResult("UNKNOWN_MEMBER_ID")
        error = self._sync_precheck(group, generation_id, member_id, group_instance_id,
                                    protocol_type, protocol_name)  # fmt: skip
        if error != "NONE":
            return SyncResult(error)
        member = group.members[member_id]
        group.pending_sync_members.discard(member_id)
        if group.is_(STABLE):
            self.schedule_session_expiry(group, member)
            return SyncResult("NONE", group.protocol_type, group.protocol_name, member.assignment)
        waiter: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()
        member.complete_sync(SyncResult("REBALANCE_IN_PROGRESS"))
        member.sync_waiter = waiter
        if group.is_leader(member_id):
            full = {m: assignments.get(m, b"") for m in group.members}
            self._tasks.spawn(self._store_assignment(group, generation_id, full))
        return await waiter

    def _sync_precheck(
        self,
        group: GroupMetadata,
        generation_id: int,
        member_id: str,
        instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
    ) -> str:
        if group.is_(DEAD):
            return "COORDINATOR_NOT_AVAILABLE"
        if group.is_static_member_fenced(member_id, instance_id):
            return "FENCED_INSTANCE_ID"
        if not group.has(member_id):
            return "UNKNOWN_MEMBER_ID"
        if generation_id != group.generation_id:
            return "ILLEGAL_GENERATION"
        if protocol_type is not None and protocol_type != group.protocol_type:
            return "INCONSISTENT_GROUP_PROTOCOL"
        if protocol_name is not None and protocol_name != group.protocol_name:
            return "INCONSISTENT_GROUP_PROTOCOL"
        if group.is_(EMPTY):
            return "UNKNOWN_MEMBER_ID"
        if group.is_(PREPARING):
            return "REBALANCE_IN_PROGRESS"
        return "NONE"

    async def _store_assignment(
        self, group: GroupMetadata, generation_id: int, assignment: dict[str, bytes]
    ) -> None:
        error = await self.manager.store_group(group, assignment)
        # Another member may have joined meanwhile: act only on the same generation.
        if not (group.is_(COMPLETING) and group.generation_id == generation_id):
            return
        if error != "NONE":
            self._reset_and_propagate_assignment_error(group, error)
            self._maybe_prepare_rebalance(group, "error storing the group assignment")
            return
        for member in group.members.values():
            member.assignment = assignment.get(member.member_id, b"")
            if member.is_awaiting_sync:
                member.complete_sync(SyncResult(
                    "NONE", group.protocol_type, group.protocol_name, member.assignment
                ))  # fmt: skip
                self.schedule_session_expiry(group, member)
        group.transition_to(STABLE, self.clock())

    # -- Heartbeat, LeaveGroup --------------------------------------------------------

    def heartbeat(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> str:
        error = self.group_error(group_id)
        if error == "COORDINATOR_LOAD_IN_PROGRESS":
            return "NONE"  # the group is still loading: answer blindly
        if error != "NONE":
            return error
        group = self.manager.get_group(group_id)
        if group is None:
            return "UNKNOWN_MEMBER_ID"
        if group.is_(DEAD):
            return "COORDINATOR_NOT_AVAILABLE"
        if group.is_static_member_fenced(member_id, group_instance_id):
            return "FENCED_INSTANCE_ID"
        member = group.members.get(member_id)
        if member is None:
            return "UNKNOWN_MEMBER_ID"
        if generation_id != group.generation_id:
            return "ILLEGAL_GENERATION"
        if group.is_(EMPTY):
            return "UNKNOWN_MEMBER_ID"
        self.schedule_session_expiry(group, member)
        return "REBALANCE_IN_PROGRESS" if group.is_(PREPARING) else "NONE"

    def leave_group(
        self, group_id: str, leaving: list[tuple[str, str | None]]
    ) -> tuple[str, list[str]]:
        """(top-level error, an error per (member id, group instance id) leaving)."""
        error = self.group_error(group_id)
        if error != "NONE":
            return error, []
        group = self.manager.get_group(group_id)
        if group is None:
            return "NONE", ["UNKNOWN_MEMBER_ID" for _ in leaving]
        if group.is_(DEAD):
            return "COORDINATOR_NOT_AVAILABLE", []
        return "NONE", [self._leave_one(group, m, i) for m, i in leaving]

    def _leave_one(self, group: GroupMetadata, member_id: str, instance_id: str | None) -> str:
        fenced = member_id and group.is_static_member_fenced(member_id, instance_id)
        if fenced and instance_id is not None:
            return "FENCED_INSTANCE_ID"
        if member_id in group.pending_members:
            self._expire_pending_member(group, member_id)
            return "NONE"
        target = member_id or group.static_member_id(instance_id) or ""
        member = group.members.get(target)
        if member is None:
            return "UNKNOWN_MEMBER_ID"
        log.info("Member %s in group %s has left, removing it from the group",
                 target, group.group_id)  # fmt: skip
        self._remove_member_and_update_group(group, member)
        return "NONE"

    def adopt(self, group: GroupMetadata, rebalance_reason: str | None) -> None:
        """A consumer group became this classic group (KIP-848's online downgrade): its
        members' session timers start, and it rebalances unless `rebalance_reason` is None."""
        for member in group.members.values():
            self.schedule_session_expiry(group, member)
        if rebalance_reason is not None:
            self._prepare_rebalance(group, rebalance_reason)

    # -- the groups of a __consumer_offsets partition, loaded and dropped ---------------

    def on_loaded(self, groups: list[GroupMetadata]) -> None:
        """A partition's groups were loaded: their members' session timers start."""
        for group in groups:
            for member in group.members.values():
                self.schedule_session_expiry(group, member)

    def on_unloaded(self, groups: list[GroupMetadata]) -> None:
        """Leadership of their partition went elsewhere: the waiting members are told."""
        for group in groups:
            self._fail_group(group, "NOT_COORDINATOR")

    def _fail_group(self, group: GroupMetadata, error: str) -> None:
        group.drop_members(error)
        group.state = DEAD

    def shutdown(self) -> None:
        self.on_unloaded(list(self.manager.groups.values()))
        self._tasks.cancel_all()
