"""Fetch, ListOffsets and OffsetForLeaderEpoch: reading partitions and finding offsets."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kt.broker.api.handlers import authz
from kt.broker.replication.partition import TopicPartition
from kt.broker.replication.replica_manager import READ_COMMITTED, FetchRequestPartition, FetchResult
from kt.errors import TOPIC_AUTHORIZATION_FAILED, KafkaError
from kt.protocol import messages as m
from kt.security import acls as a

if TYPE_CHECKING:
    from kt.broker.broker_services import BrokerServices

EARLIEST = -2
LATEST = -1
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4
INITIAL_EPOCH = 0  # a full fetch that asks for a new session
FINAL_EPOCH = -1  # a full fetch that closes its session (or wants none)
UNKNOWN_TOPIC_ID = KafkaError("UNKNOWN_TOPIC_ID").code
ISOLATION_LEVELS = (0, 1)  # READ_UNCOMMITTED, READ_COMMITTED
# The negative timestamps ListOffsets takes from each version on (ListOffsetsRequest):
# -3 from v7, -4 (EARLIEST_LOCAL) from v8, -5 (LATEST_TIERED) from v9. Any other
# negative timestamp is UNSUPPORTED_VERSION, as Kafka 3.9 answers it.
SPECIAL_TIMESTAMPS_SINCE = {LATEST: 0, EARLIEST: 0, MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8, -5: 9}


async def fetch(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    """Consumers and followers alike.

    Fetch sessions (KIP-227) are always declined, as Kafka declines them when its session
    cache is full: a full fetch (epoch 0, or -1 to close a session) is served and answered
    with session id 0, so the client goes on with full fetches (KIP-227; Kafka's
    FetchSessionCache). An incremental fetch (epoch > 0) names a session kt never created:
    FETCH_SESSION_ID_NOT_FOUND, upon which clients start over with a full fetch. As no
    session exists, INVALID_FETCH_SESSION_EPOCH never arises."""
    if header.api_version >= 7 and request.session_epoch not in (INITIAL_EPOCH, FINAL_EPOCH):
        return m.FetchResponse(
            error_code=KafkaError("FETCH_SESSION_ID_NOT_FOUND").code,
            session_id=0,
            responses=[],
        )
    if request.isolation_level not in ISOLATION_LEVELS:  # Kafka fails the whole request
        return _fetch_failed(request, KafkaError("UNKNOWN_SERVER_ERROR").code)
    version = header.api_version
    replica_id = request.replica_id  # from ReplicaState for v15+ (KafkaApis)
    named = _topic_names(broker, request, version)
    asked = [name for name in named.values() if name is not None]
    if replica_id >= 0:  # a follower: CLUSTER_ACTION on the cluster, or nothing
        readable = set(asked) if authz.cluster_allowed(broker, ctx, a.CLUSTER_ACTION) else set()
    else:
        readable = authz.topics_allowed(broker, ctx, a.READ, asked)
    wanted = [
        FetchRequestPartition(
            TopicPartition(name, p.partition),
            p.fetch_offset,
            p.partition_max_bytes,
            current_leader_epoch=p.current_leader_epoch,
            log_start_offset=p.log_start_offset,
            last_fetched_epoch=p.last_fetched_epoch if header.api_version >= 12 else -1,
        )
        for i, topic in enumerate(request.topics)
        if (name := named[i]) in readable
        for p in topic.partitions
    ]
    max_bytes = request.max_bytes if version >= 3 else 2**31 - 1
    results = await broker.replica_manager.fetch_messages(
        replica_id,
        request.max_wait_ms,
        request.min_bytes,
        max_bytes,
        request.isolation_level,
        wanted,
    )
    stats = broker.topic_stats
    for tp, result in results.items():
        stats.fetched(tp.topic, result.error_code, result.size, replica_id >= 0)
    denied = FetchResult(TOPIC_AUTHORIZATION_FAILED)
    unknown_id = FetchResult(UNKNOWN_TOPIC_ID)
    topics = []
    for i, topic in enumerate(request.topics):
        name = named[i]
        partitions = [
            _partition_data(
                p.partition,
                unknown_id
                if name is None
                else results.get(TopicPartition(name, p.partition), denied),
            )  # fmt: skip
            for p in topic.partitions
        ]
        topics.append(m.FetchResponse.FetchableTopicResponse(
            topic=name or "", topic_id=topic.topic_id if version >= 13 else None,
            partitions=partitions,
        ))  # fmt: skip
    if replica_id < 0:  # consumers' fetches count against their quota; followers' do not
        size = sum(r.size for r in results.values())
        ctx.throttle_ms = broker.fetch_quota.record(ctx.user, header.client_id or "", size)
    return m.FetchResponse(error_code=0, session_id=0, responses=topics,
                           throttle_time_ms=ctx.throttle_ms)  # fmt: skip


def _topic_names(broker: BrokerServices, request: Any, version: int) -> dict[int, str | None]:
    """Each asked topic's name by its place in the request: from v13 topics are named by
    id (None for an id this broker does not know: UNKNOWN_TOPIC_ID)."""
    if version < 13:
        return {i: t.topic for i, t in enumerate(request.topics)}
    cache = broker.metadata_cache
    return {i: cache.topic_for_id(t.topic_id) for i, t in enumerate(request.topics)}


def _fetch_failed(request: Any, error_code: int) -> Any:
    """Every partition, and the request, failed with `error_code` (Kafka's
    FetchRequest.getErrorResponse)."""
    failed = FetchResult(error_code=error_code)
    topics = [
        m.FetchResponse.FetchableTopicResponse(
            topic=topic.topic,
            topic_id=topic.topic_id,
            partitions=[_partition_data(p.partition, failed) for p in topic.partitions],
        )
        for topic in request.topics
    ]
    return m.FetchResponse(error_code=error_code, session_id=0, responses=topics)


def _partition_data(index: int, r: FetchResult) -> Any:
    Aborted = m.FetchResponse.AbortedTransaction
    return m.FetchResponse.PartitionData(
        partition_index=index,
        error_code=r.error_code,
        high_watermark=r.high_watermark,
        last_stable_offset=r.last_stable_offset,
        log_start_offset=r.log_start_offset,
        aborted_transactions=None
        if r.aborted_transactions is None
        else [
            Aborted(producer_id=t.producer_id, first_offset=t.first_offset)
            for t in r.aborted_transactions
        ],
        preferred_read_replica=-1,
        records=r.records,
        **({} if r.diverging_epoch is None else {"diverging_epoch": m.FetchResponse.EpochEndOffset(
            epoch=r.diverging_epoch[0], end_offset=r.diverging_epoch[1])}),
    )  # fmt: skip


async def list_offsets(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    topics = []
    described = authz.topics_allowed(broker, ctx, a.DESCRIBE, (t.name for t in request.topics))
    Response = m.ListOffsetsResponse.ListOffsetsPartitionResponse
    for topic in request.topics:
        partitions = [
            _list_offset(broker, header.api_version, request, topic.name, p)
            if topic.name in described else Response(partition_index=p.partition_index,
                                                     error_code=TOPIC_AUTHORIZATION_FAILED)
            for p in topic.partitions
        ]  # fmt: skip
        topics.append(
            m.ListOffsetsResponse.ListOffsetsTopicResponse(name=topic.name, partitions=partitions)
        )
    return m.ListOffsetsResponse(topics=topics, throttle_time_ms=0)


def _list_offset(broker: BrokerServices, version: int, request: Any, topic: str, p: Any) -> Any:
    Response = m.ListOffsetsResponse.ListOffsetsPartitionResponse
    if request.isolation_level not in ISOLATION_LEVELS:
        return Response(partition_index=p.partition_index,
                        error_code=KafkaError("UNKNOWN_SERVER_ERROR").code)  # fmt: skip
    since = SPECIAL_TIMESTAMPS_SINCE.get(p.timestamp)
    if p.timestamp < 0 and (since is None or since > version):
        return Response(partition_index=p.partition_index,
                        error_code=KafkaError("UNSUPPORTED_VERSION").code)  # fmt: skip
    try:
        partition = broker.replica_manager.get_partition(TopicPartition(topic, p.partition_index))
        partition.check_leader(p.current_leader_epoch)
        log_ = partition.log
        found = _offset_for(log_, p.timestamp, request.isolation_level, request.replica_id)
        if found[1] < 0 or p.timestamp == LATEST:
            _check_high_watermark_caught_up(partition, p.timestamp, request.replica_id)
    except KafkaError as e:
        return Response(partition_index=p.partition_index, error_code=e.code)
    timestamp, offset, epoch = found
    if version == 0:
        old = [offset] if offset >= 0 else []
        return Response(partition_index=p.partition_index, error_code=0, old_style_offsets=old)
    return Response(
        partition_index=p.partition_index,
        error_code=0,
        timestamp=timestamp,
        offset=offset,
        leader_epoch=epoch if epoch is not None else -1,
    )


def _check_high_watermark_caught_up(partition: Any, timestamp: int, replica_id: int) -> None:
    """A new leader's high watermark may lag the start of its epoch until its followers
    fetch again: until then a client asking for the latest offset, or for a timestamp not
    found below the high watermark, gets OFFSET_NOT_AVAILABLE (retriable; KIP-207, as
    Partition.fetchOffsetForTimestamp answers), not an offset from before the election."""
    if replica_id >= 0 or timestamp in (EARLIEST, EARLIEST_LOCAL):
        return
    start, hw = partition.leader_epoch_start_offset, partition.log.high_watermark
    if start > hw:
        raise KafkaError(
            "OFFSET_NOT_AVAILABLE",
            f"Failed to fetch offsets for partition {partition.tp} with leader epoch "
            f"{partition.leader_epoch} as this partition's high watermark ({hw}) is lagging "
            f"behind the start offset from the beginning of this epoch ({start}).",
        )


def _offset_for(log_: Any, timestamp: int, isolation: int, replica_id: int) -> tuple:
    """(timestamp, offset, leader epoch) as Partition.fetchOffsetForTimestamp answers."""
    if timestamp == LATEST:
        if replica_id >= 0:
            offset = log_.log_end_offset
        elif isolation == READ_COMMITTED:
            offset = log_.last_stable_offset
        else:
            offset = log_.high_watermark
        return -1, offset, log_.latest_epoch()
    found = log_.fetch_offset_by_timestamp(timestamp)
    if found is None or (replica_id < 0 and found.offset >= log_.high_watermark
                         and timestamp != EARLIEST):  # fmt: skip
        return -1, -1, None
    return found.timestamp, found.offset, found.leader_epoch


async def offset_for_leader_epoch(
    broker: BrokerServices, header: Any, request: Any, ctx: Any
) -> Any:
    Result = m.OffsetForLeaderEpochResponse.EpochEndOffset
    topics = []
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            try:
                partition = broker.replica_manager.get_partition(
                    TopicPartition(topic.topic, p.partition)
                )
                partition.check_leader(p.current_leader_epoch)
                found = partition.log.end_offset_for_epoch(p.leader_epoch)
            except KafkaError as e:
                partitions.append(Result(partition=p.partition, error_code=e.code))
                continue
            epoch, end = found if found is not None else (-1, -1)
            partitions.append(
                Result(partition=p.partition, error_code=0, leader_epoch=epoch, end_offset=end)
            )
        topics.append(
            m.OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult(
                topic=topic.topic, partitions=partitions
            )
        )
    return m.OffsetForLeaderEpochResponse(topics=topics, throttle_time_ms=0)
