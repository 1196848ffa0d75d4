"""Streams group administration over a KafkaClient (Kafka's Admin listGroups for
streams groups and describeStreamsGroups; a streams group's offsets, their reset and
deletion and the group's deletion go through GroupAdmin's OffsetFetch, OffsetCommit,
OffsetDelete and DeleteGroups, as Kafka's Admin does): each request at the group's
coordinator, again after finding it anew while it moves."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kt.client.groups import GroupAdmin
from kt.errors import KafkaError
from kt.protocol import ApiKey
from kt.protocol import messages as m

Tasks = list[tuple[str, list[int]]]  # (subtopology id, partitions), as the broker sent them


@dataclass
class StreamsAssignment:
    active: Tasks = field(default_factory=list)
    standby: Tasks = field(default_factory=list)
    warmup: Tasks = field(default_factory=list)


@dataclass
class StreamsMember:
    member_id: str
    process_id: str
    client_id: str
    member_epoch: int
    is_classic: bool
    assignment: StreamsAssignment
    target: StreamsAssignment


@dataclass
class Subtopology:
    subtopology_id: str
    source_topics: list[str]
    repartition_source_topics: list[str]
    state_changelog_topics: list[str]


@dataclass
class StreamsGroupDescription:
    group_id: str
    state: str
    coordinator: tuple[int, str, int]  # (id, host, port)
    group_epoch: int = 0
    assignment_epoch: int = 0
    topology_epoch: int = 0
    assignor: str | None = None
    members: list[StreamsMember] = field(default_factory=list)
    subtopologies: list[Subtopology] = field(default_factory=list)

    def source_topics(self, repartition: bool = True) -> set[str]:
        """The topics the group commits offsets of: its source topics, and the repartition
        topics it reads."""
        topics: set[str] = set()
        for s in self.subtopologies:
            topics.update(s.source_topics)
            if repartition:
                topics.update(s.repartition_source_topics)
        return topics


class StreamsGroupAdmin:
    def __init__(self, groups: GroupAdmin) -> None:
        self.groups = groups

    def list_groups(self, states: list[str] | None = None) -> list[tuple[str, str]]:
        """(group id, state) of every streams group of every broker, sorted."""
        return self.groups.list_groups_of_type("streams", states)

    def describe(self, group_id: str) -> StreamsGroupDescription:
        """StreamsGroupDescribe; KafkaError for a group that is not a streams group."""
        coordinator = self.groups.find_coordinator(group_id)
        request = m.StreamsGroupDescribeRequest(group_ids=[group_id])
        response = self.groups._send_to_coordinator(
            group_id, ApiKey.STREAMS_GROUP_DESCRIBE, request, lambda r: r.groups[0].error_code
        )
        g = response.groups[0]
        if g.error_code:
            raise KafkaError(g.error_code, g.error_message or f"Group {group_id} not found.")
        members = [StreamsMember(
            x.member_id, x.process_id, x.client_id, x.member_epoch, x.is_classic,
            _assignment(x.assignment), _assignment(x.target_assignment),
        ) for x in g.members]  # fmt: skip
        topology = g.topology
        subtopologies = [Subtopology(
            s.subtopology_id, list(s.source_topics),
            [t.name for t in s.repartition_source_topics],
            [t.name for t in s.state_changelog_topics],
        ) for s in (topology.subtopologies or [] if topology is not None else [])]  # fmt: skip
        return StreamsGroupDescription(
            group_id, g.group_state, coordinator, g.group_epoch, g.assignment_epoch,
            topology.epoch if topology is not None else -1, g.assignor_name, members,
            subtopologies,
        )  # fmt: skip


def _assignment(a: Any) -> StreamsAssignment:
    def tasks(ids: Any) -> Tasks:
        return [(t.subtopology_id, list(t.partitions)) for t in ids]

    return StreamsAssignment(tasks(a.active_tasks), tasks(a.standby_tasks), tasks(a.warmup_tasks))
