"""KIP-848's online migration on Kafka 4.4 (KRaft, one process) and on kt: the same steps
on both (a classic member alone; a consumer-protocol member joins, and the group becomes
a consumer group with a classic member inside; the consumer-protocol member leaves, and
the group is classic again), with the same group type, member kinds and split at each
step; and Kafka 4.4's DumpLogSegments reads kt's records of the migration (the classic
member's ClassicMemberMetadata among them) exactly as `kt dump-log` prints them."""

from __future__ import annotations

import re
import subprocess
import sys

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kt.client.client import KafkaClient
from kt.protocol import ApiKey
from kt.protocol import messages as m
from kt.reference_kafka import KAFKA4_VERSION, run_tool
from tests.groups._clients import wait_until
from tests.oracle.conftest import KAFKA4_HEARTBEATS, dump_group_partition

GROUP = "migrating"
CLASSIC_MEMBER, CONSUMER_MEMBER = 0, 1  # ConsumerGroupDescribe's MemberType
# A consumer-protocol member's id (a Uuid's base64), a classic member's (client id, uuid).
MEMBER_ID = re.compile(r"rdkafka-[0-9a-f-]{36}|[A-Za-z0-9+/_-]{22}")


def group_view(bootstrap: str) -> tuple:
    """(group type, state, sorted (member kind, partition count)) as ListGroups and
    ConsumerGroupDescribe (or DescribeGroups for a classic group) give them."""
    with KafkaClient(bootstrap) as client:
        conn = client.any_connection()
        listed = conn.send(ApiKey.LIST_GROUPS, m.ListGroupsRequest(types_filter=[]))
        kind = {g.group_id: g.group_type for g in listed.groups}.get(GROUP)
        if kind != "consumer":
            return kind, None, None
        (group,) = conn.send(ApiKey.CONSUMER_GROUP_DESCRIBE,
                             m.ConsumerGroupDescribeRequest(group_ids=[GROUP])).groups  # fmt: skip
        members = sorted(
            (x.member_type, sum(len(t.partitions) for t in x.assignment.topic_partitions))
            for x in group.members
        )
        return kind, group.group_state, members


def member(bootstrap: str, protocol: str) -> Consumer:
    config = {"bootstrap.servers": bootstrap, "group.id": GROUP, "group.protocol": protocol,
              "auto.offset.reset": "earliest", "enable.auto.commit": False}  # fmt: skip
    if protocol == "classic":
        config |= {"session.timeout.ms": 6000, "heartbeat.interval.ms": 300}
    consumer = Consumer(config)
    consumer.subscribe(["orders"])
    return consumer


def members_table(bootstrap: str) -> list[str]:
    """Kafka 4.4's kafka-consumer-groups --members --verbose (kt's prints the same),
    member ids and the address masked, lines sorted (the members' order is their ids')."""
    args = ("--describe", "--group", GROUP, "--members", "--verbose")
    theirs = run_tool("kafka-consumer-groups", "--bootstrap-server", bootstrap, *args,
                      version=KAFKA4_VERSION)  # fmt: skip
    assert theirs.returncode == 0, theirs.stderr
    command = [sys.executable, "-m", "kt", "consumer-groups", "--bootstrap-server", bootstrap]
    ours = subprocess.run([*command, *args], capture_output=True, text=True, timeout=60)
    assert (ours.returncode, ours.stdout) == (0, theirs.stdout), ours.stderr
    text = MEMBER_ID.sub("<member>", theirs.stdout.replace(bootstrap, "<coordinator>"))
    return sorted(line.rstrip() for line in text.splitlines())


def scenario(bootstrap: str) -> list:
    """The group's view after each step, once every member holds its share."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("orders", 6, 1)])["orders"].result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(60):
        producer.produce("orders", b"%d" % i, partition=i % 6)
    assert producer.flush(30) == 0
    views = []
    classic = member(bootstrap, "classic")
    consumer = None
    try:

        def holding(*members: Consumer, split: list[int]) -> bool:
            for x in members:
                msg = x.poll(0.05)
                if msg is not None and msg.error() is None:
                    x.commit(msg, asynchronous=False)
            return sorted(len(x.assignment()) for x in members) == split

        wait_until(lambda: holding(classic, split=[6]), timeout_s=60, what="classic alone")
        views.append(group_view(bootstrap))
        consumer = member(bootstrap, "consumer")
        wait_until(lambda: holding(classic, consumer, split=[3, 3])
                   and group_view(bootstrap)[1] == "Stable", timeout_s=60,
                   what="a consumer group of a classic and a consumer member, 3+3")  # fmt: skip
        views.append(group_view(bootstrap))
        views.append(members_table(bootstrap))
        consumer.close()
        consumer = None
        wait_until(lambda: holding(classic, split=[6]) and group_view(bootstrap)[0] == "classic",
                   timeout_s=60, what="the classic member alone in a classic group")  # fmt: skip
        views.append(group_view(bootstrap))
    finally:
        classic.close()
        if consumer is not None:
            consumer.close()
    return views


def test_the_same_migration_on_kafka4_and_kt(kafka4, broker_factory) -> None:
    theirs = scenario(kafka4.bootstrap)
    assert theirs[:2] + theirs[3:] == [
        ("classic", None, None),
        ("consumer", "Stable", [(CLASSIC_MEMBER, 3), (CONSUMER_MEMBER, 3)]),
        ("classic", None, None),
    ]
    table = theirs[2]
    assert any("UPGRADED" in line for line in table), table
    assert sorted(line.split()[-1] for line in table if "<member>" in line) == ["false", "true"]
    ours = scenario(broker_factory(**KAFKA4_HEARTBEATS).bootstrap)
    assert ours == theirs


def test_kafka4_dump_log_reads_kts_migration_records(broker_factory) -> None:
    kt4 = broker_factory(**KAFKA4_HEARTBEATS)
    scenario(kt4.bootstrap)
    theirs, ours = dump_group_partition(kt4.log_dir, GROUP)
    assert '"classicMemberMetadata":{"sessionTimeoutMs":6000' in theirs
    assert "Unknown record type" not in theirs
    assert ours == theirs
