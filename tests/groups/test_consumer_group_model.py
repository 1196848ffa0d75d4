"""The consumer group protocol's parts without a broker: the server-side assignors,
reconciliation (CurrentAssignmentBuilder's rules), the records of `__consumer_offsets`
(read as Kafka 4.4 wrote them, written as it reads them) and their replay."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kt.broker.group import assignors
from kt.broker.group import consumer_group_records as cr
from kt.broker.group.assignors import MemberSubscription
from kt.broker.group.consumer_group import ConsumerGroup, ConsumerGroupMember, MemberState
from kt.broker.group.current_assignment import reconcile

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


def counts(assignment: dict) -> dict[str, int]:
    return {m: sum(len(ps) for ps in a.values()) for m, a in assignment.items()}


def owners(assignment: dict) -> dict[tuple[uuid.UUID, int], str]:
    found: dict[tuple[uuid.UUID, int], str] = {}
    for member, a in assignment.items():
        for t, ps in a.items():
            for p in ps:
                assert (t, p) not in found, f"{(t, p)} assigned twice"
                found[(t, p)] = member
    return found


# -- assignors ---------------------------------------------------------------------------


def test_uniform_spreads_evenly_and_a_joiner_takes_only_what_balance_needs() -> None:
    subs = {m: MemberSubscription(frozenset({T1})) for m in ("a", "b", "c")}
    first = assignors.assign("uniform", subs, {T1: 9}, {})
    assert counts(first) == {"a": 3, "b": 3, "c": 3}
    assert len(owners(first)) == 9
    subs["d"] = MemberSubscription(frozenset({T1}))
    second = assignors.assign("uniform", subs, {T1: 9}, first)
    assert sorted(counts(second).values()) == [2, 2, 2, 3]
    moved = [tp for tp, m in owners(second).items() if owners(first)[tp] != m]
    assert len(moved) == 2  # only what the joiner gets moves
    assert all(owners(second)[tp] == "d" for tp in moved)


def test_uniform_gives_a_leavers_partitions_to_the_others_and_keeps_theirs() -> None:
    subs = {m: MemberSubscription(frozenset({T1})) for m in ("a", "b", "c")}
    first = assignors.assign("uniform", subs, {T1: 6}, {})
    del subs["c"]
    second = assignors.assign("uniform", subs, {T1: 6}, first)
    assert counts(second) == {"a": 3, "b": 3}
    for m in ("a", "b"):
        assert first[m][T1] <= second[m][T1]


def test_uniform_respects_each_members_subscription() -> None:
    subs = {
        "a": MemberSubscription(frozenset({T1})),
        "b": MemberSubscription(frozenset({T1, T2})),
        "c": MemberSubscription(frozenset({T2})),
    }
    result = assignors.assign("uniform", subs, {T1: 4, T2: 4}, {})
    assert len(owners(result)) == 8
    assert T2 not in result["a"] and T1 not in result["c"]
    assert sorted(counts(result).values()) in ([2, 3, 3], [2, 2, 4])
    assert max(counts(result).values()) - min(counts(result).values()) <= 1


def test_range_co_partitions_in_member_order_with_static_members_first() -> None:
    subs = {
        "m2": MemberSubscription(frozenset({T1, T2})),
        "m1": MemberSubscription(frozenset({T1, T2}), instance_id="z"),
    }
    result = assignors.assign("range", subs, {T1: 3, T2: 3}, {})
    assert result == {
        "m1": {T1: frozenset({0, 1}), T2: frozenset({0, 1})},
        "m2": {T1: frozenset({2}), T2: frozenset({2})},
    }


# -- reconciliation -----------------------------------------------------------------------


def member(epoch: int, assigned: dict, state: MemberState = MemberState.STABLE) -> Any:
    return ConsumerGroupMember("m", member_epoch=epoch, previous_member_epoch=epoch - 1,
                               state=state, assigned=assigned)  # fmt: skip


def free(_t: uuid.UUID, _p: int) -> int:
    return -1


def test_partitions_leaving_the_target_are_revoked_first() -> None:
    m = member(3, {T1: frozenset({0, 1, 2})})
    owned = [(T1, [0, 1, 2])]
    step = reconcile(m, 4, {T1: frozenset({0, 3})}, free, owned)
    assert (step.state, step.member_epoch) == (MemberState.UNREVOKED_PARTITIONS, 3)
    assert (step.assigned, step.pending_revocation) == ({T1: {0}}, {T1: {1, 2}})
    assert reconcile(step, 4, {T1: frozenset({0, 3})}, free, owned) == step  # still owned
    done = reconcile(step, 4, {T1: frozenset({0, 3})}, free, [(T1, [0])])
    assert (done.state, done.member_epoch, done.assigned) == (MemberState.STABLE, 4, {T1: {0, 3}})
    assert done.assignment_epochs == {(T1, 0): 3, (T1, 3): 4}


def test_a_partition_still_held_elsewhere_is_given_once_released() -> None:
    held = {(T1, 1): 5}

    def epoch_of(t: uuid.UUID, p: int) -> int:
        return held.get((t, p), -1)

    step = reconcile(member(5, {}), 6, {T1: frozenset({0, 1})}, epoch_of, [])
    assert (step.state, step.member_epoch, step.assigned) == (
        MemberState.UNRELEASED_PARTITIONS,
        6,
        {T1: {0}},
    )
    held.clear()
    step = reconcile(step, 6, {T1: frozenset({0, 1})}, epoch_of, [(T1, [0])])
    assert (step.state, step.assigned) == (MemberState.STABLE, {T1: {0, 1}})


# -- offset commits of a member ---------------------------------------------------------


def test_a_commit_of_an_older_epoch_is_taken_for_partitions_held_since_then() -> None:
    group = ConsumerGroup("g")
    group.put_member(ConsumerGroupMember(
        "m", member_epoch=7, assigned={T1: frozenset({0, 1})},
        assignment_epochs={(T1, 0): 4, (T1, 1): 7},
    ))  # fmt: skip
    errors = group.validate_offset_commit("m", 5, 9, [(T1, 0), (T1, 1), (T1, 2)])
    assert errors == {(T1, 0): "NONE", (T1, 1): "STALE_MEMBER_EPOCH",
                      (T1, 2): "STALE_MEMBER_EPOCH"}  # fmt: skip
    assert set(group.validate_offset_commit("m", 8, 9, [(T1, 0)]).values()) == {
        "STALE_MEMBER_EPOCH"
    }
    assert set(group.validate_offset_commit("m", 7, 8, [(T1, 0)]).values()) == {
        "UNSUPPORTED_VERSION"
    }
    assert set(group.validate_offset_commit("x", 7, 9, [(T1, 0)]).values()) == {"UNKNOWN_MEMBER_ID"}


# -- records --------------------------------------------------------------------------------

# Records Kafka 4.4 wrote for a confluent-kafka member of group "e1" (topic "orders").
KAFKA_MEMBER = (
    "0005000265310016717649344f5a712b54446d2f592b3054515330703951",
    "000000000872646b61666b610b2f3132372e302e302e3102076f726465727301000493e00001000100",
)
KAFKA_EPOCH = ("000300026531", "00000000000201000833f49e11efbeddce")
KAFKA_CURRENT = (
    "0008000265310016717649344f5a712b54446d2f592b3054515330703951",
    "000000000002000000000002fe9eb47ff23346049b2cd28380342c7b0700000000000000010000000200"
    "0000030000000400000005010019070000000200000002000000020000000200000002000000020100",
)
ORDERS = uuid.UUID("fe9eb47f-f233-4604-9b2c-d28380342c7b")


def read(pair: tuple[str, str]) -> cr.CoordinatorRecord:
    found = cr.read_record(bytes.fromhex(pair[0]), bytes.fromhex(pair[1]))
    assert found is not None
    return found


def test_records_kafka_wrote_are_read() -> None:
    m = read(KAFKA_MEMBER)
    assert (m.type, m.group_id, m.sub) == (5, "e1", "qvI4OZq+TDm/Y+0TQS0p9Q")
    assert m.value == ConsumerGroupMember(
        "qvI4OZq+TDm/Y+0TQS0p9Q", client_id="rdkafka", client_host="/127.0.0.1",
        subscribed_topic_names=("orders",), subscribed_topic_regex="",
        rebalance_timeout_ms=300000,
    )  # fmt: skip
    assert read(KAFKA_EPOCH).value == cr.GroupEpoch(2, 3743790990125620686)
    current = read(KAFKA_CURRENT).value
    assert current == cr.CurrentAssignment(
        2, 0, MemberState.STABLE, {ORDERS: frozenset(range(6))}, {},
        {(ORDERS, p): 2 for p in range(6)},
    )  # fmt: skip


def test_what_kt_writes_is_what_kafka_wrote_for_the_same_state() -> None:
    for pair in (KAFKA_MEMBER, KAFKA_EPOCH, KAFKA_CURRENT):
        record = read(pair)
        assert (record.key().hex(), record.value_bytes().hex()) == pair


@pytest.mark.parametrize("record", [
    cr.regex("g", "topic-.*", cr.ResolvedRegex(frozenset({"topic-a", "topic-b"}), 7, 123)),
    cr.target_member("g", "m", {T1: frozenset({0, 2}), T2: frozenset({1})}),
    cr.target_epoch("g", 4, 99),
    cr.group_epoch("g", 3, 0),
    cr.member_subscription("g", ConsumerGroupMember(
        "m", instance_id="i", rack_id="r", client_id="c", client_host="/h",
        subscribed_topic_names=("a", "b"), subscribed_topic_regex=None,
        rebalance_timeout_ms=5, server_assignor="range")),
])  # fmt: skip
def test_records_round_trip(record: cr.CoordinatorRecord) -> None:
    assert cr.read_record(record.key(), record.value_bytes()) == record


def test_replaying_a_groups_records_rebuilds_it() -> None:
    group = ConsumerGroup("e1")
    for pair in (KAFKA_MEMBER, KAFKA_EPOCH, KAFKA_CURRENT):
        cr.replay(group, read(pair))
    (member_,) = group.members.values()
    assert (group.group_epoch, member_.member_epoch, member_.client_id) == (2, 2, "rdkafka")
    assert group.current_partition_epoch(ORDERS, 3) == 2
    for record in cr.member_removal("e1", member_.member_id):
        cr.replay(group, record)
    assert group.members == {} and group.partition_epochs == {}


def test_uniform_gives_a_fresh_group_contiguous_runs_as_kafka() -> None:
    """UniformHomogeneousAssignmentBuilder: partitions in order to the members in order,
    each up to its quota (the first ones one more while some remain)."""
    subs = {m: MemberSubscription(frozenset({T1})) for m in ("a", "b", "c")}
    assert assignors.assign("uniform", subs, {T1: 7}, {}) == {
        "a": {T1: frozenset({0, 1, 2})},
        "b": {T1: frozenset({3, 4})},
        "c": {T1: frozenset({5, 6})},
    }


def test_group_configs_of_what_kt_does_not_serve_are_refused() -> None:
    """Dead-letter queues would be expected to act: refused, while the consumer, share and
    streams groups' configs are taken within the broker's bounds, with
    GroupConfig.validate's messages."""
    from kt.broker.group import group_config
    from kt.config import InvalidConfigError, KafkaConfig

    config = KafkaConfig({})
    group_config.validate({"consumer.session.timeout.ms": "50000",
                           "share.record.lock.duration.ms": "20000",
                           "share.auto.offset.reset": "by_duration:PT1H",
                           "share.renew.acknowledge.enable": "false"}, config)  # fmt: skip
    for name, feature in (
        ("errors.deadletterqueue.topic.name", "share groups' dead-letter queues"),
    ):
        with pytest.raises(InvalidConfigError) as refused:
            group_config.validate({name: "1"}, config)
        assert str(refused.value) == f"{name}: kt does not support {feature} yet"
    for overrides, message in (
        ({"share.record.lock.duration.ms": "1000"},
         "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."),
        ({"share.session.timeout.ms": "45000", "share.heartbeat.interval.ms": "15000"}, None),
        ({"share.auto.offset.reset": "none"},
         "Invalid value none for configuration share.auto.offset.reset: Invalid value `none` "
         "for configuration share.auto.offset.reset. The value must be either 'earliest', "
         "'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."),
        ({"share.isolation.level": "serializable"},
         "Invalid value serializable for configuration share.isolation.level: String must be "
         "one of: read_committed, read_uncommitted"),
        ({"streams.num.standby.replicas": "1", "streams.session.timeout.ms": "50000"}, None),
        ({"streams.num.standby.replicas": "3"},
         "streams.num.standby.replicas must be less than or equal to 2"),
        ({"streams.num.standby.replicas": "-1"},
         "Invalid value -1 for configuration streams.num.standby.replicas: Value must be at "
         "least 0"),
        ({"streams.session.timeout.ms": "30000"},
         "streams.session.timeout.ms must be in the range 45000 to 60000 inclusive."),
        ({"streams.assignment.interval.ms": "20000"},
         "streams.assignment.interval.ms must be in the range 0 to 15000 inclusive."),
        ({"streams.assignor.name": "balanced"},
         "streams.assignor.name 'balanced' is not a registered task assignor. Registered "
         "assignors are: [sticky]."),
    ):  # fmt: skip
        if message is None:
            group_config.validate(overrides, config)
            continue
        with pytest.raises(InvalidConfigError) as refused:
            group_config.validate(overrides, config)
        assert str(refused.value) == message
