"""Consumer-group calls for the tools (what Kafka's Admin client does for groups).

Each call finds the group's coordinator (FindCoordinator, retried while the coordinator
is loading or not yet elected) and sends the request there. ListGroups goes to every
broker. Offsets are altered with OffsetCommit from outside the group (generation -1,
empty member id), as Admin.alterConsumerGroupOffsets does.

The consumer protocol's member metadata (ConsumerProtocolSubscription) and assignment
(ConsumerProtocolAssignment) are decoded here:
  Subscription => version int16, topics [string], userData bytes, (v1+) ownedPartitions
                  [topic string, partitions [int32]], (v2+) generationId int32, (v3+) rackId
  Assignment   => version int16, assignedPartitions [topic string, partitions [int32]],
                  userData bytes
"""

from __future__ import annotations

import struct
import time
from dataclasses import dataclass, field
from typing import Any

from kt.client.client import KafkaClient
from kt.errors import KafkaError, authorization_refusal, error_for
from kt.protocol import ApiKey
from kt.protocol import messages as m

RETRIABLE_COORDINATOR_ERRORS = frozenset(
    {"COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS", "NOT_COORDINATOR"}
)
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


@dataclass
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: list[tuple[str, int]]
    # A consumer group's member (KIP-848): its epoch and its target assignment.
    member_epoch: int | None = None
    target: list[tuple[str, int]] | None = None
    # Whether it uses the consumer protocol (True) or the classic one inside a consumer
    # group (False, KIP-848's migration); None when not told (MemberDescription.upgraded).
    upgraded: bool | None = None


@dataclass
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    assignor: str
    coordinator: tuple[int, str, int]  # id, host, port
    members: list[MemberDescription] = field(default_factory=list)
    error_code: int = 0
    group_type: str = "classic"  # or "consumer" (KIP-848)
    group_epoch: int | None = None
    assignment_epoch: int | None = None


def decode_assignment(data: bytes) -> list[tuple[str, int]]:
    """The (topic, partition) pairs of a ConsumerProtocolAssignment (empty for b"")."""
    if len(data) < 6:
        return []
    pos = 2
    (count,) = _I32.unpack_from(data, pos)
    pos += 4
    out = []
    for _ in range(max(count, 0)):
        (n,) = _I16.unpack_from(data, pos)
        topic = data[pos + 2 : pos + 2 + n].decode()
        pos += 2 + n
        (k,) = _I32.unpack_from(data, pos)
        pos += 4
        for _ in range(max(k, 0)):
            out.append((topic, _I32.unpack_from(data, pos)[0]))
            pos += 4
    return out


def encode_assignment(partitions: list[tuple[str, int]]) -> bytes:
    """ConsumerProtocolAssignment v0."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    parts = [_I16.pack(0), _I32.pack(len(by_topic))]
    for topic, ps in sorted(by_topic.items()):
        name = topic.encode()
        parts += [_I16.pack(len(name)), name, _I32.pack(len(ps))]
        parts += [_I32.pack(p) for p in sorted(ps)]
    parts.append(_I32.pack(-1))  # null user data
    return b"".join(parts)


def encode_subscription(topics: list[str]) -> bytes:
    """ConsumerProtocolSubscription v0."""
    parts = [_I16.pack(0), _I32.pack(len(topics))]
    for topic in topics:
        name = topic.encode()
        parts += [_I16.pack(len(name)), name]
    parts.append(_I32.pack(-1))
    return b"".join(parts)


def decode_subscription(data: bytes) -> list[str]:
    (count,) = _I32.unpack_from(data, 2)
    pos, topics = 6, []
    for _ in range(max(count, 0)):
        (n,) = _I16.unpack_from(data, pos)
        topics.append(data[pos + 2 : pos + 2 + n].decode())
        pos += 2 + n
    return topics


class GroupAdmin:
    """Group operations over a KafkaClient; errors come back as Kafka error codes."""

    def __init__(self, client: KafkaClient, timeout_ms: int = 5000) -> None:
        self.client = client
        self.timeout_ms = timeout_ms

    # -- coordinator ---------------------------------------------------------------------

    def find_coordinator(self, group_id: str) -> tuple[int, str, int]:
        """(broker id, host, port) of the group's coordinator."""
        deadline = time.monotonic() + self.timeout_ms / 1000
        while True:
            code, node, host, port = self.client.find_coordinator(group_id, 0)
            if code == 0:
                return node, host, port
            self._retry_or_raise(
                code, deadline, f"Cannot find the coordinator of {group_id}", group_id
            )

    def _retry_or_raise(
        self, code: int, deadline: float, message: str, group_id: str | None = None
    ) -> None:
        if group_id is not None and (refused := authorization_refusal(code, group_id)):
            raise refused
        if error_for(code).name not in RETRIABLE_COORDINATOR_ERRORS:
            raise KafkaError(code, message)
        if time.monotonic() > deadline:
            raise KafkaError(code, f"{message}: timed out ({error_for(code).name})")
        time.sleep(0.1)

    def _send_to_coordinator(self, group_id: str, api: ApiKey, body: Any, error_of: Any) -> Any:
        """Send to the coordinator; again (after finding it anew) on coordinator errors."""
        deadline = time.monotonic() + self.timeout_ms / 1000
        while True:
            node, _, _ = self.find_coordinator(group_id)
            response = self.client.connection(node).send(api, body)
            code = error_of(response)
            if code == 0 or error_for(code).name not in RETRIABLE_COORDINATOR_ERRORS:
                return response
            self._retry_or_raise(code, deadline, f"{api.name} for group {group_id} failed")

    # -- listing and describing -------------------------------------------------------------

    def list_groups(self, states: list[str] | None = None) -> list[tuple[str, str, str]]:
        """(group id, protocol type, state) of every group of every broker, sorted."""
        return [(g, protocol, state) for g, protocol, state, _ in self.list_typed_groups(states)]

    def list_typed_groups(self, states: list[str] | None = None) -> list[tuple[str, str, str, str]]:
        """(group id, protocol type, state, group type) of every group, sorted; the type
        is `classic` or `consumer` (ListGroups v5)."""
        self.client.metadata([])
        found: dict[str, tuple[str, str, str, str]] = {}
        request = m.ListGroupsRequest(states_filter=states or [])
        for broker_id in sorted(self.client.brokers):
            response = self.client.connection(broker_id).send(ApiKey.LIST_GROUPS, request)
            if response.error_code:
                raise KafkaError(response.error_code, "ListGroups failed")
            for g in response.groups:
                found[g.group_id] = (g.group_id, g.protocol_type, g.group_state,
                                     g.group_type or "classic")  # fmt: skip
        return [found[g] for g in sorted(found)]

    def list_groups_of_type(self, group_type: str,
                            states: list[str] | None = None) -> list[tuple[str, str]]:  # fmt: skip
        """(group id, state) of every group of `group_type` (share, streams) of every
        broker, sorted (ListGroups with its types filter)."""
        self.client.metadata([])
        found: dict[str, str] = {}
        request = m.ListGroupsRequest(states_filter=states or [], types_filter=[group_type])
        for broker_id in sorted(self.client.brokers):
            response = self.client.connection(broker_id).send(ApiKey.LIST_GROUPS, request)
            if response.error_code:
                raise KafkaError(response.error_code, "ListGroups failed")
            for g in response.groups:
                found[g.group_id] = g.group_state
        return sorted(found.items())

    def describe_group(self, group_id: str) -> GroupDescription:
        """A consumer group (KIP-848) as ConsumerGroupDescribe gives it, else a classic
        group as DescribeGroups does (Kafka's Admin.describeConsumerGroups)."""
        coordinator = self.find_coordinator(group_id)
        if self.client.connection(coordinator[0]).api_versions.get(
                ApiKey.CONSUMER_GROUP_DESCRIBE) is not None:  # fmt: skip
            described = self._describe_consumer_group(group_id, coordinator)
            if described is not None:
                return described
        response = self._send_to_coordinator(
            group_id, ApiKey.DESCRIBE_GROUPS, m.DescribeGroupsRequest(groups=[group_id]),
            lambda r: r.groups[0].error_code,
        )  # fmt: skip
        g = response.groups[0]
        members = [
            MemberDescription(
                x.member_id,
                x.group_instance_id,
                x.client_id,
                x.client_host,
                decode_assignment(bytes(x.member_assignment))
                if g.protocol_type in ("consumer", "")
                else [],
            )  # fmt: skip
            for x in g.members
        ]
        return GroupDescription(group_id, g.group_state, g.protocol_type, g.protocol_data,
                                coordinator, members, g.error_code)  # fmt: skip

    def _describe_consumer_group(
        self, group_id: str, coordinator: tuple[int, str, int]
    ) -> GroupDescription | None:
        """None when the group is no consumer group (GROUP_ID_NOT_FOUND)."""
        response = self._send_to_coordinator(
            group_id, ApiKey.CONSUMER_GROUP_DESCRIBE,
            m.ConsumerGroupDescribeRequest(group_ids=[group_id]),
            lambda r: r.groups[0].error_code,
        )  # fmt: skip
        g = response.groups[0]
        if g.error_code == KafkaError("GROUP_ID_NOT_FOUND").code:
            return None
        if g.error_code:
            raise KafkaError(g.error_code, g.error_message)

        def partitions(assignment: Any) -> list[tuple[str, int]]:
            return [(t.topic_name, p) for t in assignment.topic_partitions for p in t.partitions]

        kinds = {0: False, 1: True}  # ConsumerGroupDescribe v1's MemberType
        members = [
            MemberDescription(x.member_id, x.instance_id, x.client_id, x.client_host,
                              partitions(x.assignment), x.member_epoch,
                              partitions(x.target_assignment),
                              kinds.get(getattr(x, "member_type", -1)))
            for x in g.members
        ]  # fmt: skip
        return GroupDescription(group_id, g.group_state, "consumer", g.assignor_name,
                                coordinator, members, 0, "consumer", g.group_epoch,
                                g.assignment_epoch)  # fmt: skip

    # -- offsets --------------------------------------------------------------------------

    def fetch_offsets(self, group_id: str) -> dict[tuple[str, int], int]:
        """Committed offsets of every partition the group has one for."""
        return {tp: offset for tp, (offset, _) in self.fetch_offsets_and_epochs(group_id).items()}

    def fetch_offsets_and_epochs(
        self, group_id: str
    ) -> dict[tuple[str, int], tuple[int, int | None]]:
        """(committed offset, its leader epoch or None) of every partition the group has
        an offset for."""
        R = m.OffsetFetchRequest
        body = R(group_id=group_id, topics=None,
                 groups=[R.OffsetFetchRequestGroup(group_id=group_id, topics=None)])  # fmt: skip

        def error_of(r: Any) -> int:
            return r.groups[0].error_code if r.groups else r.error_code

        response = self._send_to_coordinator(group_id, ApiKey.OFFSET_FETCH, body, error_of)
        code = error_of(response)
        if code:
            raise KafkaError(code, f"OffsetFetch for group {group_id} failed")
        topics = response.groups[0].topics if response.groups else response.topics
        return {
            (t.name, p.partition_index): (
                p.committed_offset,
                p.committed_leader_epoch if p.committed_leader_epoch >= 0 else None,
            )
            for t in topics
            for p in t.partitions
            if p.committed_offset >= 0
        }

    def commit_offsets(self, group_id: str, offsets: dict[tuple[str, int], int]) -> dict:
        """Commit as an outsider (generation -1); an error code per partition."""
        R = m.OffsetCommitRequest
        by_topic: dict[str, list[Any]] = {}
        for (topic, partition), offset in sorted(offsets.items()):
            entry = R.OffsetCommitRequestPartition(
                partition_index=partition, committed_offset=offset, committed_metadata=""
            )
            by_topic.setdefault(topic, []).append(entry)
        body = R(group_id=group_id, generation_id_or_member_epoch=-1, member_id="",
                 topics=[R.OffsetCommitRequestTopic(name=t, partitions=ps)
                         for t, ps in by_topic.items()])  # fmt: skip

        def first_error(r: Any) -> int:
            return next((p.error_code for t in r.topics for p in t.partitions if p.error_code), 0)

        response = self._send_to_coordinator(group_id, ApiKey.OFFSET_COMMIT, body, first_error)
        return {
            (t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions
        }

    def delete_offsets(
        self, group_id: str, partitions: list[tuple[str, int]]
    ) -> tuple[int, dict[tuple[str, int], int]]:
        R = m.OffsetDeleteRequest
        by_topic: dict[str, list[Any]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(
                R.OffsetDeleteRequestPartition(partition_index=partition)
            )
        body = R(group_id=group_id, topics=[R.OffsetDeleteRequestTopic(name=t, partitions=ps)
                                            for t, ps in by_topic.items()])  # fmt: skip
        response = self._send_to_coordinator(
            group_id, ApiKey.OFFSET_DELETE, body, lambda r: r.error_code
        )
        results = {
            (t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions
        }
        return response.error_code, results

    def delete_groups(self, group_ids: list[str]) -> dict[str, int]:
        out = {}
        for group_id in group_ids:
            response = self._send_to_coordinator(
                group_id, ApiKey.DELETE_GROUPS, m.DeleteGroupsRequest(groups_names=[group_id]),
                lambda r: r.results[0].error_code,
            )  # fmt: skip
            out[group_id] = response.results[0].error_code
        return out
