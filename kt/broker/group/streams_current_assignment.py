"""A streams group member's way from the tasks it holds to its target (KIP-1071; Kafka
4.4's streams CurrentAssignmentBuilder), one heartbeat at a time.

A member holds active tasks (each with the epoch it was assigned at, which fences
zombie commits), standby and warm-up tasks. When its target changes, what it must give
up is pending revocation (state UNREVOKED_TASKS, at its current epoch) until a heartbeat
shows it no longer owns any of it; then it moves to the target's epoch and gets the new
tasks, but only those no other member still holds in a way that conflicts (the same task
active elsewhere, or a replica of it held by another member of the same process): those
wait (UNRELEASED_TASKS) until they are released. A task that changes role within the
member moves at once: an active task demoted to standby, a standby turned warm-up (or
back), and a standby or warm-up promoted to active stays until the active is granted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from enum import IntEnum

Tasks = dict[str, set[int]]  # subtopology id -> partitions
TasksWithEpochs = dict[str, dict[int, int]]  # subtopology id -> partition -> epoch


class MemberState(IntEnum):
    STABLE = 1
    UNREVOKED_TASKS = 2
    UNRELEASED_TASKS = 3
    UNKNOWN = 127


class FencedMemberEpochError(Exception):
    """FENCED_MEMBER_EPOCH, with Kafka's message."""


@dataclass(frozen=True)
class TasksTuple:
    """Active, standby and warm-up tasks (a target, or what a member says it owns)."""

    active: Tasks = field(default_factory=dict)
    standby: Tasks = field(default_factory=dict)
    warmup: Tasks = field(default_factory=dict)

    def is_empty(self) -> bool:
        return not (self.active or self.standby or self.warmup)

    def contains_any(self, other: AssignedTasks) -> bool:
        return (_overlaps(self.active, {s: set(ps) for s, ps in other.active.items()})
                or _overlaps(self.standby, other.standby)
                or _overlaps(self.warmup, other.warmup))  # fmt: skip


@dataclass(frozen=True)
class AssignedTasks:
    """TasksTupleWithEpochs: a member's tasks, its active ones with their epochs."""

    active: TasksWithEpochs = field(default_factory=dict)
    standby: Tasks = field(default_factory=dict)
    warmup: Tasks = field(default_factory=dict)

    def is_empty(self) -> bool:
        return not (self.active or self.standby or self.warmup)

    def merge(self, other: AssignedTasks) -> AssignedTasks:
        active = {s: dict(ps) for s, ps in self.active.items()}
        for s, ps in other.active.items():
            active.setdefault(s, {}).update(ps)
        return AssignedTasks(active, _merged(self.standby, other.standby),
                             _merged(self.warmup, other.warmup))  # fmt: skip


EMPTY = AssignedTasks()


@dataclass(frozen=True)
class MemberAssignment:
    """The part of a streams group member that reconciliation moves."""

    process_id: str
    state: MemberState = MemberState.STABLE
    member_epoch: int = 0
    previous_member_epoch: int = 0
    assigned: AssignedTasks = EMPTY
    pending_revocation: AssignedTasks = EMPTY


ActiveOwner = Callable[[str, int], "str | None"]  # the process running a task, if any
ReplicaOwners = Callable[[str, int], "set[str]"]  # the processes holding it as a replica


def reconcile(
    member: MemberAssignment, target_epoch: int, target: TasksTuple,
    active_owner: ActiveOwner, standby_owners: ReplicaOwners, warmup_owners: ReplicaOwners,
    owned: TasksTuple | None,
) -> MemberAssignment:  # fmt: skip
    """CurrentAssignmentBuilder.build: the member after one heartbeat, `owned` what it
    said it owns (None when it did not say). FencedMemberEpochError for a member in an
    unknown state that does not come back empty."""
    step = _Step(member, target_epoch, target, active_owner, standby_owners, warmup_owners, owned)
    if member.state == MemberState.STABLE:
        if member.member_epoch != target_epoch:
            return step.next(member.member_epoch)
        return member
    if member.state == MemberState.UNREVOKED_TASKS:
        if step.not_released(member.pending_revocation):
            return member
        return step.next(member.member_epoch + 1)
    if member.state == MemberState.UNRELEASED_TASKS:
        return step.next(member.member_epoch)
    if owned is not None and owned.is_empty():
        return step.next(target_epoch)
    raise FencedMemberEpochError("The streams group member is in a unknown state. The member "
                                 "must abandon all its tasks and rejoin.")  # fmt: skip


@dataclass
class _Step:
    member: MemberAssignment
    target_epoch: int
    target: TasksTuple
    active_owner: ActiveOwner
    standby_owners: ReplicaOwners
    warmup_owners: ReplicaOwners
    owned: TasksTuple | None

    def not_released(self, pending: AssignedTasks) -> bool:
        """hasNotReleased: the member did not say what it owns, or still owns some."""
        return self.owned is None or self.owned.contains_any(pending)

    def next(self, member_epoch: int) -> MemberAssignment:
        """computeNextAssignment."""
        held = self.member.assigned
        active, active_revoked, active_granted, active_waits = _difference_with_epochs(
            held.active, self.target.active, self.target_epoch, self._unreleased_active
        )
        standby, standby_revoked, standby_granted, standby_waits = _difference(
            held.standby, self.target.standby, self._unreleased_standby
        )
        warmup, warmup_revoked, warmup_granted, warmup_waits = _difference(
            held.warmup, self.target.warmup, self._unreleased_warmup)  # fmt: skip
        for s, ps in held.active.items():  # demoted to standby: at once
            for p in ps:
                if p in standby_granted.get(s, ()):
                    _grant_now(standby_granted, standby, s, p)
        _convert_role(held.standby, standby_revoked, warmup_granted, warmup)
        _convert_role(held.warmup, warmup_revoked, standby_granted, standby)
        # promoted to active: no longer revoked, kept until the active is granted
        for replicas, revoked in ((held.standby, standby_revoked), (held.warmup, warmup_revoked)):
            for s, ps in replicas.items():
                for p in ps:
                    if p in self.target.active.get(s, ()):
                        _remove(revoked, s, p)
        revoking = AssignedTasks(active_revoked, standby_revoked, warmup_revoked)
        to_revoke = not revoking.is_empty() and self.not_released(revoking)
        for replicas, kept in ((held.standby, standby), (held.warmup, warmup)):
            for s, ps in replicas.items():
                for p in ps:
                    promoted_now = not to_revoke and p in active_granted.get(s, {})
                    if p in self.target.active.get(s, ()) and not promoted_now:
                        kept.setdefault(s, set()).add(p)
        assigned = AssignedTasks(active, standby, warmup)
        granted = AssignedTasks(active_granted, standby_granted, warmup_granted)
        waits = active_waits or standby_waits or warmup_waits
        if to_revoke:
            return self._moved(MemberState.UNREVOKED_TASKS, member_epoch, assigned, revoking)
        if not granted.is_empty():
            state = MemberState.UNRELEASED_TASKS if waits else MemberState.STABLE
            return self._moved(state, self.target_epoch, assigned.merge(granted), EMPTY)
        state = MemberState.UNRELEASED_TASKS if waits else MemberState.STABLE
        return self._moved(state, self.target_epoch, assigned, EMPTY)

    def _moved(self, state: MemberState, epoch: int, assigned: AssignedTasks,
               pending: AssignedTasks) -> MemberAssignment:  # fmt: skip
        return replace(self.member, state=state, member_epoch=epoch,
                       previous_member_epoch=self.member.member_epoch, assigned=assigned,
                       pending_revocation=pending)  # fmt: skip

    def _unreleased_active(self, s: str, p: int) -> bool:
        held = self.member.assigned
        return (self.active_owner(s, p) is not None
                or self._replica_elsewhere_here(self.standby_owners, held.standby, s, p)
                or self._replica_elsewhere_here(self.warmup_owners, held.warmup, s, p))  # fmt: skip

    def _unreleased_standby(self, s: str, p: int) -> bool:
        held, process = self.member.assigned, self.member.process_id
        run_elsewhere_here = self.active_owner(s, p) == process and p not in held.active.get(s, {})
        return (run_elsewhere_here or process in self.standby_owners(s, p)
                or self._replica_elsewhere_here(self.warmup_owners, held.warmup, s, p))  # fmt: skip

    def _unreleased_warmup(self, s: str, p: int) -> bool:
        held, process = self.member.assigned, self.member.process_id
        return (self.active_owner(s, p) == process
                or self._replica_elsewhere_here(self.standby_owners, held.standby, s, p)
                or process in self.warmup_owners(s, p))  # fmt: skip

    def _replica_elsewhere_here(self, owners: ReplicaOwners, held: Tasks, s: str, p: int) -> bool:
        """heldByAnotherMemberOnThisProcess."""
        return self.member.process_id in owners(s, p) and p not in held.get(s, ())


def _difference(
    current: Mapping[str, set[int]], target: Mapping[str, set[int]],
    unreleased: Callable[[str, int], bool],
) -> tuple[Tasks, Tasks, Tasks, bool]:  # fmt: skip
    """(kept, pending revocation, granted, whether some target task waits for release)."""
    kept: Tasks = {}
    revoked: Tasks = {}
    granted: Tasks = {}
    waits = False
    for s in set(current) | set(target):
        have, want = set(current.get(s, ())), set(target.get(s, ()))
        stays, goes, comes = have & want, have - want, want - have
        waiting = {p for p in comes if unreleased(s, p)}
        waits |= bool(waiting)
        comes -= waiting
        for result, part in ((kept, stays), (revoked, goes), (granted, comes)):
            if part:
                result[s] = part
    return kept, revoked, granted, waits


def _difference_with_epochs(
    current: TasksWithEpochs, target: Mapping[str, set[int]], target_epoch: int,
    unreleased: Callable[[str, int], bool],
) -> tuple[TasksWithEpochs, TasksWithEpochs, TasksWithEpochs, bool]:  # fmt: skip
    """The same for active tasks: those kept keep their epochs, new ones get the target's."""
    kept: TasksWithEpochs = {}
    revoked: TasksWithEpochs = {}
    granted: TasksWithEpochs = {}
    waits = False
    for s in set(current) | set(target):
        have, want = current.get(s, {}), set(target.get(s, ()))
        stays = {p: e for p, e in have.items() if p in want}
        goes = {p: e for p, e in have.items() if p not in stays}
        comes = {p: target_epoch for p in want if p not in stays}
        waiting = {p for p in comes if unreleased(s, p)}
        waits |= bool(waiting)
        comes = {p: e for p, e in comes.items() if p not in waiting}
        for result, part in ((kept, stays), (revoked, goes), (granted, comes)):
            if part:
                result[s] = part
    return kept, revoked, granted, waits


def _convert_role(outgoing: Tasks, outgoing_revoked: Tasks, incoming_granted: Tasks,
                  incoming: Tasks) -> None:  # fmt: skip
    """A replica changing role (standby to warm-up or back) moves at once."""
    for s, ps in outgoing.items():
        for p in ps:
            if p in incoming_granted.get(s, ()):
                _grant_now(incoming_granted, incoming, s, p)
                _remove(outgoing_revoked, s, p)


def _grant_now(pending: Tasks, assigned: Tasks, s: str, p: int) -> None:
    _remove(pending, s, p)
    assigned.setdefault(s, set()).add(p)


def _remove(tasks: Mapping[str, object], s: str, p: int) -> None:
    partitions = tasks.get(s)
    if partitions is not None and p in partitions:
        if isinstance(partitions, dict):
            del partitions[p]
        else:
            partitions.discard(p)  # type: ignore[attr-defined]
        if not partitions:
            del tasks[s]  # type: ignore[attr-defined]


def _overlaps(mine: Mapping[str, set[int]], other: Mapping[str, set[int]]) -> bool:
    return any(s in other and ps & other[s] for s, ps in mine.items())


def _merged(first: Tasks, second: Tasks) -> Tasks:
    out = {s: set(ps) for s, ps in first.items()}
    for s, ps in second.items():
        out.setdefault(s, set()).update(ps)
    return out
