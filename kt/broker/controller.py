"""The controller: one broker, elected through the metadata store, that owns leadership.

Kafka's KafkaController (ZooKeeper mode). Election: every broker tries to create the
ephemeral /controller znode; the winner bumps /controller_epoch and becomes controller
until its session ends. The controller turns metadata events into partition state
transitions, writes leader/ISR state to /brokers/topics/<t>/partitions/<p>/state, and
tells brokers with LeaderAndIsr, UpdateMetadata and StopReplica.

Invariants:
- events are processed one at a time, in order, on one task (ControllerEventManager);
- every leader election bumps leader_epoch and writes the state znode before any broker
  hears of it;
- a partition's leader is the first replica in assignment order that is alive and in
  the ISR (OfflinePartitionLeaderElectionStrategy); with none, the leader is -1 unless
  unclean.leader.election.enable allows the first live replica.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kt.broker.metadata_cache import PartitionState
from kt.broker.partition import TopicPartition
from kt.broker.reassignment import ReplicaAssignment, validate_target
from kt.errors import KafkaError
from kt.metadata import znodes as z

log = logging.getLogger(__name__)
T = TypeVar("T")

NO_LEADER = -1
PREFERRED, UNCLEAN = 0, 1  # ElectionType
AUTO_REBALANCE_FIRST_DELAY_S = 5.0
# (error, strategy named in the message) when an election finds no leader
PREFERRED_FAILURE = (
    "PREFERRED_LEADER_NOT_AVAILABLE",
    "PreferredReplicaPartitionLeaderElectionStrategy",
)
UNCLEAN_FAILURE = ("ELIGIBLE_LEADERS_NOT_AVAILABLE", "OfflinePartitionLeaderElectionStrategy(true)")


@dataclass
class ControllerContext:
    """The controller's in-memory copy of what the store says (ControllerContext)."""

    epoch: int = 0
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


class KafkaController:
    """Controller election and the event loop that acts on metadata changes.

    `zk` is a kt.metadata KafkaZkClient (typed reads and writes of Kafka's znodes);
    `channel` delivers LeaderAndIsr / UpdateMetadata / StopReplica to brokers (in-process
    for this broker, over the wire for others).
    """

    def __init__(
        self, broker_id: int, zk: Any, channel: Any, *, auto_leader_rebalance: bool = True,
        imbalance_percentage: int = 10, imbalance_check_interval_s: float = 300.0,
    ) -> None:  # fmt: skip
        self.broker_id = broker_id
        self.zk = zk
        self.channel = channel
        self.auto_leader_rebalance = auto_leader_rebalance
        self.imbalance_percentage = imbalance_percentage
        self.imbalance_check_interval_s = imbalance_check_interval_s
        self._rebalancer: asyncio.Task | None = None
        self.ctx = ControllerContext()
        self.is_active = False
        self._events: asyncio.Queue[tuple[str, Callable[[], Any]]] = asyncio.Queue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task | None = None

    # -- events ---------------------------------------------------------------------

    async def startup(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.create_task(self._process_events(), name="controller-events")
        self.post("Startup", self._elect)
        await self.barrier()

    async def shutdown(self) -> None:
        self._stop_rebalancer()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self.is_active:
            self.zk.resign_controller(self.broker_id)
        self.is_active = False

    async def abandon(self) -> None:
        """Stop processing events without a word to the store (the broker died); its
        /controller znode goes with its session."""
        self._stop_rebalancer()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        self.is_active = False

    def post(self, name: str, action: Callable[[], Any]) -> None:
        """Queue an event; safe from any thread (store watches fire on their own thread)."""
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._events.put_nowait, (name, action))

    def watcher(self, name: str, action: Callable[[], Any]) -> Callable[[Any], None]:
        """A store watch callback that queues `action` as event `name`."""
        return lambda _event: self.post(name, action)

    async def barrier(self) -> None:
        """Wait until every event queued so far has been processed."""
        done = asyncio.get_running_loop().create_future()
        self.post("Barrier", lambda: done.set_result(None))
        await done

    async def _ask(self, name: str, action: Callable[[], Awaitable[T] | T]) -> T | None:
        """Run `action` as event `name` and return its result, or None if this broker is
        not the active controller when the event comes."""
        done: asyncio.Future[T | None] = asyncio.get_running_loop().create_future()

        async def run() -> None:
            if not self.is_active:
                done.set_result(None)
                return
            try:
                result = action()
                done.set_result(await result if inspect.isawaitable(result) else result)
            except Exception as e:
                done.set_exception(e)
                raise

        self.post(name, run)
        return await done

    async def _process_events(self) -> None:
        while True:
            name, action = await self._events.get()
            try:
                result = action()
                if asyncio.iscoroutine(result):
                    await result
            except Exception:
                log.exception("controller event %s failed", name)

    # -- election -------------------------------------------------------------------

    async def _elect(self) -> None:
        self.zk.watch_controller(self.watcher("ControllerChange", self._elect))
        if self.is_active and self.zk.get_controller_id() == self.broker_id:
            return
        won = self.zk.register_controller_and_increment_epoch(self.broker_id)
        if won is None:
            if self.is_active:
                self._resign()
            log.info("broker %s: controller is %s", self.broker_id, self.zk.get_controller_id())
            return
        self.ctx = ControllerContext(epoch=won[0])
        self.is_active = True
        log.info("broker %s is controller, epoch %s", self.broker_id, self.ctx.epoch)
        await self._on_controller_failover()

    def on_session_expired(self) -> None:
        """The store session expired: resign (its /controller went with the session) and
        take part in the election again (Kafka's Expire, then RegisterBrokerAndReelect)."""

        async def expire() -> None:
            if self.is_active:
                self._resign()
            await self._elect()

        self.post("Expire", expire)

    def _resign(self) -> None:
        log.info("broker %s resigns as controller", self.broker_id)
        self.is_active = False
        self._stop_rebalancer()

    def _stop_rebalancer(self) -> None:
        if self._rebalancer is not None:
            self._rebalancer.cancel()
            self._rebalancer = None

    async def _on_controller_failover(self) -> None:
        self.ctx.live_brokers = set(self.zk.get_broker_ids(self._watch_brokers()))
        await self._load_topics()
        self._watch_deletions()
        await self._on_isr_change()
        offline = [
            tp for tp, st in self.ctx.states.items() if st.leader not in self.ctx.live_brokers
        ]
        await self._elect_leaders(offline)
        await self._send_full_state(sorted(self.ctx.live_brokers))
        await self._on_topic_deletion()
        for tp in self.ctx.being_reassigned:  # resume the moves the last controller began
            await self._on_partition_reassignment(tp, self.ctx.full_assignment(tp))
        await self._on_zk_reassignment()
        await self._on_preferred_replica_election()
        if self.auto_leader_rebalance and self._rebalancer is None:
            self._rebalancer = asyncio.create_task(
                self._rebalance_periodically(), name="auto-leader-rebalance-task"
            )

    def _watch_brokers(self) -> Callable[[Any], None]:
        return self.watcher("BrokerChange", self._on_broker_change)

    def _watch_deletions(self) -> None:
        self.zk.watch_topic_deletions(self.watcher("TopicDeletion", self._on_topic_deletion))

    async def _load_topics(self) -> None:
        topics = self.zk.get_all_topics(self.watcher("TopicChange", self._on_topic_change))
        for topic in topics:
            self._load_topic(topic)

    def _load_topic(self, topic: str) -> list[TopicPartition]:
        """Read a topic's assignment and partition states; return partitions new to us."""
        assignment = self.zk.get_topic_assignment(
            topic, self.watcher("PartitionModifications", lambda: self._on_partitions(topic))
        )
        if assignment is None:
            return []
        known = self.ctx.assignments.get(topic, {})
        self.ctx.assignments[topic] = dict(assignment.partitions)
        self.ctx.topic_ids[topic] = assignment.topic_id
        for p in assignment.partitions:
            tp = TopicPartition(topic, p)
            self.ctx.set_full_assignment(tp, ReplicaAssignment(
                list(assignment.partitions[p]), list(assignment.adding_replicas.get(p, [])),
                list(assignment.removing_replicas.get(p, [])),
            ))  # fmt: skip
        new = []
        for p in sorted(assignment.partitions):
            tp = TopicPartition(topic, p)
            stored = self.zk.get_partition_state(topic, p)
            if stored is not None:
                self.ctx.states[tp] = self._state_from(tp, stored)
            elif p not in known:
                new.append(tp)
        return new

    def _state_from(self, tp: TopicPartition, stored: Any) -> PartitionState:
        """The context's state of `tp` from its state znode (a kt.metadata LeaderAndIsr)."""
        return PartitionState(
            tp.topic, tp.partition, stored.leader, stored.leader_epoch, list(self.ctx.replicas(tp)),
            list(stored.isr), controller_epoch=stored.controller_epoch,
            zk_version=stored.zk_version,
        )  # fmt: skip

    # -- event handlers ---------------------------------------------------------------

    async def _on_isr_change(self) -> None:
        """Leaders changed ISRs (IsrChangeNotificationHandler): re-read those partitions'
        states and tell every live broker."""
        if not self.is_active:
            return
        names = self.zk.get_isr_change_notifications(
            self.watcher("IsrChangeNotification", self._on_isr_change)
        )
        if not names:
            return
        changed: list[TopicPartition] = []
        for name in names:
            for topic, partition in self.zk.read_isr_change_notification(name):
                tp = TopicPartition(topic, partition)
                stored = self.zk.get_partition_state(topic, partition)
                if stored is not None and tp in self.ctx.states and tp not in changed:
                    self.ctx.states[tp] = self._state_from(tp, stored)
                    changed.append(tp)
        self.zk.delete_isr_change_notifications(names)
        if changed:
            await self._send_update_metadata(sorted(self.ctx.live_brokers), changed)
        for tp in changed:
            if tp in self.ctx.adding or tp in self.ctx.removing:
                await self._maybe_complete_reassignment(tp)

    async def _on_broker_change(self) -> None:
        if not self.is_active:
            return
        live = set(self.zk.get_broker_ids(self._watch_brokers()))
        new, dead = live - self.ctx.live_brokers, self.ctx.live_brokers - live
        self.ctx.live_brokers = live
        self.ctx.shutting_down_brokers -= new | dead
        for broker in new | dead:  # a broker back from the dead is a new process
            self.channel.drop_connection(broker)
        if dead:
            log.info("brokers %s went away", sorted(dead))
            affected = [tp for tp, st in self.ctx.states.items() if st.leader in dead]
            for tp, st in self.ctx.states.items():
                if any(b in dead for b in st.isr) and tp not in affected:
                    affected.append(tp)
            await self._elect_leaders(affected)
        if new:
            log.info("brokers %s joined", sorted(new))
            await self._send_full_state(sorted(new))
            leaderless = [tp for tp, st in self.ctx.states.items() if st.leader == NO_LEADER]
            await self._elect_leaders(leaderless)
        await self._send_update_metadata(sorted(live), list(self.ctx.states))

    async def _on_topic_change(self) -> None:
        if not self.is_active:
            return
        topics = set(self.zk.get_all_topics(self.watcher("TopicChange", self._on_topic_change)))
        created = [t for t in sorted(topics) if t not in self.ctx.assignments]
        new: list[TopicPartition] = []
        for topic in created:
            new += self._load_topic(topic)
        await self._on_new_partitions(new)

    async def _on_partitions(self, topic: str) -> None:
        if not self.is_active or topic in self.ctx.topics_to_delete:
            return
        new = self._load_topic(topic)
        await self._on_new_partitions(new)

    async def _on_new_partitions(self, new: list[TopicPartition]) -> None:
        """NewPartition -> OnlinePartition: first live replica leads, ISR = live replicas."""
        if not new:
            return
        states = []
        for tp in new:
            replicas = self.ctx.replicas(tp)
            live = [r for r in replicas if r in self.ctx.live_brokers]
            leader = live[0] if live else NO_LEADER
            state = PartitionState(
                tp.topic, tp.partition, leader, 0, replicas, live,
                controller_epoch=self.ctx.epoch, zk_version=0,
            )  # fmt: skip
            states.append(state)
        self.zk.create_partition_states(states)
        for state in states:
            self.ctx.states[TopicPartition(state.topic, state.partition)] = state
        await self._send_leader_and_isr(new, is_new=True)
        await self._send_update_metadata(sorted(self.ctx.live_brokers), new)

    async def _on_topic_deletion(self) -> None:
        if not self.is_active:
            return
        pending = self.zk.get_topic_deletions(
            self.watcher("TopicDeletion", self._on_topic_deletion)
        )
        for topic in pending:
            partitions = self.ctx.partitions_of(topic)
            self.ctx.topics_to_delete.add(topic)
            for broker in sorted(self.ctx.live_brokers):
                mine = [tp for tp in partitions if broker in self.ctx.replicas(tp)]
                if mine:
                    await self.channel.stop_replica(broker, self, mine, delete=True)
            for tp in partitions:
                self.ctx.states.pop(tp, None)
            self.ctx.assignments.pop(topic, None)
            self.ctx.topic_ids.pop(topic, None)
            self.zk.delete_topic(topic)
            self.ctx.topics_to_delete.discard(topic)
            await self.channel.remove_topic(
                sorted(self.ctx.live_brokers), self, topic, [tp.partition for tp in partitions]
            )
            log.info("deleted topic %s", topic)

    # -- partition reassignment (KIP-455) ----------------------------------------------

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
        """Write the state znode with the (leader, ISR) `change` makes of it, the epoch
        bumped and the current assignment, conditionally on its version (read again on a
        conflict); then send LeaderAndIsr to the replicas."""
        while True:
            stored = self.zk.get_partition_state(tp.topic, tp.partition)
            if stored is None:
                return
            state = self._state_from(tp, stored)
            leader, isr = change(state)
            new = PartitionState(
                tp.topic, tp.partition, leader, state.leader_epoch + 1,
                list(self.ctx.replicas(tp)), isr, controller_epoch=self.ctx.epoch,
            )  # fmt: skip
            version = self.zk.conditional_update_partition_state(new, state.zk_version)
            if version is not None:
                new.zk_version = version
                self.ctx.states[tp] = new
                await self._send_leader_and_isr([tp])
                return

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

    # -- replica leader elections (ElectLeaders, /admin/preferred_replica_election) ------

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
            await self._send_update_metadata(sorted(self.ctx.live_brokers), changed)
        return results

    def _elect_preferred_leader(self, tp: TopicPartition) -> PartitionState | None:
        """PreferredReplicaPartitionLeaderElectionStrategy: the first replica leads if it is
        alive and in the ISR (the ISR stays); None if it cannot."""
        preferred = self.ctx.replicas(tp)[0]
        while True:
            stored = self.zk.get_partition_state(tp.topic, tp.partition)
            if stored is None:
                return None
            state = self._state_from(tp, stored)
            if preferred not in self.ctx.electable_brokers or preferred not in state.isr:
                return None
            new = PartitionState(
                tp.topic, tp.partition, preferred, state.leader_epoch + 1,
                self.ctx.replicas(tp), state.isr, controller_epoch=self.ctx.epoch,
            )  # fmt: skip
            version = self.zk.conditional_update_partition_state(new, state.zk_version)
            if version is not None:
                new.zk_version = version
                return new

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

    # -- controlled shutdown -------------------------------------------------------------

    async def controlled_shutdown(self, broker_id: int) -> list[TopicPartition] | None:
        """A broker is about to stop (KafkaController.doControlledShutdown): each partition
        it leads moves to another live ISR member, and it leaves the ISR of the others, so
        that clients never wait for its session to expire. Returns the partitions it
        still leads though another in-sync replica could take over (a retry may move
        them), or None if this broker is not the controller."""
        return await self._ask("ControlledShutdown", lambda: self._move_away_from(broker_id))

    async def _move_away_from(self, broker_id: int) -> list[TopicPartition]:
        log.info("controlled shutdown of broker %s", broker_id)
        self.ctx.shutting_down_brokers.add(broker_id)
        changed: list[TopicPartition] = []
        for tp in sorted(self.ctx.states):
            if broker_id not in self.ctx.replicas(tp):
                continue
            new = self._leave(tp, broker_id)
            if new is not None:
                self.ctx.states[tp] = new
                changed.append(tp)
        if changed:
            states = [self.ctx.states[tp] for tp in changed]
            await self._send_leader_and_isr(changed)
            await self.channel.stop_replica(broker_id, self, changed, delete=False)
            await self._send_update_metadata(sorted(self.ctx.live_brokers), changed)
            log.info("controlled shutdown of broker %s moved %s", broker_id,
                     [f"{s.topic}-{s.partition}" for s in states])  # fmt: skip
        # What it still leads and another in-sync replica could lead: worth a retry. (Kafka
        # counts every partition with more than one replica, so the last broker of a
        # cluster retries for nothing before it stops.)
        electable = self.ctx.electable_brokers
        return [
            tp for tp, st in self.ctx.states.items()
            if st.leader == broker_id and any(r in electable for r in st.isr if r != broker_id)
        ]  # fmt: skip

    def _leave(self, tp: TopicPartition, broker_id: int) -> PartitionState | None:
        """The state of `tp` without `broker_id` in its ISR or as its leader (the first
        electable replica of the assignment in the ISR leads); None if it must stay."""
        while True:
            stored = self.zk.get_partition_state(tp.topic, tp.partition)
            state = self._state_from(tp, stored) if stored is not None else self.ctx.states[tp]
            isr = [r for r in state.isr if r != broker_id]
            leader = state.leader
            if leader in (broker_id, NO_LEADER):
                electable = self.ctx.electable_brokers
                leader = next((r for r in self.ctx.replicas(tp) if r in isr and r in electable),
                              NO_LEADER)  # fmt: skip
            if not isr or leader == NO_LEADER or (leader, isr) == (state.leader, state.isr):
                return None
            new = PartitionState(
                tp.topic, tp.partition, leader, state.leader_epoch + 1, self.ctx.replicas(tp),
                isr, controller_epoch=self.ctx.epoch,
            )  # fmt: skip
            version = self.zk.conditional_update_partition_state(new, state.zk_version)
            if version is not None:
                new.zk_version = version
                return new

    # -- elections and propagation -------------------------------------------------

    async def _elect_leaders(self, partitions: list[TopicPartition]) -> None:
        changed = []
        for tp in partitions:
            if tp not in self.ctx.states:
                continue
            new = self._elect_leader(tp)
            if new is not None:
                self.ctx.states[tp] = new
                changed.append(tp)
        if changed:
            await self._send_leader_and_isr(changed)
            await self._send_update_metadata(sorted(self.ctx.live_brokers), changed)

    def _elect_leader(
        self, tp: TopicPartition, unclean: bool | None = None
    ) -> PartitionState | None:
        """Elect from the state znode as it is now (a leader may have changed the ISR
        since the controller last read it), written conditionally on its version; None
        if nothing changes."""
        while True:
            stored = self.zk.get_partition_state(tp.topic, tp.partition)
            state = self._state_from(tp, stored) if stored is not None else self.ctx.states[tp]
            allow_unclean = (
                self.zk.unclean_leader_election_enabled(tp.topic) if unclean is None else unclean
            )
            leader, isr = elect_leader(
                self.ctx.replicas(tp), state.isr, self.ctx.electable_brokers, allow_unclean
            )
            if leader == state.leader and isr == state.isr:
                self.ctx.states[tp] = state
                return None
            new = PartitionState(
                tp.topic, tp.partition, leader, state.leader_epoch + 1, self.ctx.replicas(tp),
                isr if leader != NO_LEADER else state.isr, controller_epoch=self.ctx.epoch,
            )  # fmt: skip
            version = self.zk.conditional_update_partition_state(new, state.zk_version)
            if version is not None:
                new.zk_version = version
                return new
            log.info("partition %s changed while electing its leader; reading it again", tp)

    async def _send_leader_and_isr(self, partitions: list[TopicPartition], is_new=False) -> None:
        by_broker: dict[int, list[PartitionState]] = {}
        for tp in partitions:
            state = self.ctx.states[tp]
            for replica in state.replicas:
                if replica in self.ctx.electable_brokers:
                    by_broker.setdefault(replica, []).append(state)
        for broker, states in sorted(by_broker.items()):
            await self.channel.leader_and_isr(broker, self, states, self.ctx.topic_ids, is_new)

    async def _send_update_metadata(
        self, brokers: list[int], partitions: list[TopicPartition]
    ) -> None:
        states = [self.ctx.states[tp] for tp in partitions if tp in self.ctx.states]
        for broker in brokers:
            await self.channel.update_metadata(broker, self, states, self.ctx.topic_ids)

    async def _send_full_state(self, brokers: list[int]) -> None:
        """A (re)joining broker hears every partition it replicates and the whole map."""
        for broker in brokers:
            mine = [st for st in self.ctx.states.values() if broker in st.replicas]
            if mine:
                await self.channel.leader_and_isr(broker, self, mine, self.ctx.topic_ids, False)
        await self._send_update_metadata(brokers, list(self.ctx.states))
