"""A classic consumer group as the coordinator holds it (Kafka's GroupMetadata, MemberMetadata).

State machine (GroupMetadata.scala), with the states a group may come from:

  Empty               <- PreparingRebalance             no members; offsets may remain
  PreparingRebalance  <- Stable, CompletingRebalance, Empty
                         members are (re)joining; JoinGroup answers wait for them all
  CompletingRebalance <- PreparingRebalance             generation chosen; waiting for
                                                        the leader's SyncGroup
  Stable              <- CompletingRebalance            assignment handed out
  Dead                <- any                            removed (deleted, expired, unloaded)

Members hold their pending JoinGroup / SyncGroup answers as futures; the coordinator
resolves them. Everything runs on the broker's event loop: no locks.
"""

from __future__ import annotations

import asyncio
import struct
import uuid
from collections import Counter
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from kt.broker.group.offsets_records import (
    GroupMetadataValue,
    MemberRecord,
    OffsetAndMetadata,
)

if TYPE_CHECKING:
    from kt.broker.group.consumer_group import ConsumerGroup
    from kt.broker.group.share_group import ShareGroup
    from kt.broker.group.streams_group import StreamsGroup

# A transaction's offset: (base offset of the batch that wrote it, the offset).
PendingOffset = tuple[int, OffsetAndMetadata]

CONSUMER_PROTOCOL_TYPE = "consumer"


class GroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}
    ),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


@dataclass
class JoinResult:
    """What a JoinGroup answers; `members` is filled for the leader only."""

    error: str = "NONE"
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)
    skip_assignment: bool = False


@dataclass
class SyncResult:
    error: str = "NONE"
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(eq=False)
class MemberMetadata:
    """One member. Invariant: at most one pending JoinGroup and one pending SyncGroup
    answer (`join_waiter`, `sync_waiter`); `expiry` is its session-timeout timer."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join_waiter: asyncio.Future[JoinResult] | None = None
    sync_waiter: asyncio.Future[SyncResult] | None = None
    is_new: bool = False
    expiry: asyncio.TimerHandle | None = None

    @property
    def is_awaiting_join(self) -> bool:
        return self.join_waiter is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.sync_waiter is not None

    @property
    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata_for(self, protocol: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise KeyError(protocol)

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among `candidates`."""
        return next(name for name in self.protocol_names if name in candidates)

    def complete_join(self, result: JoinResult) -> None:
        waiter, self.join_waiter = self.join_waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(result)

    def complete_sync(self, result: SyncResult) -> None:
        waiter, self.sync_waiter = self.sync_waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(result)

    def cancel_expiry(self) -> None:
        if self.expiry is not None:
            self.expiry.cancel()
            self.expiry = None


class GroupMetadata:
    """A group, its members and its committed offsets.

    Invariants: the leader is a member (or None when there are none); a member's
    protocols all share the group's protocol type; `static_members` maps each
    group.instance.id to the member id currently holding it; `pending_members` hold
    ids handed out with MEMBER_ID_REQUIRED that have not joined yet.
    """

    def __init__(self, group_id: str, state: GroupState, now_ms: int) -> None:
        self.group_id = group_id
        self.state = state
        self.current_state_timestamp = now_ms
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, MemberMetadata] = {}
        self.static_members: dict[str, str] = {}
        self.pending_members: set[str] = set()
        self.pending_sync_members: set[str] = set()
        self.pending_expiry: dict[str, asyncio.TimerHandle] = {}
        self.new_member_added = False
        self.initial_join_delay = False  # an InitialDelayedJoin is running
        self.offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
        # The base offset of the __consumer_offsets batch that wrote each committed offset
        # (Kafka's CommitRecordMetadataAndOffset.appendedBatchOffset).
        self.offset_batches: dict[tuple[str, int], int] = {}
        # TxnOffsetCommit: offsets written in a producer's open transaction, with their
        # batch's base offset, which its COMMIT marker makes the committed offsets and its
        # ABORT marker drops.
        self.pending_txn_offsets: dict[int, dict[tuple[str, int], PendingOffset]] = {}
        self.join_timer: asyncio.TimerHandle | None = None
        self.sync_timer: asyncio.TimerHandle | None = None
        # Set while the group is a consumer group of Kafka 4's protocol (KIP-848): its
        # members and assignments; the offsets above are the group's either way.
        self.consumer: ConsumerGroup | None = None
        # Set while the group is a share group (KIP-932).
        self.share: ShareGroup | None = None
        # Set while the group is a streams group (KIP-1071).
        self.streams: StreamsGroup | None = None

    def __repr__(self) -> str:
        return (
            f"GroupMetadata(groupId={self.group_id}, generation={self.generation_id}, "
            f"protocolType={self.protocol_type}, currentState={self.state.value}, "
            f"members={list(self.members)})"
        )

    # -- state ------------------------------------------------------------------------

    def is_(self, state: GroupState) -> bool:
        return self.state is state

    def transition_to(self, state: GroupState, now_ms: int) -> None:
        if self.state not in _VALID_PREVIOUS[state]:
            raise RuntimeError(
                f"Group {self.group_id} should be in one of "
                f"{sorted(s.value for s in _VALID_PREVIOUS[state])} states before moving "
                f"to {state.value} state. Instead it is in {self.state.value} state."
            )
        self.state = state
        self.current_state_timestamp = now_ms

    @property
    def can_rebalance(self) -> bool:
        return self.state in _VALID_PREVIOUS[GroupState.PREPARING_REBALANCE]

    # -- members ----------------------------------------------------------------------

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def generate_member_id(self, client_id: str, group_instance_id: str | None) -> str:
        prefix = group_instance_id if group_instance_id is not None else client_id
        return f"{prefix}-{uuid.uuid4()}"

    def add(self, member: MemberMetadata) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        self.pending_members.discard(member.member_id)
        self.cancel_pending_expiry(member.member_id)

    def remove(self, member_id: str) -> MemberMetadata | None:
        member = self.members.pop(member_id, None)
        if member is not None:
            member.cancel_expiry()
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_members.discard(member_id)
        self.pending_sync_members.discard(member_id)
        self.cancel_pending_expiry(member_id)
        return member

    def drop_members(self, error: str) -> None:
        """Every member goes, its pending JoinGroup and SyncGroup answered with `error`, the
        group's and members' timers stopped (the group is unloaded, or became a consumer
        group). The state is the caller's to set."""
        for timer in (self.join_timer, self.sync_timer, *self.pending_expiry.values()):
            if timer is not None:
                timer.cancel()
        self.join_timer = self.sync_timer = None
        for member in self.members.values():
            member.cancel_expiry()
            member.complete_join(JoinResult(error, member.member_id))
            member.complete_sync(SyncResult(error))
        self.members.clear()
        self.static_members.clear()
        self.pending_members.clear()
        self.pending_sync_members.clear()
        self.pending_expiry.clear()
        self.leader_id = None

    def cancel_pending_expiry(self, member_id: str) -> None:
        handle = self.pending_expiry.pop(member_id, None)
        if handle is not None:
            handle.cancel()

    def static_member_id(self, group_instance_id: str | None) -> str | None:
        return None if group_instance_id is None else self.static_members.get(group_instance_id)

    def is_static_member_fenced(self, member_id: str, group_instance_id: str | None) -> bool:
        """A known instance id held by another member id: the caller is a zombie."""
        current = self.static_member_id(group_instance_id)
        return current is not None and current != member_id

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> MemberMetadata:
        """A restarted static member takes over its old member's place under a new id."""
        member = self.members.pop(old_id)
        member.complete_join(JoinResult("FENCED_INSTANCE_ID", old_id))
        member.complete_sync(SyncResult("FENCED_INSTANCE_ID"))
        member.member_id = new_id
        self.members[new_id] = member
        self.static_members[instance_id] = new_id
        if self.leader_id == old_id:
            self.leader_id = new_id
        if old_id in self.pending_sync_members:
            self.pending_sync_members.discard(old_id)
            self.pending_sync_members.add(new_id)
        return member

    @property
    def has_all_members_joined(self) -> bool:
        return all(m.is_awaiting_join for m in self.members.values()) and not self.pending_members

    def not_yet_rejoined_members(self) -> list[MemberMetadata]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else pick any member that did; False if none."""
        if self.leader_id is None:
            return False
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.is_awaiting_join:
            return True
        for member_id, member in self.members.items():
            if member.is_awaiting_join:
                self.leader_id = member_id
                return True
        return False

    @property
    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # -- protocols --------------------------------------------------------------------

    def candidate_protocols(self) -> set[str]:
        counts = Counter(name for m in self.members.values() for name in set(m.protocol_names))
        return {name for name, n in counts.items() if n == len(self.members)}

    def supports_protocols(self, protocol_type: str, protocols: list[str]) -> bool:
        if self.is_(GroupState.EMPTY):
            return bool(protocol_type) and bool(protocols)
        if self.protocol_type != protocol_type:
            return False
        candidates = self.candidate_protocols()
        return any(p in candidates for p in protocols)

    def select_protocol(self) -> str:
        """Every member votes for its favourite among the protocols all support."""
        candidates = self.candidate_protocols()
        votes = Counter(m.vote(candidates) for m in self.members.values())
        return max(votes.items(), key=lambda kv: kv[1])[0]

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.transition_to(GroupState.EMPTY, now_ms)

    def current_member_metadata(self) -> list[tuple[str, str | None, bytes]]:
        assert self.protocol_name is not None
        return [
            (m.member_id, m.group_instance_id, m.metadata_for(self.protocol_name))
            for m in self.members.values()
        ]

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to (consumer protocol only), None if unknown."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE or self.protocol_name is None:
            return None
        topics: set[str] = set()
        try:
            for m in self.members.values():
                topics |= consumer_subscription_topics(m.metadata_for(self.protocol_name))
        except (KeyError, ValueError, struct.error):
            return None
        return topics

    # -- offsets ----------------------------------------------------------------------

    def commit_offsets(self, offsets: dict[tuple[str, int], OffsetAndMetadata], batch: int) -> None:
        """Offsets written in the __consumer_offsets batch at `batch` are committed."""
        self.offsets.update(offsets)
        self.offset_batches.update(dict.fromkeys(offsets, batch))

    def remove_offsets(self, tps: list[tuple[str, int]]) -> None:
        for tp in tps:
            self.offsets.pop(tp, None)
            self.offset_batches.pop(tp, None)

    def complete_pending_txn_offsets(self, producer_id: int, commit: bool) -> None:
        """The producer's marker: on COMMIT its pending offsets become committed, each
        only where no offset written after it is committed already (a plain OffsetCommit
        later in the log wins: GroupMetadata.completePendingTxnOffsetCommit)."""
        pending = self.pending_txn_offsets.pop(producer_id, None)
        if not pending or not commit:
            return
        for tp, (batch, offset) in pending.items():
            if self.offset_batches.get(tp, -1) < batch:
                self.offsets[tp] = offset
                self.offset_batches[tp] = batch

    def expired_offsets(self, now_ms: int, retention_ms: int) -> list[tuple[str, int]]:
        """Offsets past retention (GroupMetadata.removeExpiredOffsets): for an Empty group
        counted from when it became Empty, for a Stable consumer group only for topics
        no member subscribes to, for a simple (offsets-only) group from each commit; for a
        consumer (KIP-848) or streams group from each commit, but for the topics its
        members read (isSubscribedToTopic)."""
        subscribed: set[str] = set()
        modern = self.consumer if self.consumer is not None else self.streams
        if modern is not None:  # Kafka 4's groups: OffsetExpirationConditionImpl by commit
            subscribed = (modern.subscribed_names() if self.consumer is not None
                          else self.streams.subscribed_topics())  # type: ignore[union-attr]  # fmt: skip

            def base(o: OffsetAndMetadata) -> int:
                return o.commit_timestamp

        elif self.protocol_type is not None and self.is_(GroupState.EMPTY):

            def base(o: OffsetAndMetadata) -> int:
                return self.current_state_timestamp

        elif self.protocol_type is None:

            def base(o: OffsetAndMetadata) -> int:
                return o.commit_timestamp

        elif self.is_(GroupState.STABLE) and (topics := self.subscribed_topics()) is not None:
            subscribed = topics

            def base(o: OffsetAndMetadata) -> int:
                return o.commit_timestamp

        else:
            return []
        expired = []
        for tp, o in self.offsets.items():
            if tp[0] in subscribed:
                continue
            if o.expire_timestamp is not None:
                if now_ms >= o.expire_timestamp:
                    expired.append(tp)
            elif now_ms - base(o) >= retention_ms:
                expired.append(tp)
        return expired

    # -- persistence ------------------------------------------------------------------

    def to_record(self, assignment: dict[str, bytes]) -> GroupMetadataValue:
        members = [
            MemberRecord(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                m.session_timeout_ms,
                m.metadata_for(self.protocol_name) if self.protocol_name else b"",
                assignment.get(m.member_id, b""),
            )
            for m in self.members.values()
        ]
        return GroupMetadataValue(
            self.protocol_type or "",
            self.generation_id,
            self.protocol_name,
            self.leader_id,
            self.current_state_timestamp,
            members,
        )

    @classmethod
    def from_record(cls, group_id: str, value: GroupMetadataValue, now_ms: int) -> GroupMetadata:
        """A group reloaded from the log: Stable with its members, or Empty."""
        state = GroupState.STABLE if value.members else GroupState.EMPTY
        timestamp = value.current_state_timestamp
        group = cls(group_id, state, timestamp if timestamp >= 0 else now_ms)
        group.generation_id = value.generation
        group.protocol_type = value.protocol_type or None
        group.protocol_name = value.protocol
        group.leader_id = value.leader
        for r in value.members:
            member = MemberMetadata(
                r.member_id, r.group_instance_id, r.client_id, r.client_host,
                r.rebalance_timeout, r.session_timeout, value.protocol_type,
                [(value.protocol or "", r.subscription)], r.assignment,
            )  # fmt: skip
            group.members[r.member_id] = member
            if r.group_instance_id is not None:
                group.static_members[r.group_instance_id] = r.member_id
        return group

    def summary(self) -> dict[str, Any]:
        """DescribeGroups: members' metadata and assignment only once Stable."""
        stable = self.is_(GroupState.STABLE)
        return {
            "state": self.state.value,
            "protocol_type": self.protocol_type or "",
            "protocol": (self.protocol_name or "") if stable else "",
            "members": [
                (
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.metadata_for(self.protocol_name) if stable and self.protocol_name else b"",
                    m.assignment if stable else b"",
                )  # fmt: skip
                for m in self.members.values()
            ],
        }


_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def consumer_subscription_topics(data: bytes) -> set[str]:
    """The topics of a ConsumerProtocolSubscription (version int16, topics [string], ...)."""
    view = memoryview(data)
    pos = _I16.size
    (count,) = _I32.unpack_from(view, pos)
    pos += 4
    topics = set()
    for _ in range(max(0, count)):
        (n,) = _I16.unpack_from(view, pos)
        pos += 2
        if pos + n > len(view):
            raise ValueError("truncated subscription")
        topics.add(bytes(view[pos : pos + n]).decode())
        pos += n
    return topics
