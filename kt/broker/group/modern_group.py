"""What Kafka 4's broker-driven groups have in common, consumer groups (KIP-848) and
share groups (KIP-932): Kafka's ModernGroup (group-coordinator/.../modern/). A group
epoch bumped when a member joins, leaves or changes its subscription, or the subscribed
topics change (their digest, `metadata_hash`); a target assignment computed for an epoch
(the assignment epoch); members keyed by their id."""

from __future__ import annotations

import uuid
from typing import Generic, TypeVar

Assignment = dict[uuid.UUID, frozenset[int]]  # topic id -> partitions

LEAVE_GROUP_MEMBER_EPOCH = -1

MemberT = TypeVar("MemberT")


class ModernGroup(Generic[MemberT]):
    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        # A new group starts at epoch 1 with an empty assignment of epoch 1, so that its
        # first computed assignment has epoch 2 (Kafka 4.3, KAFKA-20268).
        self.group_epoch = 1
        self.metadata_hash = 0
        self.assignment_epoch = 1
        self.assignment_timestamp = 0
        self.members: dict[str, MemberT] = {}
        self.target: dict[str, Assignment] = {}
        # The metadata cache's topics_version the subscribed topics were last read at
        # (Kafka's metadata refresh deadline: kt refreshes when the topics change).
        self.metadata_refresh_deadline = -1

    def target_of(self, member_id: str) -> Assignment:
        return self.target.get(member_id, {})
