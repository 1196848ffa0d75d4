"""Requests whose fields a client controls, with values no well-behaved client sends
(negative sizes, counts and timeouts, unknown codes, offsets out of range), and the
answers of Apache Kafka 3.9 on ZooKeeper to each: its error codes, every error_code of
the response depth first. tests/integration/test_request_fields.py holds kt to these
answers; tests/oracle/test_request_fields.py checks them against Kafka itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kt.client.client import KafkaClient
from kt.errors import KafkaError
from kt.protocol import ApiKey
from kt.protocol import messages as m
from kt.protocol.messages import Struct
from kt.storage.record_batch import Record, build_batch

BATCH = build_batch([Record(None, 1_700_000_000_000 + i, b"k", b"v" * 10) for i in range(3)])


def produce(topic: str, acks: int = 1, timeout_ms: int = 1000) -> Any:
    data = m.ProduceRequest.PartitionProduceData(index=0, records=BATCH)
    return m.ProduceRequest(acks=acks, timeout_ms=timeout_ms, topic_data=[
        m.ProduceRequest.TopicProduceData(name=topic, partition_data=[data])])  # fmt: skip


def fetch(
    topic: str,
    max_bytes: int = 1 << 20,
    partition_max_bytes: int = 1 << 20,
    max_wait_ms: int = 100,
    min_bytes: int = 1,
    offset: int = 0,
    epoch: int = -1,
    log_start: int = -1,
    isolation_level: int = 0,
) -> Any:
    partition = m.FetchRequest.FetchPartition(
        partition=0, fetch_offset=offset, partition_max_bytes=partition_max_bytes,
        current_leader_epoch=epoch, log_start_offset=log_start)  # fmt: skip
    return m.FetchRequest(
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        isolation_level=isolation_level,
        session_epoch=-1,
        topics=[m.FetchRequest.FetchTopic(topic=topic, partitions=[partition])],
    )


def list_offsets(topic: str, timestamp: int, replica_id: int = -1, isolation_level: int = 0) -> Any:
    partition = m.ListOffsetsRequest.ListOffsetsPartition(
        partition_index=0, timestamp=timestamp, current_leader_epoch=-1
    )
    return m.ListOffsetsRequest(replica_id=replica_id, isolation_level=isolation_level, topics=[
        m.ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[partition])])  # fmt: skip


def create_topic(name: str, partitions: int, rf: int, timeout_ms: int = 10_000,
                 validate_only: bool = False) -> Any:  # fmt: skip
    topic = m.CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=rf, assignments=[], configs=[]
    )
    return m.CreateTopicsRequest(topics=[topic], timeout_ms=timeout_ms, validate_only=validate_only)


def create_partitions(topic: str, count: int, validate_only: bool = False) -> Any:
    topic = m.CreatePartitionsRequest.CreatePartitionsTopic(
        name=topic, count=count, assignments=None
    )
    return m.CreatePartitionsRequest(topics=[topic], timeout_ms=10_000, validate_only=validate_only)


def delete_records(topic: str, offset: int, timeout_ms: int = 10_000) -> Any:
    partition = m.DeleteRecordsRequest.DeleteRecordsPartition(partition_index=0, offset=offset)
    return m.DeleteRecordsRequest(timeout_ms=timeout_ms, topics=[
        m.DeleteRecordsRequest.DeleteRecordsTopic(name=topic, partitions=[partition])])  # fmt: skip


def join_group(topic: str, session_ms: int, rebalance_ms: int) -> Any:
    protocol = m.JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")
    return m.JoinGroupRequest(group_id=topic, session_timeout_ms=session_ms,
                              rebalance_timeout_ms=rebalance_ms, member_id="",
                              protocol_type="consumer", protocols=[protocol])  # fmt: skip


def offset_commit(topic: str, partition: int, offset: int) -> Any:
    p = m.OffsetCommitRequest.OffsetCommitRequestPartition(
        partition_index=partition, committed_offset=offset, committed_leader_epoch=-1,
        committed_metadata="")  # fmt: skip
    return m.OffsetCommitRequest(group_id=topic, generation_id_or_member_epoch=-1,
                                 member_id="", retention_time_ms=-1, topics=[
                                     m.OffsetCommitRequest.OffsetCommitRequestTopic(
                                         name=topic, partitions=[p])])  # fmt: skip


def describe_configs(resource_type: int, name: str) -> Any:
    resource = m.DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=resource_type, resource_name=name, configuration_keys=None
    )
    return m.DescribeConfigsRequest(resources=[resource])


def leader_epoch(topic: str, epoch: int) -> Any:
    partition = m.OffsetForLeaderEpochRequest.OffsetForLeaderPartition(
        partition=0, current_leader_epoch=-1, leader_epoch=epoch
    )
    return m.OffsetForLeaderEpochRequest(
        replica_id=-1,
        topics=[
            m.OffsetForLeaderEpochRequest.OffsetForLeaderTopic(topic=topic, partitions=[partition])
        ],
    )


# name: (API, the request for a topic of the case's own, Kafka's answer)
CASES: dict[str, tuple[ApiKey, Callable[[str], Any], list[str]]] = {
    "produce acks=5": (ApiKey.PRODUCE, lambda t: produce(t, acks=5), ["INVALID_REQUIRED_ACKS"]),
    "produce acks=-2": (ApiKey.PRODUCE, lambda t: produce(t, acks=-2), ["INVALID_REQUIRED_ACKS"]),
    "produce acks=all timeout=-1": (
        ApiKey.PRODUCE,
        lambda t: produce(t, acks=-1, timeout_ms=-1),
        ["NONE"],
    ),
    "fetch max_bytes=-1": (
        ApiKey.FETCH,
        lambda t: fetch(t, max_bytes=-1),
        ["NONE", "UNKNOWN_SERVER_ERROR"],
    ),
    "fetch partition_max_bytes=-1": (
        ApiKey.FETCH,
        lambda t: fetch(t, partition_max_bytes=-1),
        ["NONE", "UNKNOWN_SERVER_ERROR"],
    ),
    "fetch partition_max_bytes=0": (
        ApiKey.FETCH,
        lambda t: fetch(t, partition_max_bytes=0),
        ["NONE", "NONE"],
    ),
    "fetch max_wait_ms=-1": (ApiKey.FETCH, lambda t: fetch(t, max_wait_ms=-1), ["NONE", "NONE"]),
    "fetch min_bytes=-1": (ApiKey.FETCH, lambda t: fetch(t, min_bytes=-1), ["NONE", "NONE"]),
    "fetch offset=-5": (
        ApiKey.FETCH,
        lambda t: fetch(t, offset=-5),
        ["NONE", "OFFSET_OUT_OF_RANGE"],
    ),
    "fetch offset=2^62": (
        ApiKey.FETCH,
        lambda t: fetch(t, offset=2**62),
        ["NONE", "OFFSET_OUT_OF_RANGE"],
    ),
    "fetch leader epoch 99": (
        ApiKey.FETCH,
        lambda t: fetch(t, epoch=99),
        ["NONE", "UNKNOWN_LEADER_EPOCH"],
    ),
    "fetch log_start_offset=-7": (ApiKey.FETCH, lambda t: fetch(t, log_start=-7), ["NONE", "NONE"]),
    "fetch isolation=2": (
        ApiKey.FETCH,
        lambda t: fetch(t, isolation_level=2),
        ["UNKNOWN_SERVER_ERROR", "UNKNOWN_SERVER_ERROR"],
    ),
    "fetch isolation=-1": (
        ApiKey.FETCH,
        lambda t: fetch(t, isolation_level=-1),
        ["UNKNOWN_SERVER_ERROR", "UNKNOWN_SERVER_ERROR"],
    ),
    "list offsets timestamp=-3": (ApiKey.LIST_OFFSETS, lambda t: list_offsets(t, -3), ["NONE"]),
    "list offsets timestamp=-4": (
        ApiKey.LIST_OFFSETS,
        lambda t: list_offsets(t, -4),
        ["UNSUPPORTED_VERSION"],
    ),
    "list offsets timestamp=-7": (
        ApiKey.LIST_OFFSETS,
        lambda t: list_offsets(t, -7),
        ["UNSUPPORTED_VERSION"],
    ),
    "list offsets replica_id=-5": (
        ApiKey.LIST_OFFSETS,
        lambda t: list_offsets(t, -1, replica_id=-5),
        ["NONE"],
    ),
    "list offsets isolation=7": (
        ApiKey.LIST_OFFSETS,
        lambda t: list_offsets(t, -1, isolation_level=7),
        ["UNKNOWN_SERVER_ERROR"],
    ),
    "create partitions=-5": (
        ApiKey.CREATE_TOPICS,
        lambda t: create_topic(t + "-new", -5, 1),
        ["INVALID_PARTITIONS"],
    ),
    "create replication=0": (
        ApiKey.CREATE_TOPICS,
        lambda t: create_topic(t + "-new", 1, 0),
        ["INVALID_REPLICATION_FACTOR"],
    ),
    "create replication=-5": (
        ApiKey.CREATE_TOPICS,
        lambda t: create_topic(t + "-new", 1, -5),
        ["INVALID_REPLICATION_FACTOR"],
    ),
    "create timeout=-1": (
        ApiKey.CREATE_TOPICS,
        lambda t: create_topic(t + "-new", 1, 1, timeout_ms=-1),
        ["REQUEST_TIMED_OUT"],
    ),
    "create partitions=10001": (
        ApiKey.CREATE_TOPICS,
        lambda t: create_topic(t + "-new", 10_001, 1, validate_only=True),
        ["NONE"],
    ),
    "create partitions count=-1": (
        ApiKey.CREATE_PARTITIONS,
        lambda t: create_partitions(t, -1),
        ["INVALID_PARTITIONS"],
    ),
    "delete records offset=-5": (
        ApiKey.DELETE_RECORDS,
        lambda t: delete_records(t, -5),
        ["OFFSET_OUT_OF_RANGE"],
    ),
    "delete records timeout=-1": (
        ApiKey.DELETE_RECORDS,
        lambda t: delete_records(t, 1, timeout_ms=-1),
        ["NONE"],
    ),
    "join session timeout=-1": (
        ApiKey.JOIN_GROUP,
        lambda t: join_group(t, -1, -1),
        ["INVALID_SESSION_TIMEOUT"],
    ),
    "join rebalance timeout=-5": (
        ApiKey.JOIN_GROUP,
        lambda t: join_group(t, 10_000, -5),
        ["MEMBER_ID_REQUIRED"],
    ),
    "commit offset=-5": (ApiKey.OFFSET_COMMIT, lambda t: offset_commit(t, 0, -5), ["NONE"]),
    "commit partition 99": (
        ApiKey.OFFSET_COMMIT,
        lambda t: offset_commit(t, 99, 1),
        ["UNKNOWN_TOPIC_OR_PARTITION"],
    ),
    "describe configs type 99": (
        ApiKey.DESCRIBE_CONFIGS,
        lambda t: describe_configs(99, "x"),
        ["INVALID_REQUEST"],
    ),
    "describe configs broker abc": (
        ApiKey.DESCRIBE_CONFIGS,
        lambda t: describe_configs(4, "abc"),
        ["INVALID_REQUEST"],
    ),
    "leader epoch -5": (ApiKey.OFFSET_FOR_LEADER_EPOCH, lambda t: leader_epoch(t, -5), ["NONE"]),
}

# Where kt answers otherwise, on purpose: {case: (kt's answer, why)}.
DIFFERENCES = {
    "create partitions=10001": (
        ["POLICY_VIOLATION"],
        "'Excessively large number of partitions per request.', as KRaft's controller refuses "
        "more than 10,000 partitions in one request; Kafka on ZooKeeper builds the assignment "
        "(and with 2^31-1 partitions spends its heap on it: see KT_ONLY)",
    ),
}
# Cases that Kafka on ZooKeeper answers only by running out of heap (an unknown server
# error, a closed connection or none, and a broker unwell afterwards), with kt's answer.
KT_ONLY = {
    "create partitions=2^31-1": (
        ApiKey.CREATE_TOPICS,
        lambda t: create_topic(t + "-new", 2**31 - 1, 1, validate_only=True),
        ["POLICY_VIOLATION"],
    ),
    "create partitions count=2^31-1": (
        ApiKey.CREATE_PARTITIONS,
        lambda t: create_partitions(t, 2**31 - 1, validate_only=True),
        ["POLICY_VIOLATION"],
    ),
}
GROUP_APIS = (ApiKey.JOIN_GROUP, ApiKey.OFFSET_COMMIT)
# COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR: Kafka's
# FindCoordinator names the broker that leads the group's __consumer_offsets partition a
# moment before its group coordinator has taken the partition over (a CI run saw
# NOT_COORDINATOR so); clients ask again, and so do these cases.
COORDINATOR_NOT_READY = {14, 15, 16}


def codes(names: list[str]) -> list[int]:
    return [KafkaError(name).code for name in names]


def error_codes(response: Any) -> list[int]:
    """Every error_code in a response, depth first."""
    found = []
    for name in response.FIELDS:
        value = getattr(response, name)
        if name == "error_code":
            found.append(value)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, Struct):
                found += error_codes(item)
    return found


def _until(condition: Callable[[], bool], what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"{what} within {timeout_s} s"
        time.sleep(0.05)


def answers(bootstrap: str, cases: dict[str, tuple[ApiKey, Callable[[str], Any], list[str]]]
            ) -> dict[str, list[int]]:  # fmt: skip
    """Each case on a topic of its own holding one batch of 3 records (and, for the group
    APIs, a group of the topic's name whose coordinator is ready)."""
    got = {}
    with KafkaClient(bootstrap) as client:
        _until(lambda: client.metadata([]) is not None and client.controller_id >= 0,
               "a controller")  # fmt: skip
        for i, (name, (api, build, _)) in enumerate(cases.items()):
            topic = f"fields-{i}"
            created = client.controller().send(ApiKey.CREATE_TOPICS, create_topic(topic, 1, 1))
            assert error_codes(created) == [0], name
            connection = client.any_connection()
            _prepare(connection, topic, api in GROUP_APIS)
            answer = error_codes(connection.send(api, build(topic)))
            deadline = time.monotonic() + 30
            while api in GROUP_APIS and answer and set(answer) <= COORDINATOR_NOT_READY:
                assert time.monotonic() < deadline, f"{topic}'s coordinator within 30 s"
                time.sleep(0.05)  # asked again until the coordinator takes group requests
                answer = error_codes(connection.send(api, build(topic)))
            got[name] = answer
    return got


def _prepare(connection: Any, topic: str, group: bool) -> None:
    """Wait until `topic` takes a batch (it has a leader), and its group's coordinator."""
    _until(lambda: error_codes(connection.send(ApiKey.PRODUCE, produce(topic))) == [0],
           f"{topic} has a leader")  # fmt: skip
    if group:
        find = m.FindCoordinatorRequest(key=topic, key_type=0, coordinator_keys=[topic])
        _until(lambda: set(error_codes(connection.send(ApiKey.FIND_COORDINATOR, find))) == {0},
               f"{topic}'s coordinator")  # fmt: skip
