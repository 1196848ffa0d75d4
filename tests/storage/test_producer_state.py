"""Producer state: the .snapshot format and the idempotent-producer checks on append."""

from __future__ import annotations

import time

import pytest
from crc32c import crc32c

from kt.config import LogConfig
from kt.errors import KafkaError
from kt.storage.log import Log
from kt.storage.producer_state import (
    BatchMetadata,
    CorruptSnapshotError,
    ProducerStateEntry,
    read_snapshot,
    write_snapshot,
)
from tests.storage._batches import TS, batch

ONE_PRODUCER_SNAPSHOT = bytes.fromhex(
    "0001"  # version 1
    "3a39972f"  # crc32c of everything after this field
    "00000001"  # one entry
    "00000000000003e8"  # producerId 1000
    "0000"  # epoch 0
    "00000009"  # lastSequence 9
    "0000000000000009"  # lastOffset 9
    "00000009"  # offsetDelta 9
    "0000018bcfe56800"  # timestamp 1700000000000
    "ffffffff"  # coordinatorEpoch -1
    "ffffffffffffffff"  # currentTxnFirstOffset -1 (none)
)


def test_snapshot_literal_bytes(tmp_path):
    assert crc32c(ONE_PRODUCER_SNAPSHOT[6:]) == 0x3A39972F
    entry = ProducerStateEntry(1000, producer_epoch=0, last_timestamp=TS)
    entry.batch_metadata.append(
        BatchMetadata(last_seq=9, last_offset=9, offset_delta=9, timestamp=TS)
    )
    path = tmp_path / "00000000000000000010.snapshot"
    write_snapshot(str(path), [entry])
    assert path.read_bytes() == ONE_PRODUCER_SNAPSHOT
    [loaded] = read_snapshot(str(path))
    assert (loaded.producer_id, loaded.producer_epoch, loaded.first_seq, loaded.last_seq) == (
        1000,
        0,
        0,
        9,
    )
    assert loaded.current_txn_first_offset is None and loaded.coordinator_epoch == -1


def test_snapshot_with_a_flipped_byte_is_corrupt(tmp_path):
    path = tmp_path / "00000000000000000010.snapshot"
    damaged = bytearray(ONE_PRODUCER_SNAPSHOT)
    damaged[20] ^= 1
    path.write_bytes(bytes(damaged))
    with pytest.raises(CorruptSnapshotError, match="CRC"):
        read_snapshot(str(path))


@pytest.fixture
def log(tmp_path):
    log = Log(str(tmp_path / "t-0"), LogConfig())
    yield log
    log.close()


def produce(log: Log, count: int, pid: int = 7, epoch: int = 0, seq: int = 0):
    # Current timestamps: producers idle for producer.id.expiration.ms (1 day) expire on load.
    now = int(time.time() * 1000)
    return log.append_as_leader(batch(count, now, pid=pid, epoch=epoch, seq=seq), leader_epoch=0)


def test_duplicate_of_a_recent_batch_returns_its_original_offsets(log):
    first = produce(log, 3, seq=0)
    produce(log, 2, seq=3)
    again = produce(log, 3, seq=0)  # a retry of the first batch
    assert again.duplicate and (again.first_offset, again.last_offset) == (0, 2)
    assert log.log_end_offset == 5  # nothing appended
    assert not first.duplicate


def test_only_the_last_five_batches_are_recognised(log):
    for i in range(6):
        produce(log, 1, seq=i)
    with pytest.raises(KafkaError) as info:
        produce(log, 1, seq=0)  # fell out of the window: now just out of order
    assert info.value.name == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    assert produce(log, 1, seq=1).duplicate


def test_sequence_gap_is_out_of_order(log):
    produce(log, 3, seq=0)
    with pytest.raises(KafkaError) as info:
        produce(log, 1, seq=5)
    assert info.value.code == 45 and log.log_end_offset == 3


def test_lower_epoch_is_fenced_and_new_epoch_starts_at_zero(log):
    produce(log, 1, epoch=2, seq=0)
    with pytest.raises(KafkaError) as info:
        produce(log, 1, epoch=1, seq=1)
    assert info.value.name == "INVALID_PRODUCER_EPOCH"
    with pytest.raises(KafkaError) as info:
        produce(log, 1, epoch=3, seq=4)
    assert info.value.name == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    assert not produce(log, 1, epoch=3, seq=0).duplicate


def test_unknown_producer_takes_any_sequence_and_sequences_wrap(log):
    produce(log, 2, seq=2147483646)  # last sequence 2147483647
    assert not produce(log, 1, seq=0).duplicate  # int32 wraps to 0


def test_producer_state_survives_close_and_reopen(tmp_path):
    log = Log(str(tmp_path / "t-0"), LogConfig())
    produce(log, 3, seq=0)
    log.close()
    assert (tmp_path / "t-0" / "00000000000000000003.snapshot").read_bytes()[:2] == b"\x00\x01"
    reopened = Log(str(tmp_path / "t-0"), LogConfig(), recovery_point=3, had_clean_shutdown=True)
    assert produce(reopened, 3, seq=0).duplicate
    with pytest.raises(KafkaError):
        produce(reopened, 1, seq=9)
    reopened.close()


def test_producer_state_is_rebuilt_from_the_log_without_snapshots(tmp_path):
    log = Log(str(tmp_path / "t-0"), LogConfig())
    produce(log, 3, seq=0)
    produce(log, 1, seq=3)
    log.close_handlers()  # a crash: no snapshot at the log end
    for snapshot in (tmp_path / "t-0").glob("*.snapshot"):
        snapshot.unlink()
    reopened = Log(str(tmp_path / "t-0"), LogConfig())
    assert produce(reopened, 1, seq=3).duplicate
    assert produce(reopened, 1, seq=4).first_offset == 4
    reopened.close()
