"""Produce (KafkaApis.handleProduceRequest)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kt.broker.api.handlers import authz
from kt.broker.replication.partition import TopicPartition
from kt.broker.replication.replica_manager import ProduceResult
from kt.errors import TOPIC_AUTHORIZATION_FAILED, TRANSACTIONAL_ID_AUTHORIZATION_FAILED, KafkaError
from kt.protocol import messages as m
from kt.security import acls as a
from kt.storage.batch_header import ATTRIBUTES_OFFSET, CODEC_MASK, MAGIC_OFFSET, iter_headers

if TYPE_CHECKING:
    from kt.broker.broker_services import BrokerServices

ZSTD = 4
ZSTD_MIN_PRODUCE_VERSION = 7  # KIP-110: older clients cannot have sent zstd


class CloseConnection(Exception):
    """acks=0 produce failed: Kafka closes the connection so the producer notices."""


async def produce(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    acks = request.acks
    entries: dict[TopicPartition, Any] = {}
    results: dict[TopicPartition, ProduceResult] = {}
    txn_id = getattr(request, "transactional_id", None)
    if txn_id is not None and not authz.allowed(broker, ctx, a.WRITE, a.TRANSACTIONAL_ID, txn_id):
        denied = {TopicPartition(t.name, p.index): ProduceResult(
            TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
            for t in request.topic_data for p in t.partition_data}  # fmt: skip
        return _response(request, denied) if acks != 0 else None
    writable = authz.topics_allowed(broker, ctx, a.WRITE, (t.name for t in request.topic_data))
    for topic in request.topic_data:
        for part in topic.partition_data:
            tp = TopicPartition(topic.name, part.index)
            if topic.name not in writable:
                results[tp] = ProduceResult(TOPIC_AUTHORIZATION_FAILED)
                continue
            error = _precheck(broker, header.api_version, tp, part.records)
            if error is not None:
                results[tp] = ProduceResult(KafkaError(error).code)
            else:
                entries[tp] = part.records
    if acks not in (0, 1, -1):
        code = KafkaError("INVALID_REQUIRED_ACKS").code
        results.update({tp: ProduceResult(code) for tp in entries})
        entries = {}
    if entries:
        appended = await broker.replica_manager.append_records(request.timeout_ms, acks, entries)
        results.update(appended)
        size = sum(len(records) for records in entries.values())
        ctx.throttle_ms = broker.produce_quota.record(ctx.user, header.client_id or "", size)
    if acks == 0:
        if any(r.error_code for r in results.values()):
            raise CloseConnection("acks=0 produce failed")
        return None
    return _response(request, results, ctx.throttle_ms)


def _precheck(broker: BrokerServices, version: int, tp: TopicPartition, records: Any) -> str | None:
    """Errors found before touching the log: unknown topic, missing or zstd-too-old data."""
    if not broker.metadata_cache.contains(tp.topic):
        return "UNKNOWN_TOPIC_OR_PARTITION"
    if records is None or len(records) == 0:
        return "CORRUPT_MESSAGE"
    old_client = version < ZSTD_MIN_PRODUCE_VERSION and len(records) > ATTRIBUTES_OFFSET + 1
    if old_client and records[MAGIC_OFFSET] == 2:
        for batch in iter_headers(records):
            if batch.attributes & CODEC_MASK == ZSTD:
                return "UNSUPPORTED_COMPRESSION_TYPE"
    return None


def _response(
    request: Any, results: dict[TopicPartition, ProduceResult], throttle_ms: int = 0
) -> Any:
    Topic = m.ProduceResponse.TopicProduceResponse
    Partition = m.ProduceResponse.PartitionProduceResponse
    topics = []
    for topic in request.topic_data:
        partitions = []
        for part in topic.partition_data:
            r = results[TopicPartition(topic.name, part.index)]
            partitions.append(
                Partition(
                    index=part.index,
                    error_code=r.error_code,
                    base_offset=r.base_offset,
                    log_append_time_ms=r.log_append_time_ms,
                    log_start_offset=r.log_start_offset,
                    error_message=r.error_message if r.error_code else None,
                    record_errors=[
                        m.ProduceResponse.BatchIndexAndErrorMessage(
                            batch_index=index, batch_index_error_message=message
                        )
                        for index, message in r.record_errors
                    ],
                )
            )
        topics.append(Topic(name=topic.name, partition_responses=partitions))
    return m.ProduceResponse(responses=topics, throttle_time_ms=throttle_ms)
