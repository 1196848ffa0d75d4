"""Segment recovery's chunked walk (segment_recovery.py): batches cut by the read buffer,
batches larger than it, legacy message sets, and indexes rebuilt byte for byte."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kt.config import LogConfig
from kt.storage import segment_recovery
from kt.storage.batch_header import iter_headers
from kt.storage.checkpoints import LeaderEpochCheckpointFile
from kt.storage.leader_epoch import LeaderEpochFileCache
from kt.storage.log import Log
from kt.storage.offset_index import OffsetIndex
from kt.storage.producer_state import ProducerStateManager
from kt.storage.time_index import TimeIndex
from tests.storage._batches import TS, batch, legacy_message_set

CONFIG = LogConfig(index_interval_bytes=100)
# Values from 10 to 1500 bytes: batches from ~80 bytes to ~1.6 KB, many larger than
# the 500-byte read buffer the tests below give recovery.
VALUE_SIZES = [10, 700, 40, 1500, 90, 300, 5, 1200, 60, 450, 20, 999]


def written_log(directory: str) -> tuple[Log, list[tuple[int, int]], list[tuple[int, int]]]:
    """A log of VALUE_SIZES batches (timestamps rising by 10), with the index entries
    the appends wrote, left as a crash leaves it."""
    log = Log(directory, CONFIG)
    for i, size in enumerate(VALUE_SIZES):
        log.append_as_leader(batch(2, ts=TS + 10 * i, value_size=size), leader_epoch=3)
    segment = log.active_segment
    offsets = [segment.offset_index.entry(n) for n in range(segment.offset_index.entries)]
    times = [segment.time_index.entry(n) for n in range(segment.time_index.entries)]
    log.close_handlers()
    return log, offsets, times


@pytest.fixture
def small_reads(monkeypatch):
    monkeypatch.setattr(segment_recovery, "RECOVERY_CHUNK_BYTES", 500)


def test_recovery_across_chunk_boundaries_rebuilds_the_same_indexes(tmp_path, small_reads):
    log, offsets, times = written_log(str(tmp_path / "t-0"))
    assert len(offsets) >= 6 and len(times) >= 6  # the test exercises the index
    for name in os.listdir(log.dir):  # lost indexes: recovery must rebuild them
        if name.endswith((".index", ".timeindex")):
            os.unlink(os.path.join(log.dir, name))
    reopened = Log(log.dir, CONFIG)
    segment = reopened.active_segment
    assert reopened.log_end_offset == 2 * len(VALUE_SIZES)
    assert [segment.offset_index.entry(n) for n in range(segment.offset_index.entries)] == offsets
    assert [segment.time_index.entry(n) for n in range(segment.time_index.entries)] == times
    assert segment.max_timestamp_and_offset() == (TS + 10 * 11 + 1, 23)
    assert reopened.leader_epoch_cache.entries == [(3, 0)]
    reopened.close()


@pytest.mark.parametrize("cut", [1, 30, 61, 500, 1000])
def test_torn_batch_is_cut_wherever_the_reads_split_it(tmp_path, small_reads, cut):
    log, _, _ = written_log(str(tmp_path / "t-0"))
    path = log.active_segment.log.path
    sizes = [h.size for h in iter_headers(Path(path).read_bytes())]
    last_start = sum(sizes[:-1])
    os.truncate(path, last_start + min(cut, sizes[-1] - 1))
    reopened = Log(log.dir, CONFIG)
    assert reopened.log_end_offset == 2 * (len(VALUE_SIZES) - 1)
    assert os.path.getsize(path) == last_start
    reopened.close()


def test_corrupt_batch_larger_than_the_buffer_ends_the_log(tmp_path, small_reads):
    log, _, _ = written_log(str(tmp_path / "t-0"))
    path = log.active_segment.log.path
    sizes = [h.size for h in iter_headers(Path(path).read_bytes())]
    fourth = sum(sizes[:3])  # the 1500-byte value's batch, three buffers long
    with open(path, "r+b") as f:
        f.seek(fourth + sizes[3] - 7)
        f.write(b"\xff")
    reopened = Log(log.dir, CONFIG)
    assert reopened.log_end_offset == 6 and os.path.getsize(path) == fourth
    reopened.close()


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_messages_are_recovered_and_a_torn_one_cut(tmp_path, small_reads, magic):
    log = Log(str(tmp_path / "t-0"), CONFIG)
    log.append_as_follower(legacy_message_set(magic, 30, 0))
    path = log.active_segment.log.path
    size = os.path.getsize(path)
    log.close_handlers()
    os.truncate(path, size - 3)  # the last message (34 or 42 bytes) loses its end
    reopened = Log(log.dir, CONFIG)
    assert reopened.log_end_offset == 29
    message = 26 + len(b"legacy-29") + (8 if magic else 0)
    assert os.path.getsize(path) == size - message
    assert reopened.active_segment.offset_index.entries > 0
    reopened.close()


def test_offset_index_bulk_append_keeps_appends_checks(tmp_path):
    index = OffsetIndex(str(tmp_path / "0.index"), 100, max_index_size=64)  # 8 entries
    index.append_entries([(101, 0), (105, 40), (110, 90)])
    assert [index.entry(n) for n in range(3)] == [(101, 0), (105, 40), (110, 90)]
    with pytest.raises(ValueError, match="no larger than the last offset appended"):
        index.append_entries([(111, 100), (111, 120)])
    assert index.entries == 4  # (111, 100) went in before the refused entry
    with pytest.raises(ValueError, match="full index"):
        index.append_entries([(200 + i, 200 + i) for i in range(5)])
    assert index.entries == 8
    index.close()


def test_time_index_bulk_append_behaves_as_maybe_append(tmp_path):
    index = TimeIndex(str(tmp_path / "0.timeindex"), 100, max_index_size=60)  # 5 slots
    index.append_entries([(TS, 101), (TS + 5, 104)])
    index.append_entries([(TS + 5, 106), (TS + 9, 107)])  # an equal timestamp is skipped
    assert [index.entry(n) for n in range(index.entries)] == [
        (TS, 101),
        (TS + 5, 104),
        (TS + 9, 107),
    ]
    with pytest.raises(ValueError, match="no larger than the last offset"):
        index.append_entries([(TS + 20, 105)])
    with pytest.raises(ValueError, match="full time index"):
        index.append_entries([(TS + 30, 110), (TS + 31, 111)])  # the last slot is kept
    index.close()


def test_recovered_producer_snapshot_spares_a_second_replay(tmp_path):
    first = ProducerStateManager(str(tmp_path))
    second = ProducerStateManager(str(tmp_path))  # segment recovery's own manager
    second.update_map_end_offset(50)
    second.take_snapshot(sync=False)
    first.remove_stray_snapshots([0])
    assert first.latest_snapshot_offset() == 50


def test_truncating_epochs_from_start_to_where_they_start_writes_nothing(tmp_path):
    path = str(tmp_path / "leader-epoch-checkpoint")
    cache = LeaderEpochFileCache(LeaderEpochCheckpointFile(path))
    cache.assign(4, 0)
    before = os.stat(path)
    cache.truncate_from_start(0)
    after = os.stat(path)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    cache.truncate_from_start(3)  # this one moves the first entry: rewritten
    assert cache.entries == [(4, 3)] and os.stat(path).st_ino != before.st_ino
