"""What a controller's LeaderAndIsr, UpdateMetadata and StopReplica do to a broker.

Kafka's ReplicaManager.becomeLeaderOrFollower, maybeUpdateMetadataCache and stopReplicas,
with the controller epoch it has seen and its own broker epoch. A broker in the
controller's process receives the three as direct calls (kt.broker.controller.channel_manager);
a broker in another process receives them over the wire, and its handlers
(kt.broker.api.handlers.controller) decode them into the same calls. Either way a request
from a controller older than the newest this broker has heard from is refused with
STALE_CONTROLLER_EPOCH, as Kafka's brokers refuse it.

Topic deletion travels as Kafka sends it: UpdateMetadata with the topic's partitions led
by -2 (LeaderAndIsr.LeaderDuringDelete), which removes the topic from the cache.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kt.broker.metadata_cache import Broker, MetadataCache, PartitionState
from kt.broker.replication.partition import TopicPartition
from kt.broker.replication.replica_manager import ReplicaManager
from kt.errors import KafkaError

LEADER_DURING_DELETE = -2
STALE_CONTROLLER_EPOCH = KafkaError("STALE_CONTROLLER_EPOCH").code


class ControllerRequests:
    """The replication side of one broker as its controllers see it.

    Invariant: `controller_epoch_seen` never decreases; a request of an older controller
    changes nothing."""

    def __init__(
        self,
        metadata_cache: MetadataCache,
        replica_manager: ReplicaManager,
        load_topic_configs: Callable[[set[str]], Awaitable[dict[str, KafkaError]]],
    ) -> None:
        self.metadata_cache = metadata_cache
        self.replica_manager = replica_manager
        self._load_topic_configs = load_topic_configs
        self.controller_epoch_seen = -1  # the newest controller this broker has heard from
        self.broker_epoch = -1  # the czxid of this broker's registration
        # Where the leaders named by LeaderAndIsr listen for other brokers (its
        # live_leaders), for fetchers that start before UpdateMetadata names them.
        self.leader_endpoints: dict[int, tuple[str, int]] = {}

    def _is_stale(self, controller_epoch: int) -> bool:
        """Fence a controller older than the newest one heard from (and remember a newer)."""
        if controller_epoch < self.controller_epoch_seen:
            return True
        self.controller_epoch_seen = controller_epoch
        return False

    async def become_leader_or_follower(
        self,
        controller_id: int,
        controller_epoch: int,
        states: list[PartitionState],
        topic_ids: dict[str, Any],
        live_leaders: dict[int, tuple[str, int]],
    ) -> dict[TopicPartition, int]:
        """LeaderAndIsr: become leader or follower of each partition; an error code per
        partition. The config of a topic new to this broker is read first (off the event
        loop); the leaders' inter-broker endpoints are where its fetchers connect."""
        if self._is_stale(controller_epoch):
            return {TopicPartition(s.topic, s.partition): STALE_CONTROLLER_EPOCH for s in states}
        self.leader_endpoints.update(live_leaders)
        unread = await self._load_topic_configs({s.topic for s in states})
        errors = {TopicPartition(s.topic, s.partition): unread[s.topic].code
                  for s in states if s.topic in unread}  # fmt: skip
        return errors | self.replica_manager.become_leader_or_follower(
            controller_id, controller_epoch, [s for s in states if s.topic not in unread], topic_ids
        )

    def update_metadata(
        self,
        controller_id: int,
        controller_epoch: int,
        live_brokers: list[Broker],
        states: list[PartitionState],
        topic_ids: dict[str, Any],
    ) -> int:
        """UpdateMetadata: replace the live brokers and update these partitions; an error
        code."""
        if self._is_stale(controller_epoch):
            return STALE_CONTROLLER_EPOCH
        cache = self.metadata_cache
        cache.update_brokers(live_brokers, controller_id)
        for state in states:
            if state.leader == LEADER_DURING_DELETE:
                cache.remove_topic(state.topic)
            else:
                cache.update_partition(state, topic_ids.get(state.topic))
        for state in states:
            self.replica_manager.wake_partition(state.topic, state.partition)
        cache.notify_changed()
        return 0

    def stop_replicas(
        self, controller_epoch: int, partitions: list[TopicPartition], delete: bool
    ) -> int:
        """StopReplica: stop (and with `delete`, delete) these replicas; an error code."""
        if self._is_stale(controller_epoch):
            return STALE_CONTROLLER_EPOCH
        for tp in partitions:
            self.replica_manager.stop_replica(tp, delete)
        return 0

    def name_controller(self, controller_id: int) -> None:
        """The metadata cache names `controller_id` (read from the store) as the
        controller, until the controller's own UpdateMetadata says more."""
        self.metadata_cache.name_controller(controller_id)

    def is_broker_epoch_stale(self, broker_epoch: int) -> bool:
        """A request meant for an earlier registration of this broker (Kafka's
        isBrokerEpochStale; -1 is a controller that does not say)."""
        return broker_epoch != -1 and self.broker_epoch != -1 and broker_epoch < self.broker_epoch
