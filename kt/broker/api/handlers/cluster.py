"""Metadata and DescribeCluster: what clients learn before anything else, with ApiVersions
(which KafkaApis answers itself)."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from kt.broker.admin.admin_manager import INTERNAL_TOPICS, NewTopic
from kt.broker.api.handlers import authz
from kt.errors import TOPIC_AUTHORIZATION_FAILED, KafkaError
from kt.protocol import messages as m
from kt.protocol.types import ZERO_UUID
from kt.security import acls as a
from kt.storage.names import validate_topic_name

if TYPE_CHECKING:
    from kt.broker.broker_services import BrokerServices

AUTHORIZED_OPERATIONS_OMITTED = -2147483648


async def metadata(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    cache = broker.metadata_cache
    requested = request.topics
    unknown_ids: list[uuid.UUID] = []
    if requested is None or (header.api_version == 0 and not requested):
        names = cache.all_topics()
        explicit = False
    else:
        names, unknown_ids = _requested_names(cache, requested, header.api_version)
        explicit = True
    # Topics named by id (v10+, KIP-516) are never created (KafkaApis.handleTopicMetadata).
    by_id = explicit and any(t.name is None for t in requested)
    allow_create = (header.api_version < 4 or request.allow_auto_topic_creation) and not by_id
    # Topics the principal may not describe: left out of a listing, and refused by name
    # (TOPIC_AUTHORIZATION_FAILED, whether they exist or not: KafkaApis.handleTopicMetadata).
    described = authz.topics_allowed(broker, ctx, a.DESCRIBE, (n for n in names if n))
    if explicit and allow_create and broker.authorizer is not None:
        may_create = authz.cluster_allowed(broker, ctx, a.CREATE)
    else:
        may_create = True
    topics = []
    for name in names:
        if name is None or (name not in described and not explicit):
            continue
        create = explicit and allow_create and (
            may_create or authz.topic_allowed(broker, ctx, a.CREATE, name))  # fmt: skip
        refused_creation = explicit and allow_create and not create and not cache.contains(name)
        if name not in described or refused_creation:
            topics.append(m.MetadataResponse.MetadataResponseTopic(
                error_code=TOPIC_AUTHORIZATION_FAILED, name=None if by_id else name,
                topic_id=cache.topic_id(name) if by_id else ZERO_UUID,
                is_internal=name in INTERNAL_TOPICS, partitions=[],
            ))  # fmt: skip
            continue
        topic = await _topic_metadata(broker, name, create, header, ctx)
        if header.api_version >= 8 and request.include_topic_authorized_operations:
            topic.topic_authorized_operations = authz.authorized_operations(
                broker, ctx, a.TOPIC, name)  # fmt: skip
        topics.append(topic)
    topics += [m.MetadataResponse.MetadataResponseTopic(
        error_code=KafkaError("UNKNOWN_TOPIC_ID").code, name=None, topic_id=topic_id,
        is_internal=False, partitions=[],
    ) for topic_id in unknown_ids]  # fmt: skip
    brokers = [
        m.MetadataResponse.MetadataResponseBroker(
            node_id=broker_id, host=e.host or "", port=e.port, rack=rack
        )
        for broker_id, e, rack in _brokers_on(cache, ctx.listener)
    ]
    response = m.MetadataResponse(
        throttle_time_ms=0,
        brokers=brokers,
        cluster_id=cache.cluster_id,
        controller_id=cache.controller_id,
        topics=topics,
    )
    if 8 <= header.api_version <= 10 and request.include_cluster_authorized_operations:
        response.cluster_authorized_operations = authz.authorized_operations(
            broker, ctx, a.CLUSTER, a.CLUSTER_NAME)  # fmt: skip
    return response


def _requested_names(
    cache: Any, requested: Any, version: int
) -> tuple[list[str | None], list[uuid.UUID]]:
    """(the names asked for, the topic ids asked for that name no topic): from v10 a
    topic may be named by its id alone."""
    names: list[str | None] = []
    unknown: list[uuid.UUID] = []
    for t in requested:
        if t.name is None and version >= 10 and t.topic_id != ZERO_UUID:
            name = cache.topic_for_id(t.topic_id)
            if name is None:
                unknown.append(t.topic_id)
            elif name not in names:
                names.append(name)
        else:
            names.append(t.name)
    return names, unknown


def _brokers_on(cache: Any, listener: str) -> list[tuple[int, Any, str | None]]:
    """(id, endpoint, rack) of each live broker with an endpoint on `listener`, the one
    the request came in on: a client learns only addresses it can use."""
    return [
        (b.broker_id, e, b.rack)
        for b in cache.brokers.values()
        if (e := b.endpoint(listener)) is not None
    ]


async def _topic_metadata(
    broker: BrokerServices, name: str, may_create: bool, header: Any, ctx: Any
) -> Any:
    cache = broker.metadata_cache
    Topic = m.MetadataResponse.MetadataResponseTopic
    if not cache.contains(name):
        error = "UNKNOWN_TOPIC_OR_PARTITION"
        try:
            validate_topic_name(name)
            if may_create and broker.config["auto.create.topics.enable"]:
                error = await _auto_create(broker, name)
        except KafkaError as e:
            error = e.name
        return Topic(
            error_code=KafkaError(error).code, name=name, is_internal=name in INTERNAL_TOPICS,
            partitions=[],
        )  # fmt: skip
    partitions = []
    for index, state in sorted(cache.topic_partitions(name).items()):
        leader = cache.alive_broker(state.leader)
        offline = [r for r in state.replicas if cache.alive_broker(r) is None]
        error = 0
        if leader is None:
            error = KafkaError("LEADER_NOT_AVAILABLE").code
        elif leader.endpoint(ctx.listener) is None:  # alive, but not on this listener
            error = KafkaError(
                "LISTENER_NOT_FOUND" if header.api_version >= 6 else "LEADER_NOT_AVAILABLE"
            ).code
        partitions.append(
            m.MetadataResponse.MetadataResponsePartition(
                error_code=error,
                partition_index=index,
                leader_id=state.leader if error == 0 else -1,
                leader_epoch=state.leader_epoch,
                replica_nodes=list(state.replicas),
                isr_nodes=list(state.isr),
                offline_replicas=offline,
            )
        )
    return Topic(
        error_code=0,
        name=name,
        topic_id=cache.topic_id(name),
        is_internal=name in INTERNAL_TOPICS,
        partitions=partitions,
    )


async def _auto_create(broker: BrokerServices, name: str) -> str:
    """Create a topic a client asked for; the client retries on LEADER_NOT_AVAILABLE."""
    if name in INTERNAL_TOPICS:
        return "LEADER_NOT_AVAILABLE"
    result = await broker.store.call(broker.admin_manager.create_topic, NewTopic(name), False)
    if result.error_code and result.error_code != KafkaError("TOPIC_ALREADY_EXISTS").code:
        return KafkaError(result.error_code).name
    return "LEADER_NOT_AVAILABLE"


async def describe_cluster(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    cache = broker.metadata_cache
    brokers = [
        m.DescribeClusterResponse.DescribeClusterBroker(
            broker_id=broker_id, host=e.host or "", port=e.port, rack=rack
        )
        for broker_id, e, rack in _brokers_on(cache, ctx.listener)
    ]
    response = m.DescribeClusterResponse(
        error_code=0,
        cluster_id=cache.cluster_id,
        controller_id=cache.controller_id,
        brokers=brokers,
    )
    if request.include_cluster_authorized_operations:
        response.cluster_authorized_operations = authz.authorized_operations(
            broker, ctx, a.CLUSTER, a.CLUSTER_NAME)  # fmt: skip
    return response


async def describe_topic_partitions(
    broker: BrokerServices, header: Any, request: Any, ctx: Any
) -> Any:
    """DescribeTopicPartitions (KIP-966; Kafka 4's admin client describes topics with it):
    topics by name, their partitions in pages of at most `response_partition_limit`
    (bounded by max.request.partition.size.limit), a cursor where the next page starts.
    As Kafka's DescribeTopicPartitionsRequestHandler: every topic when none is named, and
    then only those the principal may describe; a named one it may not,
    TOPIC_AUTHORIZATION_FAILED; a cursor's topic must be among those named."""
    R = m.DescribeTopicPartitionsResponse
    cursor = request.cursor
    after = cursor.topic_name if cursor is not None else ""
    every = not request.topics
    cache = broker.metadata_cache
    names = cache.all_topics() if every else [t.name for t in request.topics]
    wanted = sorted({n for n in names if n >= after})
    if (cursor is not None and not every and cursor.topic_name not in wanted) or (
        cursor is not None and cursor.partition_index < 0
    ):
        code = KafkaError("INVALID_REQUEST").code
        return R(topics=[R.DescribeTopicPartitionsResponseTopic(
            error_code=code, name=t.name, is_internal=False, partitions=[])
            for t in request.topics])  # fmt: skip
    allowed = authz.topics_allowed(broker, ctx, a.DESCRIBE, wanted)
    limit = max(min(broker.config["max.request.partition.size.limit"],
                    request.response_partition_limit), 1)  # fmt: skip
    response = R(topics=[], next_cursor=None)
    for name in (n for n in wanted if n in allowed):
        if limit == 0:  # the page is full: the next one starts with this topic
            response.next_cursor = R.Cursor(topic_name=name, partition_index=0)
            break
        if not cache.contains(name):
            if not every:
                response.topics.append(_unknown_topic(name))
            continue
        start = cursor.partition_index if cursor is not None and name == after else 0
        states = cache.topic_partitions(name)
        indexes = sorted(i for i in states if i >= start)
        page, rest = indexes[:limit], indexes[limit:]
        response.topics.append(R.DescribeTopicPartitionsResponseTopic(
            error_code=0, name=name, topic_id=cache.topic_id(name),
            is_internal=name in INTERNAL_TOPICS,
            partitions=[_described_partition(cache, i, states[i]) for i in page],
            topic_authorized_operations=authz.authorized_operations(broker, ctx, a.TOPIC, name),
        ))  # fmt: skip
        if rest:
            response.next_cursor = R.Cursor(topic_name=name, partition_index=rest[0])
            break
        limit -= len(page)
    response.topics += [
        R.DescribeTopicPartitionsResponseTopic(
            error_code=TOPIC_AUTHORIZATION_FAILED, name=n, is_internal=False, partitions=[])
        for n in wanted if n not in allowed and not every
    ]  # fmt: skip
    return response


def _unknown_topic(name: str) -> Any:
    R = m.DescribeTopicPartitionsResponse
    try:
        validate_topic_name(name)
        code = KafkaError("UNKNOWN_TOPIC_OR_PARTITION").code
    except KafkaError as e:
        code = e.code
    return R.DescribeTopicPartitionsResponseTopic(
        error_code=code, name=name, is_internal=name in INTERNAL_TOPICS, partitions=[]
    )


def _described_partition(cache: Any, index: int, state: Any) -> Any:
    """One partition as DescribeTopicPartitions shows it: no leader (-1) unless it is alive,
    the replicas and ISR as the controller has them, the dead replicas offline; ZooKeeper
    mode keeps no eligible leader replicas (KIP-966's ELR is KRaft's): empty, as a Kafka
    broker without ELR answers."""
    leader = cache.alive_broker(state.leader)
    return m.DescribeTopicPartitionsResponse.DescribeTopicPartitionsResponsePartition(
        error_code=0,
        partition_index=index,
        leader_id=state.leader if leader is not None else -1,
        leader_epoch=state.leader_epoch,
        replica_nodes=list(state.replicas),
        isr_nodes=list(state.isr),
        eligible_leader_replicas=[],
        last_known_elr=[],
        offline_replicas=[r for r in state.replicas if cache.alive_broker(r) is None],
    )
