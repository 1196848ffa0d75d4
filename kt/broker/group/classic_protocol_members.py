"""The classic protocol inside a consumer group (KIP-848's online migration).

While an application moves from classic to consumer-protocol clients (or back), a
consumer group holds members of both protocols. A classic member keeps sending JoinGroup,
SyncGroup, Heartbeat and LeaveGroup; the coordinator answers them from the consumer
group, as Kafka's GroupMetadataManager.classicGroup{Join,Sync,Heartbeat,Leave}ToConsumerGroup:

- JoinGroup is the member's heartbeat with its subscription: the member is created or
  updated, the target assignment recomputed if the group epoch moved, and the member
  reconciled one step (the partitions its JoinGroup says it owns count as owned). The
  answer comes at once, with the member epoch as generation; the member is never the
  leader, so it sends an empty SyncGroup.
- SyncGroup answers the member's current assignment, encoded at its subscription's
  version.
- Heartbeat answers REBALANCE_IN_PROGRESS when the member must rejoin: a newer target
  assignment, partitions to revoke, or partitions it waits for that are free now.
- A classic member that does not rejoin within its rebalance timeout once told to, or
  does not sync after joining, is fenced, like one whose session expires.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from kt.broker.group import consumer_group_records as cr
from kt.broker.group import consumer_protocol, group_migration
from kt.broker.group.consumer_group import (
    ClassicMemberMetadata,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    from_scratch,
    new_member_id,
)
from kt.broker.group.consumer_group_coordinator import ConsumerGroupCoordinator
from kt.broker.group.group_metadata import CONSUMER_PROTOCOL_TYPE, JoinResult, SyncResult
from kt.broker.group.heartbeat_request import GroupError, check_static_member

log = logging.getLogger(__name__)


class ClassicProtocolMembers:
    """The classic group APIs for the consumer groups of `coordinator`."""

    def __init__(self, coordinator: ConsumerGroupCoordinator) -> None:
        self.coordinator = coordinator

    def serves(self, group_id: str) -> bool:
        """Whether `group_id` is a consumer group with members (an empty one gives way to a
        classic group that joins it) that this broker coordinates now (the classic
        coordinator answers NOT_COORDINATOR and COORDINATOR_LOAD_IN_PROGRESS)."""
        manager = self.coordinator.manager
        holder = manager.get_group(group_id)
        return (
            holder is not None
            and holder.consumer is not None
            and bool(holder.consumer.members)
            and manager.group_status(group_id) == "NONE"
        )

    # -- JoinGroup ------------------------------------------------------------------------

    async def join_group(
        self,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        require_known_member_id: bool,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
    ) -> JoinResult:
        c = self.coordinator
        records: list[cr.CoordinatorRecord] = []
        unknown = member_id == ""
        try:
            group = c.consumer_group(group_id, False, records)
            if c.settings.migration_policy == group_migration.DISABLED:
                raise GroupError("INCONSISTENT_GROUP_PROTOCOL")
            if unknown:
                member_id = new_member_id()
            c.check_size(group, member_id, instance_id)
            names = [name for name, _ in protocols]
            if not group.supports_classic_protocols(protocol_type, names):
                raise GroupError("INCONSISTENT_GROUP_PROTOCOL")
            if unknown and instance_id is None and require_known_member_id:
                log.info("[GroupId %s] Dynamic member with unknown member id joins the consumer "
                         "group. Created a new member id %s and requesting the member to "
                         "rejoin with this id.", group_id, member_id)  # fmt: skip
                return JoinResult("MEMBER_ID_REQUIRED", member_id)
            if instance_id is None:
                member = _dynamic_member(group, member_id)
            else:
                member = self._static_member(group, member_id, instance_id, unknown, records)
            replaced = group.static_member(instance_id)
            downgrade = replaced is not None and group_migration.can_downgrade_on_replacement(
                group, replaced, c.settings.migration_policy, c.settings.classic_max_size
            )
            try:
                subscription = consumer_protocol.decode_subscription(protocols[0][1])
            except (ValueError, IndexError, UnicodeDecodeError) as e:
                raise GroupError("INCONSISTENT_GROUP_PROTOCOL", "Malformed embedded consumer "
                                 "protocol in subscription deserialization.") from e  # fmt: skip
            updated = replace(
                member,
                instance_id=instance_id if instance_id is not None else member.instance_id,
                rack_id=subscription.rack_id if subscription.rack_id else member.rack_id,
                rebalance_timeout_ms=rebalance_timeout_ms,
                server_assignor=None,
                subscribed_topic_names=subscription.topics,
                subscribed_topic_regex="",
                client_id=client_id,
                client_host=client_host,
                classic=ClassicMemberMetadata(session_timeout_ms, tuple(protocols)),
            )
            group_epoch, members = c.update_subscription(group, member, updated, records, False)
            owned = group_migration.owned_partitions(c.topics, subscription)
            if downgrade:
                assert replaced is not None
                rebalance = group.assignment_epoch < group_epoch
                if not rebalance:
                    updated = c.reconcile_to_current(group, updated, owned, records)
                records += c.downgrade(
                    group, set(), updated,
                    f"Downgrade group {group_id} from consumer to classic with stale "
                    "assignment." if rebalance else None,
                )  # fmt: skip
            else:
                updated = c.assign_and_reconcile(group, updated, members, group_epoch, owned,
                                                 records)  # fmt: skip
                c.apply(group_id, records)
        except GroupError as e:
            return JoinResult(e.error, member_id)
        error = await c.manager.write(group_id, records)
        if error != "NONE":
            return JoinResult(error, member_id)
        key = (group_id, updated.member_id)
        c.join_timers.cancel(key)
        if not downgrade:
            c.schedule_member_session(group_id, updated)
            c.sync_timers.schedule(key, rebalance_timeout_ms, c.fence_later, group_id,
                                   updated.member_id, None,
                                   "the member failed to sync within timeout.")  # fmt: skip
        return JoinResult(
            "NONE", updated.member_id, updated.member_epoch, CONSUMER_PROTOCOL_TYPE,
            protocols[0][0],
        )  # fmt: skip

    def _static_member(
        self,
        group: ConsumerGroup,
        member_id: str,
        instance_id: str,
        unknown: bool,
        records: list[cr.CoordinatorRecord],
    ) -> ConsumerGroupMember:
        """getOrMaybeSubscribeStaticConsumerGroupMember for a classic member: one joining
        without a member id takes over its instance's place (a classic member need not have
        left first); one with a member id must be the instance's."""
        existing = group.static_member(instance_id)
        if unknown:
            if existing is None:
                log.info("[GroupId %s] Static member %s with instance id %s joins the consumer "
                         "group using the classic protocol.", group.group_id, member_id,
                         instance_id)  # fmt: skip
                return ConsumerGroupMember(member_id)
            new = from_scratch(existing, member_id)
            self.coordinator.replace_static_member(group, existing, new, records)
            return new
        return check_static_member(existing, member_id, instance_id)

    # -- SyncGroup ------------------------------------------------------------------------

    async def sync_group(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: dict[str, bytes],
    ) -> SyncResult:
        """(`assignments` is a leader's; a classic member of a consumer group is never the
        leader, and what it sends is ignored.)"""
        c = self.coordinator
        try:
            group = c.consumer_group(group_id, False, [])
            member = self._classic_member(group, member_id, instance_id, generation_id)
            assert member.classic is not None
            if protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE:
                raise GroupError("INCONSISTENT_GROUP_PROTOCOL")
            if protocol_name is not None and protocol_name != member.classic.protocol_name:
                raise GroupError("INCONSISTENT_GROUP_PROTOCOL")
            self._throw_if_rebalance_in_progress(group, member)
            version = consumer_protocol.version_of(member.classic.protocols[0][1])
        except GroupError as e:
            return SyncResult(e.error)
        except ValueError:
            return SyncResult("UNKNOWN_SERVER_ERROR")
        c.sync_timers.cancel((group_id, member.member_id))
        c.schedule_member_session(group_id, member)
        partitions = {}
        for topic_id, ps in member.assigned.items():
            name = c.topics.topic_for_id(topic_id)
            if name is not None:
                partitions[name] = sorted(ps)
        return SyncResult("NONE", protocol_type, protocol_name,
                          consumer_protocol.encode_assignment(partitions, version))  # fmt: skip

    def _throw_if_rebalance_in_progress(
        self, group: ConsumerGroup, member: ConsumerGroupMember
    ) -> None:
        """A newer assignment than the member's: it rejoins first (unless it is revoking,
        which it finishes before the next rejoin)."""
        if (
            group.assignment_epoch > member.member_epoch
            and member.state != MemberState.UNREVOKED_PARTITIONS
        ):
            self._schedule_join_timeout(group.group_id, member)
            raise GroupError("REBALANCE_IN_PROGRESS")

    # -- Heartbeat ------------------------------------------------------------------------

    def heartbeat(
        self, group_id: str, member_id: str, instance_id: str | None, generation_id: int
    ) -> str:
        c = self.coordinator
        try:
            group = c.consumer_group(group_id, False, [])
            member = self._classic_member(group, member_id, instance_id, generation_id)
        except GroupError as e:
            return e.error
        c.schedule_member_session(group_id, member)
        if (
            member.member_epoch < group.assignment_epoch
            or member.state == MemberState.UNREVOKED_PARTITIONS
            or (member.state == MemberState.UNRELEASED_PARTITIONS
                and not group.waiting_on_unreleased_partition(member))
        ):  # fmt: skip
            self._schedule_join_timeout(group_id, member)
            return "REBALANCE_IN_PROGRESS"
        return "NONE"

    def _schedule_join_timeout(self, group_id: str, member: ConsumerGroupMember) -> None:
        c = self.coordinator
        c.join_timers.schedule_if_absent((group_id, member.member_id),
                                         member.rebalance_timeout_ms, c.fence_later, group_id,
                                         member.member_id, None, "the classic member failed "
                                         "to join within the rebalance timeout.")  # fmt: skip

    # -- LeaveGroup -----------------------------------------------------------------------

    async def leave_group(
        self, group_id: str, leaving: list[tuple[str, str | None]]
    ) -> tuple[str, list[str]]:
        """(top-level error, an error per (member id, group instance id)): the members
        found leave together, with one bump of the group epoch (or a downgrade)."""
        c = self.coordinator
        try:
            group = c.consumer_group(group_id, False, [])
        except GroupError:
            return "NONE", ["UNKNOWN_MEMBER_ID" for _ in leaving]
        errors = []
        gone: dict[str, ConsumerGroupMember] = {}
        for member_id, instance_id in leaving:
            try:
                member = _leaving_member(group, member_id, instance_id)
            except GroupError as e:
                errors.append(e.error)
                continue
            log.info("[GroupId %s] Member %s has left group through explicit `LeaveGroup` "
                     "request.", group_id, member.member_id)  # fmt: skip
            gone[member.member_id] = member
            errors.append("NONE")
        records = c.fence(group, list(gone.values()))
        error = await c.manager.write(group_id, records)
        return error, errors if error == "NONE" else []

    # -- checks ---------------------------------------------------------------------------

    def _classic_member(
        self, group: ConsumerGroup, member_id: str, instance_id: str | None, generation_id: int
    ) -> ConsumerGroupMember:
        """validateConsumerGroupMember, then: the member uses the classic protocol and its
        generation is its member epoch."""
        member = _known_member(group, member_id, instance_id)
        if member.classic is None:
            message = f"Member {member.member_id} does not use the classic protocol."
            raise GroupError("UNKNOWN_MEMBER_ID", message)
        if member.member_epoch != generation_id:
            message = (f"The request generation id {generation_id} is not equal to the member "
                       f"epoch {member.member_epoch} of member {member_id}.")  # fmt: skip
            raise GroupError("ILLEGAL_GENERATION", message)
        return member


def _dynamic_member(group: ConsumerGroup, member_id: str) -> ConsumerGroupMember:
    member = group.members.get(member_id)
    if member is None:
        log.info("[GroupId %s] Member %s joins the consumer group using the classic protocol.",
                 group.group_id, member_id)  # fmt: skip
        return ConsumerGroupMember(member_id)
    return member


def _known_member(
    group: ConsumerGroup, member_id: str, instance_id: str | None
) -> ConsumerGroupMember:
    if instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            message = f"Member {member_id} is not a member of group {group.group_id}."
            raise GroupError("UNKNOWN_MEMBER_ID", message)
        return member
    member = group.static_member(instance_id)
    if member is None:
        raise GroupError("UNKNOWN_MEMBER_ID", f"Member with instance id {instance_id} is not a "
                         f"member of group {group.group_id}.")  # fmt: skip
    if member.member_id != member_id:
        raise GroupError("FENCED_INSTANCE_ID",
                         f"Static member {member_id} with instance id {instance_id} was "
                         f"fenced by member {member.member_id}.")  # fmt: skip
    return member


def _leaving_member(
    group: ConsumerGroup, member_id: str, instance_id: str | None
) -> ConsumerGroupMember:
    """A LeaveGroup's member: by member id, or by instance id (an admin's removal names no
    member id)."""
    if instance_id is None or member_id:
        return _known_member(group, member_id, instance_id)
    member = group.static_member(instance_id)
    if member is None:
        raise GroupError("UNKNOWN_MEMBER_ID", f"Instance id {instance_id} is unknown.")
    return member
