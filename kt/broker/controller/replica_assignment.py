"""A partition's replica assignment while it is moved (KIP-455's ReplicaAssignment).

RS (`replicas`) = TRS ++ ORS without repeats: the target replicas first, in the order
asked for, then the original ones that are leaving. `adding` = RS - ORS, `removing` =
RS - TRS. The original replica set is kept nowhere else, so a move can be resumed or
cancelled after a controller fail-over.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kt.errors import KafkaError


@dataclass(frozen=True)
class ReplicaAssignment:
    replicas: list[int]
    adding: list[int] = field(default_factory=list)
    removing: list[int] = field(default_factory=list)

    @property
    def is_being_reassigned(self) -> bool:
        return bool(self.adding or self.removing)

    @property
    def target(self) -> list[int]:
        return [r for r in self.replicas if r not in self.removing]

    @property
    def original(self) -> list[int]:
        return [r for r in self.replicas if r not in self.adding]

    def reassign_to(self, target: list[int]) -> ReplicaAssignment:
        full = list(dict.fromkeys([*target, *self.original]))
        return ReplicaAssignment(
            full,
            [r for r in full if r not in self.original],
            [r for r in full if r not in target],
        )


def validate_target(target: list[int], current: ReplicaAssignment, live: Iterable[int]) -> None:
    """KafkaController.validateReplicas: INVALID_REPLICA_ASSIGNMENT with Kafka's words."""
    if not target:
        raise KafkaError(
            "INVALID_REPLICA_ASSIGNMENT", "Empty replica list specified in partition reassignment."
        )
    shown = "List(" + ", ".join(map(str, target)) + ")"
    if len(set(target)) != len(target):
        raise KafkaError(
            "INVALID_REPLICA_ASSIGNMENT",
            f"Duplicate replica ids in partition reassignment replica list: {shown}",
        )
    if any(r < 0 for r in target):
        raise KafkaError(
            "INVALID_REPLICA_ASSIGNMENT", f"Invalid broker id in replica list: {shown}"
        )
    adding = current.reassign_to(target).adding
    alive = set(live)
    if not set(adding) <= alive:
        raise KafkaError(
            "INVALID_REPLICA_ASSIGNMENT",
            "Replica assignment has brokers that are not alive. Replica list: "
            f"List({', '.join(map(str, adding))}), live broker list: "
            f"Set({', '.join(map(str, sorted(alive)))})",
        )
