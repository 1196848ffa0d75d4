"""A streams group's topology and its configuration against the cluster's topics
(KIP-1071; Kafka 4.4's StreamsTopology and InternalTopicManager.configureTopics).

A Kafka Streams application sends its topology when a member joins: subtopologies, each
reading source topics (and repartition topics other subtopologies write), keeping state
in changelog topics, with groups of source topics that must be copartitioned. The group
coordinator stores it (the StreamsGroupTopology record) and configures it: the source
topics must exist; each repartition topic gets its partition count (fixed by the
topology, else the largest of the topics its writers read, followed across
subtopologies until every one is known), copartitioned topics must agree (repartition
topics among them follow the others), and each changelog topic gets the partition count
of its subtopology, the number of its tasks. What is missing is reported through the
heartbeat's status (a TopicConfigurationException's status and message) and the internal
topics are created by the broker; an impossible topology is STREAMS_INVALID_TOPOLOGY.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kt.broker.group.java_collections import java_hash_map_order

# StreamsGroupHeartbeatResponse.Status codes.
STALE_TOPOLOGY = 0
MISSING_SOURCE_TOPICS = 1
INCORRECTLY_PARTITIONED_TOPICS = 2
MISSING_INTERNAL_TOPICS = 3
SHUTDOWN_APPLICATION = 4
ASSIGNMENT_DELAYED = 5
MISSING_CLIENT_TAGS = 6

PartitionCount = Callable[[str], "int | None"]  # a topic's partitions, None if absent


class TopicConfigurationError(Exception):
    """The topics do not fit the topology yet: a heartbeat status (code and detail)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class InvalidTopologyError(Exception):
    """STREAMS_INVALID_TOPOLOGY, with Kafka's message."""


@dataclass(frozen=True)
class InternalTopic:
    """A repartition or changelog topic as the broker would create it."""

    name: str
    partitions: int
    replication_factor: int | None  # None: the broker's default
    configs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ConfiguredSubtopology:
    number_of_tasks: int
    source_topics: frozenset[str]
    repartition_source_topics: dict[str, InternalTopic]
    repartition_sink_topics: frozenset[str]
    state_changelog_topics: dict[str, InternalTopic]


@dataclass(frozen=True)
class ConfiguredTopology:
    """The topology fitted to the topics of one metadata hash: its subtopologies by id
    (None when it could not be configured), the internal topics still to create, and
    the status to report (None: ready)."""

    topology_epoch: int
    metadata_hash: int
    subtopologies: dict[str, ConfiguredSubtopology] | None
    topics_to_create: dict[str, InternalTopic]
    error: TopicConfigurationError | None

    @property
    def is_ready(self) -> bool:
        return self.error is None and self.subtopologies is not None


def configure_topics(topology: Any, metadata_hash: int,
                     partition_count: PartitionCount) -> ConfiguredTopology:  # fmt: skip
    """InternalTopicManager.configureTopics: `topology` a StreamsGroupTopologyValue
    (kt.broker.group.streams_group_records), `partition_count` the cluster's topics.
    InvalidTopologyError for a topology no topics can satisfy."""
    subtopologies = list(topology.subtopologies)
    try:
        _check_source_topics(subtopologies, partition_count)
        decided = _decide_partition_counts(subtopologies, partition_count)
        configured = {s.subtopology_id: _configured(s, partition_count, decided)
                      for s in sorted(subtopologies, key=lambda s: s.subtopology_id)}  # fmt: skip
        missing = _missing_internal_topics(configured, subtopologies, partition_count)
    except TopicConfigurationError as e:
        return ConfiguredTopology(topology.epoch, metadata_hash, None, {}, e)
    error = None
    if missing:
        error = TopicConfigurationError(MISSING_INTERNAL_TOPICS, "Internal topics are missing: "
                                        f"{_summary(java_hash_map_order(missing))}")  # fmt: skip
    return ConfiguredTopology(topology.epoch, metadata_hash, configured, missing, error)


def required_topics(subtopologies: Iterable[Any]) -> list[str]:
    """StreamsTopology.requiredTopics: every topic a subtopology names."""
    out: dict[str, None] = {}
    for s in subtopologies:
        for name in (*s.source_topics, *s.repartition_sink_topics,
                     *(t.name for t in s.repartition_source_topics),
                     *(t.name for t in s.state_changelog_topics)):  # fmt: skip
            out[name] = None
    return list(out)


def _check_source_topics(subtopologies: list[Any], partition_count: PartitionCount) -> None:
    missing = sorted({t for s in subtopologies for t in s.source_topics
                      if partition_count(t) is None})  # fmt: skip
    if missing:
        message = f"Source topics {_summary(missing)} are missing."
        raise TopicConfigurationError(MISSING_SOURCE_TOPICS, message)


def _decide_partition_counts(subtopologies: list[Any],
                             partition_count: PartitionCount) -> dict[str, int]:  # fmt: skip
    decided: dict[str, int] = {}
    count = _counter(partition_count, decided)
    decided.update(_repartition_counts(subtopologies, count))
    fixed = {t.name for s in subtopologies for t in s.repartition_source_topics if t.partitions}
    flexible = {t.name for s in subtopologies for t in s.repartition_source_topics
                if not t.partitions}  # fmt: skip
    for s in subtopologies:
        for group in _copartition_groups(s):
            decided.update(_enforce_copartitioning(group, fixed, flexible, count))
    for s in subtopologies:  # ChangelogTopics.setup
        if not _read_topics(s):
            raise InvalidTopologyError(f"No source topics found for subtopology {s.subtopology_id}")
        for changelog in s.state_changelog_topics:
            decided[changelog.name] = _number_of_tasks(s, count)
    return decided


def _counter(partition_count: PartitionCount,
             decided: dict[str, int]) -> Callable[[str], int | None]:  # fmt: skip
    """A topic's partitions: the cluster's, else the count decided for an internal topic."""

    def count(topic: str) -> int | None:
        found = partition_count(topic)
        return found if found is not None else decided.get(topic)

    return count


def _read_topics(subtopology: Any) -> list[str]:
    """The topics a subtopology's tasks read: its sources and repartition sources."""
    return [*subtopology.source_topics, *(t.name for t in subtopology.repartition_source_topics)]


def _number_of_tasks(subtopology: Any, count: Callable[[str], int | None]) -> int:
    """The most partitions of a topic the subtopology reads (computeNumberOfTasks)."""
    counts = [count(t) for t in _read_topics(subtopology)]
    if any(c is None for c in counts):
        raise InvalidTopologyError("Number of partitions must be set for every source topic")
    return max(c for c in counts if c is not None)


def _repartition_counts(subtopologies: list[Any],
                        count: Callable[[str], int | None]) -> dict[str, int]:  # fmt: skip
    """RepartitionTopics.setup: fixed counts, then each sink's from its writers' sources."""
    counts = {t.name: t.partitions for s in subtopologies for t in s.repartition_source_topics
              if t.partitions}  # fmt: skip
    while True:
        needed = progress = False
        for s in subtopologies:
            for sink in s.repartition_sink_topics:
                if sink in counts:
                    continue
                candidates = [counts.get(t.name) for t in s.repartition_source_topics]
                candidates += [count(t) for t in s.source_topics]
                known = [c for c in candidates if c is not None]
                if known:
                    counts[sink] = max(known)
                    progress = True
                else:
                    needed = True
        if not needed:
            break
        if not progress:
            raise InvalidTopologyError(
                "Failed to compute number of partitions for all repartition topics. There may "
                "be loops in the topology that cannot be resolved."
            )
    for s in subtopologies:
        if any(t.name not in counts for t in s.repartition_source_topics):
            raise InvalidTopologyError(
                "Failed to compute number of partitions for all repartition topics, because a "
                "repartition source topic is never used as a sink topic."
            )
    return counts


def _copartition_groups(subtopology: Any) -> list[set[str]]:
    return [{*(subtopology.source_topics[i] for i in g.source_topics),
             *(subtopology.repartition_source_topics[i].name for i in g.repartition_source_topics)}
            for g in subtopology.copartition_groups]  # fmt: skip


def _enforce_copartitioning(group: set[str], fixed: set[str], flexible: set[str],
                            count: Callable[[str], int | None]) -> dict[str, int]:  # fmt: skip
    """CopartitionedTopicsEnforcer.enforce: the repartition topics of a copartition group
    get the partitions the others share."""
    if not group:
        return {}

    def partitions(topic: str) -> int:
        found = count(topic)
        if found is None:
            raise InvalidTopologyError(f"Number of partitions is not set for topic: {topic}")
        return found

    repartition = {t: partitions(t) for t in group if t in fixed or t in flexible}
    others = {t: partitions(t) for t in group if t not in repartition}
    if set(repartition) == group:
        if fixed:
            first = partitions(next(iter(sorted(fixed))))
            if any(partitions(t) != first for t in fixed):
                raise TopicConfigurationError(INCORRECTLY_PARTITIONED_TOPICS, "Following topics "
                                              f"do not have the same number of partitions: "
                                              f"[{_java_map(repartition)}]")  # fmt: skip
            target = first
        else:
            target = max(repartition.values())
    else:
        target = next(iter(others.values()))
        if any(n != target for n in others.values()):
            raise TopicConfigurationError(INCORRECTLY_PARTITIONED_TOPICS, "Following topics do "
                                          "not have the same number of partitions: "
                                          f"[{_java_map(others)}]")  # fmt: skip
    for topic, n in repartition.items():
        if topic in fixed and n != target:
            raise TopicConfigurationError(
                INCORRECTLY_PARTITIONED_TOPICS,
                f"Number of partitions [{n}] of repartition topic [{topic}] doesn't match "
                f"number of partitions [{target}] of the source topic.",
            )
    return dict.fromkeys(repartition, target)


def _configured(s: Any, partition_count: PartitionCount,
                decided: dict[str, int]) -> ConfiguredSubtopology:  # fmt: skip
    return ConfiguredSubtopology(
        number_of_tasks=_number_of_tasks(s, _counter(partition_count, decided)),
        source_topics=frozenset(s.source_topics),
        repartition_source_topics={
            t.name: _internal(t, decided) for t in s.repartition_source_topics
        },  # fmt: skip
        repartition_sink_topics=frozenset(s.repartition_sink_topics),
        state_changelog_topics={t.name: _internal(t, decided) for t in s.state_changelog_topics},
    )


def _internal(info: Any, decided: dict[str, int]) -> InternalTopic:
    partitions = info.partitions or decided.get(info.name)
    if not partitions:
        raise InvalidTopologyError(f"Number of partitions must be set for topic {info.name}")
    return InternalTopic(info.name, partitions, info.replication_factor or None,
                         {c.key: c.value for c in info.topic_configs})  # fmt: skip


def _missing_internal_topics(
    configured: dict[str, ConfiguredSubtopology], subtopologies: list[Any],
    partition_count: PartitionCount,
) -> dict[str, InternalTopic]:  # fmt: skip
    wanted: dict[str, InternalTopic] = {}
    for s in configured.values():
        wanted.update(s.repartition_source_topics)
        wanted.update(s.state_changelog_topics)
    for topic in required_topics(subtopologies):
        existing = partition_count(topic)
        if existing is None:
            continue
        expected = wanted.pop(topic, None)
        if expected is not None and existing != expected.partitions:
            raise TopicConfigurationError(
                INCORRECTLY_PARTITIONED_TOPICS,
                f"Existing topic {topic} has different number of partitions: expected "
                f"{expected.partitions}, found {existing}",
            )
    return wanted


def _summary(topics: Iterable[str]) -> str:
    """InternalTopicManager.summarizeTopics: at most three names."""
    names = list(topics)
    if not names:
        return "<none>"
    more = f" and {len(names) - 3} additional topics" if len(names) > 3 else ""
    return ", ".join(names[:3]) + more


def _java_map(counts: dict[str, int]) -> str:
    """A TreeMap's toString: "{a=1, b=2}"."""
    return "{" + ", ".join(f"{k}={v}" for k, v in sorted(counts.items())) + "}"
