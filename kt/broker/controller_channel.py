"""How the controller's requests reach brokers (ControllerChannelManager).

For the broker that hosts the controller, and for every broker started in the same
process, requests are delivered by direct call to that broker's handlers; brokers in
other processes get the same requests over the wire (LeaderAndIsr, UpdateMetadata,
StopReplica) through kt.client. Either way the receiving broker runs the same code:
ReplicaManager.become_leader_or_follower, MetadataCache updates, stop_replica.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from kt.broker.metadata_cache import BrokerEndpoint, PartitionState

if TYPE_CHECKING:
    from kt.broker.controller import KafkaController
    from kt.broker.partition import TopicPartition
    from kt.broker.server import KafkaServer

log = logging.getLogger(__name__)

# Brokers of this process, by id: the embedded cluster shares one store and one loop.
LOCAL_BROKERS: dict[int, KafkaServer] = {}


class ControllerChannel:
    """Delivers controller requests; `server` is the broker hosting this controller."""

    def __init__(self, server: KafkaServer) -> None:
        self.server = server
        LOCAL_BROKERS[server.broker_id] = server

    @staticmethod
    def forget(server: KafkaServer) -> None:
        """A broker of this process stopped: nothing is delivered to it any more."""
        if LOCAL_BROKERS.get(server.broker_id) is server:
            del LOCAL_BROKERS[server.broker_id]

    def _target(self, broker_id: int) -> KafkaServer | None:
        target = LOCAL_BROKERS.get(broker_id)
        if target is None:
            log.warning("no channel to broker %s yet", broker_id)
        return target

    async def leader_and_isr(
        self,
        broker_id: int,
        controller: KafkaController,
        states: list[PartitionState],
        topic_ids: dict[str, Any],
        is_new: bool,
    ) -> None:
        target = self._target(broker_id)
        if target is not None:
            target.replica_manager.become_leader_or_follower(
                controller.broker_id, controller.ctx.epoch, states, topic_ids
            )

    async def update_metadata(
        self,
        broker_id: int,
        controller: KafkaController,
        states: list[PartitionState],
        topic_ids: dict[str, Any],
    ) -> None:
        target = self._target(broker_id)
        if target is None:
            return
        live = [self._endpoint(b) for b in sorted(controller.ctx.live_brokers)]
        cache = target.metadata_cache
        cache.update_brokers([e for e in live if e is not None], controller.broker_id)
        for state in states:
            cache.update_partition(state, topic_ids.get(state.topic))
        for state in states:
            target.replica_manager.wake_partition(state.topic, state.partition)
        cache.notify_changed()

    def _endpoint(self, broker_id: int) -> BrokerEndpoint | None:
        registration = self.server.zk.get_broker(broker_id)
        if registration is None:
            return None
        return BrokerEndpoint(broker_id, registration.host, registration.port, registration.rack)

    async def stop_replica(
        self,
        broker_id: int,
        controller: KafkaController,
        partitions: list[TopicPartition],
        delete: bool,
    ) -> None:
        target = self._target(broker_id)
        if target is not None:
            for tp in partitions:
                target.replica_manager.stop_replica(tp, delete)

    async def remove_topic(
        self, brokers: list[int], controller: KafkaController, topic: str
    ) -> None:
        for broker_id in brokers:
            target = self._target(broker_id)
            if target is not None:
                target.metadata_cache.remove_topic(topic)
                target.metadata_cache.notify_changed()
