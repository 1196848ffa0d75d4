"""The share coordinator's operations on share partitions' state without a broker:
initialize, write (updates, then a snapshot every so many), read (recording a new
partition leader), delete; Kafka's checks and fencing; records as Kafka 4.4 writes them."""

from __future__ import annotations

import pytest

from kt.broker.share import share_state as ss
from kt.broker.share.share_coordinator import ShareCoordinatorShard, ShareStateError, WriteRequest
from kt.broker.share.share_state import StateBatch
from tests.share.test_share_state import KAFKA_RECORDS, KEY, ORDERS

ACKNOWLEDGED, ARCHIVED = 2, 4


def shard(updates_per_snapshot: int = 500) -> ShareCoordinatorShard:
    s = ShareCoordinatorShard(lambda t: 2 if t == ORDERS else None, lambda: 1795908506222,
                              updates_per_snapshot)  # fmt: skip
    for record in s.initialize(KEY, 2, -1):
        s.replay(record)
    return s


def test_an_initialized_partition_and_a_write_are_what_kafka_wrote() -> None:
    s = shard()
    initial = ss.value_bytes(ss.SNAPSHOT, s.state[KEY]).hex()
    assert initial == KAFKA_RECORDS[0][1]
    (record,) = s.write(WriteRequest(KEY, 2, 0, 8, [StateBatch(8, 11, ACKNOWLEDGED, 1)], 4))
    record_type, key, value = record
    assert (ss.key_bytes(record_type, key).hex(), ss.value_bytes(record_type, value).hex()) == (
        KAFKA_RECORDS[1]
    )


def test_every_so_many_updates_the_next_write_is_a_snapshot() -> None:
    s = shard(updates_per_snapshot=2)
    for first in (0, 5):
        (record,) = s.write(WriteRequest(KEY, 2, 0, 0, [StateBatch(first, first + 4, ARCHIVED, 1)]))
        assert record[0] == ss.UPDATE
        s.replay(record)
    (record,) = s.write(WriteRequest(KEY, 2, 0, 3, [StateBatch(10, 12, ACKNOWLEDGED, 2)]))
    assert record[0] == ss.SNAPSHOT
    s.replay(record)
    state = s.state[KEY]
    assert (state.snapshot_epoch, state.start_offset) == (1, 3)
    assert state.state_batches == (
        StateBatch(3, 9, ARCHIVED, 1), StateBatch(10, 12, ACKNOWLEDGED, 2))  # fmt: skip


def test_a_new_leader_reads_and_the_old_one_is_fenced() -> None:
    s = shard()
    state, records = s.read(KEY, 3)
    assert state.start_offset == -1 and [r[0] for r in records] == [ss.UPDATE]
    for record in records:
        s.replay(record)
    assert s.read(KEY, 3)[1] == []  # the same leader again: nothing to write
    with pytest.raises(ShareStateError) as fenced:
        s.write(WriteRequest(KEY, 2, 1, 0, []))
    assert fenced.value.error == "FENCED_LEADER_EPOCH"
    with pytest.raises(ShareStateError) as stale:
        s.write(WriteRequest(KEY, 1, 3, 0, []))
    assert stale.value.error == "FENCED_STATE_EPOCH"


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda s: s.write(WriteRequest(ss.SharePartitionKey("sg", ORDERS, 0), 2, 0, 0, [])),
     "INVALID_REQUEST", "Write operation on uninitialized share partition not allowed."),
    (lambda s: s.read(ss.SharePartitionKey("sg", ORDERS, 0), 0),
     "INVALID_REQUEST", "Read operation on uninitialized share partition not allowed."),
    (lambda s: s.read(KEY, -1), "INVALID_REQUEST", "The leader epoch cannot be a negative number."),
    (lambda s: s.initialize(ss.SharePartitionKey("sg", ORDERS, 5), 0, -1),
     "UNKNOWN_TOPIC_OR_PARTITION", None),
])  # fmt: skip
def test_a_refused_operation_says_why(call, error, message) -> None:
    with pytest.raises(ShareStateError) as refused:
        call(shard())
    assert (refused.value.error, refused.value.message) == (error, message)


def test_a_deleted_partition_is_gone() -> None:
    s = shard()
    (tombstone,) = s.delete(KEY)
    s.replay(tombstone)
    assert s.summary(KEY) is None and s.delete(KEY) == []
