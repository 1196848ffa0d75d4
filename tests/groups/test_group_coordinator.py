"""The coordinator's state machine over a real replica manager and `__consumer_offsets`
log: MEMBER_ID_REQUIRED, a rebalance when a member joins, heartbeats during it, simple
commits, and groups reloaded from the log by a new coordinator."""

from __future__ import annotations

import asyncio
import time

from kt.broker.group import group_admin
from kt.broker.group.group_coordinator import GroupCoordinator
from kt.broker.group.group_coordinator_service import GroupCoordinatorService
from kt.broker.group.group_metadata_manager import GroupMetadataManager
from kt.broker.group.offsets_records import OffsetAndMetadata
from kt.broker.metadata_cache import PartitionState
from kt.broker.replication.replica_manager import ReplicaManager
from kt.config import LogConfig
from kt.storage.log_manager import LogManager

PROTOCOLS = [("range", b"sub")]


def coordinator_on(tmp_path) -> tuple[GroupCoordinator, LogManager]:
    config = LogConfig(cleanup_policy=("compact",))
    logs = LogManager([str(tmp_path)], config, {})
    replicas = ReplicaManager(0, logs, lambda topic: config)
    manager = GroupMetadataManager(replicas, lambda: 1)
    coordinator = GroupCoordinator(manager, min_session_timeout_ms=10,
                                   initial_rebalance_delay_ms=0)  # fmt: skip
    service = GroupCoordinatorService(manager, coordinator)
    replicas.leadership_listeners.append(service.on_leadership_change)
    state = PartitionState("__consumer_offsets", 0, 0, 0, [0], [0])
    replicas.become_leader_or_follower(0, 1, [state], {})
    return coordinator, logs


async def join(c: GroupCoordinator, member_id: str = "", client: str = "c"):
    return await c.join_group("g", member_id, None, True, client, "/h", 5000, 10000,
                              "consumer", PROTOCOLS)  # fmt: skip


async def wait_until(condition, what: str, timeout_s: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    """Poll `condition` on the event loop until it holds, at most `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout_s} s"
        await asyncio.sleep(0.005)


async def wait_loaded(c: GroupCoordinator) -> None:
    await wait_until(lambda: not c.manager.loading, "loading __consumer_offsets")


def test_join_sync_rebalance_and_reload(tmp_path):
    async def scenario() -> None:
        c, logs = coordinator_on(tmp_path)
        await wait_loaded(c)
        first = await join(c)
        assert first.error == "MEMBER_ID_REQUIRED" and first.member_id.startswith("c-")
        joined = await join(c, first.member_id)
        assert (joined.error, joined.generation_id, joined.leader_id) == (
            "NONE",
            1,
            first.member_id,
        )
        assert joined.members == [(first.member_id, None, b"sub")]
        synced = await c.sync_group("g", 1, first.member_id, None, None, None,
                                    {first.member_id: b"all"})  # fmt: skip
        assert (synced.error, synced.assignment) == ("NONE", b"all")

        second_id = (await join(c, client="d")).member_id
        second = asyncio.ensure_future(join(c, second_id, "d"))
        await wait_until(
            lambda: group_admin.describe_group(c, "g").state == "PreparingRebalance",
            "the second member's join starting a rebalance",
        )
        assert c.heartbeat("g", first.member_id, None, 1) == "REBALANCE_IN_PROGRESS"
        rejoined = await join(c, first.member_id)
        assert rejoined.generation_id == 2 and len(rejoined.members) == 2
        assert (await second).members == []  # only the leader gets the metadata
        assert c.heartbeat("g", second_id, None, 1) == "ILLEGAL_GENERATION"

        errors = await group_admin.commit_offsets(
            c, "solo", "", None, -1, {("t", 0): OffsetAndMetadata(17, -1, "", 1)}
        )
        assert errors == {("t", 0): "NONE"}
        c.shutdown()

        reloaded = GroupCoordinator(GroupMetadataManager(c.manager.replica_manager, lambda: 1))
        GroupCoordinatorService(reloaded.manager, reloaded).on_election(0, 1)
        assert reloaded.heartbeat("g", first.member_id, None, 1) == "NONE"  # still loading
        await wait_loaded(reloaded)
        fetched = group_admin.fetch_offsets(reloaded, "solo", [("t", 0), ("t", 1)])
        assert fetched.offsets[("t", 0)].offset == 17 and fetched.offsets[("t", 1)] is None
        described = group_admin.describe_group(reloaded, "g")
        assert (described.state, described.protocol) == ("Stable", "range")
        assert [m[0] for m in described.members] == [first.member_id]  # generation 1 as stored
        reloaded.shutdown()
        logs.shutdown()

    asyncio.run(scenario())


def test_a_member_that_stops_heartbeating_is_removed(tmp_path):
    async def scenario() -> None:
        c, logs = coordinator_on(tmp_path)
        await wait_loaded(c)
        member_id = (await join(c)).member_id
        await c.join_group("g", member_id, None, True, "c", "/h", 5000, 10, "consumer",
                           PROTOCOLS)  # fmt: skip
        await c.sync_group("g", 1, member_id, None, None, None, {member_id: b""})
        await wait_until(lambda: not c.manager.get_group("g").members, "the 10 ms session timeout")
        assert group_admin.describe_group(c, "g").state == "Empty"
        assert c.heartbeat("g", member_id, None, 1) == "UNKNOWN_MEMBER_ID"
        c.shutdown()
        logs.shutdown()

    asyncio.run(scenario())


def test_a_commit_from_the_previous_generation_is_illegal_while_the_next_completes(tmp_path):
    """Kafka checks the member and its generation before the group's state: a commit
    sent in generation 1 that reaches the coordinator (queued behind the member's own
    JoinGroup) once generation 2 is completing is ILLEGAL_GENERATION, a stranger's is
    UNKNOWN_MEMBER_ID; only a member of generation 2 hears REBALANCE_IN_PROGRESS."""

    async def scenario() -> None:
        c, logs = coordinator_on(tmp_path)
        await wait_loaded(c)
        leader = (await join(c)).member_id
        assert (await join(c, leader)).generation_id == 1
        await c.sync_group("g", 1, leader, None, None, None, {leader: b"all"})
        offsets = {("t", 0): OffsetAndMetadata(5, -1, "", 1)}

        async def commit(member_id: str, generation_id: int) -> str:
            errors = await group_admin.commit_offsets(c, "g", member_id, None,
                                                      generation_id, offsets)  # fmt: skip
            return errors[("t", 0)]

        assert await commit(leader, 1) == "NONE"
        # The leader rejoining a Stable group starts generation 2; alone, it completes at once.
        assert (await join(c, leader)).generation_id == 2
        assert group_admin.describe_group(c, "g").state == "CompletingRebalance"
        assert await commit(leader, 1) == "ILLEGAL_GENERATION"
        assert await commit("stranger", 2) == "UNKNOWN_MEMBER_ID"
        assert await commit("", -1) == "UNKNOWN_MEMBER_ID"  # not a simple commit: members
        assert await commit(leader, 2) == "REBALANCE_IN_PROGRESS"
        await c.sync_group("g", 2, leader, None, None, None, {leader: b"all"})
        assert await commit(leader, 2) == "NONE"
        assert group_admin.fetch_offsets(c, "g", [("t", 0)]).offsets[("t", 0)].offset == 5
        c.shutdown()
        logs.shutdown()

    asyncio.run(scenario())


async def static_join(c: GroupCoordinator, member_id: str = ""):
    return await c.join_group("g", member_id, "instance-1", True, "c", "/h", 5000, 10000,
                              "consumer", PROTOCOLS)  # fmt: skip


async def stable_static_member(c: GroupCoordinator) -> str:
    joined = await static_join(c)
    await c.sync_group("g", joined.generation_id, joined.member_id, "instance-1", None, None,
                       {joined.member_id: b"all"})  # fmt: skip
    return joined.member_id


def test_a_replaced_static_member_is_answered_once_its_id_is_written(tmp_path):
    """A static member restarting into a Stable group takes its place under a new id; the
    answer waits for the group's write, so a coordinator loading the partition after it
    knows the new id (not the old one, which would fence the running instance)."""

    async def scenario() -> None:
        c, logs = coordinator_on(tmp_path)
        await wait_loaded(c)
        old_id = await stable_static_member(c)
        writes: list[str] = []
        store = c.manager.store_group

        async def recorded_store(group, assignment):  # type: ignore[no-untyped-def]
            writes.append(next(iter(group.members)))
            return await store(group, assignment)

        c.manager.store_group = recorded_store  # type: ignore[method-assign]
        rejoined = await static_join(c)
        assert rejoined.error == "NONE" and rejoined.member_id != old_id
        assert writes == [rejoined.member_id]  # written before the answer came
        c.shutdown()
        reloaded = GroupCoordinator(GroupMetadataManager(c.manager.replica_manager, lambda: 1))
        GroupCoordinatorService(reloaded.manager, reloaded).on_election(0, 1)
        await wait_loaded(reloaded)
        group = reloaded.manager.get_group("g")
        assert group.static_members == {"instance-1": rejoined.member_id}
        reloaded.shutdown()
        logs.shutdown()

    asyncio.run(scenario())


def test_a_replacement_not_written_puts_the_old_static_member_back(tmp_path):
    async def scenario() -> None:
        c, logs = coordinator_on(tmp_path)
        await wait_loaded(c)
        old_id = await stable_static_member(c)

        async def failing_store(group, assignment):  # type: ignore[no-untyped-def]
            return "NOT_COORDINATOR"

        c.manager.store_group = failing_store  # type: ignore[method-assign]
        rejoined = await static_join(c)
        assert rejoined.error == "NOT_COORDINATOR"
        group = c.manager.get_group("g")
        assert group.static_members == {"instance-1": old_id} and list(group.members) == [old_id]
        c.shutdown()
        logs.shutdown()

    asyncio.run(scenario())
