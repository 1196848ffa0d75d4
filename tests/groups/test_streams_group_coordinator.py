"""Streams group membership (KIP-1071) over a real replica manager and `__consumer_offsets`
log: the first member's topology configured against the topics (missing internal topics
reported, then ready once they exist), tasks assigned and moved between members one
heartbeat at a time (a task is held back until its owner revokes it), the initial
rebalance delay, leaving, static members, session expiry, a coordinator loading the
partition holding the group as it was, offset commits checked against the members'
epochs; the request checks with Kafka 4.4's messages."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from kt.broker.group import group_admin
from kt.broker.group import streams_group_records as sr
from kt.broker.group import streams_topology as st
from kt.broker.group.group_coordinator import GroupCoordinator
from kt.broker.group.group_coordinator_service import GroupCoordinatorService
from kt.broker.group.group_metadata_manager import GroupMetadataManager
from kt.broker.group.heartbeat_request import GroupError
from kt.broker.group.offsets_records import OffsetAndMetadata
from kt.broker.group.streams_current_assignment import MemberState
from kt.broker.group.streams_group import ASSIGNING, EMPTY_STATE, NOT_READY, STABLE
from kt.broker.group.streams_group_coordinator import StreamsGroupCoordinator, StreamsGroupSettings
from kt.broker.group.streams_heartbeat_request import StreamsHeartbeatRequest, validate
from tests.groups.test_group_coordinator import coordinator_on, wait_loaded, wait_until

V = sr.TopologyValue
CHANGELOG = "app-store-changelog"
REPARTITION = "app-store-repartition"


class Topics:
    """The cluster's topics: "lines" of two partitions, and what the test creates."""

    def __init__(self) -> None:
        self.partitions = {"lines": 2}
        self.topics_version = 1

    def create(self, name: str, partitions: int) -> None:
        self.partitions[name] = partitions
        self.topics_version += 1

    def all_topics(self) -> list[str]:
        return list(self.partitions)

    def topic_partitions(self, topic: str) -> dict[int, object]:
        return dict.fromkeys(range(self.partitions.get(topic, 0)))

    def topic_id(self, topic: str) -> uuid.UUID:
        return uuid.UUID(int=hash(topic) & 0xFFFF)

    def topic_for_id(self, topic_id: uuid.UUID) -> str | None:
        return next((t for t in self.partitions if self.topic_id(t) == topic_id), None)


def stateless(epoch: int = 0) -> object:
    """One subtopology reading "lines": two tasks, no state."""
    return V(
        epoch=epoch, subtopologies=[V.Subtopology(subtopology_id="0", source_topics=["lines"])]
    )


def word_count() -> object:
    """The word count: "lines" repartitioned by word into a counting subtopology whose
    store has a changelog."""
    return V(epoch=0, subtopologies=[
        V.Subtopology(subtopology_id="0", source_topics=["lines"],
                      repartition_sink_topics=[REPARTITION]),
        V.Subtopology(subtopology_id="1",
                      repartition_source_topics=[V.TopicInfo(name=REPARTITION)],
                      state_changelog_topics=[V.TopicInfo(name=CHANGELOG, topic_configs=[
                          V.TopicConfig(key="cleanup.policy", value="compact")])]),
    ])  # fmt: skip


def coordinator(manager: GroupMetadataManager, topics: Topics | None = None,
                **settings: int) -> StreamsGroupCoordinator:  # fmt: skip
    settings.setdefault("initial_rebalance_delay_ms", 0)
    settings.setdefault("assignment_interval_ms", 0)
    return StreamsGroupCoordinator(manager, topics or Topics(), StreamsGroupSettings(**settings))


def beat(member: str, epoch: int, topology: object = None, process: str | None = None,
         owned: dict | None = None, group: str = "app",
         **fields: object) -> StreamsHeartbeatRequest:  # fmt: skip
    """A heartbeat as Kafka Streams sends it: the topology and process when joining, the
    tasks it owns (active only here) when it says."""
    tasks = {} if owned is None else {"active_tasks": owned, "standby_tasks": {},
                                      "warmup_tasks": {}}  # fmt: skip
    return StreamsHeartbeatRequest(
        group, member, epoch, topology=topology,
        rebalance_timeout_ms=fields.pop("rebalance_timeout_ms", 30000 if epoch == 0 else -1),  # type: ignore[arg-type]
        process_id=process if process is not None else (member if epoch == 0 else None),
        client_id="client", client_host="/h", **tasks, **fields,  # type: ignore[arg-type]
    )  # fmt: skip


def active(result: object) -> dict[str, set[int]] | None:
    return None if result.assignment is None else result.assignment[0]  # type: ignore[attr-defined]


def test_members_join_move_tasks_leave_and_are_reloaded(tmp_path) -> None:
    async def scenario() -> None:
        classic, _ = coordinator_on(tmp_path)
        await wait_loaded(classic)
        c = coordinator(classic.manager)
        a = await c.heartbeat(beat("a", 0, stateless()))
        assert (a.error, a.member_epoch, active(a), a.statuses) == ("NONE", 2, {"0": {0, 1}}, [])
        b = await c.heartbeat(beat("b", 0, stateless()))
        # b's target is task 1, which a still runs: b waits for it
        assert (b.member_epoch, active(b)) == (3, {})
        group = c.describe("app")[2]
        assert group is not None and group.target_assignment["b"].active == {"0": {1}}
        a = await c.heartbeat(beat("a", 2, owned={"0": {0, 1}}))
        assert (a.member_epoch, active(a)) == (2, {"0": {0}})  # revoke 1 first
        assert group.members["a"].state == MemberState.UNREVOKED_TASKS
        a = await c.heartbeat(beat("a", 2, owned={"0": {0}}))
        assert (a.member_epoch, active(a)) == (3, None)  # revoked: the next epoch
        b = await c.heartbeat(beat("b", 3, owned={}))
        assert (b.member_epoch, active(b)) == (3, {"0": {1}})
        assert group.state == STABLE
        left = await c.heartbeat(beat("b", -1))
        assert (left.error, left.member_epoch) == ("NONE", -1)
        assert sorted(group.members) == ["a"] and group.group_epoch == 4
        a = await c.heartbeat(beat("a", 3, owned={"0": {0}}))
        assert (a.member_epoch, active(a)) == (4, {"0": {0, 1}})
        c.shutdown()

        reloaded_manager = GroupMetadataManager(classic.manager.replica_manager, lambda: 1)
        reloaded = coordinator(reloaded_manager)
        GroupCoordinatorService(reloaded_manager, GroupCoordinator(reloaded_manager),
                                reloaded).on_election(0, 1)  # fmt: skip
        await wait_until(lambda: not reloaded_manager.loading, "loading")
        again = reloaded.describe("app")[2]
        assert again is not None
        assert (again.group_epoch, again.assignment_epoch, sorted(again.members)) == (4, 4, ["a"])
        member = again.members["a"]
        assert (member.member_epoch, member.assigned.active) == (4, {"0": {0: 2, 1: 4}})
        assert again.topology == stateless() and again.state == STABLE
        # the reloaded coordinator fits the topology afresh and goes on from the epochs
        a = await reloaded.heartbeat(beat("a", 4, owned={"0": {0, 1}}))
        assert (a.error, a.member_epoch) == ("NONE", 4)
        reloaded.shutdown()

    asyncio.run(scenario())


def test_missing_internal_topics_are_reported_then_the_topology_is_ready(tmp_path) -> None:
    async def scenario() -> None:
        classic, _ = coordinator_on(tmp_path)
        await wait_loaded(classic)
        topics = Topics()
        c = coordinator(classic.manager, topics)
        a = await c.heartbeat(beat("a", 0, word_count()))
        # named in the order of Kafka's HashMap of them
        missing = f"Internal topics are missing: {REPARTITION}, {CHANGELOG}"
        assert (a.error, a.member_epoch, active(a)) == ("NONE", 2, {})
        assert a.statuses == [(st.MISSING_INTERNAL_TOPICS, missing)]
        created = a.topics_to_create
        assert sorted(created) == [CHANGELOG, REPARTITION]
        # a changelog has its subtopology's tasks; the repartition topic its writers'
        assert (created[CHANGELOG].partitions, created[REPARTITION].partitions) == (2, 2)
        assert created[CHANGELOG].configs == {"cleanup.policy": "compact"}
        assert c.describe("app")[2].state == NOT_READY
        again = await c.heartbeat(beat("a", 2))  # nothing changed: reported again
        assert again.statuses == [(st.MISSING_INTERNAL_TOPICS, missing)]
        topics.create(CHANGELOG, 2)
        topics.create(REPARTITION, 2)
        ready = await c.heartbeat(beat("a", 2))
        assert (ready.member_epoch, ready.statuses, ready.topics_to_create) == (3, [], {})
        assert active(ready) == {"0": {0, 1}, "1": {0, 1}}
        c.shutdown()

    asyncio.run(scenario())


def test_new_partitions_of_a_source_topic_bring_new_tasks(tmp_path) -> None:
    async def scenario() -> None:
        classic, _ = coordinator_on(tmp_path)
        await wait_loaded(classic)
        topics = Topics()
        c = coordinator(classic.manager, topics)
        a = await c.heartbeat(beat("a", 0, stateless()))
        assert (a.member_epoch, active(a)) == (2, {"0": {0, 1}})
        a = await c.heartbeat(beat("a", 2, owned={"0": {0, 1}}))
        assert (a.member_epoch, active(a)) == (2, None)  # nothing changed
        topics.create("lines", 3)
        a = await c.heartbeat(beat("a", 2, owned={"0": {0, 1}}))
        assert (a.member_epoch, active(a)) == (3, {"0": {0, 1, 2}})
        c.shutdown()

    asyncio.run(scenario())


def test_the_initial_rebalance_delay_holds_the_first_assignment(tmp_path) -> None:
    async def scenario() -> None:
        classic, _ = coordinator_on(tmp_path)
        await wait_loaded(classic)
        c = coordinator(classic.manager, initial_rebalance_delay_ms=300)
        a = await c.heartbeat(beat("a", 0, stateless()))
        delayed = (
            st.ASSIGNMENT_DELAYED,
            "Assignment delayed due to the configured initial rebalance delay.",
        )
        assert (a.member_epoch, active(a), a.statuses) == (1, {}, [delayed])
        b = await c.heartbeat(beat("b", 0, stateless()))
        assert (b.member_epoch, b.statuses) == (1, [delayed])
        group = c.describe("app")[2]
        assert group.state == ASSIGNING
        await wait_until(lambda: group.assignment_epoch == 3, "the delayed assignment", 5)
        a = await c.heartbeat(beat("a", 1, owned={}))
        b = await c.heartbeat(beat("b", 1, owned={}))
        # both members in the first assignment: one task each, nothing moved twice
        assert (a.member_epoch, b.member_epoch) == (3, 3)
        assert sorted(min(active(r)["0"]) for r in (a, b)) == [0, 1]
        c.shutdown()

    asyncio.run(scenario())


def test_an_expired_session_fences_the_member_and_its_tasks_move(tmp_path) -> None:
    async def scenario() -> None:
        classic, _ = coordinator_on(tmp_path)
        await wait_loaded(classic)
        c = coordinator(classic.manager, session_timeout_ms=200)
        await c.heartbeat(beat("a", 0, stateless()))
        b = await c.heartbeat(beat("b", 0, stateless()))
        group = c.describe("app")[2]
        deadline = asyncio.get_running_loop().time() + 10
        while "a" in group.members:  # b keeps its session; a stops heartbeating
            assert asyncio.get_running_loop().time() < deadline, "a never fenced"
            b = await c.heartbeat(beat("b", b.member_epoch, owned=active(b) or {}))
            assert b.error == "NONE", b.message
            await asyncio.sleep(0.05)
        b = await c.heartbeat(beat("b", b.member_epoch, owned={"0": {1}}))
        assert set(group.members["b"].assigned.active["0"]) == {0, 1}
        c.shutdown()

    asyncio.run(scenario())


def test_a_static_member_keeps_its_tasks_across_a_restart(tmp_path) -> None:
    async def scenario() -> None:
        classic, _ = coordinator_on(tmp_path)
        await wait_loaded(classic)
        c = coordinator(classic.manager)
        await c.heartbeat(beat("a", 0, stateless(), instance_id="i-1"))
        b = await c.heartbeat(beat("b", 0, stateless(), instance_id="i-2"))
        await c.heartbeat(beat("a", 2, owned={"0": {0, 1}}, instance_id="i-1"))
        await c.heartbeat(beat("a", 2, owned={"0": {0}}, instance_id="i-1"))
        b = await c.heartbeat(beat("b", b.member_epoch, owned={}, instance_id="i-2"))
        assert active(b) == {"0": {1}}
        gone = await c.heartbeat(beat("b", -2, instance_id="i-2"))
        assert (gone.error, gone.member_epoch) == ("NONE", -2)
        taken = await c.heartbeat(beat("c", 0, stateless(), instance_id="i-1"))
        assert taken.error == "UNRELEASED_INSTANCE_ID"
        assert taken.message == ("Static member c with instance id i-1 cannot join the group "
                                 "because the instance id is owned by a member.")  # fmt: skip
        back = await c.heartbeat(beat("b2", 0, stateless(), process="b", instance_id="i-2"))
        group = c.describe("app")[2]
        assert (back.error, active(back)) == ("NONE", {"0": {1}})
        assert sorted(group.members) == ["a", "b2"] and group.group_epoch == 3  # no rebalance
        fenced = await c.heartbeat(beat("b", 3, instance_id="i-2"))
        assert (fenced.error, fenced.message) == (
            "FENCED_INSTANCE_ID",
            "Static member b with instance id i-2 was fenced by member b2.",
        )
        c.shutdown()

    asyncio.run(scenario())


def test_offset_commits_are_checked_against_the_member_epochs(tmp_path) -> None:
    async def scenario() -> None:
        classic, _ = coordinator_on(tmp_path)
        await wait_loaded(classic)
        c = coordinator(classic.manager)
        await c.heartbeat(beat("a", 0, stateless()))
        await c.heartbeat(beat("b", 0, stateless()))
        offsets = {("lines", 0): OffsetAndMetadata(5), ("lines", 1): OffsetAndMetadata(5)}

        async def commit(member: str, epoch: int, version: int = 9) -> dict:
            return await group_admin.commit_offsets(classic, "app", member, None, epoch,
                                                    offsets, version)  # fmt: skip

        assert await commit("a", 2) == dict.fromkeys(offsets, "NONE")
        assert await commit("x", 2) == dict.fromkeys(offsets, "UNKNOWN_MEMBER_ID")
        assert await commit("a", 7) == dict.fromkeys(offsets, "STALE_MEMBER_EPOCH")
        assert await commit("a", 2, 8) == dict.fromkeys(offsets, "UNSUPPORTED_VERSION")
        await c.heartbeat(beat("a", 2, owned={"0": {0, 1}}))
        await c.heartbeat(beat("a", 2, owned={"0": {0}}))  # a is at epoch 3 holding task 0
        # an older epoch commits the tasks held since it, not the ones given up
        assert await commit("a", 2) == {("lines", 0): "NONE", ("lines", 1): "STALE_MEMBER_EPOCH"}
        fetched = group_admin.fetch_offsets(classic, "app", None, member_id="a", member_epoch=2)
        assert fetched.error == "STALE_MEMBER_EPOCH"
        fetched = group_admin.fetch_offsets(classic, "app", None, member_id="a", member_epoch=3)
        assert (fetched.error, fetched.offsets[("lines", 0)].offset) == ("NONE", 5)
        await c.heartbeat(beat("b", -1))
        await c.heartbeat(beat("a", 3, owned={"0": {0}}))  # task 1 is a's from epoch 4
        assert await commit("a", 3) == {("lines", 0): "NONE", ("lines", 1): "STALE_MEMBER_EPOCH"}
        assert await commit("a", 4) == dict.fromkeys(offsets, "NONE")
        others = {("other", 0): OffsetAndMetadata(1)}
        assert await group_admin.commit_offsets(classic, "app", "", None, -1, others) == {
            ("other", 0): "UNKNOWN_MEMBER_ID"
        }  # an outsider's commit while members run
        holder = classic.manager.get_group("app")
        holder.offsets[("other", 0)] = OffsetAndMetadata(1, commit_timestamp=0)
        # retention spares the topics the topology reads while the group has members
        assert holder.expired_offsets(10**13, 1000) == [("other", 0)]
        await c.heartbeat(beat("a", -1))
        assert sorted(holder.expired_offsets(10**13, 1000)) == [("lines", 0), ("lines", 1),
                                                               ("other", 0)]  # fmt: skip
        c.shutdown()

    asyncio.run(scenario())


@pytest.mark.parametrize(("request_", "error", "message"), [
    (beat("a", 0, stateless(), rebalance_timeout_ms=-1), "INVALID_REQUEST",
     "RebalanceTimeoutMs must be provided in first request."),
    (beat("a", 0, None), "INVALID_REQUEST", "Topology must be non-null when (re-)joining."),
    (beat("a", 0, stateless(), owned={"0": {0}}), "INVALID_REQUEST",
     "ActiveTasks must be empty when (re-)joining."),
    (beat("a", 3, stateless()), "INVALID_REQUEST",
     "Topology can only be provided when (re-)joining."),
    (beat("a", -2), "INVALID_REQUEST", "InstanceId can't be null."),
    (beat("a", -3), "INVALID_REQUEST",
     "MemberEpoch is -3, but must be greater than or equal to -2."),
    (beat(" ", 1), "INVALID_REQUEST", "MemberId can't be empty."),
    (StreamsHeartbeatRequest("app", "a", 1, active_tasks={}), "INVALID_REQUEST",
     "If one task-type is non-null, all must be non-null."),
    (beat("a", 0, V(epoch=0, subtopologies=[V.Subtopology(subtopology_id="0",
                                                           source_topic_regex=["l.*"])])),
     "INVALID_REQUEST", "Regular expressions for source topics are not supported yet."),
    (beat("a", 0, V(epoch=0, subtopologies=[V.Subtopology(
        subtopology_id="0", source_topics=["lines"],
        state_changelog_topics=[V.TopicInfo(name="c", partitions=3)])])),
     "STREAMS_INVALID_TOPOLOGY",
     "Changelog topic c must have an undefined partition count, but it is set to 3."),
])  # fmt: skip
def test_requests_are_checked_with_kafkas_messages(request_, error: str, message: str) -> None:
    with pytest.raises(GroupError) as refused:
        validate(request_)
    assert (refused.value.error, refused.value.message) == (error, message)


def test_a_member_may_not_change_the_topology(tmp_path) -> None:
    async def scenario() -> None:
        classic, _ = coordinator_on(tmp_path)
        await wait_loaded(classic)
        c = coordinator(classic.manager)
        await c.heartbeat(beat("a", 0, stateless()))
        other = V(epoch=0, subtopologies=[V.Subtopology(subtopology_id="0",
                                                        source_topics=["words"])])  # fmt: skip
        changed = await c.heartbeat(beat("b", 0, other))
        assert (changed.error, changed.message) == (
            "INVALID_REQUEST",
            "Topology updates are not supported yet.",
        )
        stale = await c.heartbeat(beat("b", 0, stateless(epoch=0)))
        assert stale.error == "NONE"
        newer = await c.heartbeat(beat("c", 0, stateless(epoch=1)))
        assert (newer.error, newer.message) == (
            "INVALID_REQUEST",
            "Topology updates are not supported yet.",
        )
        unknown = await c.heartbeat(beat("z", 5))
        assert (unknown.error, unknown.message) == (
            "UNKNOWN_MEMBER_ID",
            "Member z is not a member of group app.",
        )
        ahead = await c.heartbeat(beat("a", 9))
        assert ahead.error == "FENCED_MEMBER_EPOCH"
        missing = await c.heartbeat(StreamsHeartbeatRequest("nope", "a", 1))
        assert (missing.error, missing.message) == (
            "GROUP_ID_NOT_FOUND",
            "Streams group nope not found.",
        )
        c.shutdown()
        assert c.describe("none")[:2] == ("GROUP_ID_NOT_FOUND", "Group none not found.")
        assert c.describe("app")[2].state != EMPTY_STATE

    asyncio.run(scenario())


def test_a_group_id_is_of_one_kind(tmp_path) -> None:
    """A streams group's id is not a consumer, share or classic group's, and the reverse:
    GROUP_ID_NOT_FOUND (INCONSISTENT_GROUP_PROTOCOL for a classic member), with Kafka's
    messages."""
    from kt.broker.group.consumer_group_coordinator import (
        ConsumerGroupCoordinator,
        ConsumerGroupSettings,
    )
    from kt.broker.group.group_config import GroupConfigs
    from kt.config import KafkaConfig
    from tests.groups.test_share_group_coordinator import (
        beat as share_beat,
    )
    from tests.groups.test_share_group_coordinator import (
        consumer_beat,
        share_coordinator,
    )

    async def scenario() -> None:
        classic, _ = coordinator_on(tmp_path)
        await wait_loaded(classic)
        c = coordinator(classic.manager)
        consumers = ConsumerGroupCoordinator(classic.manager, Topics(), ConsumerGroupSettings(),
                                             GroupConfigs(KafkaConfig({})), classic)  # fmt: skip
        shares = share_coordinator(classic.manager)
        assert (await c.heartbeat(beat("a", 0, stateless()))).error == "NONE"
        assert (await consumers.heartbeat(consumer_beat("cg"))).error == "NONE"
        refused = await consumers.heartbeat(consumer_beat("app"))
        assert (refused.error, refused.message) == (
            "GROUP_ID_NOT_FOUND",
            "Group app is not a consumer group.",
        )
        refused = await shares.heartbeat(share_beat("s", 0, ["orders"], group="app"))
        assert (refused.error, refused.message) == (
            "GROUP_ID_NOT_FOUND",
            "Group app is not a share group.",
        )
        joined = await classic.join_group("app", "", None, True, "c", "/h", 5000, 10000,
                                          "consumer", [("range", b"")])  # fmt: skip
        assert joined.error == "INCONSISTENT_GROUP_PROTOCOL"
        other = StreamsHeartbeatRequest("cg", "b", 0, topology=stateless(),
                                        rebalance_timeout_ms=1000)  # fmt: skip
        refused = await c.heartbeat(other)
        assert (refused.error, refused.message) == (
            "GROUP_ID_NOT_FOUND",
            "Group cg is not a streams group.",
        )
        for coordinator_ in (c, consumers, shares, classic):
            coordinator_.shutdown()

    asyncio.run(scenario())


def test_offsets_retention_deletes_empty_streams_groups_only(tmp_path) -> None:
    """The retention pass (cleanupGroupMetadata) deletes a streams group once it is empty
    and without offsets, never one with members, and never a share group
    (ShareGroup.shouldExpire)."""
    from tests.groups.test_share_group_coordinator import beat as share_beat
    from tests.groups.test_share_group_coordinator import share_coordinator

    async def scenario() -> None:
        classic, _ = coordinator_on(tmp_path)
        await wait_loaded(classic)
        c = coordinator(classic.manager)
        shares = share_coordinator(classic.manager)
        assert (await shares.heartbeat(share_beat("s", 0, ["orders"]))).error == "NONE"
        assert (await c.heartbeat(beat("a", 0, stateless()))).error == "NONE"
        assert (await c.heartbeat(beat("b", 0, stateless(), group="gone"))).error == "NONE"
        assert (await c.heartbeat(beat("b", -1, group="gone"))).error == "NONE"
        await classic.manager.cleanup_expired_offsets(1000)
        assert c.describe("gone")[0] == "GROUP_ID_NOT_FOUND"
        assert c.describe("app")[2] is not None and shares.describe("sg")[2] is not None
        for coordinator_ in (c, shares, classic):
            coordinator_.shutdown()

    asyncio.run(scenario())
