"""The controller's in-memory copy of the cluster (Kafka's ControllerContext), and the
leader election rule of an offline or new partition."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kt.broker.controller.replica_assignment import ReplicaAssignment
from kt.broker.metadata_cache import PartitionState
from kt.broker.replication.partition import TopicPartition

NO_LEADER = -1


@dataclass
class ControllerContext:
    """The controller's in-memory copy of what the store says (ControllerContext)."""

    epoch: int = 0
    epoch_zk_version: int | None = None  # /controller_epoch's version at the election
    live_brokers: set[int] = field(default_factory=set)
    assignments: dict[str, dict[int, list[int]]] = field(default_factory=dict)
    topic_ids: dict[str, Any] = field(default_factory=dict)
    states: dict[TopicPartition, PartitionState] = field(default_factory=dict)
    topics_to_delete: set[str] = field(default_factory=set)
    shutting_down_brokers: set[int] = field(default_factory=set)  # in controlled shutdown
    # Partitions being moved: the replicas being added and removed (RS is `assignments`).
    adding: dict[TopicPartition, list[int]] = field(default_factory=dict)
    removing: dict[TopicPartition, list[int]] = field(default_factory=dict)
    zk_reassigning: set[TopicPartition] = field(default_factory=set)  # from /admin

    @property
    def electable_brokers(self) -> set[int]:
        """Live brokers that may lead: not the ones shutting down (liveBrokerIds)."""
        return self.live_brokers - self.shutting_down_brokers

    def partitions_of(self, topic: str) -> list[TopicPartition]:
        return [TopicPartition(topic, p) for p in sorted(self.assignments.get(topic, {}))]

    def all_partitions(self) -> list[TopicPartition]:
        return [tp for t in sorted(self.assignments) for tp in self.partitions_of(t)]

    def replicas(self, tp: TopicPartition) -> list[int]:
        return self.assignments.get(tp.topic, {}).get(tp.partition, [])

    def full_assignment(self, tp: TopicPartition) -> ReplicaAssignment:
        return ReplicaAssignment(
            list(self.replicas(tp)), list(self.adding.get(tp, [])), list(self.removing.get(tp, []))
        )

    def set_full_assignment(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        self.assignments.setdefault(tp.topic, {})[tp.partition] = list(assignment.replicas)
        for moving, replicas in ((self.adding, assignment.adding),
                                 (self.removing, assignment.removing)):  # fmt: skip
            if replicas:
                moving[tp] = list(replicas)
            else:
                moving.pop(tp, None)

    @property
    def being_reassigned(self) -> list[TopicPartition]:
        return sorted(set(self.adding) | set(self.removing))


def elect_leader(
    assignment: list[int], isr: list[int], live: set[int], unclean: bool = False
) -> tuple[int, list[int]]:
    """(leader, new ISR) for an offline or new partition; leader -1 when none can lead."""
    live_isr = [r for r in isr if r in live]
    for replica in assignment:
        if replica in live and replica in live_isr:
            return replica, live_isr
    if unclean:
        for replica in assignment:
            if replica in live:
                return replica, [replica]
    return NO_LEADER, live_isr
