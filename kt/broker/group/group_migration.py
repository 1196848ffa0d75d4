"""Online migration between the classic and the consumer group protocols (KIP-848).

A classic group whose members use the consumer's embedded protocol becomes a consumer
group when a member of the new protocol joins it (an upgrade): its members keep their
assignments and epochs (the generation) and go on with JoinGroup, SyncGroup and Heartbeat
inside the consumer group. A consumer group whose last consumer-protocol member leaves,
while classic members remain, becomes a classic group again (a downgrade), each member
holding its target assignment, and rebalances. `group.consumer.migration.policy` says
which way is allowed (Kafka 4's default: both).

Kafka's ConsumerGroup.fromClassicGroup and createConsumerGroupRecords,
ClassicGroup.fromConsumerGroup, and GroupMetadataManager.validateOnlineUpgrade /
validateOnlineDowngradeWith*.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterable

from kt.broker.group import consumer_group_records as cr
from kt.broker.group import consumer_protocol
from kt.broker.group.consumer_group import (
    Assignment,
    ClassicMemberMetadata,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
)
from kt.broker.group.group_metadata import (
    CONSUMER_PROTOCOL_TYPE,
    GroupMetadata,
    GroupState,
    MemberMetadata,
)
from kt.broker.group.heartbeat_request import GroupError
from kt.broker.group.subscribed_topics import TopicsView, subscription_hash

log = logging.getLogger(__name__)

DISABLED, UPGRADE, DOWNGRADE, BIDIRECTIONAL = "disabled", "upgrade", "downgrade", "bidirectional"
POLICIES = (DISABLED, UPGRADE, DOWNGRADE, BIDIRECTIONAL)
_MALFORMED = (ValueError, IndexError, struct.error, UnicodeDecodeError)


def upgrade_enabled(policy: str) -> bool:
    return policy in (UPGRADE, BIDIRECTIONAL)


def downgrade_enabled(policy: str) -> bool:
    return policy in (DOWNGRADE, BIDIRECTIONAL)


# -- classic -> consumer -------------------------------------------------------------------


def validate_online_upgrade(holder: GroupMetadata, policy: str, max_size: int) -> None:
    """GroupError GROUP_ID_NOT_FOUND, with Kafka's message, when the classic group may not
    become a consumer group."""
    group_id = holder.group_id
    if not upgrade_enabled(policy):
        why = "online upgrade is disabled"
    elif holder.protocol_type != CONSUMER_PROTOCOL_TYPE:
        why = "the group does not use the consumer embedded protocol"
    elif len(holder.members) > max_size:
        why = "the group size exceeds the consumer group maximum size"
    else:
        return
    log.info("Cannot upgrade classic group %s to consumer group because %s.", group_id, why)
    message = f"Cannot upgrade classic group {group_id} to consumer group because {why}."
    raise GroupError("GROUP_ID_NOT_FOUND", message)


def consumer_group_from_classic(holder: GroupMetadata, topics: TopicsView) -> ConsumerGroup:
    """The consumer group a classic group becomes: its generation as group, assignment and
    member epoch, each member Stable with the partitions the classic leader gave it (also
    its target), its subscription from the embedded protocol. Built apart, not replayed:
    the records of `consumer_group_records` make it real."""
    group_id = holder.group_id
    group = ConsumerGroup(group_id)
    generation = holder.generation_id
    group.group_epoch = group.assignment_epoch = generation
    group.assignment_timestamp = 0
    for member in holder.members.values():
        try:
            assignment = consumer_protocol.decode_assignment(member.assignment)
            protocol = holder.protocol_name or member.protocol_names[0]
            subscription = consumer_protocol.decode_subscription(member.metadata_for(protocol))
        except _MALFORMED + (KeyError,) as e:
            log.warning("Cannot upgrade classic group %s to consumer group because the "
                        "embedded consumer protocol is malformed: %s.", group_id, e)  # fmt: skip
            raise GroupError("GROUP_ID_NOT_FOUND", f"Cannot upgrade classic group {group_id} "
                             "to consumer group because the embedded consumer protocol is "
                             "malformed.") from None  # fmt: skip
        if assignment.user_data:
            raise GroupError("GROUP_ID_NOT_FOUND", f"Cannot upgrade classic group {group_id} to "
                             "consumer group because an unsupported custom assignor is in use. "
                             "Please refer to the documentation or switch to a default assignor "
                             "before re-attempting the upgrade.")  # fmt: skip
        assigned = _by_topic_id(topics, assignment.partitions.items())
        new = ConsumerGroupMember(
            member.member_id, instance_id=member.group_instance_id,
            rack_id=subscription.rack_id, client_id=member.client_id,
            client_host=member.client_host, subscribed_topic_names=subscription.topics,
            rebalance_timeout_ms=member.rebalance_timeout_ms, member_epoch=generation,
            previous_member_epoch=generation, state=MemberState.STABLE, assigned=assigned,
            assignment_epochs={(t, p): generation for t, ps in assigned.items() for p in ps},
            classic=ClassicMemberMetadata(member.session_timeout_ms, tuple(member.protocols)),
        )  # fmt: skip
        group.target[new.member_id] = assigned
        group.put_member(new)
    group.metadata_hash = subscription_hash(topics, group, group.members.values())
    return group


def consumer_group_records(group: ConsumerGroup) -> list[cr.CoordinatorRecord]:
    """createConsumerGroupRecords: the records that write `group` as it stands."""
    group_id = group.group_id
    records = [cr.member_subscription(group_id, m) for m in group.members.values()]
    records.append(cr.group_epoch(group_id, group.group_epoch, group.metadata_hash))
    records += [cr.target_member(group_id, m, group.target_of(m)) for m in group.members]
    records.append(cr.target_epoch(group_id, group.assignment_epoch, group.assignment_timestamp))
    records += [cr.current_assignment(group_id, m) for m in group.members.values()]
    return records


def owned_partitions(
    topics: TopicsView, subscription: consumer_protocol.Subscription
) -> list[tuple]:
    """The partitions a classic member says it owns, by topic id (unknown topics left out)."""
    return [(t, sorted(ps)) for t, ps in _by_topic_id(topics, subscription.owned).items()]


def _by_topic_id(topics: TopicsView, partitions: Iterable[tuple[str, Iterable[int]]]) -> Assignment:
    out: dict = {}
    for name, ps in partitions:
        if topics.topic_partitions(name):
            topic_id = topics.topic_id(name)
            out[topic_id] = out.get(topic_id, frozenset()) | frozenset(ps)
    return out


# -- consumer -> classic -------------------------------------------------------------------


def can_downgrade_after_leaving(
    group: ConsumerGroup, leaving: set[str], policy: str, classic_max_size: int
) -> bool:
    """validateOnlineDowngradeWithFencedMembers: the members left all use the classic
    protocol and the last consumer-protocol member is among `leaving`."""
    if not group.all_members_use_classic_protocol_except(leaving):
        return False
    remaining = len(group.members) - len(leaving & set(group.members))
    if remaining <= 0:
        return False
    return _downgrade_allowed(group.group_id, policy, remaining, classic_max_size)


def can_downgrade_on_replacement(
    group: ConsumerGroup, replaced: ConsumerGroupMember, policy: str, classic_max_size: int
) -> bool:
    """validateOnlineDowngradeWithReplacedMember: a classic static member takes the place of
    the last consumer-protocol member."""
    if not group.all_members_use_classic_protocol_except({replaced.member_id}):
        return False
    return _downgrade_allowed(group.group_id, policy, len(group.members), classic_max_size)


def _downgrade_allowed(group_id: str, policy: str, size: int, classic_max_size: int) -> bool:
    if not downgrade_enabled(policy):
        log.info("Cannot downgrade consumer group %s to classic group because the online "
                 "downgrade is disabled.", group_id)  # fmt: skip
        return False
    if size > classic_max_size:
        log.info("Cannot downgrade consumer group %s to classic group because its group size "
                 "is greater than classic group max size.", group_id)  # fmt: skip
        return False
    return True


def classic_group_tombstones(
    group: ConsumerGroup, replaced: str | None = None, joining: str | None = None
) -> list[cr.CoordinatorRecord]:
    """createGroupTombstoneRecords(WithReplacedMember): the consumer group's records
    deleted, the replaced member's under the id of the one joining in its place."""
    group_id = group.group_id

    def ids() -> list[str]:
        return [joining if m == replaced and joining else m for m in group.members]

    records = [cr.CoordinatorRecord(cr.CURRENT_MEMBER_ASSIGNMENT, group_id, m, None) for m in ids()]
    records += [cr.CoordinatorRecord(cr.TARGET_ASSIGNMENT_MEMBER, group_id, m, None) for m in ids()]
    records.append(cr.CoordinatorRecord(cr.TARGET_ASSIGNMENT_METADATA, group_id, None, None))
    records += [cr.CoordinatorRecord(cr.MEMBER_METADATA, group_id, m, None) for m in ids()]
    records += [cr.regex(group_id, pattern, None) for pattern in group.regexes]
    records.append(cr.CoordinatorRecord(cr.GROUP_METADATA, group_id, None, None))
    return records


def fill_classic_group(
    holder: GroupMetadata,
    group: ConsumerGroup,
    leaving: set[str],
    joining: ConsumerGroupMember | None,
    topics: TopicsView,
    now: int,
) -> dict[str, bytes]:
    """ClassicGroup.fromConsumerGroup into `holder` (whose consumer group is gone): Stable
    in the group epoch as generation, the members but `leaving` (and the one `joining`
    replaces) each with its target assignment, encoded at its subscription's version.
    Returns the assignments, for the group's metadata record."""
    holder.state = GroupState.STABLE
    holder.current_state_timestamp = now
    holder.generation_id = group.group_epoch
    holder.protocol_type = CONSUMER_PROTOCOL_TYPE
    holder.protocol_name = holder.leader_id = None
    kept = [m for m in group.members.values() if m.member_id not in leaving
            and (joining is None or joining.instance_id is None
                 or m.instance_id != joining.instance_id)]  # fmt: skip
    targets = {m.member_id: group.target_of(m.member_id) for m in kept}
    if joining is not None:
        replaced = group.static_member(joining.instance_id)
        assert replaced is not None, "the joining member replaces a static member"
        kept.append(joining)
        targets[joining.member_id] = group.target_of(replaced.member_id)
    for m in kept:
        assert m.classic is not None, "only classic members stay in a downgraded group"
        holder.add(MemberMetadata(
            m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
            m.classic.session_timeout_ms, CONSUMER_PROTOCOL_TYPE, list(m.classic.protocols),
        ))  # fmt: skip
    holder.protocol_name = holder.select_protocol()
    assignments = {}
    for member in holder.members.values():
        by_name: dict[str, list[int]] = {}
        for topic_id, partitions in targets[member.member_id].items():
            name = topics.topic_for_id(topic_id)
            if name is not None:
                by_name[name] = sorted(partitions)
        try:
            version = consumer_protocol.version_of(member.metadata_for(holder.protocol_name))
        except _MALFORMED as e:
            raise GroupError("GROUP_ID_NOT_FOUND", f"Cannot downgrade the classic group "
                             f"{holder.group_id}: {e}.") from None  # fmt: skip
        member.assignment = assignments[member.member_id] = consumer_protocol.encode_assignment(
            by_name, version
        )
    return assignments
