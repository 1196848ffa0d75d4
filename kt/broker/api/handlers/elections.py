"""ElectLeaders, answered by the controller (NOT_CONTROLLER elsewhere). With no partitions
named (every partition), only the partitions whose election was attempted or failed are
answered, as Kafka's KafkaApis.handleElectLeaders does."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kt.broker.replication.partition import TopicPartition
from kt.errors import KafkaError
from kt.protocol import messages as m

if TYPE_CHECKING:
    from kt.broker.broker_services import BrokerServices

NOT_NEEDED = KafkaError("ELECTION_NOT_NEEDED").code


async def elect_leaders(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    R = m.ElectLeadersResponse
    election_type = request.election_type if header.api_version >= 1 else 0
    wanted = None
    if request.topic_partitions is not None:
        wanted = [
            TopicPartition(t.topic, p) for t in request.topic_partitions for p in t.partitions
        ]
    results = await broker.controller.elect_leaders(wanted, election_type)
    if results is None:
        error = KafkaError("NOT_CONTROLLER")
        if wanted is None:
            return R(error_code=error.code)
        results = dict.fromkeys(wanted, error)
    by_topic: dict[str, list[Any]] = {}
    for tp, result in results.items():
        error = result if isinstance(result, KafkaError) else None
        if wanted is None and error is not None and error.code == NOT_NEEDED:
            continue
        by_topic.setdefault(tp.topic, []).append(
            R.PartitionResult(
                partition_id=tp.partition,
                error_code=error.code if error is not None else 0,
                error_message=_message(error),
            )
        )
    return R(replica_election_results=[
        R.ReplicaElectionResult(topic=t, partition_result=ps) for t, ps in by_topic.items()
    ])  # fmt: skip


def _message(error: KafkaError | None) -> str | None:
    """ApiError's message: the one given, else none (ELECTION_NOT_NEEDED has none)."""
    if error is None or not error.args or error.args[0] == KafkaError(error.code).args[0]:
        return None
    return str(error.args[0])
