"""Transactions in the log: the last stable offset, the `.txnindex` of aborted
transactions (Kafka's TransactionIndex layout), rebuilt by recovery and truncated with
the log."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from kt.config import LogConfig
from kt.storage.control_records import (
    ABORT,
    COMMIT,
    EndTransactionMarker,
    build_end_txn_marker_batch,
)
from kt.storage.log import Log
from kt.storage.producer_state import ORIGIN_COORDINATOR
from kt.storage.transaction_index import AbortedTxn, TransactionIndex
from tests.storage._batches import batch

A, B = 1000, 2000


def now_ms() -> int:
    return int(time.time() * 1000)


def txn_records(log: Log, pid: int, seq: int, count: int = 2) -> int:
    data = batch(count, now_ms(), pid=pid, epoch=0, seq=seq, transactional=True)
    return log.append_as_leader(data, leader_epoch=0).first_offset


def marker(log: Log, pid: int, control_type: int) -> int:
    data = build_end_txn_marker_batch(
        EndTransactionMarker(control_type, coordinator_epoch=3),
        producer_id=pid,
        producer_epoch=0,
        timestamp=now_ms(),
    )
    return log.append_as_leader(data, leader_epoch=0, origin=ORIGIN_COORDINATOR).first_offset


@pytest.fixture
def log(tmp_path):
    log = Log(str(tmp_path / "t-0"), LogConfig())
    yield log
    log.close()


def interleaved(log: Log) -> None:
    """A: 0-1, B: 2-3, A aborted at 4, B: 5-6, B committed at 7."""
    txn_records(log, A, 0)
    txn_records(log, B, 0)
    marker(log, A, ABORT)
    txn_records(log, B, 2)
    marker(log, B, COMMIT)


def test_the_lso_waits_for_open_transactions_and_for_replicated_markers(log):
    txn_records(log, A, 0)
    txn_records(log, B, 0)
    log.high_watermark = log.log_end_offset
    assert log.last_stable_offset == 0  # A is open
    assert marker(log, A, ABORT) == 4
    assert log.last_stable_offset == 0  # A's marker is not below the high watermark yet
    log.high_watermark = 4
    assert log.last_stable_offset == 0
    log.high_watermark = 5
    assert log.last_stable_offset == 2  # A is decided and replicated; B is open
    txn_records(log, B, 2)
    marker(log, B, COMMIT)
    log.high_watermark = log.log_end_offset
    assert log.last_stable_offset == log.high_watermark == 8


def test_an_aborted_transaction_is_entered_in_kafkas_layout(log):
    interleaved(log)
    path = os.path.join(log.dir, "00000000000000000000.txnindex")
    assert Path(path).read_bytes() == bytes.fromhex(
        "0000"  # version 0
        "00000000000003e8"  # producerId 1000
        "0000000000000000"  # firstOffset 0
        "0000000000000004"  # lastOffset: the ABORT marker
        "0000000000000002"  # lastStableOffset: B's transaction was still open
    )  # B's COMMIT adds nothing


def test_aborted_transactions_of_a_fetch_range(log):
    interleaved(log)
    assert log.collect_aborted_transactions(0, 8) == [AbortedTxn(A, 0, 4, 2)]
    assert log.collect_aborted_transactions(5, 8) == []  # A ended before the range
    assert log.collect_aborted_transactions(0, 1) == [AbortedTxn(A, 0, 4, 2)]


def test_the_index_is_rebuilt_by_recovery(tmp_path):
    directory = str(tmp_path / "t-0")
    log = Log(directory, LogConfig())
    interleaved(log)
    txn_records(log, A, 2)  # A opens a new transaction, left open by the crash
    log.flush()
    expected = Path(directory, "00000000000000000000.txnindex").read_bytes()
    log.close_handlers()  # a crash: no snapshot at the end
    for name in os.listdir(directory):
        if name.endswith((".txnindex", ".snapshot", ".index", ".timeindex")):
            os.unlink(os.path.join(directory, name))
    log = Log(directory, LogConfig(), had_clean_shutdown=False, high_watermark=10)
    try:
        assert Path(directory, "00000000000000000000.txnindex").read_bytes() == expected
        assert log.last_stable_offset == 8  # A's new transaction is still open
        assert log.collect_aborted_transactions(0, 8) == [AbortedTxn(A, 0, 4, 2)]
    finally:
        log.close()


def test_truncation_below_a_marker_drops_its_entry_and_reopens_the_transaction(log):
    interleaved(log)
    log.high_watermark = 2
    assert log.truncate_to(4)
    assert log.collect_aborted_transactions(0, 4) == []
    assert os.path.getsize(os.path.join(log.dir, "00000000000000000000.txnindex")) == 0
    log.high_watermark = 4
    assert log.last_stable_offset == 0  # A is open again


def test_the_index_goes_with_its_segment(tmp_path):
    log = Log(str(tmp_path / "t-0"), LogConfig(file_delete_delay_ms=0))
    try:
        interleaved(log)
        log.roll()
        txn_records(log, A, 2)
        marker(log, A, COMMIT)
        log.high_watermark = log.log_end_offset
        first = os.path.join(log.dir, "00000000000000000000.txnindex")
        assert os.path.exists(first)
        log.maybe_increment_log_start_offset(8)
        assert log.delete_old_segments() == 1
    finally:
        log.close()
    assert not os.path.exists(first)


def test_a_newer_entry_version_is_refused(tmp_path):
    path = tmp_path / "00000000000000000000.txnindex"
    path.write_bytes(AbortedTxn(A, 0, 4, 5, version=1).encode())
    with pytest.raises(Exception, match="Unexpected aborted transaction version 1"):
        TransactionIndex(0, str(path)).collect_aborted_txns(0, 10)
