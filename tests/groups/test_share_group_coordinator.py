"""Share group membership (KIP-932) over a real replica manager and `__consumer_offsets`
log: members join and share a partition, leave, are fenced when their session expires,
and a coordinator loading the partition holds the group as it was; the request checks
with Kafka's messages."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from kt.broker.group import share_partition_metadata as spm
from kt.broker.group.consumer_group_coordinator import (
    ConsumerGroupCoordinator,
    ConsumerGroupSettings,
)
from kt.broker.group.group_config import GroupConfigs
from kt.broker.group.group_coordinator import GroupCoordinator
from kt.broker.group.group_coordinator_service import GroupCoordinatorService
from kt.broker.group.group_metadata_manager import GroupMetadataManager
from kt.broker.group.heartbeat_request import HeartbeatRequest
from kt.broker.group.share_group import ShareGroupState
from kt.broker.group.share_group_coordinator import (
    ShareGroupCoordinator,
    ShareGroupSettings,
    ShareHeartbeatRequest,
)
from kt.broker.metadata_cache import PartitionState
from kt.broker.share.share_coordinator_service import (
    SHARE_GROUP_STATE_TOPIC,
    ShareCoordinatorService,
)
from kt.broker.share.share_state import SharePartitionKey
from kt.config import KafkaConfig
from tests.groups.test_group_coordinator import coordinator_on, wait_loaded, wait_until

ORDERS = uuid.UUID(int=42)


class Topics:
    """One topic, "orders", of two partitions."""

    topics_version = 1

    def all_topics(self) -> list[str]:
        return ["orders"]

    def topic_partitions(self, topic: str) -> dict[int, object]:
        return {0: None, 1: None} if topic == "orders" else {}

    def topic_id(self, topic: str) -> uuid.UUID:
        return ORDERS

    def topic_for_id(self, topic_id: uuid.UUID) -> str | None:
        return "orders" if topic_id == ORDERS else None


def share_coordinator(manager: GroupMetadataManager, **settings: int) -> ShareGroupCoordinator:
    """A share group coordinator whose share partitions' state a share coordinator on
    the same replica manager initializes (its `__share_group_state` partition led here)."""
    replicas = manager.replica_manager
    states = ShareCoordinatorService(replicas, lambda: 1,
                                     lambda t: 2 if t == ORDERS else None)  # fmt: skip
    replicas.leadership_listeners.append(states.on_leadership_change)
    state = PartitionState(SHARE_GROUP_STATE_TOPIC, 0, 0, 0, [0], [0])
    replicas.become_leader_or_follower(0, 1, [state], {})
    c = ShareGroupCoordinator(manager, Topics(), ShareGroupSettings(**settings), states)
    c.states = states  # type: ignore[attr-defined]
    return c


async def initialized(c: ShareGroupCoordinator, group: str = "sg") -> None:
    """Until the group's share partitions of "orders" have their state initialized."""

    def done() -> bool:
        found = c.describe(group)[2]
        return found is not None and spm.initialized_partitions(found.partition_metadata) == {
            ORDERS: frozenset({0, 1})}  # fmt: skip

    await wait_until(done, "the share partitions initialized")


def beat(member: str, epoch: int, topics: list[str] | None = None, group: str = "sg"):  # type: ignore[no-untyped-def]
    return ShareHeartbeatRequest(group, member, epoch, None, topics, "client", "/h")


def test_members_share_the_partitions_leave_and_are_reloaded(tmp_path) -> None:
    async def scenario() -> None:
        classic, logs = coordinator_on(tmp_path)
        await wait_loaded(classic)
        c = share_coordinator(classic.manager)
        a = await c.heartbeat(beat("a", 0, ["orders"]))
        # nothing to assign until the share partitions' state is initialized
        assert (a.error, a.member_epoch, a.assignment) == ("NONE", 2, {})
        await initialized(c)
        for partition in (0, 1):  # at the group epoch, where share.auto.offset.reset says
            state = c.states.summary(SharePartitionKey("sg", ORDERS, partition))
            assert (state.state_epoch, state.start_offset) == (2, -1)
        a = await c.heartbeat(beat("a", 2))  # a new epoch assigns them
        assert (a.error, a.member_epoch, a.assignment) == ("NONE", 3, {ORDERS: frozenset({0, 1})})
        b = await c.heartbeat(beat("b", 0, ["orders"]))
        assert (b.member_epoch, b.assignment) == (4, {ORDERS: frozenset({1})})
        a = await c.heartbeat(beat("a", 3))  # a takes its share of the new target at once
        assert (a.member_epoch, a.assignment) == (4, {ORDERS: frozenset({0})})
        three = [await c.heartbeat(beat(m, 0, ["orders"])) for m in ("c", "d")]
        assert [r.member_epoch for r in three] == [5, 6]
        _, _, group = c.describe("sg")
        assert group is not None and group.state == ShareGroupState.STABLE
        assert sorted(len(a) for a in group.target.values()) == [1, 1, 1, 1]  # shared by two
        left = await c.heartbeat(beat("d", -1))
        assert (left.error, left.member_epoch) == ("NONE", -1)
        assert sorted(c.describe("sg")[2].members) == ["a", "b", "c"]
        c.shutdown()

        reloaded_manager = GroupMetadataManager(classic.manager.replica_manager, lambda: 1)
        reloaded = share_coordinator(reloaded_manager)
        GroupCoordinatorService(reloaded_manager, GroupCoordinator(reloaded_manager),
                                reloaded).on_election(0, 1)  # fmt: skip
        await wait_until(lambda: not reloaded_manager.loading, "loading")
        group = reloaded.describe("sg")[2]
        assert group is not None and sorted(group.members) == ["a", "b", "c"]
        assert group.group_epoch == 7
        assert spm.initialized_partitions(group.partition_metadata) == {
            ORDERS: frozenset({0, 1})}  # fmt: skip
        again = await reloaded.heartbeat(beat("a", group.members["a"].member_epoch))
        assert again.error == "NONE"
        reloaded.shutdown()
        classic.shutdown()
        logs.shutdown()

    asyncio.run(scenario())


def test_a_member_whose_session_expires_is_fenced(tmp_path) -> None:
    async def scenario() -> None:
        classic, logs = coordinator_on(tmp_path)
        await wait_loaded(classic)
        c = share_coordinator(classic.manager, session_timeout_ms=50)
        await c.heartbeat(beat("a", 0, ["orders"]))
        await wait_until(lambda: c.describe("sg")[2] is None or not c.describe("sg")[2].members,
                         "the member fenced")  # fmt: skip
        gone = await c.heartbeat(beat("a", 2))
        assert (gone.error, gone.message) == ("UNKNOWN_MEMBER_ID",
                                              "Member a is not a member of group sg.")  # fmt: skip
        c.shutdown()
        classic.shutdown()
        logs.shutdown()

    asyncio.run(scenario())


def consumer_beat(group: str) -> HeartbeatRequest:
    """A consumer-protocol member's first heartbeat."""
    return HeartbeatRequest(group, "m", 0, None, None, 5000, ["orders"], None, None, [],
                            "client", "/h")  # fmt: skip


@pytest.mark.parametrize(("request_", "error", "message"), [
    (beat("", 0, ["orders"]), "INVALID_REQUEST", "MemberId can't be empty."),
    (beat("a", 0, None), "INVALID_REQUEST", "SubscribedTopicNames must be set in first request."),
    (beat("a", -2), "INVALID_REQUEST", "MemberEpoch is invalid."),
    (beat("a", 7), "FENCED_MEMBER_EPOCH", "The share group member has a greater member epoch (7) "
     "than the one known by the group coordinator (2). The member must abandon all its "
     "partitions and rejoin."),
    (beat("a", 0, ["orders"], group="cg"), "GROUP_ID_NOT_FOUND",
     "Group cg is not a share group."),
])  # fmt: skip
def test_a_refused_heartbeat_says_why(tmp_path, request_, error, message) -> None:
    async def scenario() -> None:
        classic, logs = coordinator_on(tmp_path)
        await wait_loaded(classic)
        c = share_coordinator(classic.manager)
        await c.heartbeat(beat("a", 0, ["orders"]))
        consumers = ConsumerGroupCoordinator(classic.manager, Topics(), ConsumerGroupSettings(),
                                             GroupConfigs(KafkaConfig({})), classic)  # fmt: skip
        joined = await consumers.heartbeat(consumer_beat("cg"))
        assert joined.error == "NONE"
        refused = await c.heartbeat(request_)
        assert (refused.error, refused.message) == (error, message)
        assert (await consumers.heartbeat(consumer_beat("sg"))).error == "GROUP_ID_NOT_FOUND"
        c.shutdown()
        consumers.shutdown()
        classic.shutdown()
        logs.shutdown()

    asyncio.run(scenario())
