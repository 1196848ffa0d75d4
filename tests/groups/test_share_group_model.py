"""Share groups' parts without a broker: their records of `__consumer_offsets`, read as
Kafka 4.4 wrote them and written as it writes them, and their replay."""

from __future__ import annotations

import uuid

import pytest

from kt.broker.group import consumer_group_records as cr
from kt.broker.group import share_assignor
from kt.broker.group import share_group_records as sr
from kt.broker.group import share_partition_metadata as spm
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

# The ShareGroupStatePartitionMetadata records Kafka 4.4 wrote for share group "sg" when its
# first member subscribed to "share-0" (two partitions): both partitions initializing, then
# initialized.
SHARE_0 = uuid.UUID("681c0d23-8ca6-4e08-94de-5e98a33a22ab")
KAFKA_PARTITION_METADATA = [
    ("000f00027367",
     "000002681c0d238ca64e0894de5e98a33a22ab0873686172652d3003000000000000000100010100"),
    ("000f00027367",
     "00000102681c0d238ca64e0894de5e98a33a22ab0873686172652d30030000000000000001000100"),
]  # fmt: skip


def read(pair: tuple[str, str | None]) -> sr.ShareRecord:
    key, value = pair
    found = sr.read_record(bytes.fromhex(key), bytes.fromhex(value) if value else None)
    assert found is not None
    return found


@pytest.mark.parametrize("pair", KAFKA_RECORDS + KAFKA_PARTITION_METADATA,
                         ids=lambda p: p[0][:4])  # fmt: skip
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


def test_the_partition_metadata_records_say_what_is_initialized() -> None:
    group = ShareGroup("sg")
    sr.replay(group, read(KAFKA_PARTITION_METADATA[0]))
    info = group.partition_metadata
    assert info.initializing[SHARE_0].partitions == frozenset({0, 1}) and not info.initialized
    assert spm.initialized_partitions(info) == {}
    sr.replay(group, read(KAFKA_PARTITION_METADATA[1]))
    assert spm.initialized_partitions(group.partition_metadata) == {SHARE_0: frozenset({0, 1})}
    assert not group.partition_metadata.initializing


def test_initialization_moves_partitions_as_kafka_does() -> None:
    """subscribedTopicsChangeMap, initialize and uninitializeShareGroupState: partitions
    already initialized or recently asked for are not asked again; a stale request is;
    a new partition of a known topic starts at offset 0, a new topic at -1."""
    topics = {"share-0": (SHARE_0, 2)}
    change = spm.topics_to_initialize(None, ["share-0", "gone"], topics, now=1000)
    assert change == {SHARE_0: spm.InitTopic("share-0", frozenset({0, 1}), 1000)}
    asked = spm.with_initializing(None, change)
    assert spm.initialize_request("sg", 2, None, change).topics == {
        SHARE_0: (frozenset({0, 1}), -1)}  # fmt: skip
    assert spm.topics_to_initialize(asked, ["share-0"], topics, now=2000) == {}
    again = spm.topics_to_initialize(asked, ["share-0"], topics, now=31000)  # 30 s on
    assert again == {SHARE_0: spm.InitTopic("share-0", frozenset({0, 1}), 31000)}
    done = spm.with_initialized(asked, {SHARE_0: change[SHARE_0]})
    assert (done.initializing, spm.initialized_partitions(done)) == (
        {}, {SHARE_0: frozenset({0, 1})})  # fmt: skip
    grown = spm.topics_to_initialize(done, ["share-0"], {"share-0": (SHARE_0, 3)}, now=5000)
    assert grown == {SHARE_0: spm.InitTopic("share-0", frozenset({2}), 5000)}
    assert spm.initialize_request("sg", 4, done, grown).topics == {SHARE_0: (frozenset({2}), 0)}
    failed = spm.without_initializing(spm.with_initializing(done, grown), {SHARE_0: {2}})
    assert failed == done
    assert spm.without_initializing(done, {SHARE_0: {2}}) is None  # nothing initializing


def test_assignment_waits_for_initialized_partitions() -> None:
    info = spm.SharePartitionMetadata(initialized={
        SHARE_0: spm.InitTopic("share-0", frozenset({0, 1}))})  # fmt: skip
    assert spm.assignment_pending(info, {"share-0"}, [{SHARE_0: frozenset({0})}])
    assert not spm.assignment_pending(info, {"share-0"}, [{SHARE_0: frozenset({0, 1})}])
    assert not spm.assignment_pending(info, {"other"}, [])


def test_consumer_group_records_are_not_share_records() -> None:
    key = cr.group_epoch("g", 1, 0).key()
    assert sr.read_record(key, None) is None


# -- the simple assignor ----------------------------------------------------------------------

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


def test_more_members_than_partitions_share_each_partition_evenly() -> None:
    subs = {m: frozenset({T1}) for m in "abcde"}
    target = share_assignor.assign(subs, {T1: range(2)}, {})
    holders = sorted(sum(1 for a in target.values() if p in a.get(T1, ())) for p in (0, 1))
    assert holders == [3, 3]  # sharing 3 = ceil(5 / 2): each partition to three members
    assert sorted(len(a.get(T1, ())) for a in target.values()) == [1, 1, 1, 1, 2]


def test_members_keep_what_they_had_as_far_as_the_balance_allows() -> None:
    subs = {m: frozenset({T1}) for m in "ab"}
    first = share_assignor.assign(subs, {T1: range(6)}, {})
    assert sorted(len(a[T1]) for a in first.values()) == [3, 3]
    subs["c"] = frozenset({T1})
    second = share_assignor.assign(subs, {T1: range(6)}, first)
    assert all(second[m][T1] <= first[m][T1] for m in "ab")
    assert sorted(len(a[T1]) for a in second.values()) == [2, 2, 2]


def test_with_different_subscriptions_each_topic_goes_to_its_subscribers() -> None:
    target = share_assignor.assign({"a": frozenset({T1}), "b": frozenset({T1, T2})},
                                   {T1: range(2), T2: range(2)}, {})  # fmt: skip
    assert T2 not in target["a"] and target["b"][T2] == frozenset({0, 1})
    assert target["a"][T1] | target["b"][T1] == frozenset({0, 1})
