"""KIP-848's online migration: a running classic group moved member by member to the
consumer group protocol and back, with confluent-kafka's consumers of both protocols
(`group.protocol=classic` and `consumer`), while records keep arriving."""

from __future__ import annotations

import itertools
import threading
from collections import Counter

import pytest
from confluent_kafka import ConsumerGroupType, Producer

from kt.client.client import KafkaClient
from kt.client.groups import encode_subscription
from kt.errors import KafkaError as Errors
from kt.protocol import ApiKey
from kt.protocol import messages as m
from tests.groups._clients import create_topic, wait_until
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
    broker = start_broker(tmp_path_factory.mktemp("migration"), **CONSUMER_GROUP_OVERRIDES)
    yield broker
    if broker.alive:
        broker.stop()


class Producing:
    """Records into `topic` on a thread until stopped; `written` holds (topic, partition,
    offset) of each acknowledged one."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        self.topic, self.partitions = topic, partitions
        self.written: set[tuple[str, int, int]] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _delivered(self, err, msg) -> None:  # type: ignore[no-untyped-def]
        assert err is None, err
        self.written.add((msg.topic(), msg.partition(), msg.offset()))

    def _run(self) -> None:
        for i in itertools.count():
            if self._stop.wait(0.02):
                break
            for p in range(self.partitions):
                self.producer.produce(
                    self.topic, b"%d" % i, partition=p, on_delivery=self._delivered
                )
            self.producer.poll(0)

    def stop(self) -> set[tuple[str, int, int]]:
        self._stop.set()
        self._thread.join(30)
        assert self.producer.flush(30) == 0
        return self.written


def owned_by(members: list[Member]) -> list[int]:
    return sorted(len(x.owned) for x in members)


def group_type(bootstrap: str, group: str) -> ConsumerGroupType:
    return describe(bootstrap, group).type


def test_a_rolling_upgrade_to_the_consumer_protocol_and_back_loses_nothing(broker) -> None:
    """Three classic members are replaced one at a time by consumer-protocol members (the
    first one turns the group into a consumer group, the classic members go on inside it),
    then back (the last consumer-protocol member leaving turns it into a classic group that
    rebalances). Records are produced throughout: every one is read, none twice but those
    whose commit the coordinator refused while the group moved, and no partition has two
    owners at any instant."""
    n = next(_names)
    topic, group = f"migrate-{n}", f"migrate-group-{n}"
    create_topic(broker.bootstrap, topic, 6)
    log: list = []
    producing = Producing(broker.bootstrap, topic, 6)
    members = [Member(broker.bootstrap, group, [topic], log, protocol="classic") for _ in range(3)]
    everyone = list(members)
    types = []
    try:
        wait_until(lambda: owned_by(members) == [2, 2, 2], what="three classic members, 2 each")
        types.append(group_type(broker.bootstrap, group))
        for protocol in ("consumer", "classic"):
            for i in range(3):
                members[i].close()
                members[i] = Member(broker.bootstrap, group, [topic], log, protocol=protocol)
                everyone.append(members[i])
                what = f"the group spread again after member {i} became {protocol}"
                wait_until(lambda: owned_by(members) == [2, 2, 2], what=what)
                types.append(group_type(broker.bootstrap, group))
        written = producing.stop()
        wait_until(lambda: {r for x in everyone for r in x.records} >= written,
                   what="every record read")  # fmt: skip
    finally:
        producing.stop()
        for member in members:
            member.close()
    classic, consumer = ConsumerGroupType.CLASSIC, ConsumerGroupType.CONSUMER
    assert types == [classic, consumer, consumer, consumer, consumer, consumer, classic]
    read = Counter(r for x in everyone for r in x.records)
    uncommitted = set().union(*(x.uncommitted for x in everyone))
    assert [r for r, times in read.items() if times > 1 and r not in uncommitted] == []
    no_overlap(log)


def join_group(bootstrap: str, group: str, topic: str) -> m.JoinGroupResponse:
    """A static classic member's JoinGroup, raw."""
    protocol = m.JoinGroupRequest.JoinGroupRequestProtocol(
        name="range", metadata=encode_subscription([topic])
    )
    request = m.JoinGroupRequest(
        group_id=group, session_timeout_ms=6000, rebalance_timeout_ms=5000, member_id="",
        group_instance_id="static-1", protocol_type="consumer", protocols=[protocol],
    )  # fmt: skip
    with KafkaClient(bootstrap) as client:
        return client.any_connection().send(ApiKey.JOIN_GROUP, request)


def heartbeat(bootstrap: str, group: str, topic: str) -> m.ConsumerGroupHeartbeatResponse:
    """A new consumer-protocol member's first ConsumerGroupHeartbeat, raw."""
    request = m.ConsumerGroupHeartbeatRequest(
        group_id=group, member_id="new", member_epoch=0, rebalance_timeout_ms=5000,
        subscribed_topic_names=[topic], topic_partitions=[],
    )  # fmt: skip
    with KafkaClient(bootstrap) as client:
        return client.any_connection().send(ApiKey.CONSUMER_GROUP_HEARTBEAT, request)


def test_with_migration_disabled_a_group_keeps_its_protocol(broker, tmp_path) -> None:
    """group.consumer.migration.policy=disabled: a consumer-protocol member of a classic
    group with members is told the group cannot be upgraded, and a classic member of a
    consumer group with members that its protocol is not the group's (Kafka's answers);
    with the default (bidirectional) both join."""
    disabled = start_broker(
        tmp_path, **CONSUMER_GROUP_OVERRIDES, **{"group.consumer.migration.policy": "Disabled"}
    )
    try:
        for bootstrap, allowed in ((disabled.bootstrap, False), (broker.bootstrap, True)):
            n = next(_names)
            topic, classic_group, consumer_group = f"t-{n}", f"classic-{n}", f"consumer-{n}"
            create_topic(bootstrap, topic, 1)
            log: list = []
            classic = Member(bootstrap, classic_group, [topic], log, protocol="classic")
            consumer = Member(bootstrap, consumer_group, [topic], log)
            try:
                wait_until(lambda: classic.owned and consumer.owned, what="both own the partition")  # noqa: B023
                upgrade = heartbeat(bootstrap, classic_group, topic)
                joined = join_group(bootstrap, consumer_group, topic)
            finally:
                classic.close()
                consumer.close()
            if allowed:
                assert (upgrade.error_code, joined.error_code) == (0, 0)
                continue
            assert (upgrade.error_code, upgrade.error_message) == (
                Errors("GROUP_ID_NOT_FOUND").code,
                f"Cannot upgrade classic group {classic_group} to consumer group because "
                "online upgrade is disabled.",
            )
            assert joined.error_code == Errors("INCONSISTENT_GROUP_PROTOCOL").code
    finally:
        disabled.stop()


def test_a_leave_group_refused_as_a_whole_answers_its_error(broker) -> None:
    """LeaveGroup v3+ refused for the whole group (here an empty group id; a consumer
    group's write failing, or NOT_COORDINATOR, alike) answers its error with no member
    list, as Kafka does (kt failed in the handler and closed the connection)."""
    member = m.LeaveGroupRequest.MemberIdentity(member_id="m1", group_instance_id=None)
    with KafkaClient(broker.bootstrap) as client:
        answer = client.any_connection().send(
            ApiKey.LEAVE_GROUP, m.LeaveGroupRequest(group_id="", members=[member])
        )
    assert (answer.error_code, answer.members) == (Errors("INVALID_GROUP_ID").code, [])
