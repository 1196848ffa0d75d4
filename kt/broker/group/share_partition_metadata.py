"""Which share partitions of a share group have their state initialized on the share
coordinator (Kafka's ShareGroupStatePartitionMetadataInfo and the GroupMetadataManager
steps that change it, group-coordinator/.../GroupMetadataManager.java).

The group coordinator, not a share partition's leader, initializes a share partition's
state: when a heartbeat finds a subscribed topic's partitions neither initialized nor
being initialized, it records them as initializing (the ShareGroupStatePartitionMetadata
record), asks the share coordinator to initialize them (InitializeShareGroupState, at the
group epoch, start offset -1: share.auto.offset.reset decides at the first fetch; 0 for
the new partitions of a topic already known) and, once that is done, records them as
initialized (or drops them from initializing when it failed). Only initialized
partitions are assigned, so a member never fetches a partition without state. An
initialization that never completed is tried again after
group.share.initialize.retry.interval.ms. Deleting a share group's offsets of a topic
moves it to the deleting topics until its state is deleted.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

# group.share.initialize.retry.interval.ms
INITIALIZE_RETRY_INTERVAL_MS = 30000


@dataclass(frozen=True)
class InitTopic:
    """Kafka's InitMapValue: a topic's name, partitions, and when they were last asked
    for (in memory only; a loaded record's topics take the load's time)."""

    name: str
    partitions: frozenset[int]
    timestamp: int = -1


InitMap = dict[uuid.UUID, InitTopic]


@dataclass(frozen=True)
class SharePartitionMetadata:
    """The ShareGroupStatePartitionMetadata record's value."""

    initializing: InitMap = field(default_factory=dict)
    initialized: InitMap = field(default_factory=dict)
    deleting: dict[uuid.UUID, str] = field(default_factory=dict)  # topic id -> name


@dataclass(frozen=True)
class InitializeRequest:
    """The share partitions to initialize: topic id -> (partitions, start offset), all
    at `state_epoch` (the group epoch)."""

    group_id: str
    state_epoch: int
    topics: dict[uuid.UUID, tuple[frozenset[int], int]]

    def partitions(self) -> dict[uuid.UUID, frozenset[int]]:
        return {t: ps for t, (ps, _) in self.topics.items()}


def combine(initialized: Mapping[uuid.UUID, InitTopic],
            initializing: Mapping[uuid.UUID, InitTopic]) -> InitMap:  # fmt: skip
    """combineInitMaps: each topic's partitions of both; the second's name and time."""
    out: InitMap = {}
    for topic_id in initialized.keys() | initializing.keys():
        old = initialized.get(topic_id)
        new = initializing.get(topic_id)
        partitions = (old.partitions if old else frozenset()) | (
            new.partitions if new else frozenset())  # fmt: skip
        source = new or old
        assert source is not None
        out[topic_id] = InitTopic(source.name, partitions, source.timestamp)
    return out


def initialized_partitions(info: SharePartitionMetadata | None) -> dict[uuid.UUID, frozenset[int]]:
    """initializedShareGroupPartitions."""
    if info is None:
        return {}
    return {t: v.partitions for t, v in info.initialized.items()}


def topics_to_initialize(
    info: SharePartitionMetadata | None,
    subscribed: Iterable[str],
    topics: Mapping[str, tuple[uuid.UUID, int]],
    now: int,
    retry_interval_ms: int = INITIALIZE_RETRY_INTERVAL_MS,
) -> InitMap:
    """subscribedTopicsChangeMap: the partitions of the subscribed topics (`topics`: name
    -> (id, partition count), the existing ones) neither initialized nor being
    initialized since less than the retry interval."""
    known: InitMap = {}
    if info is not None:
        recent = {t: v for t, v in info.initializing.items()
                  if now - v.timestamp < retry_interval_ms}  # fmt: skip
        known = combine(info.initialized, recent)
    out: InitMap = {}
    for name in subscribed:
        if name not in topics:
            continue
        topic_id, count = topics[name]
        have = known[topic_id].partitions if topic_id in known else frozenset()
        if len(have) < count and topic_id not in out:
            out[topic_id] = InitTopic(name, frozenset(range(count)) - have, now)
    return out


def with_initializing(info: SharePartitionMetadata | None,
                      change: InitMap) -> SharePartitionMetadata:  # fmt: skip
    """addInitializingTopicsRecords: `change` joins the initializing topics (and leaves
    the deleting ones)."""
    if info is None:
        return SharePartitionMetadata(dict(change))
    deleting = {t: n for t, n in info.deleting.items() if t not in change}
    return SharePartitionMetadata(combine(info.initializing, change), dict(info.initialized),
                                  deleting)  # fmt: skip


def initialize_request(
    group_id: str, state_epoch: int, info: SharePartitionMetadata | None, change: InitMap
) -> InitializeRequest:
    """buildInitializeShareGroupStateRequest: a topic the group already knew gets its new
    partitions from offset 0; a new topic where share.auto.offset.reset says (-1)."""
    known = set(info.initialized) | set(info.initializing) if info is not None else set()
    return InitializeRequest(group_id, state_epoch, {
        t: (v.partitions, 0 if t in known else -1) for t, v in change.items()
    })  # fmt: skip


def with_initialized(info: SharePartitionMetadata | None,
                     done: Mapping[uuid.UUID, InitTopic]) -> SharePartitionMetadata:  # fmt: skip
    """initializeShareGroupState: `done` moves from initializing to initialized."""
    if info is None:
        return SharePartitionMetadata({}, dict(done))
    initializing = {}
    for topic_id, value in info.initializing.items():
        left = value.partitions - (done[topic_id].partitions if topic_id in done else frozenset())
        if left:
            initializing[topic_id] = InitTopic(value.name, left, value.timestamp)
    return SharePartitionMetadata(initializing, combine(info.initialized, done),
                                  dict(info.deleting))  # fmt: skip


def without_initializing(info: SharePartitionMetadata | None,
                         failed: Mapping[uuid.UUID, frozenset[int]]
                         ) -> SharePartitionMetadata | None:  # fmt: skip
    """uninitializeShareGroupState: `failed` leaves the initializing topics; None when
    nothing changes."""
    if info is None or not info.initializing or not failed:
        return None
    initializing = {}
    for topic_id, value in info.initializing.items():
        left = value.partitions - failed.get(topic_id, frozenset())
        if left:
            initializing[topic_id] = InitTopic(value.name, left, value.timestamp)
    return SharePartitionMetadata(initializing, dict(info.initialized), dict(info.deleting))


def assignment_pending(
    info: SharePartitionMetadata | None,
    subscribed: set[str],
    target: Iterable[Mapping[uuid.UUID, frozenset[int]]],
) -> bool:
    """initializedAssignmentPending: a subscribed topic's initialized partitions are not
    all in the target assignment (the group epoch is then bumped to assign them)."""
    if info is None or not info.initialized or not subscribed:
        return False
    assigned: dict[uuid.UUID, set[int]] = {}
    for assignment in target:
        for topic_id, partitions in assignment.items():
            assigned.setdefault(topic_id, set()).update(partitions)
    return any(
        value.name in subscribed and assigned.get(topic_id) != set(value.partitions)
        for topic_id, value in info.initialized.items()
    )
