"""Log compaction: the last record per key survives, offsets never move, tombstones go
after delete.retention.ms, and the swap leaves Kafka's file layout."""

from __future__ import annotations

import os
from pathlib import Path

from kt.config import LogConfig
from kt.storage.log import Log
from kt.storage.log_cleaner import CLEANER_CHECKPOINT_FILE, LogCleaner, group_segments_by_size
from kt.storage.record_batch import Record, build_batch
from kt.storage.records import iter_batches

TS = 1_700_000_000_000


class Clock:
    def __init__(self, now: int = TS) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def compacted_log(tmp_path, clock: Clock, **config) -> Log:
    settings = {"cleanup_policy": ("compact",), "min_cleanable_dirty_ratio": 0.01,
                "file_delete_delay_ms": 0, **config}  # fmt: skip
    return Log(str(tmp_path / "compacted-0"), LogConfig(**settings), clock=clock)


def append(log: Log, *pairs: tuple[bytes | None, bytes | None]) -> None:
    records = [Record(None, TS, k, v) for k, v in pairs]
    log.append_as_leader(bytearray(build_batch(records)), leader_epoch=0)
    log.high_watermark = log.log_end_offset


def contents(log: Log) -> list[tuple[int, bytes | None, bytes | None]]:
    out = []
    for segment in log.segments:
        for batch in iter_batches(segment.log.read(0, segment.size)):
            batch.ensure_valid()
            out += [(r.offset, r.key, r.value) for r in batch.records()]
    return out


def test_keeps_the_last_value_per_key_at_its_original_offset(tmp_path):
    clock = Clock()
    log = compacted_log(tmp_path, clock)
    for round_ in range(5):
        append(log, (b"a", b"a%d" % round_), (b"b", b"b%d" % round_))
        log.roll()
    append(log, (b"c", b"in the active segment"))
    stats = LogCleaner(clock).clean_logs([log])[0]

    assert contents(log) == [
        (8, b"a", b"a4"),
        (9, b"b", b"b4"),
        (10, b"c", b"in the active segment"),
    ]
    assert (stats.records_read, stats.records_retained) == (10, 2)
    assert log.log_end_offset == 11 and log.log_start_offset == 0
    # Reads still find records by offset across the rewritten segments.
    first = log.read(0, 1 << 20).records
    data = first if isinstance(first, bytes) else first.read_bytes()
    assert next(iter_batches(data)).records()[0].offset == 8
    checkpoint = (tmp_path / CLEANER_CHECKPOINT_FILE).read_text()
    assert checkpoint == "0\n1\ncompacted 0 10\n"


def test_files_after_the_swap_are_kafkas(tmp_path):
    clock = Clock()
    log = compacted_log(tmp_path, clock, segment_bytes=1 << 20)
    for i in range(3):
        append(log, (b"k", b"%d" % i))
        log.roll()
    LogCleaner(clock).clean_logs([log])
    names = sorted(os.listdir(log.dir))
    assert [n for n in names if n.endswith((".log", ".cleaned", ".swap", ".deleted"))] == [
        "00000000000000000000.log",
        "00000000000000000003.log",
    ]
    assert [s.base_offset for s in log.segments] == [0, 3]


def test_tombstones_stay_until_the_delete_horizon_passes(tmp_path):
    clock = Clock()
    log = compacted_log(tmp_path, clock, delete_retention_ms=60_000)
    append(log, (b"a", b"1"), (b"b", b"1"))
    append(log, (b"a", None))
    log.roll()
    append(log, (b"filler", b"x"))
    cleaner = LogCleaner(clock)
    cleaner.clean_logs([log])
    assert contents(log) == [(1, b"b", b"1"), (2, b"a", None), (3, b"filler", b"x")]
    horizons = [b.delete_horizon_ms for b in iter_batches(log.segments[0].log.read(0, 1 << 20))]
    assert horizons == [None, TS + 60_000]

    # Dirty again, but before the horizon: the tombstone stays.
    log.roll()
    append(log, (b"filler", b"y"))
    clock.now = TS + 59_999
    log.roll()
    cleaner.clean_logs([log])
    assert (2, b"a", None) in contents(log)

    clock.now = TS + 60_000
    log.roll()
    append(log, (b"filler", b"z"))
    log.roll()
    cleaner.clean_logs([log])
    assert [(o, k) for o, k, _ in contents(log)] == [(1, b"b"), (5, b"filler")]


def test_not_dirty_enough_is_left_alone(tmp_path):
    clock = Clock()
    log = compacted_log(tmp_path, clock, min_cleanable_dirty_ratio=0.9)
    append(log, (b"a", b"1"))
    log.roll()
    cleaner = LogCleaner(clock)
    assert len(cleaner.clean_logs([log])) == 1  # all dirty: ratio 1.0
    append(log, (b"b", b"1"))
    log.roll()
    assert cleaner.clean_logs([log]) == []  # half clean, half dirty: below 0.9


def test_delete_policy_logs_are_not_compacted(tmp_path):
    clock = Clock()
    log = Log(str(tmp_path / "plain-0"), LogConfig(), clock=clock)
    append(log, (b"a", b"1"), (b"a", b"2"))
    log.roll()
    assert LogCleaner(clock).clean_logs([log]) == []
    assert len(contents(log)) == 2


def test_segments_group_up_to_segment_bytes(tmp_path):
    clock = Clock()
    log = compacted_log(tmp_path, clock)
    for i in range(4):
        append(log, (b"k%d" % i, b"v"))
        log.roll()
    size = log.segments[0].size
    groups = group_segments_by_size(log.segments[:4], 2 * size)
    assert [[s.base_offset for s in g] for g in groups] == [[0, 1], [2, 3]]


def test_retained_batches_past_one_write_buffer_keep_their_index(tmp_path):
    """More retained bytes than the cleaner's write buffer: the cleaned segment is written
    in several appends, each rebuilt batch keeps the offset range of the one it replaces
    (as Kafka's overrideLastOffset), and both indexes are what recovery builds."""
    clock = Clock()
    log = compacted_log(tmp_path / "cleaned", clock)
    value = os.urandom(40_000)
    for i in range(30):  # ~1.2 MiB of distinct keys: all retained
        append(log, (b"k%d" % i, value), (b"gone", b"%d" % i))
    log.roll()
    LogCleaner(clock).clean_logs([log])
    assert [(o, k) for o, k, _ in contents(log)] == [
        *((2 * i, b"k%d" % i) for i in range(30)),
        (59, b"gone"),
    ]
    cleaned = log.segments[0]
    batches = list(iter_batches(cleaned.log.read(0, cleaned.size)))
    assert [(b.base_offset, b.last_offset) for b in batches] == [
        (2 * i, 2 * i + 1) for i in range(30)
    ]
    paths = [Path(cleaned.offset_index_path), Path(cleaned.time_index_path)]
    written = [path.read_bytes() for path in paths]
    assert cleaned.offset_index.entries > 1
    log.close()

    for path in paths:
        path.unlink()  # the next open rebuilds both from the log
    reopened = Log(log.dir, log.config, clock=clock)
    assert [path.read_bytes() for path in paths] == written
    reopened.close()


def test_an_aborted_transaction_loses_to_the_committed_value(tmp_path):
    """A key overwritten in a transaction that aborted keeps its committed value: the
    aborted batch counts for no key and goes, its marker and index entry stay."""
    from kt.storage.control_records import ABORT, EndTransactionMarker, build_end_txn_marker_batch
    from kt.storage.producer_state import ORIGIN_COORDINATOR

    clock = Clock()
    log = compacted_log(tmp_path, clock)
    append(log, (b"offset", b"committed"))
    records = [Record(None, TS, b"offset", b"aborted")]
    txn = build_batch(records, producer_id=9, producer_epoch=0, base_sequence=0,
                      is_transactional=True)  # fmt: skip
    log.append_as_leader(bytearray(txn), leader_epoch=0)
    marker = build_end_txn_marker_batch(
        EndTransactionMarker(ABORT, 0), producer_id=9, producer_epoch=0, timestamp=TS
    )
    log.append_as_leader(bytearray(marker), leader_epoch=0, origin=ORIGIN_COORDINATOR)
    log.high_watermark = log.log_end_offset
    log.roll()
    append(log, (b"other", b"x"))
    stats = LogCleaner(clock).clean_logs([log])[0]

    abort = EndTransactionMarker(ABORT, 0)
    assert contents(log) == [
        (0, b"offset", b"committed"),
        (2, abort.key(), abort.value()),  # the marker stays
        (3, b"other", b"x"),
    ]
    assert stats.records_retained == 1  # of the cleaned segment's two data records
    entries = log.segments[0].txn_index.entries
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in entries] == [(9, 1, 2)]
    assert Path(log.dir, "00000000000000000000.txnindex").stat().st_size == 34
