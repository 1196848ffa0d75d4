"""A full disk under a log: the failed append is refused whole, the dir goes offline, and
the log recovers to exactly the appends that succeeded once there is room again.

Each test fills a tmpfs of its own (tests/_tmpfs.py; skipped where it cannot be mounted).
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap

import pytest

from kt.config import LogConfig
from kt.errors import KafkaStorageError
from kt.storage import names
from kt.storage.log import Log
from kt.storage.log_dir_failure_channel import LogDirFailureChannel
from kt.storage.log_manager import LogManager
from tests.storage._batches import Clock, batch

PAGE = 4096


def fill(fs, leave: int) -> None:
    """Write a filler file that leaves `leave` bytes (whole pages) free on `fs`."""
    with open(fs.path / "filler", "wb") as f:
        f.write(b"\0" * (fs.free_bytes() - leave))
    assert fs.free_bytes() == leave


def open_log(directory, channel: LogDirFailureChannel | None = None, **config) -> Log:
    return Log(str(directory), LogConfig(**config), clock=Clock(), failure_channel=channel)


def test_append_on_a_full_disk_is_refused_whole_and_the_log_recovers_exactly(small_fs) -> None:
    fs = small_fs(1 << 20)
    channel = LogDirFailureChannel()
    failed_dirs: list[str] = []
    channel.listeners.append(failed_dirs.append)
    log = open_log(fs.path / "t-0", channel)
    acked, whole_bytes = 0, 0
    with pytest.raises(KafkaStorageError) as refused:
        for _ in range(1000):  # 1 MiB holds about 90 of these 11 KiB batches
            info = log.append_as_leader(batch(count=10, value_size=1100), leader_epoch=0)
            acked = info.last_offset + 1
            whole_bytes = log.active_segment.size
    assert 50 < acked < 1000
    assert str(refused.value) == f"Error while appending records to t-0 in dir {fs.path}"
    assert failed_dirs == [str(fs.path)]
    # The torn write was cut off: the file ends after the last whole batch.
    assert os.path.getsize(fs.path / "t-0" / "00000000000000000000.log") == whole_bytes
    assert log.log_end_offset == acked

    log.close_handlers()  # what the LogManager does to the logs of a failed dir
    fs.grow(4 << 20)
    reopened = open_log(fs.path / "t-0")
    assert reopened.log_end_offset == acked
    batches = list(reopened.active_segment.log.batches())
    assert sum(b.count for b, _ in batches) == acked
    assert all(b.is_valid() for b, _ in batches)
    assert reopened.append_as_leader(batch(), leader_epoch=0).first_offset == acked


def test_an_append_whose_index_entry_finds_no_room_is_cut_off(small_fs) -> None:
    """The batch fits, but the index entry it is due needs a page the disk no longer
    has: the append is refused, and the batch does not stay behind in the .log."""
    fs = small_fs(1 << 20)
    log = open_log(fs.path / "t-0", LogDirFailureChannel(), index_interval_bytes=0)
    log.append_as_leader(batch(value_size=100), leader_epoch=0)  # no index entry yet
    first_size = log.active_segment.size
    fill(fs, leave=PAGE)  # room for the next batch, none for the index
    with pytest.raises(KafkaStorageError):
        log.append_as_leader(batch(value_size=100), leader_epoch=0)
    assert os.path.getsize(fs.path / "t-0" / "00000000000000000000.log") == first_size
    assert log.log_end_offset == 1


def test_an_index_on_a_full_disk_raises_enospc_instead_of_crashing(small_fs) -> None:
    """An entry written through the map into a sparse page that the disk cannot back is
    a SIGBUS, which kills the process: run it in a child and require an OSError."""
    fs = small_fs(1 << 20)
    fill(fs, leave=0)
    child = textwrap.dedent(
        f"""
        import sys
        from kt.storage.offset_index import OffsetIndex
        index = OffsetIndex({str(fs.path / "0.index")!r}, 0, 1 << 20)
        try:
            for i in range(1 << 17):
                index.append(i, i)
        except OSError as e:
            print(e.errno)
            sys.exit(3)
        """
    )
    result = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True)
    assert (result.returncode, result.stdout.strip()) == (3, str(errno.ENOSPC)), result.stderr


def test_a_failed_log_dir_goes_offline_and_the_others_carry_on(small_fs, tmp_path) -> None:
    fs = small_fs(1 << 20)
    healthy = tmp_path / "healthy"
    manager = LogManager([str(fs.path), str(healthy)], LogConfig(), clock=Clock())
    small = manager.get_or_create_log("t", 0)  # the least used dir: the first
    other = manager.get_or_create_log("t", 1)
    assert (small.parent_dir, other.parent_dir) == (str(fs.path), str(healthy))
    with pytest.raises(KafkaStorageError):
        for _ in range(1000):
            small.append_as_leader(batch(count=10, value_size=1100), leader_epoch=0)

    assert manager.live_log_dirs == [str(healthy)]
    assert manager.get_log("t", 0) is None
    with pytest.raises(KafkaStorageError, match="is closed"):
        small.append_as_leader(batch(), leader_epoch=0)
    assert other.append_as_leader(batch(), leader_epoch=0).first_offset == 0
    assert manager.get_or_create_log("t", 2).parent_dir == str(healthy)

    fs.grow(4 << 20)  # room again: still nothing is written to the offline dir
    offline_files = sorted(p.name for p in fs.path.iterdir())
    manager.checkpoint_all()
    manager.shutdown()
    assert sorted(p.name for p in fs.path.iterdir()) == offline_files
    assert (healthy / names.CLEAN_SHUTDOWN_FILE_NAME).exists()
    assert not (fs.path / names.CLEAN_SHUTDOWN_FILE_NAME).exists()
