"""AlterPartitionReassignments and ListPartitionReassignments (KIP-455), answered by the
controller: a broker that is not the controller answers NOT_CONTROLLER, as ZooKeeper-mode
Kafka does, and the client finds the controller again."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kt.broker.replication.partition import TopicPartition
from kt.errors import KafkaError
from kt.protocol import messages as m

if TYPE_CHECKING:
    from kt.broker.broker_services import BrokerServices


async def alter_partition_reassignments(
    broker: BrokerServices, header: Any, request: Any, ctx: Any
) -> Any:
    R = m.AlterPartitionReassignmentsResponse
    targets = {
        TopicPartition(topic.name, p.partition_index): (
            list(p.replicas) if p.replicas is not None else None
        )
        for topic in request.topics
        for p in topic.partitions
    }
    results = await broker.controller.alter_partition_reassignments(targets)
    if results is None:
        error = KafkaError("NOT_CONTROLLER")
        return R(error_code=error.code, error_message=str(error))
    by_topic: dict[str, list[Any]] = {}
    for tp, result in results.items():
        by_topic.setdefault(tp.topic, []).append(
            R.ReassignablePartitionResponse(
                partition_index=tp.partition,
                error_code=result.code if result is not None else 0,
                error_message=str(result) if result is not None else None,
            )
        )
    return R(responses=[R.ReassignableTopicResponse(name=t, partitions=ps)
                        for t, ps in by_topic.items()])  # fmt: skip


async def list_partition_reassignments(
    broker: BrokerServices, header: Any, request: Any, ctx: Any
) -> Any:
    R = m.ListPartitionReassignmentsResponse
    wanted = None
    if request.topics is not None:
        wanted = [TopicPartition(t.name, p) for t in request.topics for p in t.partition_indexes]
    moves = await broker.controller.list_partition_reassignments(wanted)
    if moves is None:
        error = KafkaError("NOT_CONTROLLER")
        return R(error_code=error.code, error_message=str(error))
    by_topic: dict[str, list[Any]] = {}
    for tp, move in sorted(moves.items()):
        by_topic.setdefault(tp.topic, []).append(
            R.OngoingPartitionReassignment(
                partition_index=tp.partition,
                replicas=move.replicas,
                adding_replicas=move.adding,
                removing_replicas=move.removing,
            )  # fmt: skip
        )
    return R(topics=[R.OngoingTopicReassignment(name=t, partitions=ps)
                     for t, ps in by_topic.items()])  # fmt: skip
