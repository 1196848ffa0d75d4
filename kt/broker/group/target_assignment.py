"""A consumer group's target assignment for a new group epoch (Kafka's
TargetAssignmentBuilder and computePreferredServerAssignor): the members' subscriptions
resolved to topic ids and partition counts, the assignor the most members name (else the
broker's first), a replaced static member's target carried to its successor, and the
records: one for each member whose target changed, then the new assignment epoch."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable

from kt.broker.group import assignors
from kt.broker.group import consumer_group_records as cr
from kt.broker.group.consumer_group import Assignment, ConsumerGroup, ConsumerGroupMember
from kt.broker.group.subscribed_topics import TopicsView

log = logging.getLogger(__name__)


def preferred_assignor(members: Iterable[ConsumerGroupMember]) -> str | None:
    """computePreferredServerAssignor: the one most members name."""
    counts: dict[str, int] = {}
    for m in members:
        if m.server_assignor is not None:
            counts[m.server_assignor] = counts.get(m.server_assignor, 0) + 1
    if not counts:
        return None
    return max(sorted(counts), key=lambda name: counts[name])


def target_assignment(
    group: ConsumerGroup,
    members: dict[str, ConsumerGroupMember],
    topics: TopicsView,
    default_assignor: str,
    records: list[cr.CoordinatorRecord],
    epoch: int,
    now: int,
) -> dict[str, Assignment]:
    """Each member's target for `epoch`, `members` as they will be; its records appended."""
    name = preferred_assignor(members.values()) or default_assignor
    subscriptions = {}
    partitions: dict[uuid.UUID, int] = {}
    for member_id, member in members.items():
        topic_ids = set()
        for topic in group.member_topics(member):
            count = len(topics.topic_partitions(topic))
            if count:
                topic_id = topics.topic_id(topic)
                partitions[topic_id] = count
                topic_ids.add(topic_id)
        subscriptions[member_id] = assignors.MemberSubscription(
            frozenset(topic_ids), member.instance_id, member.rack_id
        )
    current = dict(group.target)
    for member_id, member in members.items():  # a replaced static member's target
        if member_id not in current and member.instance_id is not None:
            old = group.static_members.get(member.instance_id)
            if old is not None and old in current:
                current[member_id] = current[old]
    targets = assignors.assign(name, subscriptions, partitions, current)
    for member_id, target in targets.items():
        if target != group.target.get(member_id):
            records.append(cr.target_member(group.group_id, member_id, target))
    records.append(cr.target_epoch(group.group_id, epoch, now))
    log.info("[GroupId %s] Computed a new target assignment for epoch %d with '%s' "
             "assignor.", group.group_id, epoch, name)  # fmt: skip
    return targets
