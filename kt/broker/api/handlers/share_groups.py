"""Share groups' APIs (KIP-932): ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch and
ShareAcknowledge (KafkaApis.handleShareGroupHeartbeat, handleShareFetchRequest, ...).

The handlers decode, authorize (Read on the group, Read on each topic fetched) and
encode; the share group coordinator (membership), the share sessions and the share
partition manager (records, acknowledgements) decide. Partitions travel by topic id.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from kt.broker.api.handlers import authz
from kt.broker.api.handlers.consumer_groups import heartbeat_assignment
from kt.broker.group import share_group_admin
from kt.broker.group.share_group_coordinator import ShareHeartbeatRequest
from kt.broker.replication.partition import TopicPartition
from kt.broker.share.share_partition_manager import PartitionFetch
from kt.broker.share.share_session import ShareSessionError
from kt.errors import KafkaError
from kt.protocol import messages as m
from kt.security import acls as a

if TYPE_CHECKING:
    from kt.broker.broker_services import BrokerServices
    from kt.broker.network.socket_server import RequestContext

READ_COMMITTED_LEVEL = {"read_uncommitted": 0, "read_committed": 1}
RECORD_LIMIT = 1  # ShareFetch v2's ShareAcquireMode: 0 batch_optimized, 1 record_limit
RENEW = 4  # AcknowledgeType.RENEW, from ShareFetch and ShareAcknowledge v2
ZERO_UUID = uuid.UUID(int=0)


def _code(name: str) -> int:
    return KafkaError(name).code


async def share_group_heartbeat(broker: BrokerServices, header: Any, request: Any,
                                ctx: Any) -> Any:  # fmt: skip
    R = m.ShareGroupHeartbeatResponse
    if not authz.group_allowed(broker, ctx, a.READ, request.group_id):
        return R(error_code=_code("GROUP_AUTHORIZATION_FAILED"))
    names = request.subscribed_topic_names
    denied = authz.unauthorized_topics(broker, ctx, names)
    if denied is not None:
        return R(error_code=_code("TOPIC_AUTHORIZATION_FAILED"), error_message=denied)
    result = await broker.share_groups.heartbeat(ShareHeartbeatRequest(
        request.group_id, request.member_id, request.member_epoch, request.rack_id,
        list(names) if names is not None else None, header.client_id or "",
        "/" + ctx.client_host,
    ))  # fmt: skip
    response = R(error_code=_code(result.error), error_message=result.message,
                 member_id=result.member_id, member_epoch=result.member_epoch,
                 heartbeat_interval_ms=result.heartbeat_interval_ms)  # fmt: skip
    if result.error == "NONE" and result.assignment is not None:
        response.assignment = heartbeat_assignment(R, result.assignment)
    return response


async def share_group_describe(broker: BrokerServices, header: Any, request: Any,
                               ctx: Any) -> Any:  # fmt: skip
    R = m.ShareGroupDescribeResponse
    cache = broker.metadata_cache
    groups = []
    for group_id in request.group_ids:
        if not authz.group_allowed(broker, ctx, a.DESCRIBE, group_id):
            denied = _code("GROUP_AUTHORIZATION_FAILED")
            groups.append(R.DescribedGroup(group_id=group_id, error_code=denied))
            continue
        error, message, group = broker.share_groups.describe(group_id)
        if group is None:
            groups.append(R.DescribedGroup(group_id=group_id, error_code=_code(error),
                                           error_message=message))  # fmt: skip
            continue
        members = []
        for member in group.members.values():
            topics = [R.TopicPartitions(topic_id=t, topic_name=cache.topic_for_id(t) or "",
                                        partitions=sorted(ps))
                      for t, ps in sorted(member.assigned.items(), key=lambda kv: str(kv[0]))
                      if ps]  # fmt: skip
            members.append(R.Member(
                member_id=member.member_id, rack_id=member.rack_id,
                member_epoch=member.member_epoch, client_id=member.client_id,
                client_host=member.client_host,
                subscribed_topic_names=list(member.subscribed_topic_names),
                assignment=R.Assignment(topic_partitions=topics),
            ))  # fmt: skip
        groups.append(R.DescribedGroup(
            group_id=group_id, group_state=group.state, group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch, assignor_name="simple", members=members,
        ))  # fmt: skip
    return R(groups=groups)


def _batches(ack_batches: Any) -> list[tuple[int, int, list[int]]]:
    return [(b.first_offset, b.last_offset, list(b.acknowledge_types)) for b in ack_batches]


def _refused_types(batches: list[tuple[int, int, list[int]]], version: int,
                   renewing: bool) -> bool:  # fmt: skip
    """KafkaApis.validateAcknowledgementBatches on the types: none past REJECT before v2,
    past RENEW from it, and RENEW only in a request that says IsRenewAck."""
    types = [t for _, _, ts in batches for t in ts]
    highest = RENEW if version >= 2 else RENEW - 1
    return any(t > highest for t in types) or (RENEW in types and not renewing)


def _renew_request_errors(request: Any) -> str | None:
    """A ShareFetch with IsRenewAck acknowledges only: Kafka's message naming the fetch
    fields that are not 0, else None."""
    fields = (("maxBytes", request.max_bytes), ("minBytes", request.min_bytes),
              ("maxRecords", request.max_records), ("maxWaitMs", request.max_wait_ms))  # fmt: skip
    wrong = "".join(f"{name} must be set to 0, " for name, value in fields if value != 0)
    return f"{wrong}if isRenewAck is true." if wrong else None


async def _acknowledge_all(
    broker: BrokerServices, group_id: str, member_id: str, acks: dict[TopicPartition, list],
    version: int, renewing: bool,
) -> dict[TopicPartition, tuple]:  # fmt: skip
    out = {}
    for tp, batches in acks.items():
        if _refused_types(batches, version, renewing):
            out[tp] = ("INVALID_REQUEST", None)
            continue
        out[tp] = await broker.share_partitions.acknowledge(group_id, member_id, tp, batches)
    return out


def _end_session(broker: BrokerServices, group_id: str, member_id: str) -> None:
    """The member's share session ends: what it holds goes back; the group's last one
    here drops the group's share partitions from the cache."""
    last = broker.share_sessions.close(group_id, member_id)
    broker.share_partitions.release_member(group_id, member_id)
    if last:
        broker.share_partitions.forget_group(group_id)


def connection_closed(broker: BrokerServices, ctx: RequestContext) -> None:
    """A client's connection closed: the share session it started ends (Kafka's
    ShareGroupListener.onMemberLeave), its member's records going back at once."""
    member = broker.share_sessions.disconnected(ctx.connection_key)
    if member is not None:
        _end_session(broker, *member)


async def share_fetch(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    R = m.ShareFetchResponse
    group_id, member_id = request.group_id, request.member_id
    if group_id is None:
        return R(error_code=_code("INVALID_REQUEST"),
                 error_message="Invalid group id in the request.")  # fmt: skip
    if not authz.group_allowed(broker, ctx, a.READ, group_id):
        return R(error_code=_code("GROUP_AUTHORIZATION_FAILED"))
    if not member_id:
        return R(error_code=_code("INVALID_REQUEST"),
                 error_message="Invalid member id in the request.")  # fmt: skip
    renewing = header.api_version >= 2 and request.is_renew_ack
    if renewing and (message := _renew_request_errors(request)) is not None:
        return R(error_code=_code("INVALID_REQUEST"), error_message=message)
    cache = broker.metadata_cache
    requested: list[tuple[TopicPartition, uuid.UUID]] = []
    unknown: dict[uuid.UUID, list[int]] = defaultdict(list)
    acks: dict[TopicPartition, list] = {}
    for topic in request.topics:
        name = cache.topic_for_id(topic.topic_id)
        for p in topic.partitions:
            if name is None:
                unknown[topic.topic_id].append(p.partition_index)
                continue
            tp = TopicPartition(name, p.partition_index)
            requested.append((tp, topic.topic_id))
            if p.acknowledgement_batches:
                acks[tp] = _batches(p.acknowledgement_batches)
    forgotten = []
    for t in request.forgotten_topics_data:
        name = cache.topic_for_id(t.topic_id)
        if name is not None:
            forgotten += [TopicPartition(name, p) for p in t.partitions]
    sessions = broker.share_sessions
    try:
        session, full = sessions.context(group_id, member_id, request.share_session_epoch,
                                         requested, forgotten, bool(acks),
                                         ctx.connection_key)  # fmt: skip
    except ShareSessionError as e:
        return R(error_code=_code(e.error))
    acked = await _acknowledge_all(broker, group_id, member_id, acks, header.api_version,
                                   renewing)  # fmt: skip
    fetched: dict[TopicPartition, PartitionFetch] = {}
    if session is None:  # the final request: acknowledgements only, then the session ends
        _end_session(broker, group_id, member_id)
    elif renewing:
        pass  # acknowledgements (renewals) only, no fetch
    elif request.max_records > 0 or header.api_version == 0:
        targets = list(session.partitions.items())
        allowed = authz.topics_allowed(broker, ctx, a.READ, {tp.topic for tp, _ in targets})
        for tp, _ in targets:
            if tp.topic not in allowed:
                fetched[tp] = PartitionFetch("TOPIC_AUTHORIZATION_FAILED")
        isolation = broker.share_partitions.settings(group_id).isolation_level
        fetched.update(await broker.share_partitions.fetch(
            group_id, member_id, [(tp, t) for tp, t in targets if tp.topic in allowed],
            request.max_records if header.api_version >= 1 else 500, request.max_bytes,
            request.max_wait_ms, request.min_bytes, READ_COMMITTED_LEVEL.get(isolation, 0),
            request.share_acquire_mode == RECORD_LIMIT,
        ))  # fmt: skip
    ids = dict(requested) | (dict(session.partitions) if session is not None else {})
    by_topic: dict[uuid.UUID, list] = defaultdict(list)
    for tp in sorted(set(fetched) | set(acked), key=lambda t: (t.topic, t.partition)):
        result = fetched.get(tp, PartitionFetch())
        ack_error, ack_message = acked.get(tp, ("NONE", None))
        if not full and not (result.acquired or result.error != "NONE" or tp in acked):
            continue
        partition = broker.replica_manager.partitions.get(tp)
        leader = (broker.broker_id, partition.leader_epoch) if partition is not None else (-1, -1)
        by_topic[ids[tp]].append(R.PartitionData(
            partition_index=tp.partition, error_code=_code(result.error),
            acknowledge_error_code=_code(ack_error), acknowledge_error_message=ack_message,
            current_leader=R.LeaderIdAndEpoch(leader_id=leader[0], leader_epoch=leader[1]),
            records=result.records,
            acquired_records=[R.AcquiredRecords(first_offset=x.first, last_offset=x.last,
                                                delivery_count=x.delivery_count)
                              for x in result.acquired],
        ))  # fmt: skip
    for topic_id, partitions in unknown.items():
        by_topic[topic_id] += [R.PartitionData(partition_index=p,
                                               error_code=_code("UNKNOWN_TOPIC_ID"))
                               for p in partitions]  # fmt: skip
    lock_ms = broker.share_partitions.settings(group_id).partition.record_lock_duration_ms
    return R(acquisition_lock_timeout_ms=lock_ms, responses=[
        R.ShareFetchableTopicResponse(topic_id=t, partitions=ps) for t, ps in by_topic.items()
    ])  # fmt: skip


async def share_acknowledge(broker: BrokerServices, header: Any, request: Any,
                            ctx: Any) -> Any:  # fmt: skip
    R = m.ShareAcknowledgeResponse
    group_id, member_id = request.group_id, request.member_id
    if group_id is None or not member_id:
        return R(error_code=_code("INVALID_REQUEST"))
    if not authz.group_allowed(broker, ctx, a.READ, group_id):
        return R(error_code=_code("GROUP_AUTHORIZATION_FAILED"))
    try:
        broker.share_sessions.check(group_id, member_id, request.share_session_epoch)
    except ShareSessionError as e:
        return R(error_code=_code(e.error))
    cache = broker.metadata_cache
    acks: dict[TopicPartition, list] = {}
    ids: dict[TopicPartition, uuid.UUID] = {}
    for topic in request.topics:
        name = cache.topic_for_id(topic.topic_id)
        for p in topic.partitions:
            if name is not None:
                tp = TopicPartition(name, p.partition_index)
                acks[tp] = _batches(p.acknowledgement_batches)
                ids[tp] = topic.topic_id
    acked = await _acknowledge_all(broker, group_id, member_id, acks, header.api_version,
                                   header.api_version >= 2 and request.is_renew_ack)  # fmt: skip
    if request.share_session_epoch == -1:
        _end_session(broker, group_id, member_id)
    by_topic: dict[uuid.UUID, list] = defaultdict(list)
    for tp, (error, message) in acked.items():
        data = R.PartitionData(partition_index=tp.partition, error_code=_code(error),
                               error_message=message)  # fmt: skip
        by_topic[ids[tp]].append(data)
    return R(responses=[R.ShareAcknowledgeTopicResponse(topic_id=t, partitions=ps)
                        for t, ps in by_topic.items()])  # fmt: skip


async def describe_share_group_offsets(broker: BrokerServices, header: Any, request: Any,
                                       ctx: Any) -> Any:  # fmt: skip
    """KafkaApis.handleDescribeShareGroupOffsetsRequest: Describe on the group; the topics
    the principal may not describe are left out (all of the group's) or refused (those
    named)."""
    R = m.DescribeShareGroupOffsetsResponse
    groups = []
    for g in request.groups:
        if not authz.group_allowed(broker, ctx, a.DESCRIBE, g.group_id):
            groups.append(R.DescribeShareGroupOffsetsResponseGroup(
                group_id=g.group_id, error_code=_code("GROUP_AUTHORIZATION_FAILED")))  # fmt: skip
            continue
        refused = []
        if g.topics is None:
            wanted = None
        else:
            allowed = authz.topics_allowed(broker, ctx, a.DESCRIBE,
                                           {t.topic_name for t in g.topics})  # fmt: skip
            wanted = [(t.topic_name, t.partitions) for t in g.topics if t.topic_name in allowed]
            refused = [t for t in g.topics if t.topic_name not in allowed]
        if wanted == [] and not refused:
            groups.append(R.DescribeShareGroupOffsetsResponseGroup(group_id=g.group_id))
            continue
        found = await broker.share_offsets.describe(g.group_id, wanted)
        if found.error != "NONE":
            groups.append(R.DescribeShareGroupOffsetsResponseGroup(
                group_id=g.group_id, error_code=_code(found.error),
                error_message=found.message or KafkaError(found.error).error.message))  # fmt: skip
            continue
        topics = found.topics
        if g.topics is None:
            allowed = authz.topics_allowed(broker, ctx, a.DESCRIBE, {t.name for t in topics})
            topics = [t for t in topics if t.name in allowed]
        answer = [R.DescribeShareGroupOffsetsResponseTopic(
            topic_name=t.name, topic_id=t.topic_id, partitions=[
                R.DescribeShareGroupOffsetsResponsePartition(
                    partition_index=p.partition, start_offset=p.start_offset,
                    leader_epoch=p.leader_epoch, lag=p.lag, error_code=_code(p.error),
                    error_message=p.message)
                for p in t.partitions]) for t in topics]  # fmt: skip
        denied = KafkaError("TOPIC_AUTHORIZATION_FAILED").error
        answer += [R.DescribeShareGroupOffsetsResponseTopic(
            topic_name=t.topic_name, topic_id=ZERO_UUID, partitions=[
                R.DescribeShareGroupOffsetsResponsePartition(
                    partition_index=p, start_offset=-1, error_code=denied.code,
                    error_message=denied.message)
                for p in t.partitions]) for t in refused]  # fmt: skip
        groups.append(R.DescribeShareGroupOffsetsResponseGroup(group_id=g.group_id,
                                                               topics=answer))  # fmt: skip
    return R(groups=groups)


def _error_message(name: str, message: str | None = None) -> str | None:
    return message or (KafkaError(name).error.message if name != "NONE" else None)


def _group_refusal(broker: BrokerServices, ctx: Any, operation: Any, group_id: str) -> str | None:
    """Why an offsets request on `group_id` is refused as a whole, if it is."""
    if not authz.group_allowed(broker, ctx, operation, group_id):
        return "GROUP_AUTHORIZATION_FAILED"
    return None if group_id else "INVALID_GROUP_ID"


async def alter_share_group_offsets(broker: BrokerServices, header: Any, request: Any,
                                    ctx: Any) -> Any:  # fmt: skip
    """KafkaApis.handleAlterShareGroupOffsetsRequest: Read on the group and each topic;
    an unknown topic is answered here, the others by the group coordinator."""
    R = m.AlterShareGroupOffsetsResponse
    group_id = request.group_id
    refused = _group_refusal(broker, ctx, a.READ, group_id)
    if refused is not None:
        return R(error_code=_code(refused), error_message=_error_message(refused))
    cache = broker.metadata_cache
    allowed = authz.topics_allowed(broker, ctx, a.READ, {t.topic_name for t in request.topics})
    answered = []
    wanted = []
    for topic in request.topics:
        error = ("TOPIC_AUTHORIZATION_FAILED" if topic.topic_name not in allowed
                 else "NONE" if cache.topic_partitions(topic.topic_name)
                 else "UNKNOWN_TOPIC_OR_PARTITION")  # fmt: skip
        if error == "NONE":
            wanted.append((topic.topic_name, [(p.partition_index, p.start_offset)
                                              for p in topic.partitions]))  # fmt: skip
            continue
        answered.append(R.AlterShareGroupOffsetsResponseTopic(
            topic_name=topic.topic_name, topic_id=cache.topic_id(topic.topic_name) or ZERO_UUID,
            partitions=[R.AlterShareGroupOffsetsResponsePartition(
                partition_index=p.partition_index, error_code=_code(error),
                error_message=_error_message(error)) for p in topic.partitions]))  # fmt: skip
    error, message, results = await share_group_admin.alter_offsets(
        broker.share_groups, group_id, wanted
    )
    if error != "NONE":
        return R(error_code=_code(error), error_message=_error_message(error, message))
    answered += [R.AlterShareGroupOffsetsResponseTopic(
        topic_name=t.name, topic_id=t.topic_id or ZERO_UUID, partitions=[
            R.AlterShareGroupOffsetsResponsePartition(
                partition_index=p, error_code=_code(e), error_message=_error_message(e))
            for p, e in t.partitions]) for t in results]  # fmt: skip
    return R(responses=answered)


async def delete_share_group_offsets(broker: BrokerServices, header: Any, request: Any,
                                     ctx: Any) -> Any:  # fmt: skip
    """KafkaApis.handleDeleteShareGroupOffsetsRequest: Delete on the group, Read on each
    topic."""
    R = m.DeleteShareGroupOffsetsResponse
    group_id = request.group_id
    refused = _group_refusal(broker, ctx, a.DELETE, group_id)
    if refused is not None:
        return R(error_code=_code(refused), error_message=_error_message(refused))
    names = [t.topic_name for t in request.topics]
    allowed = authz.topics_allowed(broker, ctx, a.READ, set(names))
    denied = [R.DeleteShareGroupOffsetsResponseTopic(
        topic_name=n, topic_id=ZERO_UUID, error_code=_code("TOPIC_AUTHORIZATION_FAILED"),
        error_message=_error_message("TOPIC_AUTHORIZATION_FAILED"))
        for n in names if n not in allowed]  # fmt: skip
    error, message, results = await share_group_admin.delete_offsets(
        broker.share_groups, group_id, [n for n in names if n in allowed])  # fmt: skip
    if error != "NONE":
        return R(error_code=_code(error), error_message=_error_message(error, message))
    return R(responses=[R.DeleteShareGroupOffsetsResponseTopic(
        topic_name=t.name, topic_id=t.topic_id or ZERO_UUID, error_code=_code(t.error),
        error_message=t.message) for t in results] + denied)  # fmt: skip


# -- the share coordinator's internal RPCs (a share partition's leader to the coordinator) --


async def _state_call(broker: BrokerServices, ctx: Any, request: Any, call: Any) -> list:
    """Run `call(key, partition data)` for each partition; (topic id, partition, error,
    message, result) rows."""
    from kt.broker.share.share_coordinator import ShareStateError
    from kt.broker.share.share_state import SharePartitionKey

    rows = []
    allowed = authz.cluster_allowed(broker, ctx, a.CLUSTER_ACTION)
    for topic in request.topics:
        for p in topic.partitions:
            key = SharePartitionKey(request.group_id, topic.topic_id, p.partition)
            if not allowed:
                rows.append((topic.topic_id, p.partition, "CLUSTER_AUTHORIZATION_FAILED", None,
                             None))  # fmt: skip
                continue
            try:
                rows.append((topic.topic_id, p.partition, "NONE", None, await call(key, p)))
            except ShareStateError as e:
                rows.append((topic.topic_id, p.partition, e.error, e.message, None))
    return rows


async def initialize_share_group_state(broker: BrokerServices, header: Any, request: Any,
                                       ctx: Any) -> Any:  # fmt: skip
    R = m.InitializeShareGroupStateResponse

    async def call(key: Any, p: Any) -> None:
        await broker.share_coordinator.initialize(key, p.state_epoch, p.start_offset)

    return R(results=[
        R.InitializeStateResult(topic_id=t, partitions=[
            R.PartitionResult(partition=p, error_code=_code(e), error_message=msg)])
        for t, p, e, msg, _ in await _state_call(broker, ctx, request, call)
    ])  # fmt: skip


async def read_share_group_state(broker: BrokerServices, header: Any, request: Any,
                                 ctx: Any) -> Any:  # fmt: skip
    R = m.ReadShareGroupStateResponse

    async def call(key: Any, p: Any) -> Any:
        return await broker.share_coordinator.read(key, p.leader_epoch)

    results = []
    for t, p, e, msg, state in await _state_call(broker, ctx, request, call):
        part = R.PartitionResult(partition=p, error_code=_code(e), error_message=msg)
        if state is not None:
            part.state_epoch, part.start_offset = state.state_epoch, state.start_offset
            part.state_batches = [R.StateBatch(first_offset=b.first, last_offset=b.last,
                                               delivery_state=b.delivery_state,
                                               delivery_count=b.delivery_count)
                                  for b in state.state_batches]  # fmt: skip
        results.append(R.ReadStateResult(topic_id=t, partitions=[part]))
    return R(results=results)


async def write_share_group_state(broker: BrokerServices, header: Any, request: Any,
                                  ctx: Any) -> Any:  # fmt: skip
    from kt.broker.share.share_coordinator import WriteRequest
    from kt.broker.share.share_state import StateBatch

    R = m.WriteShareGroupStateResponse

    async def call(key: Any, p: Any) -> None:
        batches = [StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                   for b in p.state_batches]  # fmt: skip
        await broker.share_coordinator.write(WriteRequest(
            key, p.state_epoch, p.leader_epoch, p.start_offset, batches,
            getattr(p, "delivery_complete_count", -1)))  # fmt: skip

    return R(results=[
        R.WriteStateResult(topic_id=t, partitions=[
            R.PartitionResult(partition=p, error_code=_code(e), error_message=msg)])
        for t, p, e, msg, _ in await _state_call(broker, ctx, request, call)
    ])  # fmt: skip


async def delete_share_group_state(broker: BrokerServices, header: Any, request: Any,
                                   ctx: Any) -> Any:  # fmt: skip
    R = m.DeleteShareGroupStateResponse

    async def call(key: Any, p: Any) -> None:
        await broker.share_coordinator.delete(key)

    return R(results=[
        R.DeleteStateResult(topic_id=t, partitions=[
            R.PartitionResult(partition=p, error_code=_code(e), error_message=msg)])
        for t, p, e, msg, _ in await _state_call(broker, ctx, request, call)
    ])  # fmt: skip


async def read_share_group_state_summary(broker: BrokerServices, header: Any, request: Any,
                                         ctx: Any) -> Any:  # fmt: skip
    from kt.broker.share.persister import NEVER_INITIALIZED

    R = m.ReadShareGroupStateSummaryResponse

    async def call(key: Any, p: Any) -> Any:
        return broker.share_coordinator.summary(key) or NEVER_INITIALIZED

    results = []
    for t, p, e, msg, state in await _state_call(broker, ctx, request, call):
        part = R.PartitionResult(partition=p, error_code=_code(e), error_message=msg)
        if state is not None:
            part.state_epoch, part.leader_epoch = state.state_epoch, state.leader_epoch
            part.start_offset = state.start_offset
            part.delivery_complete_count = state.delivery_complete_count
        results.append(R.ReadStateSummaryResult(topic_id=t, partitions=[part]))
    return R(results=results)
