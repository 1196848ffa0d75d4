"""Share group administration over a KafkaClient (Kafka's Admin listGroups for share
groups, describeShareGroups, listShareGroupOffsets, alterShareGroupOffsets,
deleteShareGroupOffsets, deleteShareGroups): each request at the group's coordinator,
again after finding it anew while it moves."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kt.client.groups import GroupAdmin
from kt.errors import KafkaError
from kt.protocol import ApiKey
from kt.protocol import messages as m


@dataclass
class ShareMember:
    member_id: str
    client_id: str
    client_host: str
    member_epoch: int
    assignment: list[tuple[str, int]]


@dataclass
class ShareGroupDescription:
    group_id: str
    state: str
    coordinator: tuple[int, str, int]  # (id, host, port)
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: list[ShareMember] = field(default_factory=list)


@dataclass
class SharePartitionOffsets:
    """A share partition's start offset, leader epoch and lag; None where unknown."""

    start_offset: int | None
    leader_epoch: int | None
    lag: int | None


class ShareGroupAdmin:
    def __init__(self, groups: GroupAdmin) -> None:
        self.groups = groups

    def list_groups(self, states: list[str] | None = None) -> list[tuple[str, str]]:
        """(group id, state) of every share group of every broker, sorted."""
        return self.groups.list_groups_of_type("share", states)

    def describe(self, group_id: str) -> ShareGroupDescription:
        """ShareGroupDescribe; KafkaError for a group that is not a share group."""
        coordinator = self.groups.find_coordinator(group_id)
        request = m.ShareGroupDescribeRequest(group_ids=[group_id])
        response = self.groups._send_to_coordinator(
            group_id, ApiKey.SHARE_GROUP_DESCRIBE, request, lambda r: r.groups[0].error_code
        )
        g = response.groups[0]
        if g.error_code:
            raise KafkaError(g.error_code, g.error_message or f"Group {group_id} not found.")
        members = [ShareMember(
            x.member_id, x.client_id, x.client_host, x.member_epoch,
            [(t.topic_name, p) for t in x.assignment.topic_partitions for p in t.partitions],
        ) for x in g.members]  # fmt: skip
        return ShareGroupDescription(group_id, g.group_state, coordinator, g.group_epoch,
                                     g.assignment_epoch, members)  # fmt: skip

    def offsets(self, group_id: str) -> dict[tuple[str, int], SharePartitionOffsets]:
        """DescribeShareGroupOffsets of all the group's share partitions."""
        R = m.DescribeShareGroupOffsetsRequest
        request = R(groups=[R.DescribeShareGroupOffsetsRequestGroup(group_id=group_id,
                                                                   topics=None)])  # fmt: skip
        response = self.groups._send_to_coordinator(
            group_id, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, request,
            lambda r: r.groups[0].error_code,
        )  # fmt: skip
        g = response.groups[0]
        if g.error_code:
            raise KafkaError(g.error_code, g.error_message)
        out = {}
        for t in g.topics:
            for p in t.partitions:
                if p.error_code:
                    raise KafkaError(p.error_code, p.error_message)
                known = p.start_offset != -1
                out[(t.topic_name, p.partition_index)] = SharePartitionOffsets(
                    p.start_offset if known else None, p.leader_epoch if known else None,
                    p.lag if p.lag != -1 else None,
                )  # fmt: skip
        return out

    def alter_offsets(self, group_id: str, offsets: dict[tuple[str, int], int]) -> None:
        R = m.AlterShareGroupOffsetsRequest
        by_topic: dict[str, list[Any]] = {}
        for (topic, partition), offset in offsets.items():
            by_topic.setdefault(topic, []).append(
                R.AlterShareGroupOffsetsRequestPartition(partition_index=partition,
                                                         start_offset=offset))  # fmt: skip
        request = R(group_id=group_id, topics=[
            R.AlterShareGroupOffsetsRequestTopic(topic_name=t, partitions=ps)
            for t, ps in by_topic.items()])  # fmt: skip
        response = self.groups._send_to_coordinator(
            group_id, ApiKey.ALTER_SHARE_GROUP_OFFSETS, request, lambda r: r.error_code
        )
        if response.error_code:
            raise KafkaError(response.error_code, response.error_message)
        for t in response.responses:
            for p in t.partitions:
                if p.error_code:
                    raise KafkaError(p.error_code, p.error_message)

    def delete_offsets(
        self, group_id: str, topics: list[str]
    ) -> tuple[KafkaError | None, dict[str, KafkaError | None]]:
        """(the request's error, each topic's error) of DeleteShareGroupOffsets."""
        R = m.DeleteShareGroupOffsetsRequest
        request = R(group_id=group_id, topics=[
            R.DeleteShareGroupOffsetsRequestTopic(topic_name=t) for t in topics])  # fmt: skip
        response = self.groups._send_to_coordinator(
            group_id, ApiKey.DELETE_SHARE_GROUP_OFFSETS, request, lambda r: r.error_code
        )
        if response.error_code:
            error = KafkaError(response.error_code, response.error_message)
            return error, dict.fromkeys(topics, error)
        found = {t.topic_name: KafkaError(t.error_code, t.error_message) if t.error_code else None
                 for t in response.responses}  # fmt: skip
        return None, {t: found.get(t) for t in topics}
