"""What opening a log after a clean shutdown costs: an idle partition maps no index and
holds one descriptor, rewrites no checkpoint and no producer snapshot (a broker with
10,000 partitions opens each of them at every start)."""

from __future__ import annotations

import os

from kt.config import LogConfig
from kt.storage.log import Log
from tests.storage._batches import batch

CONFIG = LogConfig(segment_bytes=4096)


def descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def stamps(directory: str) -> dict[str, tuple[int, int]]:
    """(inode, mtime ns) of every file: a rewrite (atomic replace) changes the inode."""
    out = {}
    for name in os.listdir(directory):
        st = os.stat(os.path.join(directory, name))
        out[name] = (st.st_ino, st.st_mtime_ns)
    return out


def test_an_idle_log_opens_with_one_descriptor_and_writes_nothing(tmp_path) -> None:
    directory = str(tmp_path / "idle-0")
    log = Log(directory, CONFIG)
    log.leader_epoch_cache.assign(0, 0)
    log.close()  # a clean shutdown
    before = stamps(directory)
    assert sorted(before) == [
        "00000000000000000000.index", "00000000000000000000.log",
        "00000000000000000000.snapshot", "00000000000000000000.timeindex",
        "leader-epoch-checkpoint",
    ]  # fmt: skip
    open_before = descriptors()
    log = Log(directory, CONFIG, had_clean_shutdown=True)
    assert descriptors() == open_before + 1  # the .log file; no index mapped
    log.leader_epoch_cache.assign(0, 0)  # becoming leader again in the same epoch
    assert stamps(directory) == before
    log.close()


def test_the_index_of_a_log_with_data_is_mapped_when_first_read(tmp_path) -> None:
    directory = str(tmp_path / "data-0")
    log = Log(directory, CONFIG)
    for _ in range(20):
        log.append_as_leader(batch(3, value_size=100), leader_epoch=0)
    log.close()
    log = Log(directory, CONFIG, had_clean_shutdown=True)
    old = log.segments[0]
    assert old._offset_index is None and old._time_index is None
    assert log.read(4, 1 << 20).records.read_bytes()[:8] == (3).to_bytes(8, "big")
    assert old._offset_index is not None  # the read looked the offset up in it
    log.close()
