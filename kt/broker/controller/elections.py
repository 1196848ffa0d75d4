"""Replica leader elections in the controller: ElectLeaders (PREFERRED, UNCLEAN),
/admin/preferred_replica_election and the automatic leader rebalance (Kafka's
KafkaController.processReplicaLeaderElection and checkAndTriggerAutoLeaderRebalance), as a
part of KafkaController (kt.broker.controller.kafka_controller)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from kt.broker.controller.context import NO_LEADER, ControllerContext
from kt.broker.metadata_cache import PartitionState
from kt.broker.replication.partition import TopicPartition
from kt.errors import KafkaError

log = logging.getLogger(__name__)

PREFERRED, UNCLEAN = 0, 1  # ElectionType
AUTO_REBALANCE_FIRST_DELAY_S = 5.0
# (error, strategy named in the message) when an election finds no leader
PREFERRED_FAILURE = (
    "PREFERRED_LEADER_NOT_AVAILABLE",
    "PreferredReplicaPartitionLeaderElectionStrategy",
)
UNCLEAN_FAILURE = ("ELIGIBLE_LEADERS_NOT_AVAILABLE", "OfflinePartitionLeaderElectionStrategy(true)")


class ReplicaLeaderElection:
    """KafkaController's replica leader elections (mixed into KafkaController)."""

    ctx: ControllerContext
    zk: Any
    is_active: bool
    imbalance_percentage: int
    imbalance_check_interval_s: float
    _ask: Callable[..., Awaitable[Any]]
    post: Callable[..., None]
    watcher: Callable[..., Callable[[Any], None]]
    _send_leader_and_isr: Callable[..., Awaitable[None]]
    _update_leader_and_isr: Callable[..., PartitionState | None]
    _elect_leader: Callable[..., PartitionState | None]

    async def elect_leaders(
        self, partitions: list[TopicPartition] | None, election_type: int
    ) -> dict[TopicPartition, KafkaError | int] | None:
        """ElectLeaders: the new leader or an error per partition (ELECTION_NOT_NEEDED where
        the leader is already valid); None when not the controller. `partitions` None means
        every partition."""
        return await self._ask("ReplicaLeaderElection", lambda: self._replica_leader_election(
            self.ctx.all_partitions() if partitions is None else partitions, election_type
        ))  # fmt: skip

    async def _replica_leader_election(
        self, partitions: list[TopicPartition], election_type: int
    ) -> dict[TopicPartition, KafkaError | int]:
        """processReplicaLeaderElection: PREFERRED moves leadership to the first replica if
        it is alive and in the ISR; UNCLEAN elects only for a partition without a live
        leader, from outside the ISR if it must."""
        results: dict[TopicPartition, KafkaError | int] = {}
        changed: list[TopicPartition] = []
        for tp in partitions:
            if tp.topic in self.ctx.topics_to_delete:
                results[tp] = KafkaError("INVALID_TOPIC_EXCEPTION", "The topic is being deleted")
                continue
            state = self.ctx.states.get(tp)
            if state is None or not self.ctx.replicas(tp):
                results[tp] = KafkaError(
                    "UNKNOWN_TOPIC_OR_PARTITION", "The partition does not exist."
                )
                continue
            if election_type == PREFERRED:
                needed = state.leader != self.ctx.replicas(tp)[0]
                new = self._elect_preferred_leader(tp) if needed else None
                failure = (
                    "PREFERRED_LEADER_NOT_AVAILABLE",
                    "PreferredReplicaPartitionLeaderElectionStrategy",
                )
            else:
                needed = state.leader == NO_LEADER or state.leader not in self.ctx.live_brokers
                new = self._elect_leader(tp, unclean=True) if needed else None
                failure = (
                    "ELIGIBLE_LEADERS_NOT_AVAILABLE",
                    "OfflinePartitionLeaderElectionStrategy(true)",
                )
            if not needed:
                results[tp] = KafkaError("ELECTION_NOT_NEEDED")
            elif new is None or new.leader == NO_LEADER:
                results[tp] = KafkaError(
                    failure[0],
                    f"Failed to elect leader for partition {tp} under strategy {failure[1]}",
                )
            else:
                self.ctx.states[tp] = new
                changed.append(tp)
                results[tp] = new.leader
        if changed:
            await self._send_leader_and_isr(changed)
        return results

    def _elect_preferred_leader(self, tp: TopicPartition) -> PartitionState | None:
        """PreferredReplicaPartitionLeaderElectionStrategy: the first replica leads if it is
        alive and in the ISR (the ISR stays); None if it cannot."""
        preferred = self.ctx.replicas(tp)[0]

        def change(state: PartitionState) -> tuple[int, list[int]] | None:
            if preferred not in self.ctx.electable_brokers or preferred not in state.isr:
                return None
            return preferred, state.isr

        return self._update_leader_and_isr(tp, change)

    async def _on_preferred_replica_election(self) -> None:
        """/admin/preferred_replica_election was created (the 2.x tool): elect, then delete
        it, as ZooKeeper-mode Kafka does."""
        if not self.is_active:
            return
        wanted = self.zk.get_preferred_replica_election(
            self.watcher("PreferredReplicaElection", self._on_preferred_replica_election)
        )
        if wanted is None:
            return
        partitions = [TopicPartition(t, p) for t, p in wanted]
        await self._replica_leader_election(partitions, PREFERRED)
        self.zk.delete_preferred_replica_election()

    async def _auto_leader_rebalance(self) -> None:
        """checkAndTriggerAutoLeaderRebalance: for each broker that is the preferred
        leader of some partitions, when more than leader.imbalance.per.broker.percentage
        of them are led by others, move them back (where it is alive and in sync, and
        nothing is being moved or deleted)."""
        if not self.is_active:
            return
        by_preferred: dict[int, list[TopicPartition]] = {}
        for tp in self.ctx.states:
            replicas = self.ctx.replicas(tp)
            if replicas and tp.topic not in self.ctx.topics_to_delete:
                by_preferred.setdefault(replicas[0], []).append(tp)
        moving = set(self.ctx.adding) | set(self.ctx.removing)
        for broker, partitions in sorted(by_preferred.items()):
            imbalanced = [tp for tp in partitions if self.ctx.states[tp].leader != broker]
            ratio = len(imbalanced) / len(partitions)
            if ratio <= self.imbalance_percentage / 100:
                continue
            log.info("leader imbalance of broker %s is %.2f: moving %s back", broker, ratio,
                     [str(tp) for tp in imbalanced])  # fmt: skip
            candidates = [
                tp for tp in imbalanced
                if tp not in moving and broker in self.ctx.electable_brokers
                and broker in self.ctx.states[tp].isr
            ]  # fmt: skip
            if candidates:
                await self._replica_leader_election(sorted(candidates), PREFERRED)

    async def _rebalance_periodically(self) -> None:
        """The auto-leader-rebalance-task: first 5 s after becoming controller, then every
        leader.imbalance.check.interval.seconds."""
        await asyncio.sleep(AUTO_REBALANCE_FIRST_DELAY_S)
        while True:
            self.post("AutoPreferredReplicaLeaderElection", self._auto_leader_rebalance)
            await asyncio.sleep(self.imbalance_check_interval_s)
