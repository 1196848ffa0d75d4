"""Partition reassignment in the controller (KIP-455): KafkaController's
onPartitionReassignment and the events that drive it (AlterPartitionReassignments,
ListPartitionReassignments, /admin/reassign_partitions, ISR changes), as a part of
KafkaController (kt.broker.controller.kafka_controller)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from kt.broker.controller.context import NO_LEADER, ControllerContext
from kt.broker.controller.replica_assignment import ReplicaAssignment, validate_target
from kt.broker.metadata_cache import PartitionState
from kt.broker.replication.partition import TopicPartition
from kt.errors import KafkaError
from kt.metadata import znodes as z

log = logging.getLogger(__name__)
T = TypeVar("T")


class PartitionReassignment:
    """KafkaController's reassignment events (mixed into KafkaController)."""

    ctx: ControllerContext
    zk: Any
    channel: Any
    is_active: bool
    _ask: Callable[..., Awaitable[Any]]
    watcher: Callable[..., Callable[[Any], None]]
    _send_leader_and_isr: Callable[..., Awaitable[None]]
    _send_update_metadata: Callable[..., Awaitable[None]]
    _update_leader_and_isr: Callable[..., PartitionState | None]

    async def alter_partition_reassignments(
        self, targets: dict[TopicPartition, list[int] | None]
    ) -> dict[TopicPartition, KafkaError | None] | None:
        """AlterPartitionReassignments: move each partition to its target replicas, or
        cancel its move (None). An error or None per partition; None if this broker is not
        the controller."""

        async def alter() -> dict[TopicPartition, KafkaError | None]:
            results: dict[TopicPartition, KafkaError | None] = {}
            moves: dict[TopicPartition, ReplicaAssignment] = {}
            for tp, target in targets.items():
                try:
                    moves[tp] = self._build_reassignment(tp, target)
                except KafkaError as e:
                    results[tp] = e
            # The latest request wins over a move asked for through /admin.
            if moves.keys() & self.ctx.zk_reassigning:
                self._remove_from_zk_reassignment(set(moves))
            for tp, move in moves.items():
                results[tp] = await self._trigger_reassignment(tp, move)
            return results

        return await self._ask("ApiPartitionReassignment", alter)

    async def list_partition_reassignments(
        self, partitions: list[TopicPartition] | None
    ) -> dict[TopicPartition, ReplicaAssignment] | None:
        """The moves in progress (of `partitions`, or all); None if not the controller."""

        def listing() -> dict[TopicPartition, ReplicaAssignment]:
            wanted = self.ctx.being_reassigned if partitions is None else partitions
            return {
                tp: self.ctx.full_assignment(tp) for tp in wanted
                if tp in self.ctx.adding or tp in self.ctx.removing
            }  # fmt: skip

        return await self._ask("ListPartitionReassignments", listing)

    def _build_reassignment(
        self, tp: TopicPartition, target: list[int] | None
    ) -> ReplicaAssignment:
        current = self.ctx.full_assignment(tp)
        if not current.replicas or tp.topic in self.ctx.topics_to_delete:
            raise KafkaError("UNKNOWN_TOPIC_OR_PARTITION", "The partition does not exist.")
        if target is not None:
            validate_target(target, current, self.ctx.live_brokers)
        if current.is_being_reassigned:
            return current.reassign_to(target if target is not None else current.original)
        if target is None:
            raise KafkaError("NO_REASSIGNMENT_IN_PROGRESS")
        return current.reassign_to(target)

    async def _trigger_reassignment(
        self, tp: TopicPartition, move: ReplicaAssignment
    ) -> KafkaError | None:
        if tp.topic in self.ctx.topics_to_delete or not self.ctx.replicas(tp):
            return KafkaError("UNKNOWN_TOPIC_OR_PARTITION", "The partition does not exist.")
        try:
            await self._on_partition_reassignment(tp, move)
        except KafkaError as e:
            return e
        except Exception:
            log.exception("reassignment of %s failed", tp)
            return KafkaError("UNKNOWN_SERVER_ERROR")
        return None

    async def _on_partition_reassignment(self, tp: TopicPartition, move: ReplicaAssignment) -> None:
        """KafkaController.onPartitionReassignment. U: write RS = TRS ++ ORS with its adding
        and removing replicas (the store first: a new controller resumes from it), and stop
        replicas an earlier move was adding that this one does not want. A: until TRS is in
        the ISR, bump the leader epoch and send RS to every replica, so the new ones start
        following. B: then make TRS the assignment, move the leader into it if it is not,
        stop and delete the removed replicas, and tell every broker."""
        current = self.ctx.full_assignment(tp)
        if current != move:
            self._write_assignment(tp, move)
            unneeded = [r for r in current.replicas if r not in move.replicas]
            if unneeded:
                await self._stop_removed_replicas(tp, unneeded)
        if not self._reassignment_complete(tp, move):
            await self._bump_leader_epoch(tp)
            return
        completed = ReplicaAssignment(move.target)
        self.ctx.set_full_assignment(tp, completed)
        await self._move_reassigned_leader(tp)
        await self._stop_removed_replicas(tp, move.removing)
        self._write_assignment(tp, completed)
        if tp in self.ctx.zk_reassigning:
            self._remove_from_zk_reassignment({tp})
        await self._send_update_metadata(sorted(self.ctx.live_brokers), [tp])
        log.info("reassignment of %s to %s completed", tp, completed.replicas)

    async def _maybe_complete_reassignment(self, tp: TopicPartition) -> None:
        move = self.ctx.full_assignment(tp)
        if self._reassignment_complete(tp, move):
            await self._on_partition_reassignment(tp, move)

    def _reassignment_complete(self, tp: TopicPartition, move: ReplicaAssignment) -> bool:
        if not move.is_being_reassigned:
            return True
        stored = self.zk.get_partition_state(tp.topic, tp.partition)
        return stored is not None and set(move.target) <= set(stored.isr)

    def _write_assignment(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        """The topic's znode with `tp`'s new assignment (every other partition as it is)."""
        self.ctx.set_full_assignment(tp, assignment)
        topic = tp.topic
        partitions = self.ctx.partitions_of(topic)
        self.zk.set_topic_assignment(z.TopicAssignment(
            topic, {p.partition: self.ctx.replicas(p) for p in partitions},
            self.ctx.topic_ids.get(topic),
            {p.partition: self.ctx.adding[p] for p in partitions if p in self.ctx.adding},
            {p.partition: self.ctx.removing[p] for p in partitions if p in self.ctx.removing},
        ))  # fmt: skip

    async def _bump_leader_epoch(self, tp: TopicPartition) -> None:
        """updateLeaderEpochAndSendRequest: same leader and ISR, epoch + 1, sent to RS."""
        await self._write_state_and_send(tp, lambda state: (state.leader, state.isr))

    async def _move_reassigned_leader(self, tp: TopicPartition) -> None:
        """moveReassignedPartitionLeaderIfRequired, with the removed replicas leaving the
        ISR: the leader stays if it is in TRS and may lead, else the first replica of TRS
        that is alive and in the ISR leads (ReassignPartitionLeaderElectionStrategy)."""
        target = self.ctx.replicas(tp)
        electable = self.ctx.electable_brokers

        def change(state: PartitionState) -> tuple[int, list[int]]:
            isr = [r for r in state.isr if r in target]
            leader = state.leader
            if leader not in target or leader not in electable:
                leader = next((r for r in target if r in isr and r in electable), NO_LEADER)
            return leader, isr or state.isr

        await self._write_state_and_send(tp, change)

    async def _write_state_and_send(
        self, tp: TopicPartition, change: Callable[[PartitionState], tuple[int, list[int]]]
    ) -> None:
        """The state znode as `change` makes it (epoch + 1), then LeaderAndIsr to RS."""
        if self._update_leader_and_isr(tp, change) is not None:
            await self._send_leader_and_isr([tp])

    async def _stop_removed_replicas(self, tp: TopicPartition, replicas: list[int]) -> None:
        """OfflineReplica then NonExistentReplica: each removed replica stops following and
        deletes its log."""
        for broker in replicas:
            if broker in self.ctx.live_brokers:
                await self.channel.stop_replica(broker, self, [tp], delete=True)

    async def _on_zk_reassignment(self) -> None:
        """/admin/reassign_partitions was created or changed: start the moves it asks for
        (a partition it names that does not exist is dropped from it)."""
        if not self.is_active:
            return
        wanted = self.zk.get_partition_reassignment(
            self.watcher("PartitionReassignment", self._on_zk_reassignment)
        )
        if not wanted:
            return
        failed = set()
        for (topic, partition), target in wanted.items():
            tp = TopicPartition(topic, partition)
            if tp in self.ctx.zk_reassigning and self.ctx.full_assignment(tp).target == target:
                continue  # already under way
            try:
                move = self._build_reassignment(tp, list(target))
            except KafkaError as e:
                log.warning("reassignment of %s through the store refused: %s", tp, e)
                failed.add(tp)
                continue
            self.ctx.zk_reassigning.add(tp)
            if await self._trigger_reassignment(tp, move) is not None:
                failed.add(tp)
        if failed:
            self._remove_from_zk_reassignment(failed)

    def _remove_from_zk_reassignment(self, partitions: set[TopicPartition]) -> None:
        self.ctx.zk_reassigning -= partitions
        wanted = self.zk.get_partition_reassignment()
        if wanted is None:
            return
        left = {(t, p): r for (t, p), r in wanted.items() if TopicPartition(t, p) not in partitions}
        if left != wanted:
            self.zk.set_partition_reassignment(left)
