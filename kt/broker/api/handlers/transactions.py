"""Transaction APIs (KafkaApis.handleInitProducerIdRequest, handleAddPartitionsToTxnRequest,
handleAddOffsetsToTxnRequest, handleEndTxnRequest, handleWriteTxnMarkersRequest,
handleTxnOffsetCommitRequest).

The handlers turn requests of any version into calls on the transaction coordinator
(kt.broker.transaction), the group coordinator (TxnOffsetCommit) and the replica
manager (WriteTxnMarkers, which a coordinator sends to partition leaders), and back.
Clients older than the version that has PRODUCER_FENCED get INVALID_PRODUCER_EPOCH,
as Kafka answers them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kt.broker.group import group_admin
from kt.broker.group.group_metadata_manager import GROUP_METADATA_TOPIC, now_ms
from kt.broker.group.offsets_records import OffsetAndMetadata
from kt.broker.replication.partition import TopicPartition
from kt.broker.transaction import marker_writer
from kt.errors import KafkaError
from kt.protocol import messages as m

if TYPE_CHECKING:
    from kt.broker.broker_services import BrokerServices

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1


def code(name: str) -> int:
    return KafkaError(name).code


def _fenced_for(version: int, first_version: int, error: str) -> str:
    """PRODUCER_FENCED is new in `first_version`; older clients know it by another name."""
    return (
        "INVALID_PRODUCER_EPOCH"
        if error == "PRODUCER_FENCED" and version < first_version
        else error
    )


# -- InitProducerId ----------------------------------------------------------------------


async def init_producer_id(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    """An idempotent producer gets a new id at epoch 0; a transactional one its id's
    producer id and a new epoch from the id's coordinator."""

    def answer(error: str, producer_id: int = -1, epoch: int = -1) -> Any:
        error = _fenced_for(header.api_version, 4, error)
        return m.InitProducerIdResponse(
            error_code=code(error), producer_id=producer_id, producer_epoch=epoch
        )

    pid, epoch = request.producer_id, request.producer_epoch
    if (pid == NO_PRODUCER_ID) != (epoch == NO_PRODUCER_EPOCH):
        return answer("INVALID_REQUEST")
    transactional_id = request.transactional_id
    if transactional_id is None:
        try:
            producer_id = await broker.producer_id_manager.generate_producer_id()
        except KafkaError as e:  # no block of ids: the store is away
            return answer(e.name)
        return answer("NONE", producer_id, 0)
    expected = None if pid == NO_PRODUCER_ID else (pid, epoch)
    error, producer_id, epoch = await broker.txn_coordinator.handle_init_producer_id(
        transactional_id, request.transaction_timeout_ms, expected
    )
    return answer(error, producer_id, epoch)


# -- AddPartitionsToTxn, AddOffsetsToTxn --------------------------------------------------


async def add_partitions_to_txn(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    version = header.api_version
    R = m.AddPartitionsToTxnResponse
    if version < 4:
        results = await _add_partitions(
            broker, version, request.v3_and_below_transactional_id,
            request.v3_and_below_producer_id, request.v3_and_below_producer_epoch,
            request.v3_and_below_topics, verify_only=False,
        )  # fmt: skip
        return R(throttle_time_ms=0, results_by_topic_v3_and_below=_topic_results(results))
    answers = []
    for txn in request.transactions:
        results = await _add_partitions(
            broker, version, txn.transactional_id, txn.producer_id, txn.producer_epoch,
            txn.topics, verify_only=txn.verify_only,
        )  # fmt: skip
        answers.append(R.AddPartitionsToTxnResult(
            transactional_id=txn.transactional_id, topic_results=_topic_results(results)
        ))  # fmt: skip
    return R(throttle_time_ms=0, error_code=0, results_by_transaction=answers)


async def _add_partitions(
    broker: BrokerServices, version: int, transactional_id: str, producer_id: int,
    producer_epoch: int, topics: Any, *, verify_only: bool,
) -> dict[tuple[str, int], str]:  # fmt: skip
    partitions = {(t.name, p) for t in topics for p in t.partitions}
    coordinator = broker.txn_coordinator
    if verify_only:
        verified = coordinator.handle_verify_partitions(
            transactional_id, producer_id, producer_epoch, partitions
        )
        if version < 5:  # TRANSACTION_ABORTABLE is new in v5 (KIP-890)
            return {tp: "INVALID_TXN_STATE" if e == "TRANSACTION_ABORTABLE" else e
                    for tp, e in verified.items()}  # fmt: skip
        return verified
    cache = broker.metadata_cache
    unknown = {tp for tp in partitions if tp[1] not in cache.topic_partitions(tp[0])}
    if unknown:
        # One partition refused: none is added (the others OPERATION_NOT_ATTEMPTED).
        return {
            tp: "UNKNOWN_TOPIC_OR_PARTITION" if tp in unknown else "OPERATION_NOT_ATTEMPTED"
            for tp in partitions
        }
    error = await coordinator.handle_add_partitions(
        transactional_id, producer_id, producer_epoch, partitions
    )
    return dict.fromkeys(partitions, _fenced_for(version, 2, error))


def _topic_results(results: dict[tuple[str, int], str]) -> list[Any]:
    R = m.AddPartitionsToTxnResponse
    by_topic: dict[str, list[Any]] = {}
    for (topic, partition), error in sorted(results.items()):
        by_topic.setdefault(topic, []).append(R.AddPartitionsToTxnPartitionResult(
            partition_index=partition, partition_error_code=code(error)
        ))  # fmt: skip
    return [
        R.AddPartitionsToTxnTopicResult(name=topic, results_by_partition=parts)
        for topic, parts in by_topic.items()
    ]


async def add_offsets_to_txn(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    """The group's `__consumer_offsets` partition joins the transaction."""
    partition = broker.group_coordinator.manager.partition_for(request.group_id)
    error = await broker.txn_coordinator.handle_add_partitions(
        request.transactional_id, request.producer_id, request.producer_epoch,
        {(GROUP_METADATA_TOPIC, partition)},
    )  # fmt: skip
    error = _fenced_for(header.api_version, 2, error)
    return m.AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=code(error))


# -- EndTxn -------------------------------------------------------------------------------


async def end_txn(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    error = await broker.txn_coordinator.handle_end_transaction(
        request.transactional_id, request.producer_id, request.producer_epoch,
        bool(request.committed),
    )  # fmt: skip
    error = _fenced_for(header.api_version, 2, error)
    return m.EndTxnResponse(throttle_time_ms=0, error_code=code(error))


# -- WriteTxnMarkers (coordinator -> partition leader) ------------------------------------


async def write_txn_markers(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    return await marker_writer.write_txn_markers(
        broker.replica_manager, broker.group_coordinator.manager, request,
        broker.config["request.timeout.ms"],
    )  # fmt: skip


# -- TxnOffsetCommit ----------------------------------------------------------------------


async def txn_offset_commit(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    version = header.api_version
    cache = broker.metadata_cache
    now = now_ms()
    results: dict[tuple[str, int], str] = {}
    offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
    for t in request.topics:
        known = cache.topic_partitions(t.name)
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if p.partition_index not in known:
                results[tp] = "UNKNOWN_TOPIC_OR_PARTITION"
            else:
                offsets[tp] = OffsetAndMetadata(
                    p.committed_offset,
                    p.committed_leader_epoch if version >= 2 else -1,
                    p.committed_metadata or "",
                    now,
                )
    committed = await group_admin.txn_commit_offsets(
        broker.group_coordinator,
        request.group_id,
        request.producer_id,
        request.producer_epoch,
        request.member_id if version >= 3 else "",
        request.group_instance_id if version >= 3 else None,
        request.generation_id if version >= 3 else -1,
        offsets,
        broker.metadata_cache.topic_id,
    )
    results.update({tp: _fenced_for(version, 3, e) for tp, e in committed.items()})
    R = m.TxnOffsetCommitResponse
    return R(throttle_time_ms=0, topics=[
        R.TxnOffsetCommitResponseTopic(name=t.name, partitions=[
            R.TxnOffsetCommitResponsePartition(
                partition_index=p.partition_index,
                error_code=code(results[(t.name, p.partition_index)]))
            for p in t.partitions])
        for t in request.topics
    ])  # fmt: skip


# -- DescribeTransactions, ListTransactions, DescribeProducers ------------------------------


async def describe_transactions(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    R = m.DescribeTransactionsResponse
    states = []
    for transactional_id in request.transactional_ids:
        error, metadata = broker.txn_coordinator.handle_describe_transaction(transactional_id)
        if metadata is None:
            states.append(R.TransactionState(error_code=code(error),
                                             transactional_id=transactional_id))  # fmt: skip
            continue
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(metadata.topic_partitions):
            by_topic.setdefault(topic, []).append(partition)
        states.append(R.TransactionState(
            error_code=0, transactional_id=transactional_id,
            transaction_state=metadata.state.state_name,
            transaction_timeout_ms=metadata.txn_timeout_ms,
            transaction_start_time_ms=metadata.txn_start_timestamp,
            producer_id=metadata.producer_id, producer_epoch=metadata.producer_epoch,
            topics=[R.TopicData(topic=t, partitions=ps) for t, ps in by_topic.items()],
        ))  # fmt: skip
    return R(throttle_time_ms=0, transaction_states=states)


async def list_transactions(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    R = m.ListTransactionsResponse
    duration = request.duration_filter if header.api_version >= 1 else -1
    error, found, unknown = broker.txn_coordinator.handle_list_transactions(
        set(request.producer_id_filters), set(request.state_filters), duration
    )
    return R(
        throttle_time_ms=0, error_code=code(error), unknown_state_filters=unknown,
        transaction_states=[
            R.TransactionState(transactional_id=t.transactional_id, producer_id=t.producer_id,
                               transaction_state=t.state.state_name)
            for t in found
        ],
    )  # fmt: skip


async def describe_producers(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    """The active producers of partitions this broker holds, as leader or follower
    (ReplicaManager.activeProducerState): their epoch, last sequence and timestamp,
    coordinator epoch and the first offset of their open transaction."""
    R = m.DescribeProducersResponse
    topics = []
    for t in request.topics:
        partitions = []
        for index in t.partition_indexes:
            tp = TopicPartition(t.name, index)
            partition = broker.replica_manager.partitions.get(tp)
            if partition is not None:
                error = "NONE"
            elif broker.metadata_cache.contains(t.name):
                error = "NOT_LEADER_OR_FOLLOWER"  # not a replica here (getPartitionOrError)
            else:
                error = "UNKNOWN_TOPIC_OR_PARTITION"
            if error != "NONE":
                partitions.append(R.PartitionResponse(partition_index=index,
                                                      error_code=code(error)))  # fmt: skip
                continue
            producers = partition.log.producer_state.producers.values()
            partitions.append(R.PartitionResponse(
                partition_index=index, error_code=0,
                active_producers=[
                    R.ProducerState(
                        producer_id=e.producer_id, producer_epoch=e.producer_epoch,
                        last_sequence=e.last_seq, last_timestamp=e.last_timestamp,
                        coordinator_epoch=e.coordinator_epoch,
                        current_txn_start_offset=-1 if e.current_txn_first_offset is None
                        else e.current_txn_first_offset,
                    )
                    for e in producers
                ],
            ))  # fmt: skip
        topics.append(R.TopicResponse(name=t.name, partitions=partitions))
    return R(throttle_time_ms=0, topics=topics)
