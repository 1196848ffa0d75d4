"""Share groups' parts without a broker: their records of `__consumer_offsets`, read as
Kafka 4.4 wrote them and written as it writes them, and their replay."""

from __future__ import annotations

import uuid

import pytest

from kt.broker.group import consumer_group_records as cr
from kt.broker.group import share_assignor
from kt.broker.group import share_group_records as sr
from kt.broker.group.share_group import ShareGroup, ShareGroupMember, ShareGroupState

# Records Kafka 4.4 wrote for a confluent-kafka ShareConsumer (member 9USiH7eWTr2YO76lLju/Pg)
# of share group "sg" on topic "orders" (two partitions): its subscription, the group
# epoch, its target, the assignment epoch, its current assignment, and after it left the
# epoch and assignment epoch of the empty group.
MEMBER_ID = "9USiH7eWTr2YO76lLju/Pg"
KEY_OF_MEMBER = "0002736700163955536948376557547232594f37366c4c6a752f5067"
KAFKA_RECORDS = [
    ("000a" + KEY_OF_MEMBER, "0000000872646b61666b610b2f3132372e302e302e3102076f726465727300"),
    ("000b00027367", "0000000000021ef23f72e2305e5200"),
    ("000d" + KEY_OF_MEMBER, "00000253227bad34de4e0b999ff52fd90678ce0300000000000000010000"),
    ("000c00027367", "000000000003010008000001a2247d156e"),
    ("000e" + KEY_OF_MEMBER,
     "00000000000300000002000253227bad34de4e0b999ff52fd90678ce0300000000000000010000"),
    ("000e" + KEY_OF_MEMBER, None),
    ("000d" + KEY_OF_MEMBER, None),
    ("000a" + KEY_OF_MEMBER, None),
    ("000b00027367", "000000000004000000000000000000"),
    ("000c00027367", "00000000000400"),
]  # fmt: skip
ORDERS = uuid.UUID("53227bad-34de-4e0b-999f-f52fd90678ce")


def read(pair: tuple[str, str | None]) -> sr.ShareRecord:
    key, value = pair
    found = sr.read_record(bytes.fromhex(key), bytes.fromhex(value) if value else None)
    assert found is not None
    return found


@pytest.mark.parametrize("pair", KAFKA_RECORDS, ids=lambda p: p[0][:4])
def test_what_kt_writes_is_what_kafka_wrote(pair) -> None:
    record = read(pair)
    written = record.value_bytes()
    assert (record.key().hex(), written.hex() if written else None) == pair


def test_replaying_kafkas_records_rebuilds_the_group_and_its_end() -> None:
    group = ShareGroup("sg")
    for pair in KAFKA_RECORDS[:5]:
        sr.replay(group, read(pair))
    assert group.members == {MEMBER_ID: ShareGroupMember(
        MEMBER_ID, client_id="rdkafka", client_host="/127.0.0.1",
        subscribed_topic_names=("orders",), member_epoch=3, previous_member_epoch=2,
        assigned={ORDERS: frozenset({0, 1})},
    )}  # fmt: skip
    assert (group.group_epoch, group.assignment_epoch, group.state) == (
        2, 3, ShareGroupState.STABLE)  # fmt: skip
    assert group.target == {MEMBER_ID: {ORDERS: frozenset({0, 1})}}
    for pair in KAFKA_RECORDS[5:]:
        sr.replay(group, read(pair))
    assert (group.members, group.group_epoch, group.assignment_epoch, group.state) == (
        {}, 4, 4, ShareGroupState.EMPTY)  # fmt: skip


def test_consumer_group_records_are_not_share_records() -> None:
    key = cr.group_epoch("g", 1, 0).key()
    assert sr.read_record(key, None) is None


# -- the simple assignor ----------------------------------------------------------------------

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


def test_more_members_than_partitions_share_each_partition_evenly() -> None:
    subs = {m: frozenset({T1}) for m in "abcde"}
    target = share_assignor.assign(subs, {T1: 2}, {})
    holders = sorted(sum(1 for a in target.values() if p in a.get(T1, ())) for p in (0, 1))
    assert holders == [3, 3]  # sharing 3 = ceil(5 / 2): each partition to three members
    assert sorted(len(a.get(T1, ())) for a in target.values()) == [1, 1, 1, 1, 2]


def test_members_keep_what_they_had_as_far_as_the_balance_allows() -> None:
    subs = {m: frozenset({T1}) for m in "ab"}
    first = share_assignor.assign(subs, {T1: 6}, {})
    assert sorted(len(a[T1]) for a in first.values()) == [3, 3]
    subs["c"] = frozenset({T1})
    second = share_assignor.assign(subs, {T1: 6}, first)
    assert all(second[m][T1] <= first[m][T1] for m in "ab")
    assert sorted(len(a[T1]) for a in second.values()) == [2, 2, 2]


def test_with_different_subscriptions_each_topic_goes_to_its_subscribers() -> None:
    target = share_assignor.assign({"a": frozenset({T1}), "b": frozenset({T1, T2})},
                                   {T1: 2, T2: 2}, {})  # fmt: skip
    assert T2 not in target["a"] and target["b"][T2] == frozenset({0, 1})
    assert target["a"][T1] | target["b"][T1] == frozenset({0, 1})
