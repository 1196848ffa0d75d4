"""The share partitions' durable state (the share coordinator's `__share_group_state`)
without a broker: records read as Kafka 4.4 wrote them and written as it writes them, the
state their replay leaves, the merge of state batches, and the partition of a key."""

from __future__ import annotations

import uuid

import pytest

from kt.broker.share import share_state as ss
from kt.broker.share.share_state import SharePartitionKey, StateBatch

ORDERS = uuid.UUID("53227bad-34de-4e0b-999f-f52fd90678ce")
KEY = SharePartitionKey("sg", ORDERS, 1)
# Kafka 4.4's records for share group "sg", orders-1, in __share_group_state-1: the
# initializing snapshot (start offset -1), an update accepting 8-11, and the last update
# (26-27 released: available, delivered once).
SNAPSHOT_KEY = "00000002736753227bad34de4e0b999ff52fd90678ce00000001"
UPDATE_KEY = "00010002736753227bad34de4e0b999ff52fd90678ce00000001"
KAFKA_RECORDS = [
    (SNAPSHOT_KEY, "0000000000000000000200000000ffffffffffffffff000001a2247d126e000001a2247d126e"
                   "0100"),
    (UPDATE_KEY, "000000000000000000000000000000000008020000000000000008000000000000000b0200010001"
                 "000400000004"),
    (UPDATE_KEY, "00000000000000000000000000000000001a02000000000000001a000000000000001b0000010001"
                 "000400000000"),
]  # fmt: skip


@pytest.mark.parametrize("pair", KAFKA_RECORDS, ids=["snapshot", "update", "last update"])
def test_what_kt_writes_is_what_kafka_wrote(pair) -> None:
    record_type, key, value = ss.read_record(bytes.fromhex(pair[0]), bytes.fromhex(pair[1]))
    assert key == KEY and value is not None
    assert (ss.key_bytes(record_type, key).hex(), ss.value_bytes(record_type, value).hex()) == pair


def test_replaying_them_leaves_the_start_and_the_released_records() -> None:
    records = [ss.read_record(bytes.fromhex(k), bytes.fromhex(v)) for k, v in KAFKA_RECORDS]
    (state,) = ss.replay_all(records).values()
    assert (state.state_epoch, state.start_offset, state.delivery_complete_count) == (2, 26, 0)
    assert state.state_batches == (StateBatch(26, 27, 0, 1),)
    tombstone = (ss.SNAPSHOT, KEY, None)
    assert ss.replay_all([*records, tombstone]) == {}


def test_a_merge_keeps_the_highest_delivery_count_and_drops_what_the_start_passed() -> None:
    so_far = [StateBatch(10, 19, 2, 1), StateBatch(20, 29, 0, 2)]
    new = [StateBatch(15, 24, 4, 3), StateBatch(25, 27, 1, 1)]
    assert ss.combine(so_far, new, 12) == (
        StateBatch(12, 14, 2, 1), StateBatch(15, 24, 4, 3), StateBatch(25, 29, 0, 2),
    )  # fmt: skip


def test_a_key_lives_in_the_partition_kafka_puts_it_in() -> None:
    assert (KEY.coordinator_partition(50), SharePartitionKey("sg", ORDERS, 0)
            .coordinator_partition(50)) == (1, 2)  # fmt: skip
