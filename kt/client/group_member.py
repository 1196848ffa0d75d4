"""A consumer-group member for kt's console consumer (the classic group protocol).

Join: JoinGroup until the coordinator accepts us (MEMBER_ID_REQUIRED hands out the id
to rejoin with); the leader computes the assignment with the range strategy (Kafka's
RangeAssignor: per topic, members sorted by id, each gets n // members partitions and
the first n % members one more) and sends it in SyncGroup; every member learns its
partitions from SyncGroup. Between polls the member heartbeats; a heartbeat answered
REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID means: commit, rejoin.
Offsets are committed with the member's generation, so a stale member cannot commit.
"""

from __future__ import annotations

import time
from typing import Any

from kt.client.client import KafkaClient
from kt.client.groups import (
    RETRIABLE_COORDINATOR_ERRORS,
    GroupAdmin,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from kt.errors import KafkaError, authorization_refusal, error_for
from kt.protocol import ApiKey
from kt.protocol import messages as m

PROTOCOL_TYPE = "consumer"
ASSIGNOR = "range"
REJOIN_ERRORS = frozenset({"REBALANCE_IN_PROGRESS", "ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID"})


def range_assign(
    subscriptions: dict[str, list[str]], partitions_per_topic: dict[str, int]
) -> dict[str, list[tuple[str, int]]]:
    """member id -> its partitions, as Kafka's RangeAssignor computes them."""
    assignment: dict[str, list[tuple[str, int]]] = {member: [] for member in subscriptions}
    for topic in sorted({t for topics in subscriptions.values() for t in topics}):
        members = sorted(mid for mid, topics in subscriptions.items() if topic in topics)
        count = partitions_per_topic.get(topic, 0)
        per_member, extra = divmod(count, len(members))
        start = 0
        for i, member in enumerate(members):
            length = per_member + (1 if i < extra else 0)
            assignment[member] += [(topic, p) for p in range(start, start + length)]
            start += length
    return assignment


class GroupMember:
    """One member of `group_id` subscribed to `topics`."""

    def __init__(
        self,
        client: KafkaClient,
        group_id: str,
        topics: list[str],
        *,
        session_timeout_ms: int = 45000,
        rebalance_timeout_ms: int = 300000,
        heartbeat_interval_ms: int = 3000,
    ) -> None:
        self.client = client
        self.group_id = group_id
        self.topics = topics
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.heartbeat_interval_s = heartbeat_interval_ms / 1000
        self.admin = GroupAdmin(client, timeout_ms=session_timeout_ms)
        self.member_id = ""
        self.generation = -1
        self.assignment: list[tuple[str, int]] = []
        self._last_heartbeat = 0.0

    def _coordinator(self) -> Any:
        node, _, _ = self.admin.find_coordinator(self.group_id)
        return self.client.connection(node)

    def join(self) -> list[tuple[str, int]]:
        """Join (or rejoin) the group; returns this member's partitions. A subscribed
        topic the principal may not describe fails the join at once, as the Java
        consumer's poll raises TopicAuthorizationException from its metadata."""
        for topic, info in self.client.metadata(self.topics).items():
            if refused := authorization_refusal(info.error_code, topic):
                raise refused
        deadline = time.monotonic() + self.rebalance_timeout_ms / 1000
        while True:
            response = self._coordinator().send(
                ApiKey.JOIN_GROUP,
                m.JoinGroupRequest(
                    group_id=self.group_id,
                    session_timeout_ms=self.session_timeout_ms,
                    rebalance_timeout_ms=self.rebalance_timeout_ms,
                    member_id=self.member_id,
                    protocol_type=PROTOCOL_TYPE,
                    protocols=[
                        m.JoinGroupRequest.JoinGroupRequestProtocol(
                            name=ASSIGNOR, metadata=encode_subscription(self.topics)
                        )
                    ],
                ),
            )
            name = error_for(response.error_code).name
            if response.error_code == 0:
                self.member_id = response.member_id
                self.generation = response.generation_id
                if self._sync(response):
                    return self.assignment
                continue
            if name == "MEMBER_ID_REQUIRED":
                self.member_id = response.member_id
                continue
            if name == "UNKNOWN_MEMBER_ID":
                self.member_id = ""
            elif name not in RETRIABLE_COORDINATOR_ERRORS | REJOIN_ERRORS:
                raise KafkaError(response.error_code, f"Cannot join group {self.group_id}")
            if time.monotonic() > deadline:
                raise KafkaError(response.error_code, f"Timed out joining group {self.group_id}")
            time.sleep(0.1)

    def _sync(self, join: Any) -> bool:
        """SyncGroup; the leader sends everyone's assignment. False means: join again."""
        assignments = []
        if join.leader == self.member_id:
            subscriptions = {
                member.member_id: decode_subscription(bytes(member.metadata))
                for member in join.members
            }
            wanted = sorted({t for topics in subscriptions.values() for t in topics})
            counts = {t: len(i.partitions) for t, i in self.client.metadata(wanted).items()}
            assignments = [
                m.SyncGroupRequest.SyncGroupRequestAssignment(
                    member_id=member, assignment=encode_assignment(partitions)
                )
                for member, partitions in range_assign(subscriptions, counts).items()
            ]
        response = self._coordinator().send(
            ApiKey.SYNC_GROUP,
            m.SyncGroupRequest(
                group_id=self.group_id,
                generation_id=self.generation,
                member_id=self.member_id,
                protocol_type=PROTOCOL_TYPE,
                protocol_name=ASSIGNOR,
                assignments=assignments,
            ),
        )
        if response.error_code:
            if error_for(response.error_code).name in REJOIN_ERRORS | RETRIABLE_COORDINATOR_ERRORS:
                return False
            raise KafkaError(response.error_code, f"Cannot sync group {self.group_id}")
        self.assignment = decode_assignment(bytes(response.assignment))
        self._last_heartbeat = time.monotonic()
        return True

    def heartbeat_if_due(self) -> bool:
        """Heartbeat when the interval passed; False when the member must rejoin."""
        if time.monotonic() - self._last_heartbeat < self.heartbeat_interval_s:
            return True
        response = self._coordinator().send(
            ApiKey.HEARTBEAT,
            m.HeartbeatRequest(
                group_id=self.group_id, generation_id=self.generation, member_id=self.member_id
            ),
        )
        self._last_heartbeat = time.monotonic()
        name = error_for(response.error_code).name
        if response.error_code == 0 or name in RETRIABLE_COORDINATOR_ERRORS:
            return True
        if name in REJOIN_ERRORS:
            return False
        raise KafkaError(response.error_code, f"Heartbeat for group {self.group_id} failed")

    def committed(self) -> dict[tuple[str, int], int]:
        return self.admin.fetch_offsets(self.group_id)

    def commit(self, offsets: dict[tuple[str, int], int]) -> None:
        """Commit with this member's generation; a fenced member's commit is dropped."""
        if not offsets:
            return
        R = m.OffsetCommitRequest
        by_topic: dict[str, list[Any]] = {}
        for (topic, partition), offset in sorted(offsets.items()):
            by_topic.setdefault(topic, []).append(
                R.OffsetCommitRequestPartition(
                    partition_index=partition, committed_offset=offset, committed_metadata=""
                )
            )
        self._coordinator().send(
            ApiKey.OFFSET_COMMIT,
            R(
                group_id=self.group_id,
                generation_id_or_member_epoch=self.generation,
                member_id=self.member_id,
                topics=[
                    R.OffsetCommitRequestTopic(name=t, partitions=p) for t, p in by_topic.items()
                ],
            ),
        )

    def leave(self) -> None:
        if not self.member_id:
            return
        self._coordinator().send(
            ApiKey.LEAVE_GROUP,
            m.LeaveGroupRequest(
                group_id=self.group_id,
                member_id=self.member_id,
                members=[m.LeaveGroupRequest.MemberIdentity(member_id=self.member_id)],
            ),
        )
        self.member_id = ""
