"""The controller: one broker, elected through the metadata store, that owns leadership.

Kafka's KafkaController (ZooKeeper mode). Election: every broker tries to create the
ephemeral /controller znode; the winner bumps /controller_epoch and becomes controller
until its session ends. The controller turns metadata events into partition state
transitions, writes leader/ISR state to /brokers/topics/<t>/partitions/<p>/state, and
tells brokers with LeaderAndIsr, UpdateMetadata and StopReplica. Its parts: the context
(kt.broker.controller.context), partition reassignment (controller_reassignment) and
replica leader elections (controller_elections), mixed into KafkaController; every state
znode write goes through `_update_leader_and_isr`.

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
from typing import Any, TypeVar

from kt.broker.controller.alter_partition import AlterPartitionHandling
from kt.broker.controller.context import NO_LEADER, ControllerContext, elect_leader
from kt.broker.controller.elections import ReplicaLeaderElection
from kt.broker.controller.event_manager import ControllerEventManager
from kt.broker.controller.reassignment import PartitionReassignment
from kt.broker.controller.replica_assignment import ReplicaAssignment
from kt.broker.metadata_cache import PartitionState
from kt.broker.replication.partition import TopicPartition
from kt.metrics.meters import Meter

log = logging.getLogger(__name__)
T = TypeVar("T")


class KafkaController(PartitionReassignment, ReplicaLeaderElection, AlterPartitionHandling):
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
        self.events = ControllerEventManager(broker_id)
        self.unclean_leader_elections = Meter()  # ControllerStats' UncleanLeaderElectionsPerSec

    # -- events ---------------------------------------------------------------------

    async def startup(self) -> None:
        """Start the event thread and take part in the first election."""
        self.events.start()
        self.post("Startup", self._elect)
        await self.barrier()

    async def shutdown(self) -> None:
        """Resign (after the event in progress) and stop the event thread."""

        async def resign() -> None:
            self._stop_rebalancer()
            if self.is_active:
                self.zk.resign_controller(self.broker_id)
            self.is_active = False
            self.channel.close()

        await self.events.stop(resign)

    async def abandon(self) -> None:
        """Stop processing events without a word to the store (the broker died); its
        /controller znode goes with its session."""

        async def leave() -> None:
            self._stop_rebalancer()
            self.is_active = False
            self.channel.close()

        await self.events.stop(leave)

    def post(self, name: str, action: Callable[[], Any]) -> None:
        """Queue an event; safe from any thread (store watches fire on their own thread)."""
        self.events.put(name, action)

    def watcher(self, name: str, action: Callable[[], Any]) -> Callable[[Any], None]:
        """A store watch callback that queues `action` as event `name`."""
        return lambda _event: self.post(name, action)

    @property
    def started(self) -> bool:
        """Whether startup() ran: the event thread takes events."""
        return self.events.started

    async def barrier(self) -> None:
        """Wait until every event queued so far has been processed."""
        await self.events.ask("Barrier", lambda: None)

    async def _ask(self, name: str, action: Callable[[], Awaitable[T] | T]) -> T | None:
        """Run `action` as event `name` on the event thread and return its result, or
        None if this broker is not the active controller when the event comes (or has
        not started its controller yet)."""
        if not self.events.started:
            return None

        async def run() -> T | None:
            if not self.is_active:
                return None
            result = action()
            return await result if inspect.isawaitable(result) else result

        return await self.events.ask(name, run)

    # -- election -------------------------------------------------------------------

    async def _elect(self) -> None:
        self.zk.watch_controller(self.watcher("ControllerChange", self._elect))
        if self.is_active and self.zk.get_controller_id() == self.broker_id:
            return
        won = self.zk.register_controller_and_increment_epoch(self.broker_id)
        if won is None:
            if self.is_active:
                self._resign()
            controller_id = self.zk.get_controller_id()
            log.info("broker %s: controller is %s", self.broker_id, controller_id)
            # Until the winner's UpdateMetadata comes, this broker's Metadata answers must
            # not name a controller the store no longer does (itself, after a session
            # expiry): librdkafka's admin client keeps the controller a Metadata answer
            # named, and NOT_CONTROLLER does not make it look again.
            await self.channel.name_controller(controller_id)
            return
        self.ctx = ControllerContext(epoch=won[0], epoch_zk_version=won[1])
        self.is_active = True
        log.info("broker %s is controller, epoch %s", self.broker_id, self.ctx.epoch)
        await self._on_controller_failover()

    def on_session_expired(self) -> None:
        """The store session expired: resign (its /controller went with the session) and
        take part in the election again (Kafka's Expire, then RegisterBrokerAndReelect)."""

        async def expire() -> None:
            # The watch on /controller may have run the election in the new session
            # already, and won it: that /controller is this session's, keep it.
            if self.is_active and self.zk.get_controller_id() != self.broker_id:
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
        self.channel.forget_registrations()
        self.ctx.live_brokers = set(self.zk.get_broker_ids(self._watch_brokers()))
        await self._load_topics()
        self._watch_deletions()
        await self._on_isr_change()
        offline = [
            tp for tp, st in self.ctx.states.items() if st.leader not in self.ctx.live_brokers
        ]
        await self._elect_leaders(offline)
        # Replicas on brokers that died before this controller was elected leave the ISR
        # now (initializeReplicaState: OfflineReplica), not after replica.lag.time.max.ms.
        await self._remove_dead_from_isr(self._with_dead_in_isr(set(offline)))
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
        # Registered again under a new session since last seen (Kafka's bounced brokers):
        # a new broker epoch, so a new registration to read and the whole state to hear.
        bounced = {b for b in live - new if self.channel.registration_changed(b)}
        self.ctx.live_brokers = live
        self.ctx.shutting_down_brokers -= new | dead
        for broker in new | dead | bounced:  # a broker back from the dead is a new process
            self.channel.drop_connection(broker)
        new |= bounced
        if dead:
            log.info("brokers %s went away", sorted(dead))
            offline = [tp for tp, st in self.ctx.states.items() if st.leader in dead]
            await self._elect_leaders(offline)
            await self._remove_dead_from_isr(self._with_dead_in_isr(set(offline)))
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
        self.zk.create_partition_states(states, self.ctx.epoch_zk_version)
        for state in states:
            self.ctx.states[TopicPartition(state.topic, state.partition)] = state
        await self._send_leader_and_isr(new, is_new=True)

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
            self.zk.delete_topic(topic, [tp.partition for tp in partitions])
            self.ctx.topics_to_delete.discard(topic)
            await self.channel.remove_topic(
                sorted(self.ctx.live_brokers), self, topic, [tp.partition for tp in partitions]
            )
            log.info("deleted topic %s", topic)

    # -- controlled shutdown -------------------------------------------------------------

    async def controlled_shutdown(self, broker_id: int) -> list[TopicPartition] | None:
        """A broker is about to stop (KafkaController.doControlledShutdown): each partition
        it leads moves to another live ISR member, and it leaves the ISR of the others, so
        that clients never wait for its session to expire. Returns the partitions it
        still leads though another in-sync replica could take over (a retry may move
        them), or None if this broker is not the controller."""
        return await self._ask("ControlledShutdown", lambda: self._move_away_from(broker_id))

    async def allocate_producer_ids(self, broker_id: int, broker_epoch: int) -> Any:
        """AllocateProducerIds (KIP-730): Kafka brokers of IBP 3.0+ take their blocks of
        producer ids from the controller, which claims the next block in the store as
        kt's brokers claim theirs (the same conditional write, so no id is given twice).
        The block, "STALE_BROKER_EPOCH" for a broker not (or no more) registered so, or
        None if this broker is not the controller."""

        def claim() -> Any:
            if (
                broker_id not in self.ctx.live_brokers
                or self.channel.broker_epoch(broker_id) != broker_epoch
            ):
                return "STALE_BROKER_EPOCH"
            return self.zk.claim_producer_id_block(broker_id)

        return await self._ask("AllocateProducerIds", claim)

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

        def change(state: PartitionState) -> tuple[int, list[int]] | None:
            isr = [r for r in state.isr if r != broker_id]
            leader = state.leader
            if leader in (broker_id, NO_LEADER):
                electable = self.ctx.electable_brokers
                leader = next((r for r in self.ctx.replicas(tp) if r in isr and r in electable),
                              NO_LEADER)  # fmt: skip
            if not isr or leader == NO_LEADER or (leader, isr) == (state.leader, state.isr):
                return None
            return leader, isr

        return self._update_leader_and_isr(tp, change)

    def _update_leader_and_isr(
        self, tp: TopicPartition, change: Callable[[PartitionState], tuple[int, list[int]] | None]
    ) -> PartitionState | None:
        """Read the partition's state znode as it is now (a leader may have changed the ISR
        since the controller last read it), let `change` pick the new (leader, ISR) or None
        for no change, and write it with the leader epoch bumped and the current
        assignment, conditionally on the znode's version (read again on a conflict). The
        context keeps what was read or written; returns the state written, or None."""
        while True:
            stored = self.zk.get_partition_state(tp.topic, tp.partition)
            if stored is None:
                return None
            state = self._state_from(tp, stored)
            changed = change(state)
            if changed is None:
                self.ctx.states[tp] = state
                return None
            leader, isr = changed
            new = PartitionState(
                tp.topic, tp.partition, leader, state.leader_epoch + 1,
                list(self.ctx.replicas(tp)), isr, controller_epoch=self.ctx.epoch,
            )  # fmt: skip
            version = self.zk.conditional_update_partition_state(
                new, state.zk_version, self.ctx.epoch_zk_version
            )
            if version is not None:
                new.zk_version = version
                self.ctx.states[tp] = new
                return new
            log.info("partition %s changed while its state was written; reading it again", tp)

    # -- elections and propagation -------------------------------------------------

    def _with_dead_in_isr(self, skip: set[TopicPartition]) -> list[TopicPartition]:
        live = self.ctx.live_brokers
        return [
            tp for tp, st in self.ctx.states.items()
            if tp not in skip and any(b not in live for b in st.isr)
        ]  # fmt: skip

    async def _remove_dead_from_isr(self, partitions: list[TopicPartition]) -> None:
        """Replicas of dead brokers leave the ISR; the leader stays (OfflineReplica's
        removeReplicasFromIsr: the leader epoch moves, the ISR never becomes empty)."""
        live = self.ctx.live_brokers

        def change(state: PartitionState) -> tuple[int, list[int]] | None:
            if state.leader not in live:
                return None  # an election's business
            isr = [b for b in state.isr if b in live] or state.isr[:1]
            return None if isr == state.isr else (state.leader, isr)

        changed = [tp for tp in partitions if self._update_leader_and_isr(tp, change) is not None]
        if changed:
            await self._send_leader_and_isr(changed)

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

    def _elect_leader(
        self, tp: TopicPartition, unclean: bool | None = None
    ) -> PartitionState | None:
        """OfflinePartitionLeaderElectionStrategy on the state as it is now; None if
        nothing changes."""
        allow_unclean = (
            self.zk.unclean_leader_election_enabled(tp.topic) if unclean is None else unclean
        )

        def change(state: PartitionState) -> tuple[int, list[int]] | None:
            leader, isr = elect_leader(
                self.ctx.replicas(tp), state.isr, self.ctx.electable_brokers, allow_unclean
            )
            if leader == state.leader and isr == state.isr:
                return None
            if leader != NO_LEADER and leader not in state.isr:
                self.unclean_leader_elections.mark()
            return leader, isr if leader != NO_LEADER else state.isr

        return self._update_leader_and_isr(tp, change)

    async def _send_leader_and_isr(self, partitions: list[TopicPartition], is_new=False) -> None:
        """LeaderAndIsr to the partitions' replicas, then UpdateMetadata of them to every
        live broker, as Kafka's addLeaderAndIsrRequestForBrokers adds both: whatever
        changed the state (a leader, an ISR, a move's replica set) is what Metadata shows."""
        by_broker: dict[int, list[PartitionState]] = {}
        for tp in partitions:
            state = self.ctx.states[tp]
            for replica in state.replicas:
                if replica in self.ctx.electable_brokers:
                    by_broker.setdefault(replica, []).append(state)
        for broker, states in sorted(by_broker.items()):
            await self.channel.leader_and_isr(broker, self, states, self.ctx.topic_ids, is_new)
        await self._send_update_metadata(sorted(self.ctx.live_brokers), partitions)

    async def _send_update_metadata(
        self, brokers: list[int], partitions: list[TopicPartition]
    ) -> None:
        states = [self.ctx.states[tp] for tp in partitions if tp in self.ctx.states]
        for broker in brokers:
            await self.channel.update_metadata(broker, self, states, self.ctx.topic_ids)

    async def _send_full_state(self, brokers: list[int]) -> None:
        """A (re)joining broker hears the whole map, then every partition it replicates,
        in the order of Kafka's onBrokerStartup: the others learn of the new brokers, the
        new brokers get every partition's state, and only then LeaderAndIsr (a Kafka
        broker follows no leader its metadata cache does not list as alive)."""
        others = sorted(self.ctx.live_brokers - set(brokers))
        await self._send_update_metadata(others, [])
        await self._send_update_metadata(brokers, list(self.ctx.states))
        for broker in brokers:
            mine = [st for st in self.ctx.states.values() if broker in st.replicas]
            if mine:
                await self.channel.leader_and_isr(broker, self, mine, self.ctx.topic_ids, False)
