"""Checkpoint files in Kafka's text format, and the leader epoch cache over one."""

from __future__ import annotations

import pytest

from kt.storage.checkpoints import CheckpointError, LeaderEpochCheckpointFile, OffsetCheckpointFile
from kt.storage.leader_epoch import LeaderEpochFileCache


def test_offset_checkpoint_literal_text_and_round_trip(tmp_path):
    path = tmp_path / "recovery-point-offset-checkpoint"
    checkpoint = OffsetCheckpointFile(str(path))
    checkpoint.write({("orders", 0): 42, ("my.topic_x-1", 7): 0})
    assert path.read_bytes() == b"0\n2\norders 0 42\nmy.topic_x-1 7 0\n"
    assert checkpoint.read() == {("orders", 0): 42, ("my.topic_x-1", 7): 0}
    assert not (tmp_path / "recovery-point-offset-checkpoint.tmp").exists()


def test_missing_or_empty_checkpoint_reads_as_nothing(tmp_path):
    assert OffsetCheckpointFile(str(tmp_path / "none")).read() == {}
    (tmp_path / "empty").write_bytes(b"")
    assert OffsetCheckpointFile(str(tmp_path / "empty")).read() == {}


@pytest.mark.parametrize(
    "text, message",
    [
        (b"1\n0\n", "Unrecognised version:1"),
        (b"0\n2\nt 0 5\n", r"Expected \[2\] entries"),
        (b"0\n1\nt 0\n", "Malformed line"),
        (b"0\n1\nt zero 5\n", "Malformed line"),
    ],
)
def test_bad_checkpoints_are_refused_with_the_reason(tmp_path, text, message):
    (tmp_path / "cp").write_bytes(text)
    with pytest.raises(CheckpointError, match=message):
        OffsetCheckpointFile(str(tmp_path / "cp")).read()


def test_leader_epoch_checkpoint_literal_text(tmp_path):
    path = tmp_path / "leader-epoch-checkpoint"
    cache = LeaderEpochFileCache(LeaderEpochCheckpointFile(str(path)))
    cache.assign(0, 0)
    cache.assign(0, 10)  # same epoch, later offset: no change
    cache.assign(3, 25)
    assert path.read_bytes() == b"0\n2\n0 0\n3 25\n"
    assert LeaderEpochFileCache(LeaderEpochCheckpointFile(str(path))).entries == [(0, 0), (3, 25)]


def test_end_offset_for_epoch(tmp_path):
    cache = LeaderEpochFileCache(LeaderEpochCheckpointFile(str(tmp_path / "lec")))
    for epoch, offset in ((1, 0), (3, 100), (6, 250)):
        cache.assign(epoch, offset)
    assert cache.end_offset_for(6, log_end_offset=300) == (6, 300)  # current epoch: LEO
    assert cache.end_offset_for(3, 300) == (3, 250)
    assert cache.end_offset_for(4, 300) == (3, 250)  # unknown epoch: the one before it
    assert cache.end_offset_for(0, 300) == (0, 0)
    assert cache.end_offset_for(7, 300) == (-1, -1)
    assert cache.end_offset_for(-1, 300) == (-1, -1)
    assert cache.epoch_for_offset(120) == 3


def test_epoch_cache_truncation_and_conflicting_entries(tmp_path):
    cache = LeaderEpochFileCache(LeaderEpochCheckpointFile(str(tmp_path / "lec")))
    for epoch, offset in ((1, 0), (2, 50), (3, 90)):
        cache.assign(epoch, offset)
    cache.truncate_from_end(60)
    assert cache.entries == [(1, 0), (2, 50)]
    cache.truncate_from_start(55)
    assert cache.entries == [(2, 55)]
    cache.assign(4, 40)  # an older start offset for a newer epoch removes what conflicts
    assert cache.entries == [(4, 40)]
