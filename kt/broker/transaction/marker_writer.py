"""The leader's side of WriteTxnMarkers (KafkaApis.handleWriteTxnMarkersRequest): a
transaction coordinator's COMMIT or ABORT marker appended to each partition it names
(acks=all, as Kafka), through the replica manager; in `__consumer_offsets` a marker also
settles the producer's pending offsets of that partition. The coordinator calls it
directly for the partitions this broker leads, and the WriteTxnMarkers handler for the
markers other brokers' coordinators send."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from kt.broker.group.group_metadata_manager import GROUP_METADATA_TOPIC
from kt.broker.replication.partition import TopicPartition
from kt.errors import KafkaError
from kt.protocol import messages as m
from kt.storage.control_records import (
    ABORT,
    COMMIT,
    EndTransactionMarker,
    build_end_txn_marker_batch,
)
from kt.storage.producer_state import ORIGIN_COORDINATOR

if TYPE_CHECKING:
    from kt.broker.group.group_metadata_manager import GroupMetadataManager
    from kt.broker.replication.replica_manager import ReplicaManager


async def write_txn_markers(
    replica_manager: ReplicaManager, group_manager: GroupMetadataManager, request: Any,
    timeout_ms: int,
) -> Any:  # fmt: skip
    """Append each marker to its partitions (acks=all, as Kafka); a COMMIT or ABORT in
    `__consumer_offsets` also settles the producer's pending offsets of that partition."""
    R = m.WriteTxnMarkersResponse
    answers = []
    for marker in request.markers:
        control = COMMIT if marker.transaction_result else ABORT
        batch = build_end_txn_marker_batch(
            EndTransactionMarker(control, marker.coordinator_epoch),
            producer_id=marker.producer_id,
            producer_epoch=marker.producer_epoch,
            timestamp=int(time.time() * 1000),
        )
        entries: dict[TopicPartition, Any] = {}
        errors: dict[TopicPartition, str] = {}
        for topic in marker.topics:
            for p in topic.partition_indexes:
                tp = TopicPartition(topic.name, p)
                if replica_manager.partitions.get(tp) is None:
                    errors[tp] = "UNKNOWN_TOPIC_OR_PARTITION"
                else:
                    entries[tp] = bytearray(batch)
        if entries:
            appended = await replica_manager.append_records(
                timeout_ms, -1, entries, ORIGIN_COORDINATOR
            )
            for tp, result in appended.items():
                errors[tp] = KafkaError(result.error_code).name if result.error_code else "NONE"
                if tp.topic == GROUP_METADATA_TOPIC and errors[tp] == "NONE":
                    group_manager.complete_txn_offsets(
                        marker.producer_id, tp.partition, control == COMMIT
                    )
        by_topic: dict[str, list[Any]] = {}
        for tp, error in errors.items():
            by_topic.setdefault(tp.topic, []).append(R.WritableTxnMarkerPartitionResult(
                partition_index=tp.partition, error_code=KafkaError(error).code
            ))  # fmt: skip
        answers.append(R.WritableTxnMarkerResult(
            producer_id=marker.producer_id,
            topics=[R.WritableTxnMarkerTopicResult(name=t, partitions=ps)
                    for t, ps in by_topic.items()],
        ))  # fmt: skip
    return R(markers=answers)
