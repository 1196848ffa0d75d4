"""The controller's requests to a broker over the wire: LeaderAndIsr, UpdateMetadata,
StopReplica, decoded into the calls of kt.broker.replication.controller_requests (which a
broker in the controller's process receives directly); and the requests brokers send
their controller: ControlledShutdown, AlterPartition, AllocateProducerIds.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kt.broker.metadata_cache import Broker, PartitionState
from kt.broker.replication.partition import TopicPartition
from kt.endpoints import PROTOCOL_NAMES
from kt.errors import KafkaError
from kt.metadata.znodes import BrokerEndPoint
from kt.protocol import messages as m

if TYPE_CHECKING:
    from kt.broker.broker_services import BrokerServices

log = logging.getLogger(__name__)

# kt brokers have no KRaft-to-ZooKeeper migration (KIP-866): a KRaft controller's
# LeaderAndIsr, UpdateMetadata or StopReplica (isKRaftController) is refused, not obeyed.
_FROM_KRAFT = KafkaError("UNSUPPORTED_VERSION").code
_STALE_BROKER_EPOCH = KafkaError("STALE_BROKER_EPOCH").code
_NULL_TOPIC_ID = uuid.UUID(int=0)


def _refusal(broker: BrokerServices, request: Any) -> int:
    """Why a controller's request is refused before it is read, else 0: a KRaft
    controller's, or one meant for an earlier registration of this broker (Kafka's
    isBrokerEpochStale; -1 is a controller that does not say)."""
    if _from_kraft_controller(request):
        return _FROM_KRAFT
    if broker.controller_requests.is_broker_epoch_stale(request.broker_epoch):
        return _STALE_BROKER_EPOCH
    return 0


def _from_kraft_controller(request: Any) -> bool:
    if not request.is_kraft_controller:
        return False
    log.warning(
        "refused a request of KRaft controller %s: kt brokers do not take part in a "
        "migration from ZooKeeper to KRaft", request.controller_id,
    )  # fmt: skip
    return True


def _read_states(
    grouped: list[tuple[str, Any, Any]], extra: Callable[[Any], dict[str, Any]]
) -> tuple[list[PartitionState], dict[str, Any]]:
    """The partition states a LeaderAndIsr or UpdateMetadata carries ((topic, topic id or
    None, partition state) each; `extra`: the fields only one of them has), and the topic
    ids it names."""
    topic_ids = {topic: topic_id for topic, topic_id, _ in grouped
                 if topic_id is not None and topic_id != _NULL_TOPIC_ID}  # fmt: skip
    states = [
        PartitionState(topic, p.partition_index, p.leader, p.leader_epoch, list(p.replicas),
                       list(p.isr), controller_epoch=p.controller_epoch, **extra(p))
        for topic, _, p in grouped
    ]  # fmt: skip
    return states, topic_ids


async def leader_and_isr(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    version = header.api_version
    if refused := _refusal(broker, request):
        return m.LeaderAndIsrResponse(error_code=refused)
    if version < 2:
        grouped = [(p.topic_name, None, p) for p in request.ungrouped_partition_states]
    else:
        grouped = [(t.topic_name, t.topic_id if version >= 5 else None, p)
                   for t in request.topic_states for p in t.partition_states]  # fmt: skip
    states, topic_ids = _read_states(grouped, lambda p: {"zk_version": p.partition_epoch})
    live_leaders = {b.broker_id: (b.host_name, b.port) for b in request.live_leaders}
    errors = await broker.controller_requests.become_leader_or_follower(
        request.controller_id, request.controller_epoch, states, topic_ids, live_leaders
    )
    Error = m.LeaderAndIsrResponse.LeaderAndIsrPartitionError
    if version < 5:
        return m.LeaderAndIsrResponse(
            error_code=0,
            partition_errors=[
                Error(topic_name=tp.topic, partition_index=tp.partition, error_code=code)
                for tp, code in errors.items()
            ],
        )
    by_topic: dict[str, list[Any]] = {}
    for tp, code in errors.items():
        by_topic.setdefault(tp.topic, []).append(
            Error(partition_index=tp.partition, error_code=code)
        )
    return m.LeaderAndIsrResponse(
        error_code=0,
        topics=[
            m.LeaderAndIsrResponse.LeaderAndIsrTopicError(
                topic_id=topic_ids.get(topic, _NULL_TOPIC_ID), partition_errors=errors_
            )
            for topic, errors_ in by_topic.items()
        ],
    )


def _endpoints(live: Any, version: int) -> tuple[BrokerEndPoint, ...]:
    """A live broker's endpoints: v0 has one PLAINTEXT host and port, v1 and v2 name each
    endpoint by its security protocol, v3 on by its listener."""
    if version == 0:
        return (BrokerEndPoint("PLAINTEXT", live.v0_host, live.v0_port),)
    return tuple(
        BrokerEndPoint(
            e.listener if version >= 3 else PROTOCOL_NAMES[e.security_protocol],
            e.host,
            e.port,
            PROTOCOL_NAMES.get(e.security_protocol, "PLAINTEXT"),
        )  # fmt: skip
        for e in live.endpoints
    )


async def update_metadata(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    version = header.api_version
    if refused := _refusal(broker, request):
        return m.UpdateMetadataResponse(error_code=refused)
    live = [Broker(b.id, _endpoints(b, version), b.rack or None) for b in request.live_brokers]
    if version < 5:
        grouped = [(p.topic_name, None, p) for p in request.ungrouped_partition_states]
    else:
        grouped = [(t.topic_name, t.topic_id if version >= 7 else None, p)
                   for t in request.topic_states for p in t.partition_states]  # fmt: skip
    states, topic_ids = _read_states(grouped, lambda p: {
        "zk_version": p.zk_version, "offline_replicas": list(p.offline_replicas)})  # fmt: skip
    code = broker.controller_requests.update_metadata(
        request.controller_id, request.controller_epoch, live, states, topic_ids
    )
    return m.UpdateMetadataResponse(error_code=code)


async def stop_replica(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    version = header.api_version
    if refused := _refusal(broker, request):
        return m.StopReplicaResponse(error_code=refused)
    deletes: dict[bool, list[TopicPartition]] = {}
    if version == 0:
        for p in request.ungrouped_partitions:
            tp = TopicPartition(p.topic_name, p.partition_index)
            deletes.setdefault(request.delete_partitions, []).append(tp)
    elif version < 3:
        for t in request.topics:
            for index in t.partition_indexes:
                deletes.setdefault(request.delete_partitions, []).append(
                    TopicPartition(t.name, index)
                )
    else:
        for t in request.topic_states:
            for p in t.partition_states:
                tp = TopicPartition(t.topic_name, p.partition_index)
                deletes.setdefault(p.delete_partition, []).append(tp)
    code = 0
    for delete, partitions in deletes.items():
        code = (
            broker.controller_requests.stop_replicas(request.controller_epoch, partitions, delete)
            or code
        )
    Error = m.StopReplicaResponse.StopReplicaPartitionError
    return m.StopReplicaResponse(
        error_code=code,
        partition_errors=[
            Error(topic_name=tp.topic, partition_index=tp.partition, error_code=code)
            for partitions in deletes.values()
            for tp in partitions
        ],
    )


async def controlled_shutdown(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    """A broker asks the controller to move its leadership away before it stops."""
    remaining = await broker.controller.controlled_shutdown(request.broker_id)
    if remaining is None:
        return m.ControlledShutdownResponse(error_code=KafkaError("NOT_CONTROLLER").code)
    Remaining = m.ControlledShutdownResponse.RemainingPartition
    return m.ControlledShutdownResponse(
        error_code=0,
        remaining_partitions=[
            Remaining(topic_name=tp.topic, partition_index=tp.partition) for tp in remaining
        ],
    )


async def allocate_producer_ids(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    """A Kafka broker asks the controller for its next block of producer ids (KIP-730)."""
    R = m.AllocateProducerIdsResponse
    block = await broker.controller.allocate_producer_ids(request.broker_id, request.broker_epoch)
    if block is None:
        return R(error_code=KafkaError("NOT_CONTROLLER").code)
    if isinstance(block, str):
        return R(error_code=KafkaError(block).code)
    return R(error_code=0, producer_id_start=block.block_start,
             producer_id_len=block.block_end - block.block_start + 1)  # fmt: skip


async def alter_partition(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    """A leader proposes ISR changes to the controller (KIP-497)."""
    return await broker.controller.alter_partition(request, header.api_version)
