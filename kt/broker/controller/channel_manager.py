"""How the controller's requests reach brokers (ControllerChannelManager).

For every broker started in the controller's process (the embedded cluster), requests
are direct calls of its ControllerRequests (kt.broker.replication.controller_requests), on its loop;
brokers in other processes get the same requests over the wire (LeaderAndIsr,
UpdateMetadata, StopReplica), through one connection each, and their handlers make the
same calls. A broker that cannot be reached is logged and skipped: when it comes back, the
controller sends it its whole state (KafkaController._send_full_state).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kt.broker.controller.event_manager import call_in_loop
from kt.broker.metadata_cache import Broker, PartitionState
from kt.broker.replication.controller_requests import LEADER_DURING_DELETE, ControllerRequests
from kt.client.async_connection import AsyncBrokerConnection
from kt.endpoints import SECURITY_PROTOCOLS
from kt.errors import KafkaError, ProtocolError
from kt.metadata.znodes import BrokerEndPoint
from kt.protocol import ApiKey
from kt.protocol import messages as m

if TYPE_CHECKING:
    from kt.broker.controller.kafka_controller import KafkaController
    from kt.broker.replication.partition import TopicPartition
    from kt.config import KafkaConfig
    from kt.metadata.kafka_zk_client import KafkaZkClient

log = logging.getLogger(__name__)
state_change_log = logging.getLogger("state.change.logger")  # Kafka's state-change.log

NULL_TOPIC_ID = uuid.UUID(int=0)
SEND_BACKOFF_S = 0.1  # growing to 1 s between attempts
CONTROLLER_REQUEST_TIMEOUT_S = 30.0  # Kafka's controller.socket.timeout.ms
# Brokers of this process, by their metadata store and then by id: the brokers of one
# cluster share one store (and one loop); two clusters in one process (tests, notebooks)
# must not reach each other's brokers because their ids are the same.
LOCAL_BROKERS: weakref.WeakKeyDictionary[Any, dict[int, LocalBroker]] = weakref.WeakKeyDictionary()


@dataclass
class LocalBroker:
    """A broker of this process as the controllers of its cluster reach it: its event
    loop, what their requests do to it, and its own controller (once it has one)."""

    broker_id: int
    store: Any
    loop: asyncio.AbstractEventLoop
    requests: ControllerRequests
    controller: KafkaController | None = None


class ControllerChannel:
    """Delivers controller requests for the controller of the broker `host`.

    Invariant: at most one sender (one connection) per remote broker."""

    def __init__(
        self, host: LocalBroker, zk: KafkaZkClient, config: KafkaConfig,
        security: dict[str, Any],
    ) -> None:  # fmt: skip
        self.host = host
        self.broker_id = host.broker_id
        self.zk = zk
        self.config = config
        self.security = security  # the controller listener's, as a client
        self._senders: dict[int, _RequestSender] = {}
        # Registrations read once per broker process (not once per request): dropped
        # with the broker's connection when it leaves or comes back, and on fail-over.
        self._registrations: dict[int, Broker] = {}
        self._epochs: dict[int, int] = {}  # by broker id, read with the registrations
        self._local = LOCAL_BROKERS.setdefault(host.store, {})

    @staticmethod
    def register(local: LocalBroker) -> None:
        """Reach `local` directly from now on (no connection)."""
        LOCAL_BROKERS.setdefault(local.store, {})[local.broker_id] = local

    @staticmethod
    def forget(local: LocalBroker) -> None:
        """A broker of this process stopped: nothing is delivered to it any more."""
        brokers = LOCAL_BROKERS.get(local.store, {})
        if brokers.get(local.broker_id) is local:
            del brokers[local.broker_id]

    @staticmethod
    def local_broker(store: Any, broker_id: int) -> LocalBroker | None:
        """The broker `broker_id` of the cluster on `store`, if it runs in this process."""
        return LOCAL_BROKERS.get(store, {}).get(broker_id)

    def close(self) -> None:
        senders, self._senders = self._senders, {}
        for sender in senders.values():
            sender.stop()

    # -- the three requests ------------------------------------------------------------

    async def leader_and_isr(
        self,
        broker_id: int,
        controller: KafkaController,
        states: list[PartitionState],
        topic_ids: dict[str, Any],
        is_new: bool,
    ) -> None:
        become_leader = sum(s.leader == broker_id for s in states)
        state_change_log.info(
            "[Controller id=%s epoch=%s] Sending LeaderAndIsr request to broker %s with %s "
            "become-leader and %s become-follower partitions", controller.broker_id,
            controller.ctx.epoch, broker_id, become_leader, len(states) - become_leader,
        )  # fmt: skip
        listener = self.config.listener_config.inter_broker
        leaders = {
            b: (e.host or "", e.port) for b in sorted({s.leader for s in states})
            if (e := self.listener_endpoint(b, listener)) is not None
        }  # fmt: skip
        local = self._local_broker(broker_id)
        if local is not None:
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(
                local.requests.become_leader_or_follower(
                    controller.broker_id, controller.ctx.epoch, states, topic_ids, leaders
                ),
                local.loop,
            ))  # fmt: skip
            return
        R = m.LeaderAndIsrRequest
        by_topic: dict[str, list[Any]] = {}
        for s in states:
            by_topic.setdefault(s.topic, []).append(
                R.LeaderAndIsrPartitionState(
                    topic_name=s.topic,
                    partition_index=s.partition,
                    controller_epoch=s.controller_epoch,
                    leader=s.leader,
                    leader_epoch=s.leader_epoch,
                    isr=list(s.isr),
                    partition_epoch=s.zk_version,
                    replicas=list(s.replicas),
                    is_new=is_new,
                )  # fmt: skip
            )
        request = R(
            controller_id=controller.broker_id,
            controller_epoch=controller.ctx.epoch,
            broker_epoch=self._known_epoch(broker_id),
            ungrouped_partition_states=[p for ps in by_topic.values() for p in ps],
            topic_states=[
                R.LeaderAndIsrTopicState(
                    topic_name=t, topic_id=topic_ids.get(t) or NULL_TOPIC_ID, partition_states=ps
                )
                for t, ps in by_topic.items()
            ],
            live_leaders=[
                R.LeaderAndIsrLiveLeader(broker_id=b, host_name=host, port=port)
                for b, (host, port) in leaders.items()
            ],
        )
        await self._send(broker_id, ApiKey.LEADER_AND_ISR, request)

    async def update_metadata(
        self,
        broker_id: int,
        controller: KafkaController,
        states: list[PartitionState],
        topic_ids: dict[str, Any],
    ) -> None:
        live = [self.endpoint(b) for b in sorted(controller.ctx.live_brokers)]
        endpoints = [e for e in live if e is not None]
        local = self._local_broker(broker_id)
        if local is not None:
            await call_in_loop(local.loop, lambda: local.requests.update_metadata(
                controller.broker_id, controller.ctx.epoch, endpoints, states, topic_ids
            ))  # fmt: skip
            return
        request = _update_metadata_request(controller, endpoints, states, topic_ids)
        request.broker_epoch = self._known_epoch(broker_id)
        await self._send(broker_id, ApiKey.UPDATE_METADATA, request)

    async def name_controller(self, controller_id: int) -> None:
        """The hosting broker's metadata cache names `controller_id` (read from the store)
        as the controller, until the controller's own UpdateMetadata says more."""
        host = self.host
        await call_in_loop(host.loop, lambda: host.requests.name_controller(controller_id))

    async def stop_replica(
        self,
        broker_id: int,
        controller: KafkaController,
        partitions: list[TopicPartition],
        delete: bool,
    ) -> None:
        local = self._local_broker(broker_id)
        if local is not None:
            await call_in_loop(local.loop, lambda: local.requests.stop_replicas(
                controller.ctx.epoch, partitions, delete
            ))  # fmt: skip
            return
        R = m.StopReplicaRequest
        by_topic: dict[str, list[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        request = R(
            controller_id=controller.broker_id,
            controller_epoch=controller.ctx.epoch,
            broker_epoch=self._known_epoch(broker_id),
            delete_partitions=delete,
            ungrouped_partitions=[
                R.StopReplicaPartitionV0(topic_name=tp.topic, partition_index=tp.partition)
                for tp in partitions
            ],
            topics=[
                R.StopReplicaTopicV1(name=t, partition_indexes=ps) for t, ps in by_topic.items()
            ],
            topic_states=[
                R.StopReplicaTopicState(
                    topic_name=t,
                    partition_states=[
                        R.StopReplicaPartitionState(partition_index=p, delete_partition=delete)
                        for p in ps
                    ],
                )
                for t, ps in by_topic.items()
            ],
        )
        await self._send(broker_id, ApiKey.STOP_REPLICA, request)

    async def remove_topic(
        self, brokers: list[int], controller: KafkaController, topic: str, partitions: list[int]
    ) -> None:
        """Tell every broker a topic is gone: its partitions led by -2 (LeaderDuringDelete)."""
        gone = [
            PartitionState(topic, p, LEADER_DURING_DELETE, 0, [], [],
                           controller_epoch=controller.ctx.epoch)
            for p in partitions
        ]  # fmt: skip
        for broker_id in brokers:
            await self.update_metadata(broker_id, controller, gone, {})

    # -- connections -------------------------------------------------------------------

    def _local_broker(self, broker_id: int) -> LocalBroker | None:
        """The broker of this process with that id, if any. Requests queued for the wire
        while it was not one (it had crashed and not yet restarted) are dropped: they were
        for the process that crashed, and the one that came back hears the whole state
        when it joins; delivered later, they would undo newer ones."""
        local = self._local.get(broker_id)
        if local is not None and (sender := self._senders.pop(broker_id, None)) is not None:
            sender.stop()
        return local

    def endpoint(self, broker_id: int) -> Broker | None:
        """A registered broker's endpoints (every listener) and rack, read from its
        /brokers/ids znode the first time they are needed."""
        known = self._registrations.get(broker_id)
        if known is not None:
            return known
        registration = self.zk.get_broker(broker_id)
        if registration is None:
            return None
        known = self._registrations[broker_id] = Broker(
            broker_id, registration.endpoints, registration.rack
        )
        self._epochs[broker_id] = registration.epoch
        return known

    def broker_epoch(self, broker_id: int) -> int | None:
        """A registered broker's epoch (its registration's czxid), None if unregistered."""
        broker = self.endpoint(broker_id)
        return None if broker is None else self._epochs.get(broker_id)

    def _known_epoch(self, broker_id: int) -> int:
        """The broker epoch to stamp a request with (Kafka's controllers stamp theirs, and
        brokers refuse one meant for an earlier registration); -1 when unknown."""
        epoch = self.broker_epoch(broker_id)
        return -1 if epoch is None else epoch

    def registration_changed(self, broker_id: int) -> bool:
        """Whether the broker registered again (a new epoch) since its registration was
        read; reads it afresh (on the controller's thread)."""
        known = self._epochs.get(broker_id)
        if known is None:
            return False
        registration = self.zk.get_broker(broker_id)
        return registration is not None and registration.epoch != known

    def forget_registrations(self) -> None:
        """Read every registration afresh (a new controller term)."""
        self._registrations.clear()
        self._epochs.clear()

    def listener_endpoint(self, broker_id: int, listener: str) -> BrokerEndPoint | None:
        broker = self.endpoint(broker_id)
        return None if broker is None else broker.endpoint(listener)

    def drop_connection(self, broker_id: int) -> None:
        """A broker left or came back as a new process: what was queued for it goes (a
        broker that comes back hears the whole state again), and the next request
        connects afresh to its registration."""
        self._registrations.pop(broker_id, None)
        self._epochs.pop(broker_id, None)
        sender = self._senders.pop(broker_id, None)
        if sender is not None:
            sender.stop()

    async def _send(self, broker_id: int, api_key: ApiKey, request: Any) -> None:
        """Queue a request for a broker of another process; its sender delivers it."""
        sender = self._senders.get(broker_id)
        if sender is None:
            sender = self._senders[broker_id] = _RequestSender(self, broker_id)
        sender.enqueue(api_key, request)


class _RequestSender:
    """Kafka's RequestSendThread: the requests for one broker, sent in order by a task of
    its own, each retried (reconnecting) until it is answered, so that a slow or dead
    broker never holds up the controller's events.

    Invariant: one request in flight; requests leave in the order they were queued."""

    def __init__(self, channel: ControllerChannel, broker_id: int) -> None:
        self.channel = channel
        self.broker_id = broker_id
        self._queue: asyncio.Queue[tuple[ApiKey, Any]] = asyncio.Queue()
        self._connection: AsyncBrokerConnection | None = None
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"controller-send-{broker_id}"
        )

    def enqueue(self, api_key: ApiKey, request: Any) -> None:
        self._queue.put_nowait((api_key, request))

    def stop(self) -> None:
        self._task.cancel()
        if self._connection is not None:
            self._connection.close()

    async def _run(self) -> None:
        while True:
            api_key, request = await self._queue.get()
            attempt = 0
            while not await self._send_once(api_key, request):
                attempt += 1
                await asyncio.sleep(min(SEND_BACKOFF_S * attempt, 1.0))
            if attempt:
                log.info("%s to broker %s delivered after %d failed attempts",
                         api_key.name, self.broker_id, attempt)  # fmt: skip

    async def _send_once(self, api_key: ApiKey, request: Any) -> bool:
        """True once the broker answered (whatever its error code). Whatever goes wrong
        (the broker gone, no answer within controller.socket.timeout.ms, a frame kt cannot
        read, the store unreachable) is logged and tried again: the sender never dies with
        requests queued behind it."""
        try:
            async with asyncio.timeout(CONTROLLER_REQUEST_TIMEOUT_S):
                response = await self._connect_and_send(api_key, request)
        except (KafkaError, ProtocolError, TimeoutError) as e:
            log.info("%s to broker %s failed: %s", api_key.name, self.broker_id,
                     str(e) or f"no answer in {CONTROLLER_REQUEST_TIMEOUT_S:.0f} s")  # fmt: skip
            self._drop_connection()
            return False
        except Exception:
            log.exception("%s to broker %s failed", api_key.name, self.broker_id)
            self._drop_connection()
            return False
        if response is None:
            return False  # not registered (yet, or any more), or not on the listener
        if getattr(response, "error_code", 0):
            log.warning(
                "broker %s refused %s: %s",
                self.broker_id, api_key.name, KafkaError(response.error_code),
            )  # fmt: skip
        return True

    def _drop_connection(self) -> None:
        if self._connection is not None:
            self._connection.close()

    async def _connect_and_send(self, api_key: ApiKey, request: Any) -> Any:
        """The broker's answer; None while it has no endpoint on the controller listener."""
        if self._connection is None or self._connection.closed:
            channel = self.channel
            endpoint = channel.listener_endpoint(
                self.broker_id, channel.config.listener_config.controller_listener
            )
            if endpoint is None:
                return None
            self._connection = await AsyncBrokerConnection.connect(
                endpoint.host, endpoint.port,
                client_id=f"controller-{channel.broker_id}", timeout_s=10.0,
                caps=channel.config.inter_broker_protocol.caps, **channel.security,
            )  # fmt: skip
        return await self._connection.send(api_key, request)


def _update_metadata_request(
    controller: KafkaController,
    live: list[Broker],
    states: list[PartitionState],
    topic_ids: dict[str, Any],
) -> Any:
    R = m.UpdateMetadataRequest
    by_topic: dict[str, list[Any]] = {}
    for s in states:
        by_topic.setdefault(s.topic, []).append(
            R.UpdateMetadataPartitionState(
                topic_name=s.topic,
                partition_index=s.partition,
                controller_epoch=s.controller_epoch,
                leader=s.leader,
                leader_epoch=s.leader_epoch,
                isr=list(s.isr),
                zk_version=s.zk_version,
                replicas=list(s.replicas),
                offline_replicas=list(s.offline_replicas),
            )  # fmt: skip
        )
    return R(
        controller_id=controller.broker_id,
        controller_epoch=controller.ctx.epoch,
        ungrouped_partition_states=[p for ps in by_topic.values() for p in ps],
        topic_states=[
            R.UpdateMetadataTopicState(
                topic_name=t, topic_id=topic_ids.get(t) or NULL_TOPIC_ID, partition_states=ps
            )
            for t, ps in by_topic.items()
        ],
        live_brokers=[
            R.UpdateMetadataBroker(
                id=e.broker_id,
                v0_host=_plaintext(e).host or "",
                v0_port=_plaintext(e).port,
                rack=e.rack,
                endpoints=[
                    R.UpdateMetadataEndpoint(
                        port=endpoint.port,
                        host=endpoint.host or "",
                        listener=endpoint.listener_name,
                        security_protocol=SECURITY_PROTOCOLS[endpoint.security_protocol],
                    )
                    for endpoint in e.endpoints
                ],
            )  # fmt: skip
            for e in live
        ],
    )


def _plaintext(broker: Broker) -> BrokerEndPoint:
    """The endpoint of UpdateMetadata v0 (its first PLAINTEXT one)."""
    for endpoint in broker.endpoints:
        if endpoint.security_protocol == "PLAINTEXT":
            return endpoint
    return BrokerEndPoint("", None, -1)
