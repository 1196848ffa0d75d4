"""CreateTopics, DeleteTopics, CreatePartitions and DeleteRecords.

Topic mutations go through the controller (Metadata's controller_id); another broker
answers NOT_CONTROLLER and the client retries there (as Kafka's ZooKeeper mode). After
writing the znodes, the handler waits (up to timeout_ms) for the controller's work to
show in this broker's metadata, as Kafka's DelayedCreatePartitions does.

A request that would create more than MAX_PARTITIONS_PER_BATCH partitions is refused
whole with POLICY_VIOLATION, as KRaft's controller refuses it
(ReplicationControlManager.validateTotalNumberOfPartitions): its assignment alone would
take the broker's memory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kt.broker.admin.admin_manager import NewTopic, TopicResult
from kt.broker.api.handlers import authz
from kt.broker.replication.partition import TopicPartition
from kt.errors import KafkaError
from kt.protocol import messages as m
from kt.security import acls

if TYPE_CHECKING:
    from kt.broker.broker_services import BrokerServices

MAX_PARTITIONS_PER_BATCH = 10_000
TOO_MANY_PARTITIONS = "Excessively large number of partitions per request."


async def _wait_or_time_out(
    broker: BrokerServices, results: list[TopicResult], done: Any, timeout_ms: int
) -> None:
    """Wait until `done(topics)` holds for the topics that succeeded so far; those still
    waiting at the timeout get REQUEST_TIMED_OUT (the change itself stays in effect).
    A timeout of 0 or less times out at once, as ZkAdminManager answers it."""
    pending = [r.name for r in results if not r.error_code]
    if not pending:
        return
    if timeout_ms <= 0 or not await broker.admin_manager.wait_for_metadata(
        lambda: done(pending), timeout_ms
    ):
        for r in results:
            if r.name in pending:
                r.error_code = KafkaError("REQUEST_TIMED_OUT").code


def _not_controller(broker: BrokerServices) -> bool:
    return not broker.controller.is_active


def _too_many(names: list[str]) -> list[TopicResult]:
    error = KafkaError("POLICY_VIOLATION", TOO_MANY_PARTITIONS)
    return [TopicResult.failed(name, error) for name in names]


def _partitions_requested(broker: BrokerServices, request: Any) -> int:
    """The partitions a CreateTopics request would create (KRaft's count: a topic with
    assignments counts them, -1 counts num.partitions, an invalid count nothing)."""
    total = 0
    for topic in request.topics:
        if topic.assignments:
            total += len(topic.assignments)
        elif topic.num_partitions == -1:
            total += broker.config["num.partitions"]
        elif topic.num_partitions > 0:
            total += topic.num_partitions
    return total


async def create_topics(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    if _partitions_requested(broker, request) > MAX_PARTITIONS_PER_BATCH:
        results = _too_many([t.name for t in request.topics])
    else:
        if broker.authorizer is None or authz.cluster_allowed(broker, ctx, acls.CREATE):
            creatable = {t.name for t in request.topics}
        else:
            creatable = authz.topics_allowed(broker, ctx, acls.CREATE,
                                             (t.name for t in request.topics))  # fmt: skip
        results = await broker.store.call(_create_each, broker, request, creatable)
    if not request.validate_only:
        await _wait_or_time_out(
            broker, results, broker.admin_manager.topics_have_leaders, request.timeout_ms
        )
    # v5+ answers each new topic's configs, read from the store: off the event loop
    topics = await broker.store.call(
        lambda: [_creatable_topic_result(broker, header.api_version, r) for r in results]
    )
    return m.CreateTopicsResponse(topics=topics, throttle_time_ms=0)


def _create_each(broker: BrokerServices, request: Any, creatable: set[str]) -> list[TopicResult]:
    """Validate and write each new topic the principal may create (on the broker's store
    threads)."""
    results: list[TopicResult] = []
    seen: set[str] = set()
    for topic in request.topics:
        if topic.name in seen:
            results.append(
                TopicResult.failed(
                    topic.name, KafkaError("INVALID_REQUEST", "Duplicate topic in request.")
                )
            )
            continue
        seen.add(topic.name)
        if topic.name not in creatable:
            denied = KafkaError("TOPIC_AUTHORIZATION_FAILED", "Authorization failed.")
            results.append(TopicResult.failed(topic.name, denied))
            continue
        if _not_controller(broker):
            results.append(TopicResult.failed(topic.name, KafkaError("NOT_CONTROLLER")))
            continue
        new = NewTopic(
            topic.name,
            topic.num_partitions,
            topic.replication_factor,
            {a.partition_index: list(a.broker_ids) for a in topic.assignments},
            {c.name: c.value for c in topic.configs if c.value is not None},
        )
        results.append(broker.admin_manager.create_topic(new, request.validate_only))
    return results


def _creatable_topic_result(broker: BrokerServices, version: int, r: TopicResult) -> Any:
    Result = m.CreateTopicsResponse.CreatableTopicResult
    if r.error_code:
        return Result(name=r.name, error_code=r.error_code, error_message=r.error_message)
    configs = None
    if version >= 5 and r.config is not None:
        configs = [
            m.CreateTopicsResponse.CreatableTopicConfigs(
                name=c.name,
                value=c.value,
                read_only=c.read_only,
                config_source=c.config_source,
                is_sensitive=c.is_sensitive,
            )
            for c in broker.config_admin.describe_topic(r.name, r.config, None, False)
        ]
    return Result(
        name=r.name,
        topic_id=r.topic_id,
        error_code=0,
        num_partitions=r.num_partitions,
        replication_factor=r.replication_factor,
        configs=configs,
    )


async def delete_topics(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    if header.api_version >= 6:
        names = [
            t.name if t.name is not None else broker.metadata_cache.topic_for_id(t.topic_id)
            for t in request.topics
        ]
    else:
        names = list(request.topic_names)
    results = []
    deletable = authz.topics_allowed(broker, ctx, acls.DELETE, (n for n in names if n))
    for name in names:
        if name is None:
            results.append(TopicResult.failed("", KafkaError("UNKNOWN_TOPIC_ID")))
        elif name not in deletable:
            denied = KafkaError("TOPIC_AUTHORIZATION_FAILED", "Authorization failed.")
            results.append(TopicResult.failed(name, denied))
        elif _not_controller(broker):
            results.append(TopicResult.failed(name, KafkaError("NOT_CONTROLLER")))
        else:
            results.append(await broker.store.call(broker.admin_manager.delete_topic, name))
    await _wait_or_time_out(broker, results, broker.admin_manager.topics_gone, request.timeout_ms)
    return m.DeleteTopicsResponse(
        responses=[
            m.DeleteTopicsResponse.DeletableTopicResult(
                name=r.name,
                topic_id=broker.metadata_cache.topic_id(r.name),
                error_code=r.error_code,
                error_message=r.error_message,
            )
            for r in results
        ],
        throttle_time_ms=0,
    )


async def create_partitions(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    cache = broker.metadata_cache
    added = sum(max(0, t.count - len(cache.topic_partitions(t.name))) for t in request.topics)
    if added > MAX_PARTITIONS_PER_BATCH:
        results = _too_many([t.name for t in request.topics])
    else:
        results = [
            await broker.store.call(_grow, broker, topic, request.validate_only)
            for topic in request.topics
        ]
    counts = {r.name: r.num_partitions for r in results}

    def grown(topics: list[str]) -> bool:
        cache = broker.metadata_cache
        have_all = all(len(cache.topic_partitions(t)) >= counts[t] for t in topics)
        return have_all and broker.admin_manager.topics_have_leaders(topics)

    if not request.validate_only:
        await _wait_or_time_out(broker, results, grown, request.timeout_ms)
    return m.CreatePartitionsResponse(
        results=[
            m.CreatePartitionsResponse.CreatePartitionsTopicResult(
                name=r.name, error_code=r.error_code, error_message=r.error_message
            )
            for r in results
        ],
        throttle_time_ms=0,
    )


def _grow(broker: BrokerServices, topic: Any, validate_only: bool) -> TopicResult:
    if _not_controller(broker):
        return TopicResult.failed(topic.name, KafkaError("NOT_CONTROLLER"))
    assignments = [list(a.broker_ids) for a in topic.assignments] if topic.assignments else None
    return broker.admin_manager.create_partitions(
        topic.name, topic.count, assignments, validate_only
    )


async def delete_records(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    """Move the log start offset (DeleteRecords; offset -1 = the high watermark)."""
    topics = []
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            tp = TopicPartition(topic.name, p.partition_index)
            Result = m.DeleteRecordsResponse.DeleteRecordsPartitionResult
            try:
                partition = broker.replica_manager.get_partition(tp)
                partition.check_leader()
                log_ = partition.log
                if not log_.config.delete:  # checked first, as Kafka's Partition does
                    raise KafkaError("POLICY_VIOLATION")
                offset = log_.high_watermark if p.offset == -1 else p.offset
                if offset < 0 or offset > log_.high_watermark:
                    raise KafkaError("OFFSET_OUT_OF_RANGE")
                log_.maybe_increment_log_start_offset(offset)
                partitions.append(
                    Result(
                        partition_index=p.partition_index,
                        low_watermark=log_.log_start_offset,
                        error_code=0,
                    )
                )
            except KafkaError as e:
                partitions.append(
                    Result(partition_index=p.partition_index, low_watermark=-1, error_code=e.code)
                )
        topics.append(
            m.DeleteRecordsResponse.DeleteRecordsTopicResult(name=topic.name, partitions=partitions)
        )
    return m.DeleteRecordsResponse(topics=topics, throttle_time_ms=0)
