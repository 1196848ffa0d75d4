"""A share group (KIP-932) and its members, in memory (Kafka's ShareGroup and
ShareGroupMember, group-coordinator/.../modern/share/).

Like a consumer group of Kafka 4's protocol, a share group has an epoch bumped when a
member joins, leaves or changes its subscription, or the subscribed topics change, and a
target assignment computed for an epoch; unlike it, members share partitions (records,
not partitions, are handed out one member at a time, by the share partitions), so a
member takes its target at once: no revocation, no waiting for another member.

The state changes only by replaying coordinator records (share_group_records.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from kt.broker.group.modern_group import Assignment, ModernGroup
from kt.broker.group.share_partition_metadata import SharePartitionMetadata

STABLE = 0  # the only MemberState a share group member has (ShareGroupAssignmentBuilder)


class ShareGroupState:
    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True)
class ShareGroupMember:
    """A member: its subscription (the MemberMetadata record) and its assignment with
    its epochs (the CurrentMemberAssignment record). Its id is the client's own."""

    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: int = STABLE
    assigned: Assignment = field(default_factory=dict)

    def with_epoch(self, epoch: int) -> ShareGroupMember:
        return replace(self, previous_member_epoch=self.member_epoch, member_epoch=epoch)


class ShareGroup(ModernGroup[ShareGroupMember]):
    """Members, epochs and target assignment of one share group, and which of its share
    partitions have their state initialized (share_partition_metadata.py)."""

    def __init__(self, group_id: str) -> None:
        super().__init__(group_id)
        self.partition_metadata: SharePartitionMetadata | None = None

    def __repr__(self) -> str:
        return (f"ShareGroup(groupId={self.group_id}, epoch={self.group_epoch}, "
                f"members={list(self.members)})")  # fmt: skip

    @property
    def state(self) -> str:
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    def subscribed_names(self) -> set[str]:
        return {t for m in self.members.values() for t in m.subscribed_topic_names}
