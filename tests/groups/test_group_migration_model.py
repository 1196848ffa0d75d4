"""KIP-848's online migration without a broker: the embedded consumer protocol's versions,
a classic group converted to a consumer group and back, the checks around both, and a
classic member's commits inside a consumer group."""

from __future__ import annotations

import struct
import uuid

import pytest

from kt.broker.group import consumer_group_records as cr
from kt.broker.group import consumer_protocol, group_migration
from kt.broker.group.consumer_group import (
    ClassicMemberMetadata,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
)
from kt.broker.group.group_metadata import GroupMetadata, GroupState, MemberMetadata
from kt.broker.group.heartbeat_request import GroupError

ORDERS, AUDIT = uuid.UUID(int=7), uuid.UUID(int=8)
_I16, _I32 = struct.Struct(">h"), struct.Struct(">i")


class Topics:
    """The two topics of these tests, as the metadata cache shows them."""

    topics_version = 1
    ids = {"orders": ORDERS, "audit": AUDIT}

    def all_topics(self) -> list[str]:
        return list(self.ids)

    def topic_partitions(self, topic: str) -> dict[int, object]:
        return dict.fromkeys(range(6), None) if topic in self.ids else {}

    def topic_id(self, topic: str) -> uuid.UUID:
        return self.ids[topic]

    def topic_for_id(self, topic_id: uuid.UUID) -> str | None:
        return {v: k for k, v in self.ids.items()}.get(topic_id)


def string(s: str | None) -> bytes:
    return _I16.pack(-1) if s is None else _I16.pack(len(s)) + s.encode()


def subscription_v3(topics: list[str], owned: dict[str, list[int]], rack: str | None,
                    version: int = 3) -> bytes:  # fmt: skip
    """ConsumerProtocolSubscription as the Java consumer writes it, field by field."""
    parts = [_I16.pack(version), _I32.pack(len(topics)), *map(string, topics), _I32.pack(-1),
             _I32.pack(len(owned))]  # fmt: skip
    for topic, ps in owned.items():
        parts += [string(topic), _I32.pack(len(ps)), *(_I32.pack(p) for p in ps)]
    parts += [_I32.pack(5), string(rack)]
    return b"".join(parts)


def test_a_subscription_is_read_at_its_version_and_a_newer_one_as_the_newest() -> None:
    data = subscription_v3(["orders", "audit"], {"orders": [1, 4]}, "rack-a")
    assert consumer_protocol.decode_subscription(data) == consumer_protocol.Subscription(
        ("orders", "audit"), None, (("orders", (1, 4)),), 5, "rack-a"
    )
    newer = subscription_v3(["orders"], {}, None, version=9) + b"fields of version 9"
    assert consumer_protocol.decode_subscription(newer).topics == ("orders",)
    assert consumer_protocol.version_of(newer) == 9
    with pytest.raises(ValueError):
        consumer_protocol.version_of(b"\xff\xff")


def test_an_assignment_is_written_at_the_members_version_up_to_three() -> None:
    written = consumer_protocol.encode_assignment({"orders": [4, 1]}, 9)
    assert written[:2] == _I16.pack(3)
    assert consumer_protocol.decode_assignment(written) == consumer_protocol.Assignment(
        {"orders": (1, 4)}, None
    )
    assert consumer_protocol.decode_assignment(b"") == consumer_protocol.Assignment()


def classic_group(user_data: bytes | None = None) -> GroupMetadata:
    """A Stable classic group in generation 4: a on orders 0-2, b on orders 3-5."""
    holder = GroupMetadata("g", GroupState.STABLE, 0)
    holder.generation_id = 4
    holder.protocol_name = "range"
    for name, partitions in (("a", [0, 1, 2]), ("b", [3, 4, 5])):
        member = MemberMetadata(name, None, "client", "/h", 30000, 10000, "consumer",
                                [("range", subscription_v3(["orders"], {}, None))])  # fmt: skip
        assignment = consumer_protocol.encode_assignment({"orders": partitions}, 3)
        if user_data is not None:
            assignment = assignment[:-4] + _I32.pack(len(user_data)) + user_data
        member.assignment = assignment
        holder.add(member)
    return holder


def test_a_classic_group_becomes_a_consumer_group_where_it_stood() -> None:
    holder = classic_group()
    group = group_migration.consumer_group_from_classic(holder, Topics())
    assert (group.group_epoch, group.assignment_epoch) == (4, 4)
    a = group.members["a"]
    assert (a.member_epoch, a.previous_member_epoch, a.state) == (4, 4, MemberState.STABLE)
    assert a.assigned == group.target["a"] == {ORDERS: frozenset({0, 1, 2})}
    assert a.subscribed_topic_names == ("orders",)
    assert a.classic == ClassicMemberMetadata(10000, tuple(holder.members["a"].protocols))
    assert group.current_partition_epoch(ORDERS, 5) == 4
    records = group_migration.consumer_group_records(group)
    assert [r.type for r in records] == [5, 5, 3, 7, 7, 6, 8, 8]


def test_a_custom_assignors_user_data_stops_the_upgrade() -> None:
    with pytest.raises(GroupError) as refused:
        group_migration.consumer_group_from_classic(classic_group(b"sticky"), Topics())
    assert (refused.value.error, refused.value.message) == (
        "GROUP_ID_NOT_FOUND",
        "Cannot upgrade classic group g to consumer group because an unsupported custom "
        "assignor is in use. Please refer to the documentation or switch to a default "
        "assignor before re-attempting the upgrade.",
    )


@pytest.mark.parametrize(("policy", "message"), [
    ("downgrade", "online upgrade is disabled"),
    ("disabled", "online upgrade is disabled"),
])  # fmt: skip
def test_the_policy_decides_whether_a_classic_group_is_upgraded(policy, message) -> None:
    with pytest.raises(GroupError) as refused:
        group_migration.validate_online_upgrade(classic_group(), policy, 100)
    assert refused.value.message == (
        f"Cannot upgrade classic group g to consumer group because {message}."
    )
    group_migration.validate_online_upgrade(classic_group(), "bidirectional", 100)
    with pytest.raises(GroupError, match="exceeds the consumer group maximum size"):
        group_migration.validate_online_upgrade(classic_group(), "upgrade", 1)


def mixed_group() -> ConsumerGroup:
    """The upgraded group with consumer-protocol member c holding orders 4-5."""
    group = group_migration.consumer_group_from_classic(classic_group(), Topics())
    group.put_member(ConsumerGroupMember("c", member_epoch=5, assigned={ORDERS: frozenset({5})}))
    group.target["c"] = {ORDERS: frozenset({4, 5})}
    group.target["b"] = {ORDERS: frozenset({3})}
    group.group_epoch = group.assignment_epoch = 5
    return group


def test_the_last_consumer_member_leaving_makes_a_classic_group_of_the_rest() -> None:
    group = mixed_group()
    assert group.all_members_use_classic_protocol_except({"c"})
    assert not group.all_members_use_classic_protocol_except({"a"})
    assert group_migration.can_downgrade_after_leaving(group, {"c"}, "bidirectional", 10)
    assert not group_migration.can_downgrade_after_leaving(group, {"c"}, "upgrade", 10)
    assert not group_migration.can_downgrade_after_leaving(group, {"c"}, "downgrade", 1)
    holder = GroupMetadata("g", GroupState.EMPTY, 0)
    assignments = group_migration.fill_classic_group(holder, group, {"c"}, None, Topics(), 99)
    assert (holder.state, holder.generation_id, holder.protocol_name) == (
        GroupState.STABLE, 5, "range")  # fmt: skip
    assert sorted(holder.members) == ["a", "b"]
    assert consumer_protocol.decode_assignment(assignments["b"]).partitions == {"orders": (3,)}
    tombstones = group_migration.classic_group_tombstones(group)
    assert [(r.type, r.sub) for r in tombstones][-1] == (3, None)
    assert all(r.value is None for r in tombstones)


def test_a_classic_member_may_join_only_with_a_protocol_every_classic_member_has() -> None:
    group = mixed_group()
    assert group.supports_classic_protocols("consumer", ["roundrobin", "range"])
    assert not group.supports_classic_protocols("consumer", ["roundrobin"])
    assert not group.supports_classic_protocols("connect", ["range"])


def test_a_classic_members_stale_commit_is_an_illegal_generation() -> None:
    group = mixed_group()
    assert set(group.validate_offset_commit("a", 4, 2, [(ORDERS, 0)]).values()) == {"NONE"}
    assert set(group.validate_offset_commit("a", 5, 2, [(ORDERS, 0)]).values()) == {
        "ILLEGAL_GENERATION"
    }
    assert group.validate_offset_fetch("a", 3) == "ILLEGAL_GENERATION"
    assert group.validate_offset_fetch("c", 3) == "STALE_MEMBER_EPOCH"


# The MemberMetadata record Kafka 4.4 wrote for a librdkafka classic member (protocols
# range and roundrobin) inside consumer group "migrating".
KAFKA_CLASSIC_MEMBER = (
    "000500096d6967726174696e67002c72646b61666b612d34616562333734612d343634372d343263322d"
    "383438372d356664356466386133313034",
    "000000000872646b61666b610b2f3132372e302e302e3102076f726465727301000493e00001005401000017"
    "70030672616e67651d00030000000100066f72646572730000000000000000ffffffff0000000b726f756e64"
    "726f62696e1d00030000000100066f72646572730000000000000000ffffffff00000000",
)


def test_a_classic_members_record_is_read_and_written_as_kafka_writes_it() -> None:
    key, value = (bytes.fromhex(x) for x in KAFKA_CLASSIC_MEMBER)
    record = cr.read_record(key, value)
    assert record is not None and isinstance(record.value, ConsumerGroupMember)
    subscription = consumer_protocol.decode_subscription(record.value.classic.protocols[0][1])
    assert (record.value.classic.session_timeout_ms, subscription.topics) == (6000, ("orders",))
    assert [name for name, _ in record.value.classic.protocols] == ["range", "roundrobin"]
    assert (record.key(), record.value_bytes()) == (key, value)
