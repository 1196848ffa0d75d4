"""Offsets committed in a transaction (TxnOffsetCommit) against plain commits of the same
partition, over a real replica manager and `__consumer_offsets` log: the COMMIT marker
makes the transaction's offset the committed one only where no offset written after it is
committed already (GroupMetadata.completePendingTxnOffsetCommit), and a coordinator that
loads the log afterwards arrives at the same offsets."""

from __future__ import annotations

import asyncio

from kt.broker.group.group_metadata import GroupMetadata, GroupState
from kt.broker.group.group_metadata_manager import GROUP_METADATA_TOPIC, GroupMetadataManager
from kt.broker.group.offsets_records import OffsetAndMetadata
from kt.broker.metadata_cache import PartitionState
from kt.broker.replication.partition import TopicPartition
from kt.broker.replication.replica_manager import ReplicaManager
from kt.config import LogConfig
from kt.storage.control_records import (
    ABORT,
    COMMIT,
    EndTransactionMarker,
    build_end_txn_marker_batch,
)
from kt.storage.log_manager import LogManager
from kt.storage.producer_state import ORIGIN_COORDINATOR

PID = 7
TP = ("in", 0)


def manager_on(tmp_path) -> GroupMetadataManager:  # type: ignore[no-untyped-def]
    config = LogConfig(cleanup_policy=("compact",))
    replicas = ReplicaManager(0, LogManager([str(tmp_path)], config, {}), lambda topic: config)
    replicas.become_leader_or_follower(
        0, 1, [PartitionState(GROUP_METADATA_TOPIC, 0, 0, 0, [0], [0])], {}
    )
    manager = GroupMetadataManager(replicas, lambda: 1)
    manager.partition_for = lambda group_id: 0  # type: ignore[method-assign]
    return manager


async def marker(manager: GroupMetadataManager, control: int) -> None:
    """Write the producer's marker to __consumer_offsets-0 and settle its offsets, as
    WriteTxnMarkers does."""
    batch = build_end_txn_marker_batch(EndTransactionMarker(control, 0), producer_id=PID,
                                       producer_epoch=0, timestamp=1)  # fmt: skip
    tp = TopicPartition(GROUP_METADATA_TOPIC, 0)
    result = await manager.replica_manager.append_records(
        1000, -1, {tp: bytearray(batch)}, ORIGIN_COORDINATOR
    )
    assert result[tp].error_code == 0
    manager.complete_txn_offsets(PID, 0, control == COMMIT)


async def reloaded(manager: GroupMetadataManager, tmp_path) -> int:  # type: ignore[no-untyped-def]
    """The committed offset of TP as a coordinator loading the log finds it."""
    fresh = GroupMetadataManager(manager.replica_manager, lambda: 1)
    fresh.begin_loading(0, 5)
    (group,) = await fresh.load(0, 5)
    return group.offsets[TP].offset


def run(tmp_path, steps) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """(the committed offset after `steps`, the one a reload finds)."""

    async def scenario() -> tuple[int, int]:
        manager = manager_on(tmp_path)
        group = manager.add_group(GroupMetadata("g", GroupState.EMPTY, 1))
        for step, value in steps:
            if step == "txn":
                assert await manager.store_txn_offsets(group, {TP: OffsetAndMetadata(value)},
                                                       PID, 0) == "NONE"  # fmt: skip
            elif step == "plain":
                assert await manager.store_offsets(group, {TP: OffsetAndMetadata(value)}) == "NONE"
            else:
                await marker(manager, value)
        return group.offsets[TP].offset, await reloaded(manager, tmp_path)

    return asyncio.run(scenario())


def test_a_plain_commit_written_after_the_transactions_offset_stays(tmp_path) -> None:
    assert run(tmp_path, [("txn", 5), ("plain", 9), ("marker", COMMIT)]) == (9, 9)


def test_the_transactions_offset_replaces_one_written_before_it(tmp_path) -> None:
    assert run(tmp_path, [("plain", 9), ("txn", 5), ("marker", COMMIT)]) == (5, 5)


def test_an_aborted_transactions_offset_is_dropped(tmp_path) -> None:
    assert run(tmp_path, [("plain", 2), ("txn", 5), ("marker", ABORT)]) == (2, 2)
