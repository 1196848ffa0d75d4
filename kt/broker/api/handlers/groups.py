"""Group APIs (KafkaApis.handleFindCoordinatorRequest, handleJoinGroupRequest, ...).

Each handler turns a request of any version into a call on the group coordinator
(kt.broker.group) and its answer into the response of that version. FindCoordinator
creates `__consumer_offsets` (for a group) and `__transaction_state` (for a transactional
id) on first use and answers COORDINATOR_NOT_AVAILABLE until their leaders are elected.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from kt.broker.api.handlers import authz
from kt.broker.group import group_admin, share_group_admin
from kt.broker.group.group_metadata_manager import (
    GROUP_METADATA_TOPIC,
    now_ms,
    partition_for,
)
from kt.broker.group.offsets_records import OffsetAndMetadata
from kt.broker.internal_topics import create_internal_topic
from kt.broker.transaction.transaction_log import TRANSACTION_STATE_TOPIC
from kt.errors import GROUP_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_FAILED, KafkaError
from kt.protocol import messages as m
from kt.security import acls as a

if TYPE_CHECKING:
    from kt.broker.broker_services import BrokerServices

GROUP_KEY, TRANSACTION_KEY = 0, 1

log = logging.getLogger(__name__)


def code(name: str) -> int:
    return KafkaError(name).code


# -- FindCoordinator -------------------------------------------------------------------


async def find_coordinator(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    version = header.api_version
    key_type = request.key_type if version >= 1 else GROUP_KEY
    keys = request.coordinator_keys if version >= 4 else [request.key]
    found = [await _coordinator_for(broker, key, key_type, ctx.listener)
             if _may_describe_key(broker, ctx, key, key_type) else (
                 "GROUP_AUTHORIZATION_FAILED" if key_type == GROUP_KEY
                 else "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", -1, "", -1)
             for key in keys]  # fmt: skip
    if version >= 4:
        Coordinator = m.FindCoordinatorResponse.Coordinator
        return m.FindCoordinatorResponse(coordinators=[
            Coordinator(key=k, node_id=n, host=h, port=p, error_code=code(e),
                        error_message=None if e == "NONE" else KafkaError(e).args[0])
            for k, (e, n, h, p) in zip(keys, found, strict=True)
        ])  # fmt: skip
    error, node, host, port = found[0]
    return m.FindCoordinatorResponse(
        error_code=code(error),
        error_message=None if error == "NONE" else KafkaError(error).args[0],
        node_id=node, host=host, port=port,
    )  # fmt: skip


def _may_describe_key(broker: BrokerServices, ctx: Any, key: str, key_type: int) -> bool:
    """DESCRIBE on the group or transactional id whose coordinator is asked for."""
    kind = a.GROUP if key_type == GROUP_KEY else a.TRANSACTIONAL_ID
    return key_type not in (GROUP_KEY, TRANSACTION_KEY) or authz.allowed(
        broker, ctx, a.DESCRIBE, kind, key)  # fmt: skip


async def _coordinator_for(
    broker: BrokerServices, key: str, key_type: int, listener: str
) -> tuple[str, int, str, int]:
    """(error, node id, host, port) of the leader of the key's internal partition
    (`__consumer_offsets` for a group, `__transaction_state` for a transactional id), on
    the listener the request came in on."""
    not_available = ("COORDINATOR_NOT_AVAILABLE", -1, "", -1)
    if key_type not in (GROUP_KEY, TRANSACTION_KEY) or not key:
        return ("INVALID_REQUEST", -1, "", -1)
    topic = GROUP_METADATA_TOPIC if key_type == GROUP_KEY else TRANSACTION_STATE_TOPIC
    cache = broker.metadata_cache
    partitions = cache.topic_partitions(topic)
    if not partitions:
        try:
            await broker.store.call(create_internal_topic, broker, topic)
        except KafkaError as e:  # the store is away: the client asks again
            log.info("Not creating %s now: %s", topic, e)
        return not_available
    state = partitions.get(partition_for(key, len(partitions)))
    leader = cache.alive_broker(state.leader) if state is not None else None
    endpoint = leader.endpoint(listener) if leader is not None else None
    if endpoint is None:
        return not_available
    return ("NONE", state.leader, endpoint.host or "", endpoint.port)


# -- membership ------------------------------------------------------------------------


def membership(broker: BrokerServices, group_id: str) -> Any:
    """Who answers a classic group API for `group_id`: the classic group coordinator, or,
    for a consumer group with members, its classic-protocol side (KIP-848's migration).
    Both have join_group, sync_group, heartbeat and leave_group."""
    if broker.classic_members.serves(group_id):
        return broker.classic_members
    return broker.group_coordinator


async def join_group(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    if not authz.group_allowed(broker, ctx, a.READ, request.group_id):
        return m.JoinGroupResponse(error_code=GROUP_AUTHORIZATION_FAILED, generation_id=-1,
                                   member_id=request.member_id, members=[])  # fmt: skip
    version = header.api_version
    session_timeout = request.session_timeout_ms
    rebalance_timeout = request.rebalance_timeout_ms if version >= 1 else session_timeout
    result = await membership(broker, request.group_id).join_group(
        request.group_id,
        request.member_id,
        request.group_instance_id if version >= 5 else None,
        version >= 4,
        header.client_id or "",
        "/" + ctx.client_host,
        rebalance_timeout,
        session_timeout,
        request.protocol_type,
        [(p.name, bytes(p.metadata)) for p in request.protocols],
    )
    Member = m.JoinGroupResponse.JoinGroupResponseMember
    protocol_name = result.protocol_name
    if protocol_name is None and version < 7:
        protocol_name = ""
    return m.JoinGroupResponse(
        throttle_time_ms=0,
        error_code=code(result.error),
        generation_id=result.generation_id,
        protocol_type=result.protocol_type,
        protocol_name=protocol_name,
        leader=result.leader_id,
        skip_assignment=result.skip_assignment,
        member_id=result.member_id,
        members=[
            Member(member_id=i, group_instance_id=s, metadata=d) for i, s, d in result.members
        ],
    )


async def sync_group(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    if not authz.group_allowed(broker, ctx, a.READ, request.group_id):
        return m.SyncGroupResponse(error_code=GROUP_AUTHORIZATION_FAILED, assignment=b"")
    version = header.api_version
    result = await membership(broker, request.group_id).sync_group(
        request.group_id,
        request.generation_id,
        request.member_id,
        request.group_instance_id if version >= 3 else None,
        request.protocol_type if version >= 5 else None,
        request.protocol_name if version >= 5 else None,
        {a.member_id: bytes(a.assignment) for a in request.assignments},
    )
    return m.SyncGroupResponse(
        throttle_time_ms=0,
        error_code=code(result.error),
        protocol_type=result.protocol_type,
        protocol_name=result.protocol_name,
        assignment=result.assignment,
    )


async def heartbeat(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    if not authz.group_allowed(broker, ctx, a.READ, request.group_id):
        return m.HeartbeatResponse(error_code=GROUP_AUTHORIZATION_FAILED)
    error = membership(broker, request.group_id).heartbeat(
        request.group_id,
        request.member_id,
        request.group_instance_id if header.api_version >= 3 else None,
        request.generation_id,
    )
    return m.HeartbeatResponse(throttle_time_ms=0, error_code=code(error))


async def leave_group(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    if not authz.group_allowed(broker, ctx, a.READ, request.group_id):
        return m.LeaveGroupResponse(error_code=GROUP_AUTHORIZATION_FAILED, members=[])
    version = header.api_version
    if version >= 3:
        leaving = [(x.member_id, x.group_instance_id) for x in request.members]
    else:
        leaving = [(request.member_id, None)]
    side = membership(broker, request.group_id)
    if side is broker.classic_members:
        error, member_errors = await side.leave_group(request.group_id, leaving)
    else:
        error, member_errors = side.leave_group(request.group_id, leaving)
    if version < 3:
        if error == "NONE" and member_errors:
            error = member_errors[0]
        return m.LeaveGroupResponse(throttle_time_ms=0, error_code=code(error))
    if error != "NONE":
        return m.LeaveGroupResponse(throttle_time_ms=0, error_code=code(error), members=[])
    Member = m.LeaveGroupResponse.MemberResponse
    return m.LeaveGroupResponse(
        throttle_time_ms=0,
        error_code=code(error),
        members=[
            Member(member_id=mid, group_instance_id=iid, error_code=code(e))
            for (mid, iid), e in zip(leaving, member_errors, strict=True)
        ],
    )


# -- offsets ---------------------------------------------------------------------------


async def offset_commit(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    version = header.api_version
    now = now_ms()
    max_metadata = broker.config["offset.metadata.max.bytes"]
    retention = request.retention_time_ms if 2 <= version <= 4 else -1
    results: dict[tuple[str, int], str] = {}
    offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
    cache = broker.metadata_cache
    group_ok = authz.group_allowed(broker, ctx, a.READ, request.group_id)
    readable = authz.topics_allowed(broker, ctx, a.READ, (t.name for t in request.topics))
    for topic in request.topics:
        known = cache.topic_partitions(topic.name)
        for p in topic.partitions:
            tp = (topic.name, p.partition_index)
            metadata = p.committed_metadata or ""
            if not group_ok:
                results[tp] = "GROUP_AUTHORIZATION_FAILED"
            elif topic.name not in readable:
                results[tp] = "TOPIC_AUTHORIZATION_FAILED"
            elif p.partition_index not in known:
                results[tp] = "UNKNOWN_TOPIC_OR_PARTITION"
            elif len(metadata.encode()) > max_metadata:
                results[tp] = "OFFSET_METADATA_TOO_LARGE"
            else:
                ts = p.commit_timestamp if version == 1 and p.commit_timestamp != -1 else now
                offsets[tp] = OffsetAndMetadata(
                    p.committed_offset,
                    p.committed_leader_epoch if version >= 6 else -1,
                    metadata,
                    ts,
                    now + retention if retention != -1 else None,
                )
    results.update(
        {}
        if not offsets
        else await group_admin.commit_offsets(
            broker.group_coordinator,
            request.group_id,
            request.member_id if version >= 1 else "",
            request.group_instance_id if version >= 7 else None,
            request.generation_id_or_member_epoch if version >= 1 else -1,
            offsets,
            version,
            cache.topic_id,
        )
    )
    R = m.OffsetCommitResponse
    return R(throttle_time_ms=0, topics=[
        R.OffsetCommitResponseTopic(name=t.name, partitions=[
            R.OffsetCommitResponsePartition(
                partition_index=p.partition_index,
                error_code=code(results[(t.name, p.partition_index)]))
            for p in t.partitions])
        for t in request.topics
    ])  # fmt: skip


async def offset_fetch(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    version = header.api_version
    R = m.OffsetFetchResponse
    if version >= 8:
        groups = []
        for g in request.groups:
            wanted = _wanted(g.topics)
            member = (g.member_id, g.member_epoch) if version >= 9 else (None, -1)
            result = _fetch_offsets(broker, ctx, g.group_id, wanted, request.require_stable,
                                    member)  # fmt: skip
            groups.append(R.OffsetFetchResponseGroup(
                group_id=g.group_id, error_code=code(result.error),
                topics=_fetched_topics(result, R.OffsetFetchResponseTopics,
                                       R.OffsetFetchResponsePartitions)))  # fmt: skip
        return R(throttle_time_ms=0, groups=groups)
    wanted = _wanted(request.topics)
    require_stable = version >= 7 and request.require_stable
    result = _fetch_offsets(broker, ctx, request.group_id, wanted, require_stable)
    if result.error != "NONE" and version < 2:
        # v0/v1 have no top-level error: every partition asked for carries it.
        result.offsets = dict.fromkeys(wanted or [])
        topics = _fetched_topics(result, R.OffsetFetchResponseTopic,
                                 R.OffsetFetchResponsePartition, result.error)  # fmt: skip
        return R(throttle_time_ms=0, topics=topics)
    topics = _fetched_topics(result, R.OffsetFetchResponseTopic, R.OffsetFetchResponsePartition)
    return R(throttle_time_ms=0, topics=topics, error_code=code(result.error))


def _fetch_offsets(
    broker: BrokerServices,
    ctx: Any,
    group: str,
    wanted: Any,
    require_stable: bool,
    member: tuple[str | None, int] = (None, -1),
) -> group_admin.OffsetFetchResult:
    """The group's offsets, if the principal may DESCRIBE the group; of the topics it may
    DESCRIBE (the others: TOPIC_AUTHORIZATION_FAILED when named, left out when not)."""
    if not authz.group_allowed(broker, ctx, a.DESCRIBE, group):
        return group_admin.OffsetFetchResult(error="GROUP_AUTHORIZATION_FAILED")
    result = group_admin.fetch_offsets(
        broker.group_coordinator, group, wanted, require_stable, *member
    )
    if broker.authorizer is not None:
        described = authz.topics_allowed(broker, ctx, a.DESCRIBE, (t for t, _ in result.offsets))
        for tp in list(result.offsets):
            if tp[0] not in described:
                del result.offsets[tp]
        result.denied = [tp for tp in wanted or [] if tp[0] not in described]
    return result


def _wanted(topics: Any) -> list[tuple[str, int]] | None:
    if topics is None:
        return None
    return [(t.name, p) for t in topics for p in t.partition_indexes]


def _fetched_topics(
    result: group_admin.OffsetFetchResult, Topic: Any, Partition: Any, error: str = "NONE"
) -> list[Any]:
    by_topic: dict[str, list[Any]] = {}
    for topic, partition in result.denied:
        by_topic.setdefault(topic, []).append(Partition(
            partition_index=partition, committed_offset=-1, committed_leader_epoch=-1,
            metadata="", error_code=TOPIC_AUTHORIZATION_FAILED,
        ))  # fmt: skip
    for (topic, partition), o in result.offsets.items():
        if (topic, partition) in result.unstable:
            o, partition_error = None, "UNSTABLE_OFFSET_COMMIT"
        else:
            partition_error = error
        by_topic.setdefault(topic, []).append(
            Partition(
                partition_index=partition,
                committed_offset=o.offset if o is not None else -1,
                committed_leader_epoch=o.leader_epoch if o is not None else -1,
                metadata=o.metadata if o is not None else "",
                error_code=code(partition_error),
            )
        )
    return [Topic(name=t, partitions=parts) for t, parts in by_topic.items()]


async def offset_delete(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    if not authz.group_allowed(broker, ctx, a.DELETE, request.group_id):
        return m.OffsetDeleteResponse(error_code=GROUP_AUTHORIZATION_FAILED, topics=[])
    cache = broker.metadata_cache
    results: dict[tuple[str, int], str] = {}
    partitions = []
    for t in request.topics:
        known = cache.topic_partitions(t.name)
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if p.partition_index in known:
                partitions.append(tp)
            else:
                results[tp] = "UNKNOWN_TOPIC_OR_PARTITION"
    error, deleted = await group_admin.delete_offsets(
        broker.group_coordinator, request.group_id, partitions
    )
    R = m.OffsetDeleteResponse
    if error != "NONE":
        return R(error_code=code(error), throttle_time_ms=0, topics=[])
    results.update(deleted)
    return R(error_code=0, throttle_time_ms=0, topics=[
        R.OffsetDeleteResponseTopic(name=t.name, partitions=[
            R.OffsetDeleteResponsePartition(
                partition_index=p.partition_index,
                error_code=code(results[(t.name, p.partition_index)]))
            for p in t.partitions])
        for t in request.topics
    ])  # fmt: skip


# -- group administration --------------------------------------------------------------


async def describe_groups(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    R = m.DescribeGroupsResponse
    groups = []
    for group_id in request.groups:
        if not authz.group_allowed(broker, ctx, a.DESCRIBE, group_id):
            groups.append(R.DescribedGroup(
                error_code=GROUP_AUTHORIZATION_FAILED, group_id=group_id,
                group_state="", protocol_type="", protocol_data="", members=[],
            ))  # fmt: skip
            continue
        d = group_admin.describe_group(broker.group_coordinator, group_id,
                                       broker.consumer_groups,
                                       broker.metadata_cache.topic_for_id)  # fmt: skip
        operations = -2147483648  # not asked for
        if header.api_version >= 3 and request.include_authorized_operations:
            operations = authz.authorized_operations(broker, ctx, a.GROUP, group_id)
        groups.append(R.DescribedGroup(
            authorized_operations=operations,
            error_code=code(d.error), group_id=group_id, group_state=d.state,
            protocol_type=d.protocol_type, protocol_data=d.protocol,
            members=[R.DescribedGroupMember(
                member_id=mid, group_instance_id=iid, client_id=cid, client_host=host,
                member_metadata=meta, member_assignment=assignment)
                for mid, iid, cid, host, meta, assignment in d.members],
        ))  # fmt: skip
    return R(throttle_time_ms=0, groups=groups)


async def list_groups(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    version = header.api_version
    states = request.states_filter if version >= 4 else []
    types = request.types_filter if version >= 5 else []
    error, listed = group_admin.list_groups(broker.group_coordinator, states or [], types or [])
    if not authz.cluster_allowed(broker, ctx, a.DESCRIBE):  # else the groups it may describe
        listed = [g for g in listed if authz.group_allowed(broker, ctx, a.DESCRIBE, g[0])]
    Listed = m.ListGroupsResponse.ListedGroup
    return m.ListGroupsResponse(
        throttle_time_ms=0,
        error_code=code(error),
        groups=[
            Listed(group_id=g, protocol_type=p, group_state=s, group_type=t)
            for g, p, s, t in listed
        ],
    )


async def delete_groups(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    allowed = [g for g in request.groups_names if authz.group_allowed(broker, ctx, a.DELETE, g)]
    # share groups' partitions' state first (GroupCoordinatorService.deleteGroups)
    refused = await share_group_admin.delete_state(broker.share_groups, allowed)
    results = await group_admin.delete_groups(broker.group_coordinator,
                                              [g for g in allowed if g not in refused])  # fmt: skip
    results.update(refused)
    results.update({g: "GROUP_AUTHORIZATION_FAILED" for g in request.groups_names
                    if g not in allowed})  # fmt: skip
    Result = m.DeleteGroupsResponse.DeletableGroupResult
    return m.DeleteGroupsResponse(
        throttle_time_ms=0,
        results=[Result(group_id=g, error_code=code(e)) for g, e in results.items()],
    )
