"""The endpoints of a streams group's members for interactive queries
(StreamsGroup.buildEndpointToPartitions, EndpointToPartitionsManager): each member with a
user endpoint and the source partitions of its active and its standby and warm-up tasks."""

from __future__ import annotations

from kt.broker.group.streams_group import StreamsGroup, StreamsGroupMember
from kt.broker.group.streams_heartbeat_request import EndpointPartitions, Tasks
from kt.broker.group.subscribed_topics import TopicsView


def endpoints(
    group: StreamsGroup, updated: StreamsGroupMember, replaced: StreamsGroupMember | None,
    topics: TopicsView,
) -> list[EndpointPartitions]:  # fmt: skip
    """buildEndpointToPartitions: each member with a user endpoint, the member that
    heartbeats last."""
    others = [
        m
        for m_id, m in group.members.items()
        if m_id != updated.member_id and (replaced is None or m_id != replaced.member_id)
    ]
    out = []
    for member in [*others, updated]:
        if member.user_endpoint is None or group.configured_topology is None:
            continue
        subtopologies = group.configured_topology.subtopologies or {}
        active = {s: set(ps) for s, ps in member.assigned.active.items()}
        replicas: Tasks = {}
        for tasks in (member.assigned.standby, member.assigned.warmup):
            for s, ps in tasks.items():
                replicas.setdefault(s, set()).update(ps)
        out.append(
            EndpointPartitions(
                member.user_endpoint,
                partitions_of(active, subtopologies, topics),
                partitions_of(replicas, subtopologies, topics),
            )
        )
    return out


def partitions_of(tasks: Tasks, subtopologies: dict,
                  topics: TopicsView) -> list[tuple[str, list[int]]]:  # fmt: skip
    """The source and repartition source partitions of `tasks` (EndpointToPartitionsManager)."""
    out = []
    for s, ps in tasks.items():
        sub = subtopologies.get(s)
        if sub is None:
            continue
        for topic in sorted({*sub.source_topics, *sub.repartition_source_topics}):
            count = len(topics.topic_partitions(topic))
            partitions = sorted(p for p in ps if p < count)
            if partitions:
                out.append((topic, partitions))
    return out
