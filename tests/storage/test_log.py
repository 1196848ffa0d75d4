"""Log: appends with offset assignment, reads as file slices, rolls, truncation, retention,
timestamp lookups, flush policy."""

from __future__ import annotations

import os

import pytest

from kt.config import LogConfig
from kt.errors import KafkaError
from kt.storage.batch_header import BatchHeader, iter_headers
from kt.storage.file_records import FileSlice
from kt.storage.log import Log
from tests.storage._batches import TS, Clock, batch, legacy_message_set


@pytest.fixture
def clock():
    return Clock()


def open_log(path, clock, **config) -> Log:
    return Log(str(path / "t-0"), LogConfig(**config), clock=clock)


def test_append_assigns_offsets_and_epoch_by_patching_headers(tmp_path, clock):
    log = open_log(tmp_path, clock)
    first = log.append_as_leader(batch(3), leader_epoch=5)
    second = log.append_as_leader(batch(2), leader_epoch=5)
    assert (first.first_offset, first.last_offset, second.first_offset, second.last_offset) == (
        0,
        2,
        3,
        4,
    )
    assert log.log_end_offset == 5 and log.high_watermark == 0
    log.high_watermark = 99  # bounded by the log end offset
    assert log.high_watermark == 5
    data = log.read(0, 1 << 20).records.read_bytes()
    headers = list(iter_headers(data))
    assert [(h.base_offset, h.last_offset, h.partition_leader_epoch) for h in headers] == [
        (0, 2, 5),
        (3, 4, 5),
    ]
    assert all(h.is_valid() for h in headers)  # offsets and epoch sit outside the CRC
    assert log.leader_epoch_cache.entries == [(5, 0)]
    log.close()


def test_read_returns_a_file_slice_for_sendfile(tmp_path, clock):
    log = open_log(tmp_path, clock)
    sizes = [len(batch(2)) for _ in range(3)]
    for _ in range(3):
        log.append_as_leader(batch(2), leader_epoch=0)
    info = log.read(3, max_bytes=1)  # min_one_message: one whole batch despite max_bytes
    assert isinstance(info.records, FileSlice)
    assert (info.records.position, len(info.records)) == (sizes[0], sizes[1])
    assert os.fstat(info.records.fileno()).st_size == sum(sizes)
    partial = log.read(3, 1, min_one_message=False)  # a cut first batch: sent cut, as Kafka
    assert len(partial.records) == 1 and partial.first_entry_incomplete
    assert log.read(2, 1 << 20, max_offset=4).records.read_bytes()[8:12]  # stops at offset 4
    assert len(log.read(2, 1 << 20, max_offset=4).records) == sizes[0] + sizes[1] - sizes[0]
    assert log.read(6, 100).records == b""  # at the log end: empty
    for bad in (-1, 7):
        with pytest.raises(KafkaError) as info:
            log.read(bad, 100)
        assert info.value.name == "OFFSET_OUT_OF_RANGE"
    log.close()


def test_a_read_cut_inside_a_later_batch_ends_at_the_last_whole_batch(tmp_path, clock):
    # Index entries every 100 bytes, so the search for the last whole batch starts from
    # an index entry at or before the cut, not only from the read's start.
    log = open_log(tmp_path, clock, index_interval_bytes=100)
    for count in (1, 3, 2, 5, 1, 4, 2, 3):
        log.append_as_leader(batch(count), leader_epoch=0)
    bounds = [h.position + h.size for h in iter_headers(log.read(0, 1 << 20).records.read_bytes())]
    start = bounds[0]  # the read starts at offset 1, the second batch
    for max_bytes in range(bounds[1] - start, bounds[-1] - start + 10):
        records = log.read(1, max_bytes).records
        expected = max(b for b in bounds if b - start <= max_bytes) - start
        assert (records.position, len(records)) == (start, expected), max_bytes
    log.close()


@pytest.mark.parametrize(
    "mutate, error",
    [
        (lambda b: b.__setitem__(70, b[70] ^ 0xFF), "CORRUPT_MESSAGE"),  # a record byte
        (lambda b: b.__setitem__(16, 1), "UNSUPPORTED_FOR_MESSAGE_FORMAT"),
        (lambda b: b.__delitem__(slice(-5, None)), "CORRUPT_MESSAGE"),  # truncated
        (lambda b: b.__setitem__(slice(0, 8), (9).to_bytes(8, "big")), "INVALID_RECORD"),
    ],
)
def test_bad_batches_are_refused_with_kafkas_codes(tmp_path, clock, mutate, error):
    log = open_log(tmp_path, clock)
    data = bytearray(batch(3))
    mutate(data)
    with pytest.raises(KafkaError) as info:
        log.append_as_leader(data, leader_epoch=0)
    assert info.value.name == error and log.log_end_offset == 0
    log.close()


def test_batch_over_max_message_bytes_is_too_large(tmp_path, clock):
    log = open_log(tmp_path, clock, max_message_bytes=200)
    with pytest.raises(KafkaError) as info:
        log.append_as_leader(batch(1, value_size=300), leader_epoch=0)
    assert info.value.name == "MESSAGE_TOO_LARGE"
    log.close()


def test_log_append_time_rewrites_max_timestamp(tmp_path, clock):
    log = open_log(tmp_path, clock, message_timestamp_type="LogAppendTime")
    clock.now = TS + 5000
    info = log.append_as_leader(batch(2), leader_epoch=0)
    assert info.log_append_time == TS + 5000
    header = BatchHeader(log.read(0, 1000).records.read_bytes())
    assert header.is_log_append_time and header.max_timestamp == TS + 5000 and header.is_valid()
    log.close()


def test_follower_append_keeps_offsets(tmp_path, clock):
    leader = open_log(tmp_path / "a", clock)
    leader.append_as_leader(batch(2), leader_epoch=3)
    leader.append_as_leader(batch(1), leader_epoch=4)
    fetched = leader.read(0, 1 << 20).records.read_bytes()
    follower = open_log(tmp_path / "b", clock)
    info = follower.append_as_follower(fetched)
    assert (info.first_offset, info.last_offset, follower.log_end_offset) == (0, 2, 3)
    assert follower.leader_epoch_cache.entries == [(3, 0), (4, 2)]
    with pytest.raises(KafkaError):
        follower.append_as_follower(fetched)  # offsets below the log end
    leader.close()
    follower.close()


def segment_files(log: Log) -> list[str]:
    return sorted(n for n in os.listdir(log.dir) if n.endswith(".log"))


def test_rolls_on_segment_bytes(tmp_path, clock):
    size = len(batch(1))
    log = open_log(tmp_path, clock, segment_bytes=2 * size)
    for _ in range(5):
        log.append_as_leader(batch(1), leader_epoch=0)
    assert segment_files(log) == [f"{o:020d}.log" for o in (0, 2, 4)]
    assert os.path.getsize(os.path.join(log.dir, f"{0:020d}.index")) == 0  # trimmed on roll
    assert log.read(3, 1000).records.read_bytes()[:8] == (3).to_bytes(8, "big")
    log.close()


def test_rolls_on_segment_ms_by_record_timestamps(tmp_path, clock):
    log = open_log(tmp_path, clock, segment_ms=1000)
    log.append_as_leader(batch(1, ts=TS), leader_epoch=0)
    log.append_as_leader(batch(1, ts=TS + 1000), leader_epoch=0)  # not more than segment.ms
    log.append_as_leader(batch(1, ts=TS + 1001), leader_epoch=0)
    assert segment_files(log) == [f"{0:020d}.log", f"{2:020d}.log"]
    log.close()


def test_segment_ms_counts_by_record_timestamps_not_the_clock(tmp_path, clock):
    log = open_log(tmp_path, clock, segment_ms=1000)
    log.append_as_leader(batch(1, ts=TS), leader_epoch=0)
    clock.now += 10_000  # the segment is old by the clock, young by its records
    log.append_as_leader(batch(1, ts=TS + 1000), leader_epoch=0)
    assert segment_files(log) == [f"{0:020d}.log"]
    log.close()


def test_rolls_on_segment_ms_by_the_clock_when_records_have_no_timestamp(tmp_path, clock):
    log = open_log(tmp_path, clock, segment_ms=1000)
    log.append_as_follower(legacy_message_set(0, 1, 0))  # magic 0: no timestamp
    clock.now += 1000
    log.append_as_follower(legacy_message_set(0, 1, 1))  # not more than segment.ms
    clock.now += 1
    log.append_as_follower(legacy_message_set(0, 1, 2))
    assert segment_files(log) == [f"{0:020d}.log", f"{2:020d}.log"]
    log.close()


def test_rolls_when_an_index_is_full(tmp_path, clock):
    log = open_log(tmp_path, clock, segment_index_bytes=16, index_interval_bytes=1)
    for _ in range(6):
        log.append_as_leader(batch(1, ts=TS + _), leader_epoch=0)
    assert len(segment_files(log)) > 1  # a 16-byte time index holds one entry + the roll slot
    for offset in range(6):
        assert log.read(offset, 1000).records.read_bytes()[:8] == offset.to_bytes(8, "big")
    log.close()


def test_an_append_that_fills_an_index_midway_is_kept_whole(tmp_path, clock):
    # 24-byte indexes hold three offset entries, and one time entry plus the roll slot.
    # With an entry due for every batch, one append of five batches fills them early:
    # the later batches go unindexed (an index is sparse), and the next append rolls.
    log = open_log(tmp_path, clock, segment_index_bytes=24, index_interval_bytes=1)
    log.append_as_leader(batch(1), leader_epoch=0)
    info = log.append_as_leader(b"".join(batch(1, ts=TS + i) for i in range(1, 6)), 0)
    assert (info.first_offset, info.last_offset, log.log_end_offset) == (1, 5, 6)
    first = log.active_segment
    assert (first.offset_index.entries, first.time_index.entries) == (3, 1)
    log.append_as_leader(batch(1, ts=TS + 9), leader_epoch=0)
    assert [s.base_offset for s in log.segments] == [0, 6]
    assert [log.read(offset, 1000).records.read_bytes()[:8] for offset in range(7)] == [
        offset.to_bytes(8, "big") for offset in range(7)
    ]
    index_path = first.offset_index.path
    log.close()
    with open(index_path, "rb") as f:
        written = f.read()
    os.unlink(index_path)
    log = open_log(tmp_path, clock, segment_index_bytes=24, index_interval_bytes=1)
    with open(index_path, "rb") as f:
        assert f.read() == written  # recovery skips the same entries
    log.close()


def test_rolls_before_relative_offsets_overflow(tmp_path, clock):
    leader = open_log(tmp_path / "a", clock)
    leader.append_as_leader(batch(1), leader_epoch=0)
    far = bytearray(batch(1))
    far[0:8] = (2**31 + 5).to_bytes(8, "big")  # a follower copy after a huge gap
    log = open_log(tmp_path / "b", clock)
    log.append_as_follower(leader.read(0, 1000).records.read_bytes())
    log.append_as_follower(far)
    assert segment_files(log) == [f"{0:020d}.log", f"{2**31 + 5:020d}.log"]
    leader.close()
    log.close()


def test_truncate_to_drops_later_offsets_and_segments(tmp_path, clock):
    size = len(batch(2))
    log = open_log(tmp_path, clock, segment_bytes=2 * size, index_interval_bytes=1)
    for _ in range(5):
        log.append_as_leader(batch(2), leader_epoch=0)
    log.high_watermark = 10
    assert log.truncate_to(4)
    assert log.log_end_offset == 4 and log.high_watermark == 4
    assert segment_files(log) == [f"{0:020d}.log", f"{4:020d}.log"]
    assert log.append_as_leader(batch(1), leader_epoch=1).first_offset == 4
    assert not log.truncate_to(100)
    log.truncate_fully_and_start_at(50)
    assert (log.log_start_offset, log.log_end_offset, segment_files(log)) == (
        50,
        50,
        [f"{50:020d}.log"],
    )
    log.close()


def test_retention_by_size_time_and_log_start_offset(tmp_path, clock):
    size = len(batch(1))
    log = open_log(
        tmp_path,
        clock,
        segment_bytes=size,
        retention_bytes=3 * size,
        retention_ms=60_000,
        file_delete_delay_ms=0,
    )
    for i in range(6):
        log.append_as_leader(batch(1, ts=TS + i * 1000), leader_epoch=0)
    assert len(segment_files(log)) == 6
    assert log.delete_old_segments(TS) == 0  # nothing below the high watermark yet
    log.high_watermark = log.log_end_offset
    assert log.delete_old_segments(TS) == 3  # 6 segments, 3 allowed by retention.bytes
    assert log.log_start_offset == 3 and segment_files(log)[0] == f"{3:020d}.log"
    assert log.delete_old_segments(TS + 4000 + 60_001) == 2  # older than retention.ms
    assert log.maybe_increment_log_start_offset(6)  # DeleteRecords
    assert log.delete_old_segments(TS) == 0  # the active segment stays until it is rolled
    with pytest.raises(KafkaError):
        log.read(5, 100)
    assert log.delete_old_segments(TS + 10**6) == 1
    assert segment_files(log) == [f"{6:020d}.log"]  # a log always keeps one segment
    with pytest.raises(KafkaError):
        log.maybe_increment_log_start_offset(7)  # beyond the high watermark
    log.close()


def test_deleted_segments_wait_as_dot_deleted_for_the_delay(tmp_path, clock):
    size = len(batch(1))
    log = open_log(tmp_path, clock, segment_bytes=size, file_delete_delay_ms=60_000)
    for _ in range(3):
        log.append_as_leader(batch(1), leader_epoch=0)
    log.high_watermark = 3
    log.maybe_increment_log_start_offset(2)
    assert log.delete_old_segments(clock.now) == 2
    assert f"{0:020d}.log.deleted" in os.listdir(log.dir)
    log.delete_pending_segments(clock.now + 60_000)
    assert not any(n.endswith(".deleted") for n in os.listdir(log.dir))
    log.close()


def test_timestamp_lookups(tmp_path, clock):
    log = open_log(tmp_path, clock, segment_bytes=300, index_interval_bytes=50)
    for i in range(8):
        log.append_as_leader(batch(3, ts=TS + 100 * i, ts_step=10), leader_epoch=2)
    found = log.offset_for_timestamp(TS + 215)  # records at TS+200, +210, +220 are 6, 7, 8
    assert (found.offset, found.timestamp, found.leader_epoch) == (8, TS + 220, 2)
    assert log.offset_for_timestamp(TS - 5).offset == 0
    assert log.offset_for_timestamp(TS + 10_000) is None
    assert log.offset_for_timestamp(-3).offset == 23  # the max timestamp, TS + 720
    assert log.offset_for_timestamp(-1).offset == 24 and log.offset_for_timestamp(-2).offset == 0
    log.close()


def test_flush_messages_moves_the_recovery_point(tmp_path, clock):
    log = open_log(tmp_path, clock, flush_messages=4, flush_ms=1000)
    log.append_as_leader(batch(3), leader_epoch=0)
    assert log.recovery_point == 0
    log.append_as_leader(batch(1), leader_epoch=0)
    assert log.recovery_point == 4
    log.append_as_leader(batch(1), leader_epoch=0)
    log.flush_dirty(clock.now + 999)
    assert log.recovery_point == 4
    log.flush_dirty(clock.now + 1000)
    assert log.recovery_point == 5
    log.close()
