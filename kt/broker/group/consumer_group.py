"""A consumer group of Kafka 4's protocol (KIP-848) and its members, in memory.

Kafka's ConsumerGroup and ConsumerGroupMember (group-coordinator/.../modern/consumer/).
The group has an epoch, bumped whenever a member joins, leaves or changes its
subscription, or the partitions of the subscribed topics change; the target assignment
is computed for an epoch (the assignment epoch); each member reconciles towards its
target one step per heartbeat and carries its own member epoch.

The state changes only by replaying coordinator records (consumer_group_records.py):
the coordinator writes a change as records and replays them, and loading a
`__consumer_offsets` partition replays the same records, so what a broker that takes
over the group holds is what the previous coordinator held.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from enum import IntEnum

from kt.broker.group.modern_group import Assignment, ModernGroup

LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


class MemberState(IntEnum):
    """Kafka's MemberState: where a member is in reconciling towards its target."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


class ConsumerGroupState:
    """The group states ConsumerGroupDescribe, ListGroups and DescribeGroups name."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True)
class ClassicMemberMetadata:
    """What a member using the classic protocol inside a consumer group joined with
    (the MemberMetadata record's ClassicMemberMetadata): its session timeout and its
    JoinGroup protocols, (name, metadata) in the member's order of preference."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]

    @property
    def protocol_name(self) -> str:
        """The name its JoinGroup and SyncGroup answers carry: its first protocol's."""
        return self.protocols[0][0]


@dataclass(frozen=True)
class ConsumerGroupMember:
    """One member: its subscription (the MemberMetadata record) and its current
    assignment with its epochs (the CurrentMemberAssignment record)."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    # "" when none (ConsumerGroupMember.Builder's default, written as such in its record)
    subscribed_topic_regex: str | None = ""
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    # The member epoch each assigned partition came with (KIP-1251's assignment epochs):
    # a commit of an older member epoch is taken for a partition held since then.
    assignment_epochs: dict[tuple[uuid.UUID, int], int] = field(default_factory=dict)
    # Set for a member of an upgraded group that still uses the classic protocol
    # (JoinGroup, SyncGroup, Heartbeat): KIP-848's online migration.
    classic: ClassicMemberMetadata | None = None

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic is not None

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state == MemberState.STABLE and self.member_epoch == epoch

    def with_epoch(self, epoch: int) -> ConsumerGroupMember:
        """updateMemberEpoch: the current epoch becomes the previous one."""
        return replace(self, previous_member_epoch=self.member_epoch, member_epoch=epoch)

    def partition_count(self) -> int:
        return sum(len(p) for p in self.assigned.values())

    def assignment_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        """The epoch `partition` was assigned in; -1 when the member does not hold it."""
        if partition not in self.assigned.get(topic_id, ()):
            return -1
        return self.assignment_epochs.get((topic_id, partition), self.member_epoch)


@dataclass
class ResolvedRegex:
    """A subscription regular expression and the topics it matched (the
    RegularExpression record): `version` is the metadata version it was resolved at."""

    topics: frozenset[str]
    version: int
    timestamp: int


class ConsumerGroup(ModernGroup["ConsumerGroupMember"]):
    """Members, epochs and assignments of one consumer group.

    Invariants: `static_members` maps each instance id to the member holding it;
    `partition_epochs` holds, for every partition a member owns or still has to revoke,
    that member's epoch (Kafka's currentPartitionEpoch: -1 when free).
    """

    def __init__(self, group_id: str) -> None:
        super().__init__(group_id)
        self.static_members: dict[str, str] = {}
        self.partition_epochs: dict[tuple[uuid.UUID, int], int] = {}
        self.regexes: dict[str, ResolvedRegex] = {}

    def __repr__(self) -> str:
        return (
            f"ConsumerGroup(groupId={self.group_id}, epoch={self.group_epoch}, "
            f"assignmentEpoch={self.assignment_epoch}, members={list(self.members)})"
        )

    @property
    def state(self) -> str:
        """ConsumerGroup.maybeUpdateGroupState, computed when asked."""
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def static_member(self, instance_id: str | None) -> ConsumerGroupMember | None:
        member_id = self.static_members.get(instance_id) if instance_id is not None else None
        return self.members.get(member_id) if member_id is not None else None

    def current_partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        return self.partition_epochs.get((topic_id, partition), -1)

    def subscribed_names(self) -> set[str]:
        """Every topic some member subscribes to by name, or through a regex."""
        names = {t for m in self.members.values() for t in m.subscribed_topic_names}
        for m in self.members.values():
            if m.subscribed_topic_regex:
                resolved = self.regexes.get(m.subscribed_topic_regex)
                if resolved is not None:
                    names |= resolved.topics
        return names

    def member_topics(self, member: ConsumerGroupMember) -> set[str]:
        """The topics `member` subscribes to, its regex resolved."""
        topics = set(member.subscribed_topic_names)
        if member.subscribed_topic_regex:
            resolved = self.regexes.get(member.subscribed_topic_regex)
            if resolved is not None:
                topics |= resolved.topics
        return topics

    # -- members of the classic protocol (online migration) ------------------------------

    def classic_members(self) -> list[ConsumerGroupMember]:
        return [m for m in self.members.values() if m.classic is not None]

    def supports_classic_protocols(self, protocol_type: str, names: Iterable[str]) -> bool:
        """ConsumerGroup.supportsClassicProtocols: a classic member may join when its
        protocol type is `consumer` and it supports a protocol every classic member of the
        group supports."""
        if protocol_type != "consumer":
            return False
        supported = [{name for name, _ in m.classic.protocols}
                     for m in self.members.values() if m.classic is not None]  # fmt: skip
        return any(all(name in s for s in supported) for name in names)

    def all_members_use_classic_protocol_except(self, leaving: Iterable[str]) -> bool:
        """Whether every member but `leaving` uses the classic protocol, and at least one of
        `leaving` does not (allMembersUseClassicProtocolExcept: the group is downgraded
        once its last consumer-protocol member goes)."""
        leaving = set(leaving)
        stay = [m for m in self.members.values() if m.member_id not in leaving]
        gone = [m for m in self.members.values() if m.member_id in leaving]
        return all(m.classic is not None for m in stay) and any(m.classic is None for m in gone)

    def waiting_on_unreleased_partition(self, member: ConsumerGroupMember) -> bool:
        """Whether a partition of the member's target is still held by another member."""
        for topic_id, partitions in self.target_of(member.member_id).items():
            held = member.assigned.get(topic_id, frozenset())
            for p in partitions - held:
                if self.current_partition_epoch(topic_id, p) != -1:
                    return True
        return False

    # -- OffsetCommit, OffsetFetch ------------------------------------------------------

    def validate_offset_commit(
        self,
        member_id: str,
        member_epoch: int,
        api_version: int,
        partitions: Iterable[tuple[uuid.UUID, int]],
        transactional: bool = False,
    ) -> dict[tuple[uuid.UUID, int], str]:
        """ConsumerGroup.validateOffsetCommit: an error name per partition. A member may
        commit with an epoch older than its current one for the partitions it has held
        since that epoch (KIP-1251's assignment epochs), so a commit sent just before the
        member moved to its next epoch is not refused."""
        partitions = list(partitions)
        if member_epoch < 0 and not self.members:
            return dict.fromkeys(partitions, "NONE")
        member = self.members.get(member_id)
        # A classic member (online migration) commits with its generation: its errors are
        # the classic protocol's.
        stale = "ILLEGAL_GENERATION" if member and member.classic else "STALE_MEMBER_EPOCH"
        if member is None:
            error = "UNKNOWN_MEMBER_ID"
        elif not transactional and member.classic is None and api_version < 9:
            error = "UNSUPPORTED_VERSION"
        elif member_epoch > member.member_epoch:
            error = stale
        elif member_epoch == member.member_epoch:
            error = "NONE"
        else:
            return {
                (t, p): "NONE" if 0 <= member.assignment_epoch(t, p) <= member_epoch else stale
                for t, p in partitions
            }  # fmt: skip
        return dict.fromkeys(partitions, error)

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> str:
        """ConsumerGroup.validateOffsetFetch: the error name."""
        if member_id is None and member_epoch < 0:
            return "NONE"
        member = self.members.get(member_id or "")
        if member is None:
            return "UNKNOWN_MEMBER_ID"
        if member_epoch == member.member_epoch:
            return "NONE"
        return "ILLEGAL_GENERATION" if member.classic else "STALE_MEMBER_EPOCH"

    # -- replay: the only way the state changes ------------------------------------------

    def put_member(self, member: ConsumerGroupMember) -> None:
        old = self.members.get(member.member_id)
        if old is not None:
            self._drop_partition_epochs(old)
            if old.instance_id is not None and old.instance_id != member.instance_id:
                self.static_members.pop(old.instance_id, None)
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        for assignment in (member.assigned, member.pending_revocation):
            for topic_id, partitions in assignment.items():
                for p in partitions:
                    self.partition_epochs[(topic_id, p)] = member.member_epoch

    def remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        if old is None:
            return
        self._drop_partition_epochs(old)
        if old.instance_id is not None and self.static_members.get(old.instance_id) == member_id:
            del self.static_members[old.instance_id]

    def _drop_partition_epochs(self, member: ConsumerGroupMember) -> None:
        for assignment in (member.assigned, member.pending_revocation):
            for topic_id, partitions in assignment.items():
                for p in partitions:
                    if self.partition_epochs.get((topic_id, p)) == member.member_epoch:
                        del self.partition_epochs[(topic_id, p)]


def new_member_id() -> str:
    """Uuid.randomUuid().toString(): 16 random bytes, URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


def from_scratch(member: ConsumerGroupMember, member_id: str) -> ConsumerGroupMember:
    """`member`'s subscription under `member_id`, in epoch 0, owning nothing."""
    return replace(
        member,
        member_id=member_id,
        member_epoch=0,
        previous_member_epoch=0,
        state=MemberState.STABLE,
        assigned={},
        pending_revocation={},
    )
