"""Binary garbage in any checkpoint file: the broker's logs still load, with every record.

As Kafka treats them: a corrupt recovery-point, log-start-offset or replication-offset
checkpoint is logged and ignored (which means full recovery, and a high watermark from
the log); a corrupt leader-epoch checkpoint is rebuilt from the epochs the batches carry;
a corrupt producer snapshot is deleted and the producer state rebuilt from the log.
"""

from __future__ import annotations

import os
import random

import pytest

from kt.config import LogConfig
from kt.storage import names
from kt.storage.log_cleaner import LogCleaner
from kt.storage.log_manager import LogManager
from tests.storage._batches import Clock, batch

GARBAGE = bytes(random.Random(7).randrange(256) for _ in range(512)) + b"\xff\xfe\x00"

CHECKPOINTS = [
    names.RECOVERY_POINT_CHECKPOINT_FILE,
    names.LOG_START_OFFSET_CHECKPOINT_FILE,
    names.REPLICATION_OFFSET_CHECKPOINT_FILE,
    f"orders-0/{names.LEADER_EPOCH_CHECKPOINT_FILE}",
    "orders-0/00000000000000000012.snapshot",
]


def write_logs(log_dir: str) -> None:
    """Two epochs of records, an idempotent producer, a rolled segment; clean shutdown."""
    manager = LogManager(log_dir, LogConfig(segment_bytes=1200), clock=Clock())
    log = manager.get_or_create_log("orders", 0)
    for _ in range(3):
        log.append_as_leader(batch(3, value_size=100), leader_epoch=1)
    log.append_as_leader(batch(3, value_size=100, pid=7, epoch=0, seq=0), leader_epoch=4)
    log.high_watermark = log.log_end_offset
    assert log.number_of_segments > 1
    manager.shutdown()


@pytest.mark.parametrize("clean", [True, False], ids=["clean", "unclean"])
@pytest.mark.parametrize("file_name", CHECKPOINTS)
def test_garbage_in_a_checkpoint_loses_nothing(tmp_path, file_name, clean) -> None:
    log_dir = str(tmp_path)
    write_logs(log_dir)
    path = os.path.join(log_dir, file_name)
    assert os.path.exists(path), sorted(os.listdir(os.path.dirname(path)))
    with open(path, "wb") as f:
        f.write(GARBAGE)
    if not clean:
        os.unlink(os.path.join(log_dir, names.CLEAN_SHUTDOWN_FILE_NAME))

    manager = LogManager(log_dir, LogConfig(segment_bytes=1200), clock=Clock())
    log = manager.get_log("orders", 0)
    assert log is not None
    assert log.log_end_offset == 12
    assert log.leader_epoch_cache.entries == [(1, 0), (4, 9)]
    assert log.producer_state.last_entry(7).last_seq == 2
    records = sum(b.count for s in log.segments for b, _ in s.log.batches())
    assert records == 12
    manager.shutdown()


def test_garbage_in_the_cleaner_checkpoint_means_cleaning_from_the_start(tmp_path) -> None:
    write_logs(str(tmp_path))
    (tmp_path / "cleaner-offset-checkpoint").write_bytes(GARBAGE)
    manager = LogManager(str(tmp_path), LogConfig(segment_bytes=1200), clock=Clock())
    log = manager.get_log("orders", 0)
    cleaner = LogCleaner(Clock())
    assert cleaner.first_dirty_offset(log) == 0
    cleaner._write_checkpoint(log, 9)
    assert cleaner.first_dirty_offset(log) == 9
    manager.shutdown()
