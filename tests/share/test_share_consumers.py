"""Share groups (KIP-932) with confluent-kafka's ShareConsumer against `kt server-start`
(share groups served by default, as on Kafka 4.4): several members on one
partition, each record delivered to one of them; explicit release, reject and the
delivery count; a lock that expires handing records to another member; the delivery
limit archiving a poison record; and a broker killed -9 keeping every acknowledgement."""

from __future__ import annotations

import itertools
import signal
import subprocess
import sys
import time
from typing import Any

import pytest
from confluent_kafka import AcknowledgeType, Consumer, Producer, ShareConsumer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

from kt.broker.share import share_state as ss
from kt.client.client import KafkaClient
from kt.errors import KafkaError as Errors
from kt.protocol import ApiKey
from kt.protocol import messages as m
from kt.storage.records import iter_batches
from tests.groups._clients import wait_until
from tests.groups.conftest import start_broker

pytestmark = pytest.mark.slow
_names = itertools.count()
SHARE = {
    "group.share.heartbeat.interval.ms": "500",
    "group.share.min.heartbeat.interval.ms": "500",
    "share.coordinator.state.topic.num.partitions": "3",
    "group.share.record.lock.duration.ms": "2000",
    "group.share.delivery.count.limit": "3",
}


def topic_with(bootstrap: str, records: int, partitions: int = 1) -> str:
    topic = f"share-{next(_names)}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    produce(bootstrap, topic, range(records), partitions)
    return topic


def produce(bootstrap: str, topic: str, values: range, partitions: int = 1) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "batch.size": 200})
    for i in values:
        producer.produce(topic, b"%d" % i, partition=i % partitions)
    assert producer.flush(30) == 0


def consumer(bootstrap: str, group: str, topic: str, explicit: bool = False) -> ShareConsumer:
    config = {"bootstrap.servers": bootstrap, "group.id": group}
    if explicit:
        config["share.acknowledgement.mode"] = "explicit"
    c = ShareConsumer(config)
    c.subscribe([topic])
    return c


def joined(bootstrap: str, group: str, members: int) -> None:
    """Wait until the group has `members` members, each assigned its partitions (a group
    starts reading at the log end: share.auto.offset.reset's default, latest)."""

    def assigned() -> bool:
        found = described_members(bootstrap, group)
        return len(found) == members and all(x.assignment.topic_partitions for x in found)

    wait_until(assigned, what=f"{members} members with their assignments")


def read(consumers: list[ShareConsumer], want: int, timeout_s: float = 60) -> list[list]:
    """Poll every consumer in turn until `want` records arrived: each one's messages."""
    got: list[list] = [[] for _ in consumers]
    deadline = time.monotonic() + timeout_s
    while sum(map(len, got)) < want and time.monotonic() < deadline:
        for i, c in enumerate(consumers):
            got[i] += [x for x in c.poll(0.2) if x.error() is None]
    return got


def started(bootstrap: str, consumers: list[ShareConsumer], topic: str,
            explicit: bool = False) -> None:  # fmt: skip
    """Wait until the group reads what is produced from now on: a share partition starts
    where its log ends when first fetched (share.auto.offset.reset latest), so warm-up
    records (value -1, accepted; `consume` and `values` leave them out) are produced until
    one arrives."""
    producer = Producer({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + 60
    while True:
        producer.produce(topic, b"-1", partition=0)
        producer.flush(10)
        arrived = False
        for c in consumers:
            got = [x for x in c.poll(0.3) if x.error() is None]
            if explicit and got:
                for x in got:
                    c.acknowledge(x)
                c.commit_sync(30)
            arrived = arrived or bool(got)
        if arrived:
            break
        assert time.monotonic() < deadline, "the share partition never started"
    quiet_until = time.monotonic() + 1.0  # the warm-up records still on their way
    while time.monotonic() < quiet_until:
        for c in consumers:
            got = [x for x in c.poll(0.2) if x.error() is None]
            if got:
                quiet_until = time.monotonic() + 1.0
                if explicit:
                    for x in got:
                        c.acknowledge(x)
                    c.commit_sync(30)


def ready(bootstrap: str, group: str, topic: str, consumers: list[ShareConsumer],
          explicit: bool = False) -> None:  # fmt: skip
    """`consumers` (the whole group) joined, assigned, and reading from now on."""
    for c in consumers:
        c.poll(0.1)
    joined(bootstrap, group, len(consumers))
    started(bootstrap, consumers, topic, explicit)


def consume(c: ShareConsumer, want: int, decide: Any = None,
            timeout_s: float = 60) -> list[tuple[int, int]]:  # fmt: skip
    """Poll an explicit-mode consumer until `want` records came: each poll's records are
    acknowledged at once as `decide(value, delivery count)` says (ACCEPT by default), then
    committed (explicit mode refuses a poll before the last one's are acknowledged).
    Returns (value, delivery count) of each."""
    got: list[tuple[int, int]] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < want and time.monotonic() < deadline:
        batch = [x for x in c.poll(0.2) if x.error() is None]
        for x in batch:
            value, count = int(x.value()), x.delivery_count()
            if value < 0:  # a warm-up record
                c.acknowledge(x)
                continue
            got.append((value, count))
            c.acknowledge(x, decide(value, count) if decide else AcknowledgeType.ACCEPT)
        if batch:
            assert all(error is None for error in c.commit_sync(30).values())
    return got


def set_group_configs(bootstrap: str, group: str, **configs: str) -> None:
    """IncrementalAlterConfigs SET on the GROUP resource, with confluent-kafka's admin."""
    entries = [ConfigEntry(k.replace("_", "."), v, incremental_operation=AlterConfigOpType.SET)
               for k, v in configs.items()]  # fmt: skip
    resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=entries)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)


def end_offset(bootstrap: str, topic: str, partition: int = 0) -> int:
    """The partition's log end (its high watermark)."""
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "end-offset"})
    try:
        return reader.get_watermark_offsets(TopicPartition(topic, partition), 30)[1]
    finally:
        reader.close()


def coordinator(client: KafkaClient, group: str) -> int | None:
    """The node coordinating `group`, once there is one (FindCoordinator)."""
    error, node, _, _ = client.find_coordinator(group, 0)
    return None if error else node


def described_members(bootstrap: str, group: str) -> list:
    """The group's members as its coordinator describes them (none while it has none)."""
    with KafkaClient(bootstrap) as client:
        node = coordinator(client, group)
        if node is None:
            return []
        response = client.connection(node).send(
            ApiKey.SHARE_GROUP_DESCRIBE, m.ShareGroupDescribeRequest(group_ids=[group])
        )
    return list(response.groups[0].members)


def test_members_on_one_partition_share_its_records(broker) -> None:
    """Two members of one share group on one partition: every record goes to one of them,
    once, and both get some."""
    topic, group = topic_with(broker.bootstrap, 0), f"g{next(_names)}"
    members = [consumer(broker.bootstrap, group, topic) for _ in range(2)]
    try:
        for c in members:
            c.poll(0.1)
        joined(broker.bootstrap, group, 2)
        with KafkaClient(broker.bootstrap) as client:
            listed = client.any_connection().send(
                ApiKey.LIST_GROUPS, m.ListGroupsRequest(types_filter=["share"]))  # fmt: skip
        mine = [g for g in listed.groups if g.group_id == group]
        assert [(g.protocol_type, g.group_state, g.group_type) for g in mine] == [
            ("share", "Stable", "share")]  # fmt: skip
        started(broker.bootstrap, members, topic)
        produce(broker.bootstrap, topic, range(2000))
        got = read(members, 2000)
    finally:
        for c in members:
            c.close()
    values = [x.value() for mine in got for x in mine if x.value() != b"-1"]
    assert sorted(values) == sorted(b"%d" % i for i in range(2000))
    assert all(mine for mine in got), [len(mine) for mine in got]


def test_a_released_record_comes_back_counted_and_a_rejected_one_never(broker) -> None:
    topic, group = topic_with(broker.bootstrap, 0), f"g{next(_names)}"
    c = consumer(broker.bootstrap, group, topic, explicit=True)
    try:
        ready(broker.bootstrap, group, topic, [c], explicit=True)
        produce(broker.bootstrap, topic, range(10))

        def decide(value: int, count: int) -> AcknowledgeType:
            if value == 0 and count == 1:
                return AcknowledgeType.RELEASE
            return AcknowledgeType.REJECT if value == 1 else AcknowledgeType.ACCEPT

        got = consume(c, 11, decide)
        assert sorted(got) == sorted([(i, 1) for i in range(10)] + [(0, 2)])
        assert consume(c, 1, timeout_s=3) == []  # b"1" stays rejected
    finally:
        c.close()


def test_an_expired_lock_hands_records_over_and_the_limit_archives(broker) -> None:
    """A member that keeps records past group.share.record.lock.duration.ms (2 s here)
    loses them to another member, delivered a second time; a record released at its
    delivery limit (3 here) is archived."""
    topic, group = topic_with(broker.bootstrap, 0), f"g{next(_names)}"
    holder = consumer(broker.bootstrap, group, topic, explicit=True)
    other = consumer(broker.bootstrap, group, topic, explicit=True)
    try:
        ready(broker.bootstrap, group, topic, [holder, other], explicit=True)
        produce(broker.bootstrap, topic, range(1))
        got = read([holder, other], 1)
        keeper, taker = (holder, other) if got[0] else (other, holder)
        (later,) = read([taker], 1, timeout_s=30)  # the lock expires: the record moves
        assert [(x.value(), x.delivery_count()) for x in later] == [(b"0", 2)]
        taker.acknowledge(later[0], AcknowledgeType.RELEASE)
        taker.commit_sync(30)
        (third,) = read([taker], 1, timeout_s=30)
        assert third[0].delivery_count() == 3
        taker.acknowledge(third[0], AcknowledgeType.RELEASE)
        taker.commit_sync(30)
        assert [x for x in taker.poll(3.0) if x.error() is None] == []  # archived
        del keeper
    finally:
        holder.close()
        other.close()


# A member in a process of its own: it acquires `want` records, says so, and holds them.
HOLDER = """
import sys
from confluent_kafka import ShareConsumer
bootstrap, group, topic, want = sys.argv[1:]
c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                   "share.acknowledgement.mode": "explicit"})
c.subscribe([topic])
held = []
while len(held) < int(want):
    held += [x for x in c.poll(0.2) if x.error() is None]
print("held", len(held), flush=True)
sys.stdin.read()
"""


def test_a_member_whose_connection_drops_gives_its_records_back_at_once(broker) -> None:
    """A member killed -9 (its connections drop) gives back the records it acquired at
    once, not when their locks expire (60 s here): another member reads them within 30 s,
    delivered a second time (Kafka 4.4 ends a share session with the connection that
    started it, and the member's records with it)."""
    topic, group = topic_with(broker.bootstrap, 5), f"g{next(_names)}"
    set_group_configs(broker.bootstrap, group, share_auto_offset_reset="earliest",
                      share_record_lock_duration_ms="60000")  # fmt: skip
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, broker.bootstrap, group, topic, "5"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    other = None
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "held 5\n"
        holder.send_signal(signal.SIGKILL)
        holder.wait(30)
        other = consumer(broker.bootstrap, group, topic, explicit=True)
        assert sorted(consume(other, 5, timeout_s=30)) == [(i, 2) for i in range(5)]
    finally:
        holder.kill()
        holder.wait(30)
        if other is not None:
            other.close()


def test_a_broker_killed_keeps_every_acknowledgement(tmp_path) -> None:
    """Records accepted before a kill -9 are not delivered again after the restart; the
    ones released before it are, counted (both written to the share coordinator)."""
    broker = start_broker(tmp_path, **SHARE)
    try:
        topic, group = topic_with(broker.bootstrap, 0), "kept"
        c = consumer(broker.bootstrap, group, topic, explicit=True)
        ready(broker.bootstrap, group, topic, [c], explicit=True)
        produce(broker.bootstrap, topic, range(100))
        first = consume(c, 100, lambda value, _: AcknowledgeType.ACCEPT if value < 50
                        else AcknowledgeType.RELEASE)  # fmt: skip
        assert sorted(first) == [(i, 1) for i in range(100)]
        broker.stop(signal.SIGKILL)
        broker.start()
        after = consume(c, 50, timeout_s=90)
        c.close()
        assert sorted(after) == [(i, 2) for i in range(50, 100)]
    finally:
        broker.stop()


def test_the_share_coordinators_settings_shape_its_topic_and_state(tmp_path) -> None:
    """share.coordinator.state.topic.* make __share_group_state (its partitions and segment
    size; one replica and a min ISR of 1, a lone broker's defaults as in Kafka 4's
    server.properties; never cleaned); a snapshot follows every
    share.coordinator.snapshot.update.records.per.snapshot updates; a member beyond
    group.share.max.share.sessions is refused a session (SHARE_SESSION_LIMIT_REACHED)."""
    settings = {**SHARE, "share.coordinator.state.topic.num.partitions": "2",
                "share.coordinator.state.topic.segment.bytes": "1048576",
                "share.coordinator.snapshot.update.records.per.snapshot": "2",
                "group.share.max.share.sessions": "1"}  # fmt: skip
    broker = start_broker(tmp_path, **settings)
    try:
        topic, group = topic_with(broker.bootstrap, 0), "shaped"
        c = consumer(broker.bootstrap, group, topic, explicit=True)
        ready(broker.bootstrap, group, topic, [c], explicit=True)
        for i in range(4):  # four writes of acknowledgements: updates, then a snapshot
            produce(broker.bootstrap, topic, range(i, i + 1))
            assert consume(c, 1) == [(i, 1)]
        refused = share_fetch(broker.bootstrap, group, "another member")
        c.close()
        assert refused.error_code == Errors("SHARE_SESSION_LIMIT_REACHED").code
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        state_topic = admin.list_topics(timeout=30).topics["__share_group_state"]
        assert [len(p.replicas) for p in state_topic.partitions.values()] == [1, 1]
        resource = ConfigResource(ConfigResource.Type.TOPIC, "__share_group_state")
        configs = admin.describe_configs([resource])[resource].result(30)
        assert {k: configs[k].value for k in ("min.insync.replicas", "segment.bytes",
                                              "cleanup.policy", "retention.ms")} == {
            "min.insync.replicas": "1", "segment.bytes": "1048576", "cleanup.policy": "delete",
            "retention.ms": "-1"}  # fmt: skip
        records = []
        for segment in sorted(broker.log_dir.glob("__share_group_state-*/*.log")):
            for batch in iter_batches(segment.read_bytes()):
                records += [ss.read_record(r.key, r.value) for r in batch.records()]
        assert any(kind == ss.SNAPSHOT and value is not None and value.snapshot_epoch >= 1
                   for kind, _, value in records), records  # fmt: skip
    finally:
        broker.stop()


def share_fetch(bootstrap: str, group: str, member: str):  # type: ignore[no-untyped-def]
    """A new share session's first ShareFetch, raw."""
    request = m.ShareFetchRequest(group_id=group, member_id=member, share_session_epoch=0,
                                  max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, max_records=10,
                                  batch_size=10, topics=[])  # fmt: skip
    with KafkaClient(bootstrap) as client:
        return client.any_connection().send(ApiKey.SHARE_FETCH, request)


def test_a_member_renews_its_locks_and_keeps_its_records(broker) -> None:
    """RENEW (ShareFetch and ShareAcknowledge v2, IsRenewAck): records stay acquired by
    their member past their first lock (2 s here), and it accepts them after; RENEW in a
    request without IsRenewAck, or a renewing ShareFetch that would fetch, is refused as
    KafkaApis refuses it; share.renew.acknowledge.enable=false refuses renewals."""
    topic, group = topic_with(broker.bootstrap, 0), f"g{next(_names)}"
    member = "cmVuZXdpbmctbWVtYmVyLTA"
    F, A = m.ShareFetchRequest, m.ShareAcknowledgeRequest
    epochs = itertools.count()
    with KafkaClient(broker.bootstrap) as client:
        connection, topic_id = assigned_raw(client, group, member, topic)

        def fetch(wait_ms: int = 0, **fields: Any) -> Any:
            return connection.send(ApiKey.SHARE_FETCH, F(
                group_id=group, member_id=member, share_session_epoch=next(epochs),
                max_wait_ms=wait_ms, min_bytes=1, max_records=500, batch_size=500,
                topics=[F.FetchTopic(topic_id=topic_id,
                                     partitions=[F.FetchPartition(partition_index=0)])],
                **fields), 2)  # fmt: skip

        def acknowledge(first: int, last: int, kind: int, renew: bool) -> tuple[int, Any]:
            """One ShareAcknowledge of `kind` for first..last: its partition's error."""
            answer = connection.send(ApiKey.SHARE_ACKNOWLEDGE, A(
                group_id=group, member_id=member, share_session_epoch=next(epochs),
                is_renew_ack=renew, topics=[A.AcknowledgeTopic(topic_id=topic_id, partitions=[
                    A.AcknowledgePartition(partition_index=0, acknowledgement_batches=[
                        A.AcknowledgementBatch(first_offset=first, last_offset=last,
                                               acknowledge_types=[kind])])])]), 2)  # fmt: skip
            [partition] = answer.responses[0].partitions
            return partition.error_code, partition.error_message

        assert fetch().error_code == 0  # the session starts; the partition at the log end
        refused = fetch(max_bytes=1, is_renew_ack=True)
        assert (refused.error_code, refused.error_message) == (
            Errors("INVALID_REQUEST").code,
            "maxBytes must be set to 0, minBytes must be set to 0, maxRecords must be set "
            "to 0, if isRenewAck is true.")  # fmt: skip
        epochs = itertools.count(1)  # refused before its session: its epoch is still next
        for attempt in range(3):  # the verdict needs the timings below; a stall retries
            produce(broker.bootstrap, topic, range(attempt * 10, attempt * 10 + 10))
            got = fetch(wait_ms=5000).responses[0].partitions[0].acquired_records
            acquired = time.monotonic()
            first, last = got[0].first_offset, got[-1].last_offset
            assert last - first == 9
            assert acknowledge(first, last, 4, renew=False)[0] == Errors("INVALID_REQUEST").code
            time.sleep(1.0)
            renewed = time.monotonic()
            assert acknowledge(first, last, 4, renew=True) == (0, None)
            time.sleep(max(0.0, acquired + 2.5 - time.monotonic()))  # the first lock is gone
            accepted = acknowledge(first, last, 1, renew=False)
            if time.monotonic() - renewed < 1.9:  # well inside the renewed lock
                assert accepted == (0, None)
                break
        else:
            pytest.fail("the machine was too slow for the renewal's timing three times")
        set_group_configs(broker.bootstrap, group, share_renew_acknowledge_enable="false")
        produce(broker.bootstrap, topic, range(1))
        got = fetch(wait_ms=5000).responses[0].partitions[0].acquired_records
        assert acknowledge(got[0].first_offset, got[0].last_offset, 4, renew=True) == (
            Errors("INVALID_RECORD_STATE").code,
            "Renewing acquisition locks is not enabled for the group.")  # fmt: skip


def assigned_raw(client: KafkaClient, group: str, member: str, topic: str) -> tuple[Any, Any]:
    """A member of `group` by raw ShareGroupHeartbeats until it is assigned `topic`: the
    coordinator's connection and the topic's id."""
    wait_until(lambda: coordinator(client, group) is not None, 30, "a coordinator")
    connection = client.connection(coordinator(client, group))
    epoch, deadline = 0, time.monotonic() + 30
    while True:
        beat = connection.send(ApiKey.SHARE_GROUP_HEARTBEAT, m.ShareGroupHeartbeatRequest(
            group_id=group, member_id=member, member_epoch=epoch,
            subscribed_topic_names=[topic]))  # fmt: skip
        assert beat.error_code == 0, beat.error_message
        epoch = beat.member_epoch
        if beat.assignment is not None and beat.assignment.topic_partitions:
            return connection, beat.assignment.topic_partitions[0].topic_id
        assert time.monotonic() < deadline, "never assigned"
        time.sleep(0.2)


def test_record_limit_acquires_no_more_than_max_records(broker) -> None:
    """ShareAcquireMode record_limit (ShareFetch v2): a member asking for 3 records of a
    10-record log batch acquires those 3, not the whole batch (batch_optimized's way)."""
    topic, group = topic_with(broker.bootstrap, 0), f"g{next(_names)}"
    member = "bGltaXRlZC1tZW1iZXItMDE"
    with KafkaClient(broker.bootstrap) as client:
        connection, topic_id = assigned_raw(client, group, member, topic)
        R = m.ShareFetchRequest

        def fetch(session_epoch: int, wait_ms: int):  # type: ignore[no-untyped-def]
            return connection.send(ApiKey.SHARE_FETCH, R(
                group_id=group, member_id=member, share_session_epoch=session_epoch,
                max_wait_ms=wait_ms, min_bytes=1, max_records=3, batch_size=3,
                share_acquire_mode=1, topics=[R.FetchTopic(topic_id=topic_id,
                partitions=[R.FetchPartition(partition_index=0)])]), 2)  # fmt: skip

        assert fetch(0, 0).error_code == 0  # the share partition starts at the log end
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 1000})
        for i in range(10):
            producer.produce(topic, b"%d" % i, partition=0)
        assert producer.flush(30) == 0
        answer = fetch(1, 5000)
    [partition] = answer.responses[0].partitions
    assert [(a.first_offset, a.last_offset, a.delivery_count)
            for a in partition.acquired_records] == [(0, 2, 1)]  # fmt: skip


def classic_requests_on_a_share_group(bootstrap: str) -> dict[str, Any]:
    """The classic group APIs on a share group with a member: DescribeGroups (v5),
    OffsetCommit (v8, a simple commit), OffsetDelete and DeleteGroups (v2); then whether
    ListGroups still names the group. Kafka's answers: the group is not a classic or
    consumer group, and is not empty."""
    topic, group = topic_with(bootstrap, 0), f"g{next(_names)}"
    c = consumer(bootstrap, group, topic)
    try:
        c.poll(0.1)
        joined(bootstrap, group, 1)
        with KafkaClient(bootstrap) as client:
            connection = client.connection(coordinator(client, group))

            def send(key: ApiKey, request: Any, version: int) -> Any:
                return connection.send(key, request, version)

            described = send(ApiKey.DESCRIBE_GROUPS, m.DescribeGroupsRequest(groups=[group]), 5)
            C = m.OffsetCommitRequest
            committed = send(ApiKey.OFFSET_COMMIT, C(
                group_id=group, generation_id_or_member_epoch=-1, member_id="",
                topics=[C.OffsetCommitRequestTopic(name=topic, partitions=[
                    C.OffsetCommitRequestPartition(partition_index=0, committed_offset=1)])],
            ), 8)  # fmt: skip
            D = m.OffsetDeleteRequest
            deleted_offsets = send(ApiKey.OFFSET_DELETE, D(group_id=group, topics=[
                D.OffsetDeleteRequestTopic(name=topic, partitions=[
                    D.OffsetDeleteRequestPartition(partition_index=0)])]), 0)  # fmt: skip
            deleted = send(ApiKey.DELETE_GROUPS, m.DeleteGroupsRequest(groups_names=[group]), 2)
            listed = send(ApiKey.LIST_GROUPS, m.ListGroupsRequest(types_filter=["share"]), 5)
    finally:
        c.close()
    (d,) = described.groups
    return {
        "DescribeGroups": (d.error_code, d.group_state, d.protocol_type, len(d.members)),
        "OffsetCommit": [p.error_code for t in committed.topics for p in t.partitions],
        "OffsetDelete": deleted_offsets.error_code,
        "DeleteGroups": [r.error_code for r in deleted.results],
        "still listed": group in [g.group_id for g in listed.groups],
    }


def test_classic_group_apis_treat_a_share_group_as_kafka_does(broker) -> None:
    assert classic_requests_on_a_share_group(broker.bootstrap) == {
        "DescribeGroups": (0, "Dead", "", 0),
        "OffsetCommit": [Errors("GROUP_ID_NOT_FOUND").code],
        "OffsetDelete": Errors("GROUP_ID_NOT_FOUND").code,
        "DeleteGroups": [Errors("NON_EMPTY_GROUP").code],
        "still listed": True,
    }
