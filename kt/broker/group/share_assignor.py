"""The share groups' `simple` assignor (Kafka's SimpleAssignor, its homogeneous and
heterogeneous builders).

Members of a share group share partitions: with more members than partitions each
partition goes to several members (the desired sharing: members / partitions, rounded
up), with fewer each member gets several partitions; the counts differ by one at most.
Assignments are sticky: a member keeps what it had as far as the balance allows, a
partition past its sharing loses its extra members, and the partitions short of their
sharing go to the members short of their count. When all members subscribe to the same
topics their partitions are balanced together; otherwise topic by topic, among the
topic's subscribers. Kafka visits members and partitions in its hash maps' order; kt
in sorted order, so the two may pick different (equally balanced) members.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Collection, Mapping

Assignment = dict[uuid.UUID, frozenset[int]]
Partition = tuple[uuid.UUID, int]


def assign(
    subscriptions: Mapping[str, frozenset[uuid.UUID]],
    assignable: Mapping[uuid.UUID, Collection[int]],
    current: Mapping[str, Assignment],
) -> dict[str, Assignment]:
    """Each member's target: `subscriptions` the topic ids each subscribes to,
    `assignable` each topic's assignable partitions (those with initialized state),
    `current` the previous target assignment."""
    members = sorted(subscriptions)
    if not members:
        return {}
    out: dict[str, set[Partition]] = {m: set() for m in members}
    topic_sets = {subscriptions[m] for m in members}
    if len(topic_sets) == 1:  # homogeneous
        (topics,) = topic_sets
        groups = [(sorted(topics, key=str), members)]
    else:
        every = sorted({t for m in members for t in subscriptions[m]}, key=str)
        groups = [([t], [m for m in members if t in subscriptions[m]]) for t in every]
    for topics, subscribers in groups:
        partitions = [(t, p) for t in topics for p in sorted(assignable.get(t, ()))]
        old = {m: {(t, p) for t, ps in current.get(m, {}).items() if t in topics for p in ps}
               for m in subscribers}  # fmt: skip
        for member, taken in _balanced(subscribers, partitions, old).items():
            out[member] |= taken
    return {m: _by_topic(ps) for m, ps in out.items()}


def _balanced(
    members: list[str], partitions: list[Partition], old: dict[str, set[Partition]]
) -> dict[str, set[Partition]]:
    """The homogeneous builder over `partitions` and `members` (in their order)."""
    if not partitions or not members:
        return {m: set() for m in members}
    sharing = math.ceil(len(members) / len(partitions))
    precise = sharing * len(partitions) / len(members)
    desired = {m: math.ceil(precise * (i + 1)) - math.ceil(precise * i)
               for i, m in enumerate(members)}  # fmt: skip
    valid = set(partitions)
    by_member = {m: sorted(old.get(m, set()) & valid, key=_order) for m in members}
    for m in members:  # revokeOverfilledMembers
        del by_member[m][desired[m] :]
    by_partition: dict[Partition, list[str]] = {p: [] for p in partitions}
    for m in members:
        for p in by_member[m]:
            by_partition[p].append(m)
    for p, holders in by_partition.items():  # revokeOversharedPartitions
        for m in holders[sharing:]:
            by_member[m].remove(p)
        del holders[sharing:]
    unfilled = [m for m in members if len(by_member[m]) < desired[m]]
    for p in partitions:  # assignRemainingPartitions, round robin over the unfilled
        holders = by_partition[p]
        tried = 0
        while len(holders) < sharing and unfilled and tried < len(unfilled):
            m = unfilled.pop(0)
            if m in holders:
                unfilled.append(m)
                tried += 1
                continue
            holders.append(m)
            by_member[m].append(p)
            tried = 0
            if len(by_member[m]) < desired[m]:
                unfilled.append(m)
    return {m: set(ps) for m, ps in by_member.items()}


def _order(p: Partition) -> tuple[str, int]:
    return str(p[0]), p[1]


def _by_topic(partitions: set[Partition]) -> Assignment:
    out: dict[uuid.UUID, set[int]] = {}
    for topic_id, partition in partitions:
        out.setdefault(topic_id, set()).add(partition)
    return {t: frozenset(ps) for t, ps in out.items()}
