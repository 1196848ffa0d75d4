"""Streams groups' APIs (KIP-1071): StreamsGroupHeartbeat and StreamsGroupDescribe
(KafkaApis.handleStreamsGroupHeartbeat and handleStreamsGroupDescribe of Kafka 4.4).

The heartbeat handler checks the topology's topic names (no internal topics, valid
names), authorizes (Read on the group, Describe on every topic the topology names),
hands the request to the streams group coordinator and creates the internal topics the
coordinator found missing (Create on the cluster or on each topic), adding what failed
to the MISSING_INTERNAL_TOPICS status, as Kafka's AutoTopicCreationManager does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kt.broker.admin.admin_manager import INTERNAL_TOPICS, NewTopic
from kt.broker.api.handlers import authz
from kt.broker.group import streams_group_records as sr
from kt.broker.group import streams_topology as st
from kt.broker.group.streams_heartbeat_request import (
    StreamsHeartbeatRequest,
    StreamsHeartbeatResult,
)
from kt.broker.share.share_coordinator_service import SHARE_GROUP_STATE_TOPIC
from kt.errors import KafkaError
from kt.protocol import messages as m
from kt.security import acls as a
from kt.storage.names import validate_topic_name

if TYPE_CHECKING:
    from kt.broker.broker_services import BrokerServices

# org.apache.kafka.common.internals.Topic.isInternal (Kafka 4.4)
KAFKA_INTERNAL_TOPICS = INTERNAL_TOPICS | {SHARE_GROUP_STATE_TOPIC}


def _code(name: str) -> int:
    return KafkaError(name).code


async def streams_group_heartbeat(
    broker: BrokerServices, header: Any, request: Any, ctx: Any
) -> Any:
    R = m.StreamsGroupHeartbeatResponse
    if not authz.group_allowed(broker, ctx, a.READ, request.group_id):
        return R(error_code=_code("GROUP_AUTHORIZATION_FAILED"))
    topology = request.topology
    if topology is not None:
        required = _required_topics(topology)
        prohibited = [t for t in required if t in KAFKA_INTERNAL_TOPICS]
        if prohibited:
            return R(
                error_code=_code("STREAMS_INVALID_TOPOLOGY"),
                error_message=f"Use of Kafka internal topics {','.join(prohibited)} in a "
                "Kafka Streams topology is prohibited.",
            )
        invalid = [t for t in required if not _valid_name(t)]
        if invalid:
            return R(
                error_code=_code("STREAMS_INVALID_TOPOLOGY"),
                error_message=f"Topic names {','.join(invalid)} are not valid topic names.",
            )
        if required and len(authz.topics_allowed(broker, ctx, a.DESCRIBE, required)) < len(
            required
        ):
            return R(error_code=_code("TOPIC_AUTHORIZATION_FAILED"))
    try:
        heartbeat = _request(header, request, ctx)
    except KafkaError as e:
        return R(error_code=e.code, error_message=e.message)
    result = await broker.streams_groups.heartbeat(heartbeat)
    if result.error != "NONE":
        return R(error_code=_code(result.error), error_message=result.message)
    if result.topics_to_create:
        await _create_internal_topics(broker, ctx, result)
    return _response(header.api_version, result)


def _required_topics(topology: Any) -> list[str]:
    """Every topic the topology names, each once, in the order Kafka lists them."""
    names: dict[str, None] = {}
    for s in topology.subtopologies:
        for name in (
            *s.source_topics,
            *s.repartition_sink_topics,
            *(t.name for t in s.repartition_source_topics),
            *(t.name for t in s.state_changelog_topics),
        ):
            names[name] = None
    return list(names)


def _valid_name(name: str) -> bool:
    try:
        validate_topic_name(name)
    except KafkaError:
        return False
    return True


def _tasks(task_ids: Any) -> dict[str, set[int]] | None:
    if task_ids is None:
        return None
    out: dict[str, set[int]] = {}
    for t in task_ids:
        out.setdefault(t.subtopology_id, set()).update(t.partitions)
    return out


def _offsets(task_offsets: Any) -> dict[str, dict[int, int]] | None:
    """MemberTaskOffsets.toNestedMap."""
    if task_offsets is None:
        return None
    out: dict[str, dict[int, int]] = {}
    for t in task_offsets:
        partitions = out.setdefault(t.subtopology_id, {})
        if t.partition in partitions:
            raise KafkaError(
                "INVALID_REQUEST",
                "Task offsets contain a duplicate entry for "
                f"subtopology {t.subtopology_id} and partition {t.partition}.",
            )
        partitions[t.partition] = t.offset
    return out


def topology_value(topology: Any) -> Any:
    """convertToStreamsGroupTopologyRecord: the request's topology as the record stores it."""
    V = sr.TopologyValue

    def info(t: Any) -> Any:
        return V.TopicInfo(
            name=t.name,
            partitions=t.partitions,
            replication_factor=t.replication_factor,
            topic_configs=[V.TopicConfig(key=c.key, value=c.value) for c in t.topic_configs],
        )

    return V(
        epoch=topology.epoch,
        subtopologies=[
            V.Subtopology(
                subtopology_id=s.subtopology_id,
                source_topics=list(s.source_topics),
                source_topic_regex=list(s.source_topic_regex),
                state_changelog_topics=[info(t) for t in s.state_changelog_topics],
                repartition_sink_topics=list(s.repartition_sink_topics),
                repartition_source_topics=[info(t) for t in s.repartition_source_topics],
                copartition_groups=[
                    V.CopartitionGroup(
                        source_topics=list(g.source_topics),
                        source_topic_regex=list(g.source_topic_regex),
                        repartition_source_topics=list(g.repartition_source_topics),
                    )
                    for g in s.copartition_groups
                ],
            )
            for s in topology.subtopologies
        ],
    )


def _request(header: Any, request: Any, ctx: Any) -> StreamsHeartbeatRequest:
    endpoint = request.user_endpoint
    return StreamsHeartbeatRequest(
        group_id=request.group_id,
        member_id=request.member_id,
        member_epoch=request.member_epoch,
        endpoint_information_epoch=request.endpoint_information_epoch,
        instance_id=request.instance_id,
        rack_id=request.rack_id,
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        topology=None if request.topology is None else topology_value(request.topology),
        active_tasks=_tasks(request.active_tasks),
        standby_tasks=_tasks(request.standby_tasks),
        warmup_tasks=_tasks(request.warmup_tasks),
        process_id=request.process_id,
        user_endpoint=None if endpoint is None else (endpoint.host, endpoint.port),
        client_tags=None
        if request.client_tags is None
        else {kv.key: kv.value for kv in request.client_tags},
        task_offsets=_offsets(request.task_offsets),
        task_end_offsets=_offsets(request.task_end_offsets),
        shutdown_application=request.shutdown_application,
        client_id=header.client_id or "",
        client_host="/" + ctx.client_host,
        api_version=header.api_version,
    )


def _response(version: int, result: StreamsHeartbeatResult) -> Any:
    R = m.StreamsGroupHeartbeatResponse

    def ids(tasks: dict[str, set[int]]) -> list:
        return [
            R.TaskIds(subtopology_id=s, partitions=sorted(ps)) for s, ps in sorted(tasks.items())
        ]

    response = R(
        member_id=result.member_id,
        member_epoch=result.member_epoch,
        heartbeat_interval_ms=result.heartbeat_interval_ms,
        task_offset_interval_ms=result.task_offset_interval_ms,
        acceptable_recovery_lag=result.acceptable_recovery_lag,
        acceptable_recovery_lag_legacy=min(result.acceptable_recovery_lag, 2**31 - 1),
        status=[
            R.Status(status_code=code, status_detail=detail) for code, detail in result.statuses
        ],
        endpoint_information_epoch=result.endpoint_information_epoch,
    )
    if result.assignment is not None:
        active, standby, warmup = result.assignment
        response.active_tasks, response.standby_tasks = ids(active), ids(standby)
        response.warmup_tasks = ids(warmup)
    if result.partitions_by_user_endpoint is not None:
        response.partitions_by_user_endpoint = [
            R.EndpointToPartitions(
                user_endpoint=R.Endpoint(host=e.endpoint[0], port=e.endpoint[1]),
                active_partitions=[R.TopicPartition(topic=t, partitions=ps) for t, ps in e.active],
                standby_partitions=[
                    R.TopicPartition(topic=t, partitions=ps) for t, ps in e.standby
                ],
            )
            for e in result.partitions_by_user_endpoint
        ]
    return response


async def _create_internal_topics(
    broker: BrokerServices, ctx: Any, result: StreamsHeartbeatResult
) -> None:
    """AutoTopicCreationManager.createStreamsInternalTopics: the topics the principal may
    create; what was refused or failed joins the MISSING_INTERNAL_TOPICS status."""
    topics = result.topics_to_create
    if broker.authorizer is None or authz.cluster_allowed(broker, ctx, a.CREATE):
        denied: list[str] = []
    else:
        allowed = authz.topics_allowed(broker, ctx, a.CREATE, list(topics))
        denied = [t for t in topics if t not in allowed]
    statuses = result.statuses
    missing = [i for i, (code, _) in enumerate(statuses) if code == st.MISSING_INTERNAL_TOPICS]
    if denied:
        detail = f"Unauthorized to CREATE on topics {','.join(denied)}."
        if missing:
            code, text = statuses[missing[0]]
            statuses[missing[0]] = (code, f"{text}; {detail}")
        else:
            statuses.append((st.MISSING_INTERNAL_TOPICS, detail))
    creatable = [t for t in topics.values() if t.name not in denied]
    errors = await broker.store.call(_create_each, broker, creatable)
    if errors and missing:
        shown = ",".join(f"{name} ({message})" for name, message in list(errors.items())[:3])
        if len(errors) > 3:
            shown += f" and {len(errors) - 3} more"
        code, text = statuses[missing[0]]
        statuses[missing[0]] = (code, f"{text}; Creation failed: {shown}.")


def _create_each(broker: BrokerServices, topics: list[st.InternalTopic]) -> dict[str, str]:
    """Create each internal topic (on the broker's store threads); the errors by topic, a
    topic created meanwhile by another member's heartbeat not among them."""
    errors = {}
    exists = _code("TOPIC_ALREADY_EXISTS")
    for topic in topics:
        new = NewTopic(
            topic.name,
            topic.partitions,
            topic.replication_factor or -1,
            configs=dict(topic.configs),
        )
        outcome = broker.admin_manager.create_topic(new, validate_only=False)
        if outcome.error_code and outcome.error_code != exists:
            errors[topic.name] = outcome.error_message or KafkaError(outcome.error_code).name
    return errors


async def streams_group_describe(
    broker: BrokerServices, header: Any, request: Any, ctx: Any
) -> Any:
    R = m.StreamsGroupDescribeResponse
    groups = []
    for group_id in request.group_ids:
        if not authz.group_allowed(broker, ctx, a.DESCRIBE, group_id):
            groups.append(
                R.DescribedGroup(group_id=group_id, error_code=_code("GROUP_AUTHORIZATION_FAILED"))
            )
            continue
        error, message, group = broker.streams_groups.describe(group_id)
        if group is None:
            groups.append(
                R.DescribedGroup(group_id=group_id, error_code=_code(error), error_message=message)
            )
            continue
        described = describe_group(R, group)
        if request.include_authorized_operations:
            described.authorized_operations = authz.authorized_operations(
                broker, ctx, a.GROUP, group_id
            )
        groups.append(described)
    return R(groups=groups)


def describe_group(R: Any, group: Any) -> Any:
    """StreamsGroup.asDescribedGroup: the configured topology when ready, else the stored
    one; each member with its tasks, target and reported offsets."""
    configured = group.configured_topology

    def ids(tasks: dict) -> list:
        return [
            R.TaskIds(subtopology_id=s, partitions=sorted(ps)) for s, ps in sorted(tasks.items())
        ]

    def offsets(by_task: dict) -> list:
        return [
            R.TaskOffset(subtopology_id=s, partition=p, offset=o)
            for s in sorted(by_task)
            for p, o in sorted(by_task[s].items())
        ]

    def topic_info(t: Any) -> Any:
        return R.TopicInfo(
            name=t.name,
            partitions=t.partitions,
            replication_factor=t.replication_factor or 0,
            topic_configs=[R.KeyValue(key=k, value=v) for k, v in t.configs.items()],
        )

    if configured is not None and configured.is_ready:
        topology = R.Topology(
            epoch=configured.topology_epoch,
            subtopologies=[
                R.Subtopology(
                    subtopology_id=s_id,
                    source_topics=sorted(s.source_topics),
                    repartition_sink_topics=sorted(s.repartition_sink_topics),
                    repartition_source_topics=[
                        topic_info(t) for _, t in sorted(s.repartition_source_topics.items())
                    ],
                    state_changelog_topics=[
                        topic_info(t) for _, t in sorted(s.state_changelog_topics.items())
                    ],
                )
                for s_id, s in sorted((configured.subtopologies or {}).items())
            ],
        )
    elif group.topology is None:  # records compacted away: Kafka would throw
        topology = None
    else:
        stored = group.topology

        def stored_info(t: Any) -> Any:
            return R.TopicInfo(
                name=t.name,
                partitions=t.partitions,
                replication_factor=t.replication_factor,
                topic_configs=[R.KeyValue(key=c.key, value=c.value) for c in t.topic_configs],
            )

        topology = R.Topology(
            epoch=stored.epoch,
            subtopologies=[
                R.Subtopology(
                    subtopology_id=s.subtopology_id,
                    source_topics=sorted(s.source_topics),
                    repartition_sink_topics=sorted(s.repartition_sink_topics),
                    repartition_source_topics=sorted(
                        (stored_info(t) for t in s.repartition_source_topics), key=lambda t: t.name
                    ),
                    state_changelog_topics=sorted(
                        (stored_info(t) for t in s.state_changelog_topics), key=lambda t: t.name
                    ),
                )
                for s in sorted(stored.subtopologies, key=lambda s: s.subtopology_id)
            ],
        )
    members = []
    for member in group.members.values():
        target = group.target_assignment.get(member.member_id)
        reported, reported_end = group.task_offsets.get(member.member_id, ({}, {}))
        held = member.assigned
        endpoint = member.user_endpoint
        members.append(
            R.Member(
                member_id=member.member_id,
                member_epoch=member.member_epoch,
                instance_id=member.instance_id,
                rack_id=member.rack_id,
                client_id=member.client_id,
                client_host=member.client_host,
                topology_epoch=member.topology_epoch,
                process_id=member.process_id,
                user_endpoint=None
                if endpoint is None
                else R.Endpoint(host=endpoint[0], port=endpoint[1]),
                client_tags=[R.KeyValue(key=k, value=v) for k, v in member.client_tags.items()],
                task_offsets=offsets(reported),
                task_end_offsets=offsets(reported_end),
                assignment=R.Assignment(
                    active_tasks=ids(held.active),
                    standby_tasks=ids(held.standby),
                    warmup_tasks=ids(held.warmup),
                ),
                target_assignment=R.Assignment()
                if target is None
                else R.Assignment(
                    active_tasks=ids(target.active),
                    standby_tasks=ids(target.standby),
                    warmup_tasks=ids(target.warmup),
                ),
            )
        )
    return R.DescribedGroup(
        group_id=group.group_id,
        group_state=group.state,
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        topology=topology,
        members=members,
        assignor_name="sticky",
    )
