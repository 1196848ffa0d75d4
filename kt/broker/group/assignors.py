"""The server-side assignors of consumer groups (`group.consumer.assignors`).

Kafka's UniformAssignor and RangeAssignor (group-coordinator/.../assignor/). Both take
the members' subscriptions (topic ids), the partition counts of the subscribed topics
and the current target assignment, and return the new target assignment.

- `uniform` (the default): as balanced as the subscriptions allow (counts differ by at
  most one among members with the same subscription) and sticky: a partition stays with
  the member that has it in the current target whenever balance permits, so a member
  joining or leaving moves as few partitions as it can.
- `range`: per topic, consecutive ranges of partitions to the subscribed members in
  order (static members first by instance id, then the others by member id), so that
  topics with as many partitions are co-partitioned.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from kt.broker.group.consumer_group import Assignment

UNIFORM, RANGE = "uniform", "range"
# Kafka's class names, as `group.consumer.assignors` may list them.
CLASS_NAMES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": UNIFORM,
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": RANGE,
}


@dataclass(frozen=True)
class MemberSubscription:
    topic_ids: frozenset[uuid.UUID]
    instance_id: str | None = None
    rack_id: str | None = None


class PartitionAssignorError(Exception):
    """PartitionAssignorException: the group cannot be assigned (a subscribed topic
    vanished between the metadata read and the assignment)."""


def assign(
    name: str,
    members: Mapping[str, MemberSubscription],
    partitions: Mapping[uuid.UUID, int],
    current: Mapping[str, Assignment],
) -> dict[str, Assignment]:
    """The target assignment by assignor `name`; every member has an entry."""
    if not members:
        return {}
    if name == RANGE:
        return _range(members, partitions)
    if len({s.topic_ids for s in members.values()}) == 1:
        return _uniform_homogeneous(members, partitions, current)
    return _uniform(members, partitions, current)


def _sorted_members(members: Mapping[str, MemberSubscription]) -> list[str]:
    """RangeAssignor.sortMemberIds: static members by instance id, then the rest by id."""
    return sorted(members, key=lambda m: (members[m].instance_id is None,
                                          members[m].instance_id or "", m))  # fmt: skip


def _range(
    members: Mapping[str, MemberSubscription], partitions: Mapping[uuid.UUID, int]
) -> dict[str, Assignment]:
    ordered = _sorted_members(members)
    result: dict[str, Assignment] = {m: {} for m in ordered}
    topics = sorted({t for s in members.values() for t in s.topic_ids if t in partitions},
                    key=str)  # fmt: skip
    for topic_id in topics:
        subscribed = [m for m in ordered if topic_id in members[m].topic_ids]
        count = partitions[topic_id]
        quota, extra = divmod(count, len(subscribed))
        start = 0
        for i, member_id in enumerate(subscribed):
            end = min(start + quota + (1 if i < extra else 0), count)
            if start < end:
                result[member_id][topic_id] = frozenset(range(start, end))
            start = end
    return result


def _uniform_homogeneous(
    members: Mapping[str, MemberSubscription],
    partitions: Mapping[uuid.UUID, int],
    current: Mapping[str, Assignment],
) -> dict[str, Assignment]:
    """UniformHomogeneousAssignmentBuilder (every member has the same subscription): each
    member keeps its current partitions up to its quota (the total over the members, one
    more for the first ones while some remain), and the partitions left go, in order, to
    the members under quota in member order: contiguous runs for a fresh group."""
    ordered = sorted(members)
    topics = sorted((t for t in next(iter(members.values())).topic_ids if t in partitions),
                    key=str)  # fmt: skip
    total = sum(partitions[t] for t in topics)
    quota, extra = divmod(total, len(ordered))
    taken: set[tuple[uuid.UUID, int]] = set()
    result: dict[str, Assignment] = {}
    room: list[tuple[str, int]] = []
    for member_id in ordered:
        allowed = quota + (1 if extra > 0 else 0)
        extra -= 1
        kept: dict[uuid.UUID, frozenset[int]] = {}
        for topic_id in topics:
            held = sorted(
                p
                for p in current.get(member_id, {}).get(topic_id, ())
                if p < partitions[topic_id] and (topic_id, p) not in taken
            )
            held = held[:allowed]
            allowed -= len(held)
            if held:
                kept[topic_id] = frozenset(held)
                taken.update((topic_id, p) for p in held)
        result[member_id] = kept
        if allowed > 0:
            room.append((member_id, allowed))
    left = iter([(t, p) for t in topics for p in range(partitions[t]) if (t, p) not in taken])
    for member_id, allowed in room:
        for topic_id, p in itertools.islice(left, allowed):
            result[member_id][topic_id] = result[member_id].get(topic_id, frozenset()) | {p}
    return result


def _uniform(
    members: Mapping[str, MemberSubscription],
    partitions: Mapping[uuid.UUID, int],
    current: Mapping[str, Assignment],
) -> dict[str, Assignment]:
    """Sticky and balanced. Each partition goes to one of its topic's subscribers: first
    its current owner where that owner is below its fair share, then the subscriber with
    the fewest partitions; then partitions move from the fullest to the emptiest
    eligible member until no move narrows the spread."""
    ordered = sorted(members)
    rank = {m: i for i, m in enumerate(ordered)}
    all_partitions = [(t, p) for t in sorted(partitions, key=str)
                      for p in range(partitions[t])
                      if any(t in members[m].topic_ids for m in ordered)]  # fmt: skip
    eligible = {t: [m for m in ordered if t in members[m].topic_ids] for t in partitions}
    owned: dict[str, set[tuple[uuid.UUID, int]]] = {m: set() for m in ordered}
    # Fair share per member: partitions of its topics spread over those topics' members.
    share = {m: 0.0 for m in ordered}
    for topic_id, subs in eligible.items():
        for m in subs:
            share[m] += partitions[topic_id] / len(subs)
    quota = {m: int(share[m]) + (1 if share[m] % 1 else 0) for m in ordered}
    previous_owner = {(t, p): m for m, a in current.items() if m in members
                      for t, ps in a.items() for p in ps}  # fmt: skip
    unassigned = []
    for tp in all_partitions:
        owner = previous_owner.get(tp)
        if (
            owner is not None
            and tp[0] in members[owner].topic_ids
            and len(owned[owner]) < quota[owner]
        ):
            owned[owner].add(tp)
        else:
            unassigned.append(tp)
    for tp in unassigned:
        subs = eligible[tp[0]]
        target = min(subs, key=lambda m: (len(owned[m]), rank[m]))
        owned[target].add(tp)
    _balance(owned, eligible, rank)
    result: dict[str, Assignment] = {}
    for m in ordered:
        by_topic: dict[uuid.UUID, set[int]] = {}
        for t, p in owned[m]:
            by_topic.setdefault(t, set()).add(p)
        result[m] = {t: frozenset(ps) for t, ps in by_topic.items()}
    return result


def _balance(
    owned: dict[str, set[tuple[uuid.UUID, int]]],
    eligible: Mapping[uuid.UUID, list[str]],
    rank: Mapping[str, int],
) -> None:
    """Move a partition from a fuller member to an eligible emptier one while the counts
    differ by more than one; each move lowers the sum of squares, so this ends."""
    moved = True
    while moved:
        moved = False
        for giver in sorted(owned, key=lambda m: (-len(owned[m]), rank[m])):
            for tp in sorted(owned[giver], key=lambda x: (str(x[0]), -x[1])):
                taker = min(eligible[tp[0]], key=lambda m: (len(owned[m]), rank[m]))
                if len(owned[giver]) - len(owned[taker]) > 1:
                    owned[giver].remove(tp)
                    owned[taker].add(tp)
                    moved = True
                    break
            if moved:
                break
