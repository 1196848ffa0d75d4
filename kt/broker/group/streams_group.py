"""A streams group (KIP-1071; Kafka 4.4's StreamsGroup and StreamsGroupMember): its
members, epochs, topology, target assignment and state, and the replay of its records
(kt.broker.group.streams_group_records) into it, for writes and loads alike.

The state follows from the rest (StreamsGroup.maybeUpdateGroupState): Empty without
members; NotReady until the group's topology is validated against the topics at its
epoch; Assigning while the group epoch is ahead of the target assignment's; Reconciling
while a member has not reached the target; else Stable. The group tracks which process
holds each task (active, standby, warm-up), which reconciliation reads to hold back a
task another member still has.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from kt.broker.group import streams_group_records as sr
from kt.broker.group.java_collections import java_hash_map_order
from kt.broker.group.streams_current_assignment import (
    EMPTY,
    AssignedTasks,
    MemberState,
    TasksTuple,
)

if TYPE_CHECKING:
    from kt.broker.group.group_metadata import GroupMetadata

EMPTY_STATE, NOT_READY, ASSIGNING, RECONCILING, STABLE, DEAD = (
    "Empty", "NotReady", "Assigning", "Reconciling", "Stable", "Dead")  # fmt: skip


@dataclass(frozen=True)
class StreamsGroupMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    topology_epoch: int = -1
    process_id: str = ""
    user_endpoint: tuple[str, int] | None = None
    client_tags: dict[str, str] = field(default_factory=dict)
    assigned: AssignedTasks = EMPTY
    pending_revocation: AssignedTasks = EMPTY

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state == MemberState.STABLE and self.member_epoch == epoch


class StreamsGroup:
    """One streams group's state on its coordinator."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 1
        self.members: dict[str, StreamsGroupMember] = {}
        self.static_members: dict[str, str] = {}  # instance id -> member id
        self.target_assignment: dict[str, TasksTuple] = {}
        self.assignment_epoch = 1
        self.assignment_timestamp = 0
        self.topology: Any = None  # a StreamsGroupTopologyValue
        self.configured_topology: Any = None  # a streams_topology.ConfiguredTopology
        self.metadata_hash = 0
        self.validated_topology_epoch = -1
        self.stored_description_topology_epoch = -1
        self.failed_description_topology_epoch = -1
        self.last_assignment_configs: dict[str, str] = {}
        self.state = EMPTY_STATE
        # In memory only (Kafka keeps them out of the log too): the topology fitted to the
        # topics, the topics version it was fitted at, each member's reported changelog
        # offsets, who asked the application to shut down, the endpoints' epoch.
        self.metadata_topics_version = -1
        self.task_offsets: dict[str, tuple[dict, dict]] = {}
        self.shutdown_request_member_id: str | None = None
        self.endpoint_information_epoch = 0
        self._active_owner: dict[tuple[str, int], str] = {}
        self._standby_owners: dict[tuple[str, int], set[str]] = {}
        self._warmup_owners: dict[tuple[str, int], set[str]] = {}

    # -- what reconciliation reads --------------------------------------------------------

    def active_owner(self, subtopology: str, partition: int) -> str | None:
        return self._active_owner.get((subtopology, partition))

    def standby_owners(self, subtopology: str, partition: int) -> set[str]:
        return self._standby_owners.get((subtopology, partition), set())

    def warmup_owners(self, subtopology: str, partition: int) -> set[str]:
        return self._warmup_owners.get((subtopology, partition), set())

    # -- offsets -----------------------------------------------------------------------------

    def validate_offset_commit(
        self, member_id: str, instance_id: str | None, member_epoch: int,
        transactional: bool, api_version: int, partitions: Iterable[tuple[str, int]],
    ) -> dict[tuple[str, int], str]:  # fmt: skip
        """StreamsGroup.validateOffsetCommit: an error name per (topic, partition). A
        member may commit with an epoch older than its current one for the tasks it has
        held since that epoch (their assignment epochs)."""
        partitions = list(partitions)
        if (member_epoch < 0 and not self.members) or (
            transactional and member_epoch == -1 and member_id == "" and instance_id is None
        ):
            return dict.fromkeys(partitions, "NONE")
        member = self.members.get(member_id)
        if member is None:
            error = "UNKNOWN_MEMBER_ID"
        elif not transactional and api_version < 9:
            error = "UNSUPPORTED_VERSION"
        elif member_epoch == member.member_epoch:
            error = "NONE"
        elif member_epoch > member.member_epoch or self.topology is None:
            error = "STALE_MEMBER_EPOCH"
        else:
            return {tp: self._commit_error(member, member_epoch, *tp) for tp in partitions}
        return dict.fromkeys(partitions, error)

    def _commit_error(self, member: StreamsGroupMember, epoch: int, topic: str,
                      partition: int) -> str:  # fmt: skip
        """The assignment epoch check of createAssignmentEpochValidator."""
        subtopology = None
        for s in self.topology.subtopologies:
            repartition = (t.name for t in s.repartition_source_topics)
            if topic in s.source_topics or topic in repartition:
                subtopology = s.subtopology_id
        if subtopology is None:
            return "STALE_MEMBER_EPOCH"
        assigned = member.assigned.active.get(subtopology, {}).get(partition)
        if assigned is None:
            assigned = member.pending_revocation.active.get(subtopology, {}).get(partition)
        if assigned is None or epoch < assigned:
            return "STALE_MEMBER_EPOCH"
        return "NONE"

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> str:
        """StreamsGroup.validateOffsetFetch: the error name."""
        if member_id is None and member_epoch < 0:
            return "NONE"
        member = self.members.get(member_id or "")
        if member is None:
            return "UNKNOWN_MEMBER_ID"
        return "NONE" if member_epoch == member.member_epoch else "STALE_MEMBER_EPOCH"

    def subscribed_topics(self) -> set[str]:
        """isSubscribedToTopic: the source and repartition source topics, while the group
        has members."""
        if self.state == EMPTY_STATE or self.topology is None:
            return set()
        topics = set()
        for s in self.topology.subtopologies:
            topics.update(s.source_topics, (r.name for r in s.repartition_source_topics))
        return topics

    # -- changes ----------------------------------------------------------------------------

    def update_member(self, member: StreamsGroupMember) -> None:
        old = self.members.get(member.member_id)
        self.members[member.member_id] = member
        if old is not None:
            self._forget_tasks(old)
            if old.instance_id is not None:
                self.static_members.pop(old.instance_id, None)
        self._note_tasks(member)
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        self.update_state()

    def remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        if old is not None:
            self._forget_tasks(old)
            if (
                old.instance_id is not None
                and self.static_members.get(old.instance_id) == member_id
            ):
                del self.static_members[old.instance_id]
        self.update_state()

    def update_state(self) -> None:
        """maybeUpdateGroupState."""
        if not self.members:
            self.state = EMPTY_STATE
        elif self.topology is None or self.topology.epoch != self.validated_topology_epoch:
            self.state = NOT_READY
        elif self.group_epoch > self.assignment_epoch:
            self.state = ASSIGNING
        elif any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            self.state = RECONCILING
        else:
            self.state = STABLE

    def _note_tasks(self, member: StreamsGroupMember) -> None:
        for tasks in (member.assigned, member.pending_revocation):
            for s, ps in tasks.active.items():
                for p in ps:
                    self._active_owner[(s, p)] = member.process_id
            for owners, replicas in ((self._standby_owners, tasks.standby),
                                     (self._warmup_owners, tasks.warmup)):  # fmt: skip
                for s, ps in replicas.items():
                    for p in ps:
                        owners.setdefault((s, p), set()).add(member.process_id)

    def _forget_tasks(self, member: StreamsGroupMember) -> None:
        for tasks in (member.assigned, member.pending_revocation):
            for s, ps in tasks.active.items():
                for p in ps:
                    if self._active_owner.get((s, p)) == member.process_id:
                        del self._active_owner[(s, p)]
            for owners, replicas in ((self._standby_owners, tasks.standby),
                                     (self._warmup_owners, tasks.warmup)):  # fmt: skip
                for s, ps in replicas.items():
                    for p in ps:
                        owners.get((s, p), set()).discard(member.process_id)


def apply(holder: GroupMetadata, record: sr.StreamsRecord, new: StreamsGroup | None = None) -> None:
    """Replay one record into `holder`'s streams group (created by the first record that
    is not a tombstone, `new` if given; dropped by the group's tombstone)."""
    if holder.streams is None:
        if record.value is None:
            return
        holder.streams = new if new is not None else StreamsGroup(holder.group_id)
    if not replay_into(holder.streams, record):
        holder.streams = None


def replay(groups: dict[str, StreamsGroup], record: sr.StreamsRecord) -> None:
    """Apply one streams group record (GroupMetadataManager.replay): a value creates the
    group if needed; tombstones remove the member, the target, or the group."""
    group = groups.get(record.group_id)
    if group is None:
        if record.value is None:
            return
        group = groups[record.group_id] = StreamsGroup(record.group_id)
    if not replay_into(group, record):
        del groups[record.group_id]


def replay_into(group: StreamsGroup, record: sr.StreamsRecord) -> bool:
    """Apply one record to `group`; False for the group's own tombstone (the group is
    gone: the caller drops it)."""
    value = record.value
    kind, member_id = record.type, record.member or ""
    if kind == sr.GROUP_METADATA:
        if value is None:
            return False
        group.group_epoch, group.metadata_hash = value.epoch, value.metadata_hash
        group.validated_topology_epoch = value.validated_topology_epoch
        group.stored_description_topology_epoch = value.stored_description_topology_epoch
        group.failed_description_topology_epoch = value.failed_description_topology_epoch
        group.last_assignment_configs = {c.key: c.value
                                         for c in value.last_assignment_configs or ()}  # fmt: skip
    elif kind == sr.TOPOLOGY:
        group.topology = value
        if value is None:
            group.configured_topology = None
    elif kind == sr.TARGET_ASSIGNMENT_METADATA:
        group.assignment_epoch, group.assignment_timestamp = (
            (value.assignment_epoch, value.assignment_timestamp) if value is not None else (-1, 0)
        )
    elif kind == sr.TARGET_ASSIGNMENT_MEMBER:
        if value is None:
            group.target_assignment.pop(member_id, None)
        else:
            group.target_assignment[member_id] = TasksTuple(
                _tasks(value.active_tasks), _tasks(value.standby_tasks), _tasks(value.warmup_tasks)
            )
    elif kind == sr.MEMBER_METADATA:
        if value is None:
            group.remove_member(member_id)
            group.task_offsets.pop(member_id, None)
            return True
        old = group.members.get(member_id) or StreamsGroupMember(member_id)
        endpoint = value.user_endpoint
        group.update_member(replace(
            old, instance_id=value.instance_id, rack_id=value.rack_id, client_id=value.client_id,
            client_host=value.client_host, rebalance_timeout_ms=value.rebalance_timeout_ms,
            topology_epoch=value.topology_epoch, process_id=value.process_id,
            user_endpoint=None if endpoint is None else (endpoint.host, endpoint.port),
            client_tags={t.key: t.value for t in value.client_tags}))  # fmt: skip
    elif kind == sr.CURRENT_MEMBER_ASSIGNMENT:
        old = group.members.get(member_id)
        if value is None:
            if old is not None:
                group.update_member(replace(old, member_epoch=-1, previous_member_epoch=-1,
                                            assigned=EMPTY, pending_revocation=EMPTY))  # fmt: skip
            return True
        group.update_member(replace(
            old or StreamsGroupMember(member_id), member_epoch=value.member_epoch,
            previous_member_epoch=value.previous_member_epoch, state=MemberState(value.state),
            assigned=_assigned(value.active_tasks, value.standby_tasks, value.warmup_tasks,
                               value.member_epoch),
            pending_revocation=_assigned(value.active_tasks_pending_revocation,
                                         value.standby_tasks_pending_revocation,
                                         value.warmup_tasks_pending_revocation,
                                         value.member_epoch)))  # fmt: skip
        return True
    group.update_state()
    return True


def _tasks(task_ids: Any) -> dict[str, set[int]]:
    return {t.subtopology_id: set(t.partitions) for t in task_ids}


def _assigned(active: Any, standby: Any, warmup: Any, member_epoch: int) -> AssignedTasks:
    """TasksTupleWithEpochs.fromCurrentAssignmentRecord: an active task's epoch from the
    record, else (no epochs, or not one per partition) the member's epoch."""
    with_epochs = {}
    for t in active:
        epochs = t.assignment_epochs
        if epochs is not None and len(epochs) == len(t.partitions):
            with_epochs[t.subtopology_id] = dict(zip(t.partitions, epochs, strict=True))
        else:
            with_epochs[t.subtopology_id] = dict.fromkeys(t.partitions, member_epoch)
    return AssignedTasks(with_epochs, _tasks(standby), _tasks(warmup))


# -- the records of changes (StreamsCoordinatorRecordHelpers) -------------------------------


def member_record(group_id: str, member: StreamsGroupMember) -> sr.StreamsRecord:
    """The member's metadata (type 19); client tags sorted by key."""
    V = sr.MemberMetadataValue
    endpoint = member.user_endpoint
    return sr.StreamsRecord(sr.MEMBER_METADATA, group_id, member.member_id, V(
        instance_id=member.instance_id, rack_id=member.rack_id, client_id=member.client_id,
        client_host=member.client_host, rebalance_timeout_ms=member.rebalance_timeout_ms,
        topology_epoch=member.topology_epoch, process_id=member.process_id,
        user_endpoint=None if endpoint is None else V.Endpoint(host=endpoint[0], port=endpoint[1]),
        client_tags=[V.KeyValue(key=k, value=v) for k, v in sorted(member.client_tags.items())],
    ))  # fmt: skip


def group_epoch_record(group_id: str, epoch: int, metadata_hash: int,
                       validated_topology_epoch: int, assignment_configs: dict[str, str],
                       stored_description_epoch: int = -1,
                       failed_description_epoch: int = -1) -> sr.StreamsRecord:  # fmt: skip
    """The group epoch (type 17), the assignment configs in their HashMap's order."""
    V = sr.GroupMetadataValue
    configs = [V.LastAssignmentConfig(key=k, value=assignment_configs[k])
               for k in java_hash_map_order(assignment_configs)]  # fmt: skip
    return sr.StreamsRecord(sr.GROUP_METADATA, group_id, None, V(
        epoch=epoch, metadata_hash=metadata_hash, validated_topology_epoch=validated_topology_epoch,
        last_assignment_configs=configs, stored_description_topology_epoch=stored_description_epoch,
        failed_description_topology_epoch=failed_description_epoch))  # fmt: skip


def target_record(group_id: str, member_id: str, target: TasksTuple) -> sr.StreamsRecord:
    """A member's target (type 21): subtopologies and partitions sorted."""
    V = sr.TargetAssignmentMemberValue

    def ids(tasks: dict[str, set[int]]) -> list:
        return [
            V.TaskIds(subtopology_id=s, partitions=sorted(ps)) for s, ps in sorted(tasks.items())
        ]

    return sr.StreamsRecord(sr.TARGET_ASSIGNMENT_MEMBER, group_id, member_id, V(
        active_tasks=ids(target.active), standby_tasks=ids(target.standby),
        warmup_tasks=ids(target.warmup)))  # fmt: skip


def target_epoch_record(group_id: str, epoch: int, timestamp: int) -> sr.StreamsRecord:
    value = sr.TargetAssignmentMetadataValue(assignment_epoch=epoch, assignment_timestamp=timestamp)
    return sr.StreamsRecord(sr.TARGET_ASSIGNMENT_METADATA, group_id, None, value)


def current_assignment_record(group_id: str, member: StreamsGroupMember) -> sr.StreamsRecord:
    """The member's epochs, state and tasks (type 22): active tasks with their epochs."""
    V = sr.CurrentMemberAssignmentValue

    def ids(tasks: dict[str, set[int]]) -> list:
        return [
            V.TaskIds(subtopology_id=s, partitions=sorted(ps)) for s, ps in sorted(tasks.items())
        ]

    def with_epochs(tasks: dict[str, dict[int, int]]) -> list:
        return [V.TaskIds(subtopology_id=s, partitions=sorted(ps),
                          assignment_epochs=[ps[p] for p in sorted(ps)])
                for s, ps in sorted(tasks.items())]  # fmt: skip

    held, pending = member.assigned, member.pending_revocation
    return sr.StreamsRecord(sr.CURRENT_MEMBER_ASSIGNMENT, group_id, member.member_id, V(
        member_epoch=member.member_epoch, previous_member_epoch=member.previous_member_epoch,
        state=int(member.state), active_tasks=with_epochs(held.active),
        standby_tasks=ids(held.standby), warmup_tasks=ids(held.warmup),
        active_tasks_pending_revocation=with_epochs(pending.active),
        standby_tasks_pending_revocation=ids(pending.standby),
        warmup_tasks_pending_revocation=ids(pending.warmup)))  # fmt: skip


def tombstone(kind: int, group_id: str, member_id: str | None = None) -> sr.StreamsRecord:
    return sr.StreamsRecord(kind, group_id, member_id, None)


def group_removal(group: StreamsGroup) -> list[sr.StreamsRecord]:
    """createGroupTombstoneRecords: every member's current assignment, target and
    metadata, the target's epoch, the group epoch and the topology."""
    group_id = group.group_id
    records = [tombstone(sr.CURRENT_MEMBER_ASSIGNMENT, group_id, m) for m in group.members]
    records += [tombstone(sr.TARGET_ASSIGNMENT_MEMBER, group_id, m) for m in group.members]
    records.append(tombstone(sr.TARGET_ASSIGNMENT_METADATA, group_id))
    records += [tombstone(sr.MEMBER_METADATA, group_id, m) for m in group.members]
    records.append(tombstone(sr.GROUP_METADATA, group_id))
    records.append(tombstone(sr.TOPOLOGY, group_id))
    return records
