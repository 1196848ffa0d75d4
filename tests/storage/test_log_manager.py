"""LogManager: partition directories, name validation, the dir lock, checkpoints,
clean shutdown, deletion."""

from __future__ import annotations

import json
import os

import pytest

from kt.config import LogConfig
from kt.errors import KafkaError
from kt.storage.log_manager import LogDirLockedError, LogManager
from kt.storage.names import parse_topic_partition_name
from tests.storage._batches import TS, batch


def test_creates_partition_dirs_and_reloads_them(tmp_path):
    manager = LogManager([str(tmp_path / "a"), str(tmp_path / "b")], LogConfig())
    log = manager.get_or_create_log("orders", 0)
    manager.get_or_create_log("orders", 1)
    assert manager.get_or_create_log("orders", 0) is log
    assert {os.path.basename(os.path.dirname(x.dir)) for x in manager.all_logs()} == {"a", "b"}
    log.append_as_leader(batch(3), leader_epoch=0)
    log.high_watermark = 3
    manager.shutdown()
    marker = tmp_path / "a" / ".kafka_cleanshutdown"
    assert json.loads(marker.read_text()) == {"version": 0, "brokerEpoch": -1}
    assert marker.read_bytes() == b'{"version":0,"brokerEpoch":-1}'
    checkpoint = (
        tmp_path / os.path.basename(os.path.dirname(log.dir)) / "replication-offset-checkpoint"
    )
    assert checkpoint.read_bytes() == b"0\n1\norders 0 3\n"

    reopened = LogManager([str(tmp_path / "a"), str(tmp_path / "b")], LogConfig())
    assert not marker.exists()  # removed at start-up
    again = reopened.get_log("orders", 0)
    assert (again.log_end_offset, again.high_watermark, again.recovery_point) == (3, 3, 3)
    assert reopened.get_log("orders", 1) is not None and reopened.get_log("nope", 0) is None
    reopened.shutdown()


@pytest.mark.parametrize("topic", ["", ".", "..", "../etc", "a/b", "x" * 250, "tab\t", "ü"])
def test_illegal_topic_names_never_reach_the_disk(tmp_path, topic):
    manager = LogManager(str(tmp_path), LogConfig())
    with pytest.raises(KafkaError) as info:
        manager.get_or_create_log(topic, 0)
    assert info.value.name == "INVALID_TOPIC_EXCEPTION"
    with pytest.raises(KafkaError):
        manager.get_or_create_log("fine", -1)
    assert sorted(os.listdir(tmp_path)) == [".lock"]
    manager.shutdown()


def test_longest_legal_topic_name(tmp_path):
    manager = LogManager(str(tmp_path), LogConfig())
    log = manager.get_or_create_log("a.b_c-D9" * 31 + "x", 12)
    assert os.path.basename(log.dir) == "a.b_c-D9" * 31 + "x-12"
    manager.shutdown()


def test_a_second_manager_on_the_same_dir_is_refused(tmp_path):
    manager = LogManager(str(tmp_path), LogConfig())
    with pytest.raises(LogDirLockedError, match="Failed to acquire lock on file .lock"):
        LogManager(str(tmp_path), LogConfig())
    manager.shutdown()
    LogManager(str(tmp_path), LogConfig()).shutdown()  # free again after shutdown


def test_delete_log_renames_then_removes(tmp_path):
    manager = LogManager(str(tmp_path), LogConfig())
    manager.get_or_create_log("t", 3).append_as_leader(batch(1), leader_epoch=0)
    manager.delete_log("t", 3)
    assert manager.get_log("t", 3) is None
    assert not any(n.startswith("t-3") for n in os.listdir(tmp_path))
    manager.shutdown()


def test_leftover_delete_dir_is_removed_at_start_up(tmp_path):
    (tmp_path / "t-0.0123456789abcdef0123456789abcdef-delete").mkdir()
    assert parse_topic_partition_name("t-0.0123456789abcdef0123456789abcdef-delete") == ("t", 0)
    manager = LogManager(str(tmp_path), LogConfig())
    assert manager.all_logs() == [] and sorted(os.listdir(tmp_path)) == [".lock"]
    manager.shutdown()


def test_checkpoints_and_retention_through_the_manager(tmp_path):
    config = LogConfig(segment_bytes=len(batch(1)), file_delete_delay_ms=0)
    manager = LogManager(str(tmp_path), config, clock=lambda: TS)  # within retention.ms
    log = manager.get_or_create_log("t", 0)
    for _ in range(4):
        log.append_as_leader(batch(1), leader_epoch=0)
    log.high_watermark = 4
    log.maybe_increment_log_start_offset(2)  # DeleteRecords
    manager.flush_dirty_logs()  # flushes the segments rolled so far
    manager.checkpoint_all()
    assert (tmp_path / "log-start-offset-checkpoint").read_bytes() == b"0\n1\nt 0 2\n"
    assert (tmp_path / "recovery-point-offset-checkpoint").read_bytes() == b"0\n1\nt 0 3\n"
    assert manager.cleanup_logs() == 2
    manager.checkpoint_all()  # the first segment now starts at the log start offset
    assert (tmp_path / "log-start-offset-checkpoint").read_bytes() == b"0\n0\n"
    manager.shutdown()
    reopened = LogManager(str(tmp_path), LogConfig())
    assert reopened.get_log("t", 0).log_start_offset == 2
    reopened.shutdown()
