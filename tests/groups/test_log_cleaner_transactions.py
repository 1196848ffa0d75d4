"""Log compaction of transactions, as Kafka's cleaner does it (LogCleanerTest's marker
tests): a COMMIT or ABORT marker stays while a batch of its transaction does, then gets a
delete horizon, then goes; an ABORT's transaction index entry leaves the cleaned segment
once none of its batches is left; and the last batch of a producer still active stays,
emptied of its records, so that its sequence and epoch survive."""

from __future__ import annotations

from kt.storage.control_records import (
    ABORT,
    COMMIT,
    EndTransactionMarker,
    build_end_txn_marker_batch,
)
from kt.storage.log import Log
from kt.storage.log_cleaner import LogCleaner
from kt.storage.producer_state import ORIGIN_COORDINATOR, PRODUCER_ID_EXPIRATION_MS
from kt.storage.record_batch import Record, build_batch
from kt.storage.records import iter_batches
from tests.groups.test_log_cleaner import TS, Clock, append, compacted_log, contents

PID = 9
RETENTION = 60_000


def append_txn(log: Log, control: int, *pairs: tuple[bytes, bytes]) -> None:
    """A transaction of one batch and its marker."""
    records = [Record(None, TS, k, v) for k, v in pairs]
    batch = build_batch(records, producer_id=PID, producer_epoch=0, base_sequence=0,
                        is_transactional=True)  # fmt: skip
    log.append_as_leader(bytearray(batch), leader_epoch=0)
    marker = build_end_txn_marker_batch(
        EndTransactionMarker(control, 0), producer_id=PID, producer_epoch=0, timestamp=TS
    )
    log.append_as_leader(bytearray(marker), leader_epoch=0, origin=ORIGIN_COORDINATOR)
    log.high_watermark = log.log_end_offset


def batches(log: Log) -> list[tuple[int, int, bool, int, int | None]]:
    """(base offset, last offset, control, record count, delete horizon) of each batch."""
    out = []
    for segment in log.segments:
        for batch in iter_batches(segment.log.read(0, segment.size)):
            batch.ensure_valid()
            out.append((batch.base_offset, batch.last_offset, batch.is_control,
                        len(batch.records()), batch.delete_horizon_ms))  # fmt: skip
    return out


def clean_again(log: Log, cleaner: LogCleaner, filler: bytes) -> None:
    """Make the log dirty with one more record and clean it."""
    log.roll()
    append(log, (b"filler", filler))
    log.roll()
    assert cleaner.clean_logs([log])


def expire_producers(log: Log) -> None:
    log.producer_state.remove_expired_producers(TS + PRODUCER_ID_EXPIRATION_MS)
    assert not log.producer_state.producers


def test_a_commit_marker_goes_after_its_batches_and_its_delete_horizon(tmp_path) -> None:
    clock = Clock()
    log = compacted_log(tmp_path, clock, delete_retention_ms=RETENTION)
    append_txn(log, COMMIT, (b"k", b"in-txn"))
    append(log, (b"k", b"later"))  # the transaction's only record is overwritten
    expire_producers(log)
    cleaner = LogCleaner(clock)
    clean_again(log, cleaner, b"1")
    # The batch went in this pass, so its marker stays, without a horizon yet.
    assert batches(log)[:2] == [(1, 1, True, 1, None), (2, 2, False, 1, None)]

    clean_again(log, cleaner, b"2")  # no batch of the transaction: the horizon is set
    assert batches(log)[0] == (1, 1, True, 1, TS + RETENTION)

    clock.now = TS + RETENTION - 1
    clean_again(log, cleaner, b"3")
    assert batches(log)[0][:3] == (1, 1, True)

    clock.now = TS + RETENTION
    clean_again(log, cleaner, b"4")
    assert [offset for offset, *_ in batches(log)][0] == 2
    assert contents(log)[0] == (2, b"k", b"later")


def test_an_abort_marker_and_its_index_entry_go_after_its_batches(tmp_path) -> None:
    clock = Clock()
    log = compacted_log(tmp_path, clock, delete_retention_ms=RETENTION)
    append(log, (b"k", b"committed"))
    append_txn(log, ABORT, (b"k", b"aborted"))
    expire_producers(log)
    cleaner = LogCleaner(clock)
    clean_again(log, cleaner, b"1")
    assert batches(log)[:2] == [(0, 0, False, 1, None), (2, 2, True, 1, None)]
    entries = log.segments[0].txn_index.entries
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in entries] == [(PID, 1, 2)]

    clean_again(log, cleaner, b"2")
    assert batches(log)[1] == (2, 2, True, 1, TS + RETENTION)
    assert all(not s.txn_index.entries for s in log.segments)

    clock.now = TS + RETENTION
    clean_again(log, cleaner, b"3")
    assert [offset for offset, *_ in batches(log)] == [0, 5]  # the last filler


def test_an_active_producers_last_batch_stays_empty(tmp_path) -> None:
    clock = Clock()
    log = compacted_log(tmp_path, clock)
    idempotent = build_batch([Record(None, TS, b"k", b"first")], producer_id=3,
                             producer_epoch=2, base_sequence=0)  # fmt: skip
    log.append_as_leader(bytearray(idempotent), leader_epoch=0)
    append(log, (b"k", b"second"))
    clean_again(log, LogCleaner(clock), b"1")
    (empty, *_) = iter_batches(log.segments[0].log.read(0, log.segments[0].size))
    empty.ensure_valid()
    header = (empty.base_offset, empty.last_offset, empty.producer_id, empty.producer_epoch,
              empty.base_sequence, len(empty.records()), empty.max_timestamp)  # fmt: skip
    assert header == (0, 0, 3, 2, 0, 0, TS)
    assert contents(log)[0] == (1, b"k", b"second")
