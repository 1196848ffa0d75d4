"""A share group's admin side with real clients against `kt server-start`: its offsets
(DescribeShareGroupOffsets: start offsets and lag), altered and deleted while it is empty
(Alter/DeleteShareGroupOffsets), deleted with its share partitions' state (DeleteGroups),
and its group configs deciding where it starts and what it reads."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import Producer

from kt.client.client import KafkaClient
from kt.errors import KafkaError as Errors
from kt.protocol import ApiKey
from kt.protocol import messages as m
from kt.storage.records import iter_batches
from tests.groups._clients import wait_until
from tests.share.test_share_consumers import (
    _names,
    assigned_raw,
    consume,
    consumer,
    coordinator,
    described_members,
    end_offset,
    produce,
    ready,
    set_group_configs,
    topic_with,
)

pytestmark = pytest.mark.slow


def test_deleting_an_empty_share_group_deletes_its_state_too(broker) -> None:
    """DeleteGroups of an empty share group deletes its share partitions' state on the
    share coordinator (DeleteShareGroupState), then the group: a group of that id starts
    afresh, with no start offset."""
    topic, group = topic_with(broker.bootstrap, 0), f"g{next(_names)}"
    member = consumer(broker.bootstrap, group, topic, explicit=True)
    try:
        ready(broker.bootstrap, group, topic, [member], explicit=True)
        produce(broker.bootstrap, topic, range(3))
        assert len(consume(member, 3)) == 3
    finally:
        member.close()
    wait_until(lambda: described_members(broker.bootstrap, group) == [], 30, "the member gone")
    end = end_offset(broker.bootstrap, topic)
    assert offsets_of(describe_offsets(broker.bootstrap, group, [(topic, [0])])) == {
        (topic, 0): (end, 0, 0, 0)}  # fmt: skip
    with KafkaClient(broker.bootstrap) as client:
        connection = client.connection(coordinator(client, group))
        deleted = connection.send(ApiKey.DELETE_GROUPS,
                                  m.DeleteGroupsRequest(groups_names=[group]), 2)  # fmt: skip
        listed = connection.send(ApiKey.LIST_GROUPS, m.ListGroupsRequest(types_filter=["share"]))
    assert [(r.group_id, r.error_code) for r in deleted.results] == [(group, 0)]
    assert group not in [g.group_id for g in listed.groups]
    assert offsets_of(describe_offsets(broker.bootstrap, group, [(topic, [0])])) == {
        (topic, 0): (-1, 0, -1, 0)}  # fmt: skip


def describe_offsets(bootstrap: str, group: str, topics: list | None) -> Any:
    """DescribeShareGroupOffsets v1 at the group's coordinator: the group's answer."""
    R = m.DescribeShareGroupOffsetsRequest
    wanted = (
        None
        if topics is None
        else [
            R.DescribeShareGroupOffsetsRequestTopic(topic_name=t, partitions=ps) for t, ps in topics
        ]
    )
    request = R(groups=[R.DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=wanted)])
    with KafkaClient(bootstrap) as client:
        node = coordinator(client, group)
        response = client.connection(node).send(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, request, 1)
    (answer,) = response.groups
    return answer


def offsets_of(answer: Any) -> dict[tuple[str, int], tuple[int, int, int, int]]:
    """(topic, partition) -> (start offset, leader epoch, lag, error code)."""
    return {(t.topic_name, p.partition_index): (p.start_offset, p.leader_epoch, p.lag,
                                                 p.error_code)
            for t in answer.topics for p in t.partitions}  # fmt: skip


def test_a_share_groups_offsets_are_its_start_and_lag(broker) -> None:
    """DescribeShareGroupOffsets: each initialized share partition's start offset and lag
    (the log end, less the start, less what was delivered past it); a partition never
    read has no start offset yet; a topic that does not exist answers none."""
    topic = topic_with(broker.bootstrap, 0, partitions=2)
    member = consumer(broker.bootstrap, "offsets", topic, explicit=True)
    try:
        ready(broker.bootstrap, "offsets", topic, [member], explicit=True)  # reads partition 0
        produce(broker.bootstrap, topic, range(10))  # ten on partition 0
        assert len(consume(member, 10)) == 10
    finally:
        member.close()
    produce(broker.bootstrap, topic, range(5), partitions=1)
    end = end_offset(broker.bootstrap, topic)
    everything = describe_offsets(broker.bootstrap, "offsets", None)
    assert everything.error_code == 0
    assert offsets_of(everything) == {(topic, 0): (end - 5, 0, 5, 0), (topic, 1): (-1, 0, -1, 0)}
    named = describe_offsets(broker.bootstrap, "offsets", [(topic, [0]), ("no-such-topic", [3])])
    assert offsets_of(named) == {(topic, 0): (end - 5, 0, 5, 0),
                                 ("no-such-topic", 3): (-1, 0, -1, 0)}  # fmt: skip
    assert [t.topic_id.int for t in named.topics if t.topic_name == "no-such-topic"] == [0]
    unknown = describe_offsets(broker.bootstrap, "never-was", None)
    assert (unknown.error_code, unknown.topics) == (0, [])


def at_coordinator(bootstrap: str, group: str, api: ApiKey, request: Any) -> Any:
    """`request`'s answer from the group's coordinator (once it has one)."""
    with KafkaClient(bootstrap) as client:
        wait_until(lambda: coordinator(client, group) is not None, 30, "a coordinator")
        return client.connection(coordinator(client, group)).send(api, request)


def alter_offsets(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> Any:
    R = m.AlterShareGroupOffsetsRequest
    return at_coordinator(bootstrap, group, ApiKey.ALTER_SHARE_GROUP_OFFSETS, R(
        group_id=group, topics=[R.AlterShareGroupOffsetsRequestTopic(topic_name=topic, partitions=[
            R.AlterShareGroupOffsetsRequestPartition(partition_index=p, start_offset=o)
            for p, o in offsets.items()])]))  # fmt: skip


def delete_offsets(bootstrap: str, group: str, *topics: str) -> Any:
    R = m.DeleteShareGroupOffsetsRequest
    return at_coordinator(bootstrap, group, ApiKey.DELETE_SHARE_GROUP_OFFSETS, R(
        group_id=group, topics=[R.DeleteShareGroupOffsetsRequestTopic(topic_name=t)
                                for t in topics]))  # fmt: skip


def test_a_share_groups_offsets_are_altered_and_deleted_while_it_is_empty(broker) -> None:
    """AlterShareGroupOffsets sets where an empty (or new) share group reads each
    partition from; DeleteShareGroupOffsets forgets a topic's; both refused while the
    group has members, with Kafka's errors."""
    topic, group = topic_with(broker.bootstrap, 10, partitions=1), f"g{next(_names)}"
    altered = alter_offsets(broker.bootstrap, group, topic, {0: 4, 7: 0})
    assert altered.error_code == 0
    assert [(p.partition_index, p.error_code) for t in altered.responses for p in t.partitions] == [
        (0, 0), (7, Errors("UNKNOWN_TOPIC_OR_PARTITION").code)]  # fmt: skip
    assert offsets_of(describe_offsets(broker.bootstrap, group, None)) == {
        (topic, 0): (4, 0, 6, 0)}  # fmt: skip
    member = consumer(broker.bootstrap, group, topic, explicit=True)
    try:
        assert sorted(v for v, _ in consume(member, 6)) == [4, 5, 6, 7, 8, 9]
        busy = alter_offsets(broker.bootstrap, group, topic, {0: 0})
        assert (busy.error_code, busy.error_message) == (Errors("NON_EMPTY_GROUP").code,
                                                         "The group is not empty.")  # fmt: skip
        assert delete_offsets(broker.bootstrap, group, topic).error_code == Errors(
            "NON_EMPTY_GROUP").code  # fmt: skip
    finally:
        member.close()
    wait_until(lambda: described_members(broker.bootstrap, group) == [], 30, "the member gone")
    deleted = delete_offsets(broker.bootstrap, group, topic, "no-such-topic")
    assert deleted.error_code == 0
    assert sorted((t.topic_name, t.error_code, t.error_message) for t in deleted.responses) == [
        ("no-such-topic", Errors("UNKNOWN_TOPIC_OR_PARTITION").code,
         "This server does not host this topic-partition."),
        (topic, 0, None),
    ]  # fmt: skip
    assert offsets_of(describe_offsets(broker.bootstrap, group, None)) == {}
    again = delete_offsets(broker.bootstrap, group, topic)
    assert [(t.error_code, t.error_message) for t in again.responses] == [
        (Errors("UNKNOWN_TOPIC_OR_PARTITION").code, "There is no offset information to delete.")
    ]
    # the share partition the member read was dropped with the group's last session: a
    # new member reads from the altered offset, not from where the first one stopped
    assert alter_offsets(broker.bootstrap, group, topic, {0: 2}).error_code == 0
    member = consumer(broker.bootstrap, group, topic, explicit=True)
    try:
        assert sorted(v for v, _ in consume(member, 8)) == list(range(2, 10))
    finally:
        member.close()


def test_a_share_groups_configs_decide_where_it_starts_and_what_it_reads(broker) -> None:
    """share.auto.offset.reset=earliest: a new share group reads a topic from its start;
    share.isolation.level=read_committed: the records of aborted transactions are
    archived, never acquired, the committed ones are."""
    topic, group = topic_with(broker.bootstrap, 0), f"g{next(_names)}"
    producer = Producer({"bootstrap.servers": broker.bootstrap,
                         "transactional.id": f"txn-{group}"})  # fmt: skip
    producer.init_transactions(30)
    for start, commit in ((0, True), (100, False), (10, True), (110, False), (20, True)):
        producer.begin_transaction()  # five records, then the marker: six offsets each
        for i in range(start, start + 5):
            producer.produce(topic, b"%d" % i)
        producer.flush(30)  # written before the abort (which drops what was not sent)
        (producer.commit_transaction if commit else producer.abort_transaction)(30)
    wait_until(lambda: end_offset(broker.bootstrap, topic) == 30, 30, "the last marker")
    set_group_configs(broker.bootstrap, group, share_auto_offset_reset="earliest",
                      share_isolation_level="read_committed")  # fmt: skip
    R = m.ShareFetchRequest
    with KafkaClient(broker.bootstrap) as client:
        connection, topic_id = assigned_raw(client, group, "cmVhZC1jb21taXR0ZWQtbWVtYmVy", topic)
        answer = connection.send(ApiKey.SHARE_FETCH, R(
            group_id=group, member_id="cmVhZC1jb21taXR0ZWQtbWVtYmVy", share_session_epoch=0,
            max_wait_ms=5000, min_bytes=1, max_bytes=1 << 20, max_records=100, batch_size=100,
            topics=[R.FetchTopic(topic_id=topic_id, partitions=[
                R.FetchPartition(partition_index=0)])]), 1)  # fmt: skip
    [partition] = answer.responses[0].partitions
    # 0-5 and 12-17, 24-29 committed with their markers; 6-10 and 18-22 aborted (their
    # abort markers 11 and 23 acquired, as on Kafka: only the aborted data is archived)
    assert [(a.first_offset, a.last_offset) for a in partition.acquired_records] == [
        (0, 5), (11, 17), (23, 29)]  # fmt: skip
    delivered = [r.value for b in iter_batches(partition.records) if not b.is_control
                 for r in b.records()]  # fmt: skip
    assert sorted(int(v) for v in delivered) == [*range(5), *range(10, 15), *range(20, 25)]
