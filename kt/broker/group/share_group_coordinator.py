"""Share group membership (KIP-932): ShareGroupHeartbeat and its session timeout.

Kafka's GroupMetadataManager.shareGroupHeartbeat: the member is created or updated and
the group epoch bumped when a member joins or changes its subscription or the
subscribed topics change; the target assignment (the `simple` assignor) is recomputed
when the group epoch is ahead of it; the member takes its target at once (members share
partitions: nothing to revoke first). Only share partitions whose state the share
coordinator holds are assigned: a heartbeat finding subscribed partitions without state
has them initialized first (share_partition_metadata.py), and the group epoch is bumped
once they are, to assign them. Leaving (epoch -1) and an expired session remove the
member and bump the group epoch. Every change is a list of records, replayed into the
group and appended to `__consumer_offsets` with acks=all before the answer.

A share group lives in the GroupMetadata of its id (`.share`). Its id is not a consumer
or classic group's: one of those answers GROUP_ID_NOT_FOUND to a share member, and the
reverse, as on Kafka.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from kt.broker.group import share_assignor
from kt.broker.group import share_group_records as sr
from kt.broker.group import share_partition_metadata as spm
from kt.broker.group.group_config import (
    SHARE_HEARTBEAT_INTERVAL,
    SHARE_SESSION_TIMEOUT,
    GroupConfigs,
)
from kt.broker.group.group_metadata import GroupMetadata, GroupState
from kt.broker.group.group_metadata_manager import GroupMetadataManager, now_ms
from kt.broker.group.heartbeat_request import GroupError, HeartbeatResult, refuse_empty
from kt.broker.group.member_timers import MemberTimers
from kt.broker.group.modern_group import LEAVE_GROUP_MEMBER_EPOCH
from kt.broker.group.share_group import STABLE, Assignment, ShareGroup, ShareGroupMember
from kt.broker.group.subscribed_topics import TopicsView, topics_digest
from kt.broker.task_set import TaskSet

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ShareGroupSettings:
    """The broker's group.share.* membership settings."""

    max_size: int = 200
    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 5000
    initialize_retry_interval_ms: int = spm.INITIALIZE_RETRY_INTERVAL_MS


class StatePersister(Protocol):
    """The share coordinator's operations the group coordinator calls (Kafka's Persister),
    wherever the share coordinator runs; ShareStateError when refused."""

    async def initialize(self, key: Any, state_epoch: int, start: int) -> None: ...

    async def delete(self, key: Any) -> None: ...


@dataclass
class ShareHeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None
    subscribed_topic_names: list[str] | None
    client_id: str
    client_host: str


def validate(request: ShareHeartbeatRequest) -> None:
    """throwIfShareGroupHeartbeatRequestIsInvalid."""
    refuse_empty((request.member_id, "MemberId"), (request.group_id, "GroupId"),
                 (request.rack_id, "RackId"))  # fmt: skip
    if request.member_epoch == 0:
        if not request.subscribed_topic_names:
            message = "SubscribedTopicNames must be set in first request."
            raise GroupError("INVALID_REQUEST", message)
    elif request.member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
        raise GroupError("INVALID_REQUEST", "MemberEpoch is invalid.")


class ShareGroupCoordinator:
    """Share groups of the `__consumer_offsets` partitions `manager` holds."""

    def __init__(
        self,
        manager: GroupMetadataManager,
        topics: TopicsView,
        settings: ShareGroupSettings,
        persister: StatePersister,
        *,
        group_configs: GroupConfigs | None = None,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.manager = manager
        self.topics = topics
        self.settings = settings
        self.persister = persister
        self.group_configs = group_configs  # each group's share.* overrides
        self.clock = clock
        self.session_timers = MemberTimers()
        self._tasks = TaskSet()

    # -- ShareGroupHeartbeat -------------------------------------------------------------

    async def heartbeat(self, request: ShareHeartbeatRequest) -> HeartbeatResult:
        init = None
        try:
            validate(request)
            status = self.manager.group_status(request.group_id)
            if status != "NONE":
                raise GroupError(status)
            if request.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
                result, records = self._leave(request)
            else:
                result, records, init = self._heartbeat(request)
        except GroupError as e:
            return HeartbeatResult(e.error, e.message, request.member_id, request.member_epoch)
        error = await self.manager.write(request.group_id, records)
        if error != "NONE":
            return HeartbeatResult(error, None, result.member_id, result.member_epoch)
        if init is not None:
            self._tasks.spawn(self._initialize_state(init))
        return result

    def _heartbeat(
        self, request: ShareHeartbeatRequest
    ) -> tuple[HeartbeatResult, list, spm.InitializeRequest | None]:
        records: list[sr.ShareRecord] = []
        group_id, member_id = request.group_id, request.member_id
        joining = request.member_epoch == 0
        group = self.share_group(group_id, joining)
        member = self._member(group, request)
        names = request.subscribed_topic_names
        updated = replace(
            member,
            rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
            subscribed_topic_names=member.subscribed_topic_names if names is None
            else tuple(names),
            client_id=request.client_id, client_host=request.client_host,
        )  # fmt: skip
        bump = False
        if updated != member:
            records.append(sr.member_subscription(group_id, updated))
            bump = updated.subscribed_topic_names != member.subscribed_topic_names
        members = {**group.members, member_id: updated}
        group_epoch = group.group_epoch
        if group.assignment_epoch >= group_epoch and group.members:
            # initialized share partitions not assigned yet: a new assignment takes them
            bump |= spm.assignment_pending(group.partition_metadata, group.subscribed_names(),
                                           group.target.values())  # fmt: skip
        metadata_hash = group.metadata_hash
        version = self.topics.topics_version
        if bump or group.metadata_refresh_deadline != version:
            metadata_hash = _hash(self.topics, members.values())
            group.metadata_refresh_deadline = version
        if bump or metadata_hash != group.metadata_hash:
            group_epoch += 1
            records.append(sr.group_epoch(group_id, group_epoch, metadata_hash))
            log.info("[GroupId %s] Bumped group epoch to %d.", group_id, group_epoch)
        if group_epoch > group.assignment_epoch:
            target_epoch = group_epoch
            target = self._target_assignment(group, members, records, group_epoch)[member_id]
        else:
            target_epoch, target = group.assignment_epoch, group.target_of(member_id)
        reconciled = self._reconcile(updated, target_epoch, target, bump)
        if reconciled != updated:
            records.append(sr.current_assignment(group_id, reconciled))
        init = self._initialization(group, group_epoch, members.values(), records)
        self.apply(group_id, records)
        self._schedule_session_timeout(group_id, member_id)
        result = HeartbeatResult(
            member_id=member_id, member_epoch=reconciled.member_epoch,
            heartbeat_interval_ms=self._timing(group_id, SHARE_HEARTBEAT_INTERVAL),
        )  # fmt: skip
        if joining or names is not None or reconciled.assigned != member.assigned:
            result.assignment = reconciled.assigned
        return result, records, init

    def _member(self, group: ShareGroup, request: ShareHeartbeatRequest) -> ShareGroupMember:
        """getOrMaybeSubscribeShareGroupMember: a new member joins with epoch 0."""
        member_id = request.member_id
        member = group.members.get(member_id)
        if member is not None:
            _check_epoch(member, request.member_epoch)
            return member
        if request.member_epoch != 0:
            message = f"Member {member_id} is not a member of group {group.group_id}."
            raise GroupError("UNKNOWN_MEMBER_ID", message)
        if len(group.members) >= self.settings.max_size:
            raise GroupError("GROUP_MAX_SIZE_REACHED", "The share group has reached its maximum "
                             f"capacity of {self.settings.max_size} members.")  # fmt: skip
        log.info("[GroupId %s] Member %s joins the share group using the share protocol.",
                 group.group_id, member_id)  # fmt: skip
        return ShareGroupMember(member_id)

    def _reconcile(
        self, member: ShareGroupMember, target_epoch: int, target: Assignment, changed: bool
    ) -> ShareGroupMember:
        """ShareGroupAssignmentBuilder: the target at once, filtered to the subscription."""
        if member.member_epoch != target_epoch:
            return replace(member.with_epoch(target_epoch), state=STABLE,
                           assigned=self._subscribed(target, member))  # fmt: skip
        if changed:
            return replace(member, assigned=self._subscribed(target, member))
        return member

    def share_group(self, group_id: str, create: bool) -> ShareGroup:
        """getOrMaybeCreateShareGroup: a group of another kind is not a share group."""
        holder = self.manager.get_group(group_id)
        if holder is not None and holder.share is not None:
            return holder.share
        if holder is not None and (holder.consumer is not None or holder.streams is not None
                                   or holder.protocol_type is not None):  # fmt: skip
            raise GroupError("GROUP_ID_NOT_FOUND", f"Group {group_id} is not a share group.")
        if not create:
            raise GroupError("GROUP_ID_NOT_FOUND", f"Share group {group_id} not found.")
        return ShareGroup(group_id)

    def _subscribed(self, target: Assignment, member: ShareGroupMember) -> Assignment:
        """filterAssignedPartitions: only topics the member subscribes to."""
        ids = {self.topics.topic_id(t) for t in member.subscribed_topic_names
               if self.topics.topic_partitions(t)}  # fmt: skip
        return {t: ps for t, ps in target.items() if t in ids}

    def _target_assignment(
        self,
        group: ShareGroup,
        members: dict[str, ShareGroupMember],
        records: list[sr.ShareRecord],
        epoch: int,
    ) -> dict[str, Assignment]:
        """The simple assignor over the subscribed topics' initialized partitions."""
        initialized = spm.initialized_partitions(group.partition_metadata)
        assignable = {}
        subscriptions = {}
        for member_id, member in members.items():
            ids = set()
            for topic in member.subscribed_topic_names:
                count = len(self.topics.topic_partitions(topic))
                if count:
                    topic_id = self.topics.topic_id(topic)
                    assignable[topic_id] = frozenset(
                        p for p in initialized.get(topic_id, ()) if p < count
                    )
                    ids.add(topic_id)
            subscriptions[member_id] = frozenset(ids)
        targets = share_assignor.assign(subscriptions, assignable, group.target)
        for member_id, target in targets.items():
            if target != group.target.get(member_id):
                records.append(sr.target_member(group.group_id, member_id, target))
        records.append(sr.target_epoch(group.group_id, epoch, self.clock()))
        return targets

    # -- share partitions' state initialized -------------------------------------------

    def _initialization(
        self,
        group: ShareGroup,
        group_epoch: int,
        members: Iterable[ShareGroupMember],
        records: list[sr.ShareRecord],
    ) -> spm.InitializeRequest | None:
        """maybeCreateInitializeShareGroupStateRequest: the subscribed topics' partitions
        without state join the initializing ones (a record); the request for them."""
        subscribed = {t for m in members for t in m.subscribed_topic_names}
        topics = {}
        for name in subscribed:
            count = len(self.topics.topic_partitions(name))
            if count:
                topics[name] = (self.topics.topic_id(name), count)
        info = group.partition_metadata
        change = spm.topics_to_initialize(info, sorted(subscribed), topics, self.clock(),
                                          self.settings.initialize_retry_interval_ms)  # fmt: skip
        if not change:
            return None
        records.append(sr.partition_metadata(group.group_id, spm.with_initializing(info, change)))
        return spm.initialize_request(group.group_id, group_epoch, info, change)

    async def _initialize_state(self, request: spm.InitializeRequest) -> None:
        """Initialize the share partitions' state on the share coordinator, then record them
        as initialized, or no longer initializing when that failed (Kafka's
        persisterInitialize and its initialize/uninitializeShareGroupState writes)."""
        from kt.broker.share.share_coordinator import ShareStateError
        from kt.broker.share.share_state import SharePartitionKey

        group_id = request.group_id
        failure = None
        for topic_id in sorted(request.topics, key=str):
            partitions, start = request.topics[topic_id]
            for partition in sorted(partitions):
                key = SharePartitionKey(group_id, topic_id, partition)
                try:
                    await self.persister.initialize(key, request.state_epoch, start)
                except ShareStateError as e:
                    failure = e.error
                    break
            if failure is not None:
                break
        holder = self.manager.get_group(group_id)
        group = holder.share if holder is not None else None
        if group is None or self.manager.group_status(group_id) != "NONE":
            return
        info = group.partition_metadata
        if failure is None:
            done = {t: spm.InitTopic(self.topics.topic_for_id(t) or "<UNKNOWN>", ps, self.clock())
                    for t, ps in request.partitions().items()}  # fmt: skip
            value: spm.SharePartitionMetadata | None = spm.with_initialized(info, done)
        else:
            log.error("Unable to initialize share group state %s: %s.", group_id, failure)
            value = spm.without_initializing(info, request.partitions())
        if value is not None:
            records = [sr.partition_metadata(group_id, value)]
            self.apply(group_id, records)
            await self.manager.write(group_id, records)

    # -- leaving and fencing -------------------------------------------------------------

    def _leave(self, request: ShareHeartbeatRequest) -> tuple[HeartbeatResult, list]:
        group = self.share_group(request.group_id, False)
        member = group.members.get(request.member_id)
        if member is None:
            raise GroupError("UNKNOWN_MEMBER_ID", f"Member {request.member_id} is not a member "
                             f"of group {group.group_id}.")  # fmt: skip
        log.info("[GroupId %s] Member %s left the share group.", group.group_id, member.member_id)
        result = HeartbeatResult(member_id=request.member_id, member_epoch=request.member_epoch)
        return result, self._fence(group, member)

    def _fence(self, group: ShareGroup, member: ShareGroupMember) -> list:
        """shareGroupFenceMember: the member's records deleted, the group epoch bumped."""
        records: list[sr.ShareRecord] = sr.member_removal(group.group_id, member.member_id)
        remaining = [m for m in group.members.values() if m.member_id != member.member_id]
        epoch = group.group_epoch + 1
        records.append(sr.group_epoch(group.group_id, epoch, _hash(self.topics, remaining)))
        if not remaining:
            records.append(sr.target_epoch(group.group_id, epoch, 0))
        self.session_timers.cancel((group.group_id, member.member_id))
        self.apply(group.group_id, records)
        return records

    def _fence_later(self, group_id: str, member_id: str) -> None:
        holder = self.manager.get_group(group_id)
        group = holder.share if holder is not None else None
        if group is None or member_id not in group.members:
            return
        if self.manager.group_status(group_id) != "NONE":
            return
        log.info("[GroupId %s] Member %s fenced from the group because the member session "
                 "expired.", group_id, member_id)  # fmt: skip
        self._tasks.spawn(
            self.manager.write(group_id, self._fence(group, group.members[member_id]))
        )

    def _timing(self, group_id: str, name: str) -> int:
        """The group's share.session.timeout.ms or share.heartbeat.interval.ms: its group
        config, else the broker's."""
        if self.group_configs is not None:
            return self.group_configs.value(group_id, name)
        if name == SHARE_SESSION_TIMEOUT:
            return self.settings.session_timeout_ms
        return self.settings.heartbeat_interval_ms

    def _schedule_session_timeout(self, group_id: str, member_id: str) -> None:
        self.session_timers.schedule((group_id, member_id),
                                     self._timing(group_id, SHARE_SESSION_TIMEOUT),
                                     self._fence_later, group_id, member_id)  # fmt: skip

    # -- state and the log ---------------------------------------------------------------

    def apply(self, group_id: str, records: list[sr.ShareRecord]) -> None:
        """Replay `records` into the group (created by its first record, dropped by its
        tombstone)."""
        holder = self.manager.get_group(group_id)
        for record in records:
            if holder is None:
                holder = self.manager.add_group(GroupMetadata(group_id, GroupState.EMPTY,
                                                              self.clock()))  # fmt: skip
            sr.apply(holder, record)
        if (
            holder is not None
            and holder.share is None
            and holder.consumer is None
            and holder.streams is None
            and not (holder.offsets or holder.members or holder.protocol_type)
        ):
            self.manager.remove_group(holder)

    def on_loaded(self, groups: Iterable[GroupMetadata]) -> None:
        for holder in groups:
            if holder.share is not None:
                for member_id in holder.share.members:
                    self._schedule_session_timeout(holder.group_id, member_id)

    def on_unloaded(self, groups: Iterable[GroupMetadata]) -> None:
        for holder in groups:
            if holder.share is not None:
                for member_id in holder.share.members:
                    self.session_timers.cancel((holder.group_id, member_id))

    def shutdown(self) -> None:
        self.session_timers.cancel_all()
        self._tasks.cancel_all()

    # -- ShareGroupDescribe -------------------------------------------------------------

    def describe(self, group_id: str) -> tuple[str, str | None, ShareGroup | None]:
        status = self.manager.group_status(group_id)
        if status != "NONE":
            return status, None, None
        holder = self.manager.get_group(group_id)
        if holder is None or holder.share is None:
            message = (f"Group {group_id} not found." if holder is None
                       else f"Group {group_id} is not a share group.")  # fmt: skip
            return "GROUP_ID_NOT_FOUND", message, None
        return "NONE", None, holder.share


def _hash(topics: TopicsView, members: Iterable[ShareGroupMember]) -> int:
    """The subscribed topics' digest (Kafka's MetadataHash; kt's own value)."""
    return topics_digest(topics, (t for m in members for t in m.subscribed_topic_names))


def _check_epoch(member: ShareGroupMember, received: int) -> None:
    """throwIfShareGroupMemberEpochIsInvalid."""
    if received == 0:
        return
    if received > member.member_epoch:
        raise GroupError("FENCED_MEMBER_EPOCH", "The share group member has a greater member "
                         f"epoch ({received}) than the one known by the group coordinator "
                         f"({member.member_epoch}). The member must abandon all its partitions "
                         "and rejoin.")  # fmt: skip
    if received < member.member_epoch and received != member.previous_member_epoch:
        raise GroupError("FENCED_MEMBER_EPOCH", "The share group member has a smaller member "
                         f"epoch ({received}) than the one known by the group coordinator "
                         f"({member.member_epoch}), and it does not match the previous member "
                         f"epoch ({member.previous_member_epoch}). The member must abandon all "
                         "its partitions and rejoin.")  # fmt: skip
