"""Reconciliation: a member's next assignment on its way to its target (Kafka's
CurrentAssignmentBuilder).

From its current assignment a member keeps what is also in its target; what is not must
be revoked first (UNREVOKED_PARTITIONS: the member stays in its epoch until a heartbeat no
longer reports those partitions as owned); then it gets the target's partitions that no
other member holds any more, and moves to the target epoch (UNRELEASED_PARTITIONS while
some are still held elsewhere, else STABLE).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace

from kt.broker.group.consumer_group import Assignment, ConsumerGroupMember, MemberState

Owned = list[tuple[uuid.UUID, list[int]]] | None


def reconcile(
    member: ConsumerGroupMember,
    target_epoch: int,
    target: Assignment,
    partition_epoch: Callable[[uuid.UUID, int], int],
    owned: Owned,
) -> ConsumerGroupMember:
    """The member after one reconciliation step (itself when nothing can move)."""
    if member.state == MemberState.STABLE:
        if member.member_epoch != target_epoch:
            return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
        return member
    if member.state == MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.pending_revocation):
            return member
        return _next(member, member.member_epoch + 1, target_epoch, target, partition_epoch,
                     owned)  # fmt: skip
    if member.state == MemberState.UNRELEASED_PARTITIONS:
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
    # UNKNOWN (a state of a newer coordinator): start again from nothing.
    return _next(member, target_epoch, target_epoch, target, partition_epoch, owned)


def _owns_any(owned: Owned, partitions: Assignment) -> bool:
    if owned is None:
        return True  # not reported: assume still owned
    return any(p in partitions.get(topic_id, ()) for topic_id, ps in owned for p in ps)


def _next(
    member: ConsumerGroupMember,
    member_epoch: int,
    target_epoch: int,
    target: Assignment,
    partition_epoch: Callable[[uuid.UUID, int], int],
    owned: Owned,
) -> ConsumerGroupMember:
    """computeNextAssignment."""
    unreleased = False
    assigned: Assignment = {}
    revoking: Assignment = {}
    pending: Assignment = {}
    for topic_id in set(target) | set(member.assigned):
        wanted = target.get(topic_id, frozenset())
        current = member.assigned.get(topic_id, frozenset())
        kept = current & wanted
        to_revoke = current - kept
        to_assign = wanted - kept
        free = frozenset(p for p in to_assign if partition_epoch(topic_id, p) == -1)
        unreleased |= free != to_assign
        if kept:
            assigned[topic_id] = kept
        if to_revoke:
            revoking[topic_id] = to_revoke
        if free:
            pending[topic_id] = free
    epochs = {(t, p): member.assignment_epoch(t, p) for t, ps in assigned.items() for p in ps}
    if revoking and _owns_any(owned, revoking):
        return replace(member.with_epoch(member_epoch), state=MemberState.UNREVOKED_PARTITIONS,
                       assigned=assigned, pending_revocation=revoking,
                       assignment_epochs=epochs)  # fmt: skip
    if pending:
        for topic_id, partitions in pending.items():
            assigned[topic_id] = assigned.get(topic_id, frozenset()) | partitions
            epochs.update(((topic_id, p), target_epoch) for p in partitions)
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return replace(member.with_epoch(target_epoch), state=state, assigned=assigned,
                   pending_revocation={}, assignment_epochs=epochs)  # fmt: skip
