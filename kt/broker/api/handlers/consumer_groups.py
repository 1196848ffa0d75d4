"""Kafka 4's consumer group APIs (KIP-848): ConsumerGroupHeartbeat and ConsumerGroupDescribe
(KafkaApis.handleConsumerGroupHeartbeat, handleConsumerGroupDescribe).

The handlers decode, authorize and encode; kt.broker.group.consumer_group_coordinator
decides. Partitions travel by topic id, as the protocol names them.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from kt.broker.api.handlers import authz
from kt.broker.group.consumer_group import Assignment, ConsumerGroupMember
from kt.broker.group.consumer_group_coordinator import HeartbeatRequest
from kt.errors import KafkaError
from kt.protocol import messages as m
from kt.security import acls as a

if TYPE_CHECKING:
    from kt.broker.broker_services import BrokerServices

CLASSIC_MEMBER_TYPE, CONSUMER_MEMBER_TYPE = 0, 1  # ConsumerGroupDescribe v1's MemberType


def _code(name: str) -> int:
    return KafkaError(name).code


async def consumer_group_heartbeat(
    broker: BrokerServices, header: Any, request: Any, ctx: Any
) -> Any:
    R = m.ConsumerGroupHeartbeatResponse
    if not authz.group_allowed(broker, ctx, a.READ, request.group_id):
        return R(error_code=_code("GROUP_AUTHORIZATION_FAILED"))
    names = request.subscribed_topic_names
    denied = authz.unauthorized_topics(broker, ctx, names)
    if denied is not None:
        return R(error_code=_code("TOPIC_AUTHORIZATION_FAILED"), error_message=denied)
    owned = request.topic_partitions
    result = await broker.consumer_groups.heartbeat(HeartbeatRequest(
        group_id=request.group_id,
        member_id=request.member_id,
        member_epoch=request.member_epoch,
        instance_id=request.instance_id,
        rack_id=request.rack_id,
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        subscribed_topic_names=list(names) if names is not None else None,
        subscribed_topic_regex=request.subscribed_topic_regex if header.api_version >= 1
        else None,
        server_assignor=request.server_assignor,
        owned=None if owned is None else [(t.topic_id, list(t.partitions)) for t in owned],
        client_id=header.client_id or "",
        client_host="/" + ctx.client_host,
    ))  # fmt: skip
    response = R(
        error_code=_code(result.error),
        error_message=result.message,
        member_id=result.member_id,
        member_epoch=result.member_epoch,
        heartbeat_interval_ms=result.heartbeat_interval_ms,
    )
    if result.error == "NONE" and result.assignment is not None:
        response.assignment = heartbeat_assignment(R, result.assignment)
    return response


def heartbeat_assignment(R: Any, assignment: Assignment) -> Any:
    """A Consumer/ShareGroupHeartbeat response's Assignment, topics in id order."""
    return R.Assignment(topic_partitions=[
        R.TopicPartitions(topic_id=topic_id, partitions=sorted(partitions))
        for topic_id, partitions in _by_topic_id(assignment)
    ])  # fmt: skip


async def consumer_group_describe(
    broker: BrokerServices, header: Any, request: Any, ctx: Any
) -> Any:
    R = m.ConsumerGroupDescribeResponse
    described = []
    for group_id in request.group_ids:
        if not authz.group_allowed(broker, ctx, a.DESCRIBE, group_id):
            described.append(
                R.DescribedGroup(group_id=group_id, error_code=_code("GROUP_AUTHORIZATION_FAILED"))
            )
            continue
        error, message, group = broker.consumer_groups.describe(group_id)
        if group is None:
            described.append(R.DescribedGroup(group_id=group_id, error_code=_code(error),
                                              error_message=message))  # fmt: skip
            continue
        topics = {t for target in group.target.values() for t in target}
        topics |= {t for mb in group.members.values() for t in mb.assigned}
        names = {t: broker.metadata_cache.topic_for_id(t) for t in topics}
        if broker.authorizer is not None:
            denied = {n for n in names.values() if n is not None} - authz.topics_allowed(
                broker, ctx, a.DESCRIBE, (n for n in names.values() if n is not None)
            )
            if denied:
                described.append(R.DescribedGroup(
                    group_id=group_id, error_code=_code("TOPIC_AUTHORIZATION_FAILED"),
                    error_message="The group has described topic(s) that the client is not "
                                  f"authorized to describe: {sorted(denied)}",
                ))  # fmt: skip
                continue
        operations = -2147483648
        if request.include_authorized_operations:
            operations = authz.authorized_operations(broker, ctx, a.GROUP, group_id)
        described.append(R.DescribedGroup(
            group_id=group_id,
            group_state=group.state,
            group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch,
            assignor_name=broker.consumer_groups.assignor_of(group),
            members=[_member(R, mb, group.target_of(mb.member_id), names)
                     for mb in group.members.values()],
            authorized_operations=operations,
        ))  # fmt: skip
    return R(throttle_time_ms=0, groups=described)


def _member(R: Any, member: ConsumerGroupMember, target: Assignment,
            names: dict[uuid.UUID, str | None]) -> Any:  # fmt: skip
    def assignment(a: Assignment) -> Any:
        return R.Assignment(topic_partitions=[
            R.TopicPartitions(topic_id=t, topic_name=names.get(t) or "", partitions=sorted(ps))
            for t, ps in _by_topic_id(a)
        ])  # fmt: skip

    return R.Member(
        member_id=member.member_id,
        instance_id=member.instance_id,
        rack_id=member.rack_id,
        member_epoch=member.member_epoch,
        client_id=member.client_id,
        client_host=member.client_host,
        subscribed_topic_names=list(member.subscribed_topic_names),
        subscribed_topic_regex=member.subscribed_topic_regex,
        assignment=assignment(member.assigned),
        target_assignment=assignment(target),
        member_type=CLASSIC_MEMBER_TYPE if member.classic is not None else CONSUMER_MEMBER_TYPE,
    )


def _by_topic_id(assignment: Assignment) -> list[tuple[uuid.UUID, frozenset[int]]]:
    return sorted(((t, ps) for t, ps in assignment.items() if ps), key=lambda x: str(x[0]))
