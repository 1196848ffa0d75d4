"""Recovery on open: torn tails, garbage, corrupt batches, lost or zeroed indexes, leftovers."""

from __future__ import annotations

import logging
import os
import shutil

import pytest

from kt.config import LogConfig
from kt.storage.batch_header import iter_headers
from kt.storage.log import Log
from tests.storage._batches import batch

CONFIG = LogConfig(segment_bytes=1000, index_interval_bytes=100)
BATCH = len(batch(3, value_size=20))  # every batch below has this size


def seg(offset: int, suffix: str) -> str:
    return f"{offset:020d}{suffix}"


def crashed_log(tmp_path, batches: int = 20) -> str:
    """A log of `batches` 3-record batches over several segments, left as a crash leaves it."""
    log = Log(str(tmp_path / "t-0"), CONFIG)
    for _ in range(batches):
        log.append_as_leader(batch(3, value_size=20), leader_epoch=0)
    log.close_handlers()  # no flush, no trimming of the active indexes, no snapshot
    return log.dir


def offsets_readable(log: Log) -> list[int]:
    data = b"".join(
        log.read(s.base_offset, 1 << 20).records.read_bytes() for s in log.segments if s.size
    )
    return [o for h in iter_headers(data) for o in range(h.base_offset, h.last_offset + 1)]


def reopen(directory: str, **kwargs) -> Log:
    return Log(directory, CONFIG, **kwargs)


def active_log_file(directory: str) -> str:
    return sorted(p for p in os.listdir(directory) if p.endswith(".log"))[-1]


def test_crash_without_damage_recovers_everything(tmp_path):
    log = reopen(crashed_log(tmp_path))
    assert log.log_end_offset == 60 and offsets_readable(log) == list(range(60))
    log.close()


def test_batch_cut_in_half_is_truncated(tmp_path, caplog):
    directory = crashed_log(tmp_path)
    path = os.path.join(directory, active_log_file(directory))
    size = os.path.getsize(path)
    os.truncate(path, size - BATCH // 2)
    with caplog.at_level(logging.WARNING):
        log = reopen(directory)
    assert log.log_end_offset == 57 and offsets_readable(log) == list(range(57))
    assert os.path.getsize(path) == size - BATCH
    assert "truncating" in caplog.text
    assert log.append_as_leader(batch(1), leader_epoch=1).first_offset == 57
    log.close()


def test_garbage_appended_is_truncated(tmp_path):
    directory = crashed_log(tmp_path)
    path = os.path.join(directory, active_log_file(directory))
    size = os.path.getsize(path)
    with open(path, "ab") as f:
        f.write(os.urandom(37) + b"\x00" * 100)
    log = reopen(directory)
    assert log.log_end_offset == 60 and os.path.getsize(path) == size
    log.close()


def test_flipped_byte_in_a_middle_batch_cuts_the_log_there(tmp_path):
    directory = crashed_log(tmp_path)
    first = os.path.join(directory, seg(0, ".log"))
    batches_in_first = os.path.getsize(first) // BATCH
    middle = batches_in_first // 2
    with open(first, "r+b") as f:
        f.seek(middle * BATCH + 70)  # inside the records of batch `middle`
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0x01]))
    log = reopen(directory)
    assert log.log_end_offset == 3 * middle
    assert offsets_readable(log) == list(range(3 * middle))  # every earlier record survives
    assert [s.base_offset for s in log.segments] == [0]  # later segments are gone
    log.close()


@pytest.mark.parametrize("damage", ["delete", "zero"])
def test_lost_or_zeroed_index_is_rebuilt_byte_for_byte(tmp_path, damage):
    directory = crashed_log(tmp_path)
    log = reopen(directory)
    log.close()  # clean: later opens skip recovery
    with open(os.path.join(directory, seg(0, ".index")), "rb") as f:
        original = f.read()
    assert len(original) >= 16
    path = os.path.join(directory, seg(0, ".index"))
    if damage == "delete":
        os.unlink(path)
    else:
        with open(path, "r+b") as f:
            f.write(bytes(len(original)))
    log = reopen(directory, recovery_point=60, had_clean_shutdown=True)
    # A missing index is rebuilt at load; a zeroed one when first mapped (here, by reads).
    assert offsets_readable(log) == list(range(60))
    with open(path, "rb") as f:
        assert f.read() == original
    assert log.read(7, 1).records.read_bytes()[:8] == (6).to_bytes(8, "big")
    log.close()


def test_clean_shutdown_skips_recovery(tmp_path, caplog):
    directory = crashed_log(tmp_path)
    reopen(directory).close()
    with caplog.at_level(logging.INFO):
        log = reopen(directory, recovery_point=60, had_clean_shutdown=True)
    assert "Recovering unflushed segment" not in caplog.text and log.log_end_offset == 60
    log.close()


def test_recovery_starts_at_the_segment_holding_the_recovery_point(tmp_path, caplog):
    directory = crashed_log(tmp_path)
    bases = sorted(int(n[:20]) for n in os.listdir(directory) if n.endswith(".log"))
    with caplog.at_level(logging.INFO):
        log = reopen(directory, recovery_point=bases[2] + 1)
    recovered = [
        int(r.getMessage().rsplit(" ", 1)[1])
        for r in caplog.records
        if "Recovering unflushed segment" in r.getMessage()
    ]
    assert recovered == bases[2:]
    log.close()


def test_deleted_and_cleaned_leftovers_are_removed(tmp_path):
    directory = crashed_log(tmp_path)
    for name in (seg(0, ".log.deleted"), seg(5, ".index.deleted"), seg(3, ".log.cleaned")):
        with open(os.path.join(directory, name), "wb") as f:
            f.write(b"x")
    log = reopen(directory)
    assert not any(n.endswith((".deleted", ".cleaned")) for n in os.listdir(directory))
    assert log.log_end_offset == 60
    log.close()


def test_swap_file_replaces_the_segments_it_covers(tmp_path):
    directory = crashed_log(tmp_path)
    log = reopen(directory)
    log.close()
    bases = sorted(int(n[:20]) for n in os.listdir(directory) if n.endswith(".log"))
    # A compaction that merged the first two segments finished writing its .swap output.
    merged = os.path.join(directory, seg(0, ".log.swap"))
    with open(merged, "wb") as out:
        for base in bases[:2]:
            with open(os.path.join(directory, seg(base, ".log")), "rb") as f:
                out.write(f.read())
    shutil.copy(
        os.path.join(directory, seg(0, ".index")), os.path.join(directory, seg(0, ".index.swap"))
    )
    log = reopen(directory, recovery_point=60, had_clean_shutdown=True)
    assert [s.base_offset for s in log.segments] == [0, *bases[2:]]
    assert not any(n.endswith(".swap") for n in os.listdir(directory))
    assert offsets_readable(log) == list(range(60))
    log.close()
