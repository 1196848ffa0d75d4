"""Kafka 4's consumer group protocol (KIP-848) with confluent-kafka's consumer
(`group.protocol=consumer`) against `kt server-start`: the coordinator assigns, members
reconcile one partition move at a time, and a partition has one owner at any instant."""

from __future__ import annotations

import itertools
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupState,
    ConsumerGroupType,
)

from kt.client.client import KafkaClient
from kt.client.groups import GroupAdmin
from kt.errors import KafkaError as Errors
from kt.protocol import ApiKey
from kt.protocol import messages as m
from kt.reference_kafka import KAFKA4_VERSION, _tool_log4j, java_command, unavailable_reason
from tests._environment import unavailable
from tests.groups._clients import create_topic, produce, wait_until
from tests.groups._consumer_members import (
    CONSUMER_GROUP_OVERRIDES,
    Member,
    describe,
    no_overlap,
)
from tests.groups.conftest import start_broker

pytestmark = pytest.mark.slow
_names = itertools.count()


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory):
    broker = start_broker(tmp_path_factory.mktemp("consumer-groups"), **CONSUMER_GROUP_OVERRIDES)
    yield broker
    if broker.alive:
        broker.stop()


def test_members_join_and_leave_with_every_record_read_once(broker) -> None:
    n = next(_names)
    topic, group = f"cg-{n}", f"cg-group-{n}"
    create_topic(broker.bootstrap, topic, 6)
    produce(broker.bootstrap, topic, 20, partitions=6)
    log: list = []
    members = [Member(broker.bootstrap, group, [topic], log)]
    everyone = list(members)
    try:
        wait_until(lambda: len(members[0].owned) == 6, what="the first member owns all six")
        for _ in range(2):
            members.append(Member(broker.bootstrap, group, [topic], log))
            everyone.append(members[-1])
            produce(broker.bootstrap, topic, 20, partitions=6, start=20 * len(members) - 20)
        wait_until(lambda: sorted(len(x.owned) for x in members) == [2, 2, 2],
                   what="a 2+2+2 split")  # fmt: skip
        assert set().union(*(x.owned for x in members)) == {(topic, p) for p in range(6)}
        described = describe(broker.bootstrap, group)
        assert (described.type, described.state) == (ConsumerGroupType.CONSUMER,
                                                      ConsumerGroupState.STABLE)  # fmt: skip
        assert sorted(len(d.assignment.topic_partitions) for d in described.members) == [2, 2, 2]
        members.pop(0).close()
        produce(broker.bootstrap, topic, 20, partitions=6, start=60)
        wait_until(lambda: sorted(len(x.owned) for x in members) == [3, 3],
                   what="the two left share the six")  # fmt: skip
        everything = {(topic, p, o) for p in range(6) for o in range(80)}
        wait_until(
            lambda: {r for x in everyone for r in x.records} >= everything, what="every record read"
        )
    finally:
        for member in members:
            member.close()
    read = Counter(r for x in everyone for r in x.records)
    assert [r for r, times in read.items() if times > 1] == []
    no_overlap(log)


def advertised(bootstrap: str) -> set[int]:
    with KafkaClient(bootstrap) as client:
        response = client.any_connection().send(ApiKey.API_VERSIONS, m.ApiVersionsRequest())
    return {k.api_key for k in response.api_keys}


def test_without_the_consumer_protocol_its_apis_are_not_advertised(broker, tmp_path) -> None:
    """group.coordinator.rebalance.protocols=classic (Kafka 3.9's default): neither
    ConsumerGroupHeartbeat nor ConsumerGroupDescribe is in ApiVersions, as on such a Kafka
    broker; with Kafka 4's default (kt's) both are."""
    assert {ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE} <= advertised(
        broker.bootstrap
    )
    classic = start_broker(tmp_path, **{"group.coordinator.rebalance.protocols": "classic"})
    try:
        assert not {ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE} & advertised(
            classic.bootstrap
        )
    finally:
        classic.stop()


def group_epochs(bootstrap: str, group: str) -> tuple[int, int, dict[str, int]]:
    """(group epoch, assignment epoch, member epoch by instance id or member id) as
    ConsumerGroupDescribe answers (the broker is the coordinator of every group)."""
    with KafkaClient(bootstrap) as client:
        response = client.any_connection().send(
            ApiKey.CONSUMER_GROUP_DESCRIBE, m.ConsumerGroupDescribeRequest(group_ids=[group])
        )
    (described,) = response.groups
    assert described.error_code == 0, described
    members = {x.instance_id or x.member_id: x.member_epoch for x in described.members}
    return described.group_epoch, described.assignment_epoch, members


def test_a_static_member_restarting_keeps_its_partitions_without_a_rebalance(broker) -> None:
    n = next(_names)
    topic, group = f"static-{n}", f"static-group-{n}"
    create_topic(broker.bootstrap, topic, 6)
    log: list = []
    first = Member(broker.bootstrap, group, [topic], log, instance_id="one")
    second = Member(broker.bootstrap, group, [topic], log, instance_id="two")
    third = None
    try:
        wait_until(lambda: sorted(len(x.owned) for x in (first, second)) == [3, 3]
                   and _stable(broker.bootstrap, group), what="a stable 3+3 split")  # fmt: skip
        before = group_epochs(broker.bootstrap, group)
        settled_at = len(log)  # the split's own moves (either member may join first) before
        held = set(first.owned)
        first.close()  # a static member leaves for a while (member epoch -2)
        wait_until(lambda: group_epochs(broker.bootstrap, group)[2]["one"] == -2,
                   what="the static member away")  # fmt: skip
        third = Member(broker.bootstrap, group, [topic], log, instance_id="one")
        wait_until(lambda: third.owned == held, what="the restarted member's partitions back")
        assert group_epochs(broker.bootstrap, group)[:2] == before[:2]  # no rebalance
        assert [e for e in log[settled_at:] if e[1] == second.name and e[2] == "-"] == []
    finally:
        for member in (second, third):
            if member is not None:
                member.close()


def _stable(bootstrap: str, group: str) -> bool:
    """Every member at the assignment epoch, which the group epoch reached."""
    group_epoch, assignment_epoch, members = group_epochs(bootstrap, group)
    return group_epoch == assignment_epoch and set(members.values()) == {assignment_epoch}


def test_a_regex_subscription_picks_up_a_topic_created_later(broker) -> None:
    n = next(_names)
    group = f"regex-group-{n}"
    create_topic(broker.bootstrap, f"rx{n}-a", 2)
    create_topic(broker.bootstrap, f"other{n}", 2)
    log: list = []
    member_ = Member(broker.bootstrap, group, [f"^rx{n}-.*"], log)
    try:
        wait_until(lambda: member_.owned == {(f"rx{n}-a", 0), (f"rx{n}-a", 1)},
                   what="the matching topic assigned")  # fmt: skip
        create_topic(broker.bootstrap, f"rx{n}-b", 2)
        wait_until(lambda: len(member_.owned) == 4, what="the new matching topic assigned")
        assert {t for t, _ in member_.owned} == {f"rx{n}-a", f"rx{n}-b"}
    finally:
        member_.close()


class JavaMember:
    """Kafka 4.4's Java consumer (interop/ConsumerProtocolMember.java) in the group."""

    def __init__(self, bootstrap: str, topic: str, group: str, stop: Path) -> None:
        source = Path(__file__).resolve().parents[2] / "interop" / "ConsumerProtocolMember.java"
        command = java_command(str(source), ["-Xmx256m"], _tool_log4j(KAFKA4_VERSION),
                               version=KAFKA4_VERSION)  # fmt: skip
        self.stop = stop
        self.proc = subprocess.Popen([*command, bootstrap, topic, group, str(stop)],
                                     stdout=subprocess.PIPE, text=True)  # fmt: skip
        self.owned: set[int] = set()
        self.records: list[tuple[int, int]] = []
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.strip())
            word, _, rest = line.strip().partition(" ")
            if word == "owned":
                self.owned = {int(p) for p in rest.split(",") if p}
            elif word == "read":
                partition, offset = rest.split()
                self.records.append((int(partition), int(offset)))

    def close(self) -> None:
        self.stop.touch()
        try:
            assert self.proc.wait(60) == 0, self.lines[-20:]
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self._reader.join(10)
        assert self.lines[-1] == "closed"


def test_kafka4_java_and_librdkafka_members_share_a_group(broker, tmp_path) -> None:
    """A member of Kafka 4.4's Java consumer and one of confluent-kafka's split six
    partitions, read every record once between them, and the survivor takes all when the
    Java member leaves."""
    reason = unavailable_reason(KAFKA4_VERSION)
    if reason is not None:
        unavailable(reason)
    n = next(_names)
    topic, group = f"java-{n}", f"java-group-{n}"
    create_topic(broker.bootstrap, topic, 6)
    produce(broker.bootstrap, topic, 10, partitions=6)
    java = JavaMember(broker.bootstrap, topic, group, tmp_path / "stop")
    log: list = []
    python = None
    try:
        wait_until(lambda: java.owned == set(range(6)), timeout_s=90,
                   what="the Java member owns all six")  # fmt: skip
        python = Member(broker.bootstrap, group, [topic], log)
        wait_until(lambda: len(java.owned) == 3 and len(python.owned) == 3, timeout_s=60,
                   what="a 3+3 split")  # fmt: skip
        assert java.owned | {p for _, p in python.owned} == set(range(6))
        produce(broker.bootstrap, topic, 10, partitions=6, start=10)
        java.close()
        wait_until(lambda: len(python.owned) == 6, what="the survivor owns all six")
        produce(broker.bootstrap, topic, 10, partitions=6, start=20)
        everything = {(p, o) for p in range(6) for o in range(30)}
        wait_until(lambda: set(java.records) | {(p, o) for _, p, o in python.records}
                   >= everything, what="every record read")  # fmt: skip
    finally:
        if java.proc.poll() is None:
            java.close()
        if python is not None:
            python.close()
    read = Counter([*java.records, *((p, o) for _, p, o in python.records)])
    assert [r for r, times in read.items() if times > 1] == []


def test_a_group_config_sets_the_heartbeat_interval_of_its_group(broker) -> None:
    """consumer.heartbeat.interval.ms set on the GROUP resource (IncrementalAlterConfigs)
    is the interval the coordinator names to that group's members; other groups keep the
    broker's (300 ms here)."""
    n = next(_names)
    topic, group = f"cfg-{n}", f"cfg-group-{n}"
    create_topic(broker.bootstrap, topic, 1)
    R = m.IncrementalAlterConfigsRequest
    alter = R(resources=[R.AlterConfigsResource(
        resource_type=32, resource_name=group,
        configs=[R.AlterableConfig(name="consumer.heartbeat.interval.ms", config_operation=0,
                                   value="1500")])])  # fmt: skip
    H = m.ConsumerGroupHeartbeatRequest

    def join(group_id: str) -> int:
        request = H(group_id=group_id, member_id="", member_epoch=0, rebalance_timeout_ms=5000,
                    subscribed_topic_names=[topic], topic_partitions=[])  # fmt: skip
        with KafkaClient(broker.bootstrap) as client:
            response = client.any_connection().send(ApiKey.CONSUMER_GROUP_HEARTBEAT, request)
        assert response.error_code == 0, response
        return response.heartbeat_interval_ms

    with KafkaClient(broker.bootstrap) as client:
        (result,) = client.any_connection().send(ApiKey.INCREMENTAL_ALTER_CONFIGS, alter).responses
        GroupAdmin(client, 30000).find_coordinator(group)  # __consumer_offsets exists
    assert (result.error_code, result.error_message) == (0, None)
    wait_until(lambda: join(group) == 1500, what="the group's own heartbeat interval")
    assert join(f"other-{group}") == 300


def heartbeat(bootstrap: str, **fields: object):  # type: ignore[no-untyped-def]
    """One ConsumerGroupHeartbeat, raw (topic partitions as (topic id, [partitions]))."""
    H = m.ConsumerGroupHeartbeatRequest
    owned = fields.pop("owned", None)
    request = H(**fields)
    if owned is not None:
        request.topic_partitions = [H.TopicPartitions(topic_id=t, partitions=ps) for t, ps in owned]
    with KafkaClient(bootstrap) as client:
        return client.any_connection().send(ApiKey.CONSUMER_GROUP_HEARTBEAT, request)


def test_a_regex_python_matches_differently_is_refused(broker) -> None:
    """RE2/J (Kafka's regex engine) has no lookaround and no backreferences, so such a
    pattern (which Python's `re` would take) is INVALID_REGULAR_EXPRESSION, as is one that
    does not compile."""
    n = next(_names)
    group = f"bad-regex-{n}"
    with KafkaClient(broker.bootstrap) as client:
        GroupAdmin(client, 30000).find_coordinator(group)
    for pattern in ("(?!secret).*", r"(a)\1", "orders["):
        response = heartbeat(broker.bootstrap, group_id=group, member_id="m", member_epoch=0,
                             rebalance_timeout_ms=5000, subscribed_topic_regex=pattern,
                             owned=[])  # fmt: skip
        assert response.error_code == Errors("INVALID_REGULAR_EXPRESSION").code, pattern
        assert response.error_message.startswith(f"SubscribedTopicRegex `{pattern}` is not")


def test_a_member_that_does_not_revoke_within_its_rebalance_timeout_is_fenced(broker) -> None:
    """A member asked to revoke a partition that keeps silent past its rebalance timeout
    (shorter than its session timeout) is fenced, and the partition goes to the other."""
    n = next(_names)
    topic, group = f"slow-revoke-{n}", f"slow-revoke-group-{n}"
    create_topic(broker.bootstrap, topic, 2)
    with KafkaClient(broker.bootstrap) as client:
        GroupAdmin(client, 30000).find_coordinator(group)
    join = {"group_id": group, "member_epoch": 0, "subscribed_topic_names": [topic],
            "owned": []}  # fmt: skip
    first = heartbeat(broker.bootstrap, member_id="slow", rebalance_timeout_ms=500, **join)
    (owned,) = first.assignment.topic_partitions
    assert sorted(owned.partitions) == [0, 1]
    second = heartbeat(broker.bootstrap, member_id="quick", rebalance_timeout_ms=5000, **join)
    assert second.error_code == 0 and not second.assignment.topic_partitions  # not yet free
    asked = heartbeat(
        broker.bootstrap,
        group_id=group,
        member_id="slow",
        member_epoch=first.member_epoch,
        owned=[(owned.topic_id, [0, 1])],
    )
    assert len(asked.assignment.topic_partitions[0].partitions) == 1  # one to give up
    # "slow" says nothing more: fenced after 500 ms, well before its 6 s session timeout.
    wait_until(lambda: set(group_epochs(broker.bootstrap, group)[2]) == {"quick"}, timeout_s=5,
               what="the silent member fenced")  # fmt: skip
    took = heartbeat(broker.bootstrap, group_id=group, member_id="quick",
                     member_epoch=second.member_epoch, owned=[])  # fmt: skip
    assert sorted(took.assignment.topic_partitions[0].partitions) == [0, 1]


def classic_consumer(bootstrap: str, group: str) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                     "auto.offset.reset": "earliest", "enable.auto.commit": False,
                     "session.timeout.ms": 6000, "heartbeat.interval.ms": 300})  # fmt: skip


def read_and_commit(consumer: Consumer, topic: str, count: int) -> list[int]:
    """Subscribe, read `count` records (their offsets), commit them, close."""
    consumer.subscribe([topic])
    offsets: list[int] = []
    deadline = time.monotonic() + 60
    while len(offsets) < count and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None and msg.error() is None:
            offsets.append(msg.offset())
            if len(offsets) == count:
                consumer.commit(msg, asynchronous=False)
    consumer.close()
    return offsets


def test_an_empty_group_changes_protocol_and_keeps_its_offsets(broker) -> None:
    """A group's members switch between the classic and the consumer protocol while it is
    empty: the group gives way to one of the other kind and its committed offsets stay."""
    n = next(_names)
    topic, group = f"switch-{n}", f"switch-group-{n}"
    create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, 30, partitions=1)
    assert read_and_commit(classic_consumer(broker.bootstrap, group), topic, 10) == \
        list(range(10))  # fmt: skip
    consumer_protocol = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                                  "group.protocol": "consumer", "enable.auto.commit": False,
                                  "auto.offset.reset": "earliest"})  # fmt: skip
    assert read_and_commit(consumer_protocol, topic, 10) == list(range(10, 20))
    assert read_and_commit(classic_consumer(broker.bootstrap, group), topic, 10) == \
        list(range(20, 30))  # fmt: skip
