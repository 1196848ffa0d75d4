"""The leader's append path: offsets assigned in the headers, a writable buffer (the
broker's request) patched in place and written with one write, a read-only one left
alone (the log patches a copy); whole appends refused."""

from __future__ import annotations

import os

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kt.config import LogConfig
from kt.errors import KafkaError
from kt.storage import file_records
from kt.storage.batch_header import iter_headers
from kt.storage.file_records import FileRecords
from kt.storage.log import Log
from kt.storage.record_batch import Record, build_batch
from kt.storage.records import iter_batches
from tests.storage._batches import TS, batch


def log_bytes(log: Log) -> bytes:
    return log.read(log.log_start_offset, 1 << 20).records.read_bytes()


@pytest.mark.parametrize("wrap", [bytes, bytearray, lambda b: memoryview(bytes(b))])
def test_several_batches_in_one_append_get_offsets_and_the_callers_bytes_stay(tmp_path, wrap):
    log = Log(str(tmp_path / "t-0"), LogConfig())
    log.append_as_leader(batch(1), leader_epoch=7)
    sent = batch(2) + batch(3, ts=TS + 100) + batch(1, ts=TS + 50)
    records = wrap(sent)
    info = log.append_as_leader(records, leader_epoch=7)
    if isinstance(records, bytearray):  # patched in place into exactly what was written
        assert bytes(records) == log_bytes(log)[len(batch(1)) :] != sent
    else:
        assert bytes(records) == sent  # read-only: left alone
    assert (info.first_offset, info.last_offset, info.num_records) == (1, 6, 6)
    assert (info.max_timestamp, info.offset_of_max_timestamp) == (TS + 102, 5)
    assert info.valid_bytes == len(sent)
    headers = list(iter_headers(log_bytes(log)))
    assert [(h.base_offset, h.last_offset, h.partition_leader_epoch) for h in headers] == [
        (0, 0, 7),
        (1, 2, 7),
        (3, 5, 7),
        (6, 6, 7),
    ]
    assert all(h.is_valid() for h in headers)
    # Apart from baseOffset and partitionLeaderEpoch, the bytes are the client's.
    written = log_bytes(log)[len(batch(1)) :]
    starts = [0, len(batch(2)), len(batch(2)) + len(batch(3)), len(sent)]
    for start, end in zip(starts[:-1], starts[1:], strict=True):
        assert written[start + 8 : start + 12] == sent[start + 8 : start + 12]
        assert written[start + 16 : end] == sent[start + 16 : end]
    log.close()


@pytest.mark.parametrize("wrap", [bytes, bytearray])
def test_log_append_time_rechecksums_every_batch_of_an_append(tmp_path, wrap):
    log = Log(str(tmp_path / "t-0"), LogConfig(message_timestamp_type="LogAppendTime"))
    info = log.append_as_leader(wrap(batch(2) + batch(1)), leader_epoch=0, now_ms=TS + 9000)
    headers = list(iter_headers(log_bytes(log)))
    assert [(h.is_log_append_time, h.max_timestamp, h.is_valid()) for h in headers] == [
        (True, TS + 9000, True),
        (True, TS + 9000, True),
    ]
    assert (info.log_append_time, info.max_timestamp, info.offset_of_max_timestamp) == (
        TS + 9000,
        TS + 9000,
        1,
    )
    log.close()


def test_a_bad_batch_anywhere_refuses_the_whole_append(tmp_path):
    log = Log(str(tmp_path / "t-0"), LogConfig())
    bad = bytearray(batch(2))
    bad[-1] ^= 0x01
    with pytest.raises(KafkaError) as error:
        log.append_as_leader(batch(1) + bytes(bad), leader_epoch=0)
    assert error.value.name == "CORRUPT_MESSAGE"
    assert log.log_end_offset == 0 and os.path.getsize(log.active_segment.log.path) == 0
    log.close()


def test_an_empty_append_writes_nothing(tmp_path):
    log = Log(str(tmp_path / "t-0"), LogConfig(message_timestamp_type="LogAppendTime"))
    info = log.append_as_leader(b"", leader_epoch=2)
    assert (info.first_offset, info.last_offset, info.log_append_time) == (0, -1, -1)
    assert log.leader_epoch_cache.entries == []
    log.close()


def test_append_writes_everything_past_a_short_write(tmp_path, monkeypatch):
    records = FileRecords.open(str(tmp_path / "0.log"))
    real_write = os.write
    monkeypatch.setattr(file_records.os, "write", lambda fd, data: real_write(fd, data[:2]))
    assert records.append(memoryview(b"0123456")) == 7
    assert records.append(b"abc") == 3
    assert records.size == 10 and records.read(0, 100) == b"0123456abc"
    records.close()


NOW = TS + 3_600_000  # the broker's clock in the timestamp tests: an hour after TS


@pytest.mark.parametrize("compression", [0, 1])  # none, gzip: records are walked either way
def test_timestamp_bounds_refuse_a_record_too_old_or_too_new(tmp_path, compression):
    config = LogConfig(
        message_timestamp_before_max_ms=600_000, message_timestamp_after_max_ms=60_000
    )
    log = Log(str(tmp_path / "t-0"), config, clock=lambda: NOW)
    ok = batch(3, ts=NOW - 600_000, ts_step=300_000, compression=compression)  # NOW - 10 min .. NOW
    info = log.append_as_leader(ok, leader_epoch=0)
    assert (info.first_offset, info.last_offset) == (0, 2)
    for bad, offset in (
        (batch(3, ts=NOW - 600_001, ts_step=1, compression=compression), 0),  # first too old
        (batch(3, ts=NOW, ts_step=30_001, compression=compression), 2),  # last too new
    ):
        with pytest.raises(KafkaError) as refused:
            log.append_as_leader(bad, leader_epoch=0)
        assert refused.value.name == "INVALID_TIMESTAMP"
        assert (
            str(refused.value) == "One or more records have been rejected due to invalid timestamp"
        )
        [(index, message)] = refused.value.record_errors  # KIP-467: the bad record, named
        assert index == offset
        assert f"of message with offset {offset} is out of range" in message
        assert message.endswith(f"[{NOW - 600_000}, {NOW + 60_000}]")
    assert log.log_end_offset == 3 and log.size == len(ok)  # nothing of a refused append


def test_timestamp_bounds_skip_records_without_timestamps_and_log_append_time_topics(tmp_path):
    bounded = LogConfig(message_timestamp_before_max_ms=0, message_timestamp_after_max_ms=0)
    log = Log(str(tmp_path / "t-0"), bounded, clock=lambda: NOW)
    log.append_as_leader(batch(2, ts=-1, ts_step=0), leader_epoch=0)  # NO_TIMESTAMP passes
    appended = Log(
        str(tmp_path / "u-0"),
        LogConfig(message_timestamp_before_max_ms=0, message_timestamp_type="LogAppendTime"),
        clock=lambda: NOW,
    )
    appended.append_as_leader(batch(2, ts=TS), leader_epoch=0)  # the broker's time replaces it
    assert log.log_end_offset == appended.log_end_offset == 2
    assert not LogConfig().bounds_timestamps  # Kafka's defaults (Long.MAX) walk nothing


def test_a_compacted_topic_refuses_a_record_without_a_key(tmp_path):
    log = Log(str(tmp_path / "t-0"), LogConfig(cleanup_policy=("compact",)))
    keyed = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, batch_size=1 << 20)
    keyed.append(0, timestamp=TS, key=b"k", value=b"v", headers=[])
    keyed.append(1, timestamp=TS, key=None, value=b"v", headers=[])
    with pytest.raises(KafkaError) as refused:
        log.append_as_leader(bytes(keyed.build()), leader_epoch=0)
    assert refused.value.name == "INVALID_RECORD"
    reason = "Compacted topic cannot accept message without key in topic partition t-0."
    assert refused.value.record_errors == [(1, reason)]  # KIP-467: the second record
    assert str(refused.value) == (
        "One or more records have been rejected due to 1 record errors in total, and only "
        f"showing the first three errors at most: [RecordError(batchIndex=1, message='{reason}')]"
    )
    assert log.log_end_offset == 0 and log.size == 0
    with_keys = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, batch_size=1 << 20)
    with_keys.append(0, timestamp=TS, key=b"k", value=None, headers=[])  # a tombstone is fine
    log.append_as_leader(bytes(with_keys.build()), leader_epoch=0)
    assert log.log_end_offset == 1


def test_the_old_difference_bound_applies_where_before_and_after_are_left_at_default(tmp_path):
    """message.timestamp.difference.max.ms (deprecated by KIP-937) bounds both sides while
    before/after are at their default, as Kafka 3.9's LogConfig reads it; a before/after
    that is set wins on its side."""
    old = LogConfig.from_props({"message.timestamp.difference.max.ms": "1000"})
    log = Log(str(tmp_path / "t-0"), old, clock=lambda: NOW)
    for ts in (NOW - 1001, NOW + 1001):  # a record stamped in 2001 is refused the same way
        with pytest.raises(KafkaError) as refused:
            log.append_as_leader(batch(1, ts=ts), leader_epoch=0)
        assert refused.value.name == "INVALID_TIMESTAMP"
    log.append_as_leader(batch(1, ts=NOW - 1000), leader_epoch=0)
    mixed = LogConfig.from_props({"message.timestamp.difference.max.ms": "1000",
                                  "message.timestamp.after.max.ms": "5000"})  # fmt: skip
    assert (mixed.timestamp_before_max_ms, mixed.timestamp_after_max_ms) == (1000, 5000)
    assert (
        Log(str(tmp_path / "u-0"), mixed, clock=lambda: NOW)
        .append_as_leader(batch(1, ts=NOW + 4000), leader_epoch=0)
        .first_offset
        == 0
    )


def stored_batches(log: Log) -> list:
    return list(iter_batches(log_bytes(log)))


@pytest.mark.parametrize(("topic_codec", "codec_id", "sent_with"),
                         [("gzip", 1, 0), ("zstd", 4, 3), ("lz4", 3, 1), ("snappy", 2, 0),
                          ("uncompressed", 0, 1)])  # fmt: skip
def test_a_topic_codec_other_than_producer_rewrites_client_batches(
    tmp_path, topic_codec, codec_id, sent_with
):
    """compression.type other than producer: the leader writes a client's batch in the
    topic's codec (Kafka's LogValidator recompresses), keeping its records, offsets,
    timestamps, producer id, epoch and sequence; a batch in that codec already is kept."""
    log = Log(str(tmp_path / "t-0"), LogConfig.from_props({"compression.type": topic_codec}))
    sent = batch(50, pid=7, epoch=2, seq=0, compression=sent_with, value_size=100)
    info = log.append_as_leader(sent, leader_epoch=3)
    assert (info.first_offset, info.last_offset) == (0, 49)
    [stored] = stored_batches(log)
    [original] = list(iter_batches(sent))
    assert stored.compression_type == codec_id
    assert stored.is_valid()
    assert (stored.producer_id, stored.producer_epoch, stored.base_sequence) == (7, 2, 0)
    assert (stored.base_offset, stored.last_offset, stored.max_timestamp) == (0, 49, TS + 49)
    assert [(r.offset, r.timestamp, r.key, r.value) for r in stored.records()] == [
        (r.offset, r.timestamp, r.key, r.value) for r in original.records()
    ]
    again = build_batch([Record(None, TS, None, b"v" * 100)] * 3, compression_type=codec_id,
                        producer_id=7, producer_epoch=2, base_sequence=50)  # fmt: skip
    log.append_as_leader(again, leader_epoch=3)
    kept = log_bytes(log)[stored.size :]
    assert kept[16:] == again[16:]  # but for offset and leader epoch, the client's bytes
    log.close()


@pytest.mark.parametrize(("codec", "key", "low", "high"),
                         [("gzip", "compression.gzip.level", "1", "9"),
                          ("lz4", "compression.lz4.level", "1", "12"),
                          ("zstd", "compression.zstd.level", "1", "19")])  # fmt: skip
def test_the_topic_codec_level_reaches_the_codec(tmp_path, codec, key, low, high):
    """KIP-390's levels: the same records written at a higher level take fewer bytes."""
    words = [b"kafka", b"segment", b"offset", b"index", b"leader", b"replica", b"epoch"]
    records = [Record(None, TS + i, None, b" ".join(words[(i * j * 7919) % 7]
                                                   for j in range(60)))
               for i in range(300)]  # fmt: skip
    sizes = {}
    for level in (low, high):
        config = LogConfig.from_props({"compression.type": codec, key: level})
        log = Log(str(tmp_path / f"{codec}-{level}-0"), config)
        log.append_as_leader(build_batch(records), leader_epoch=0)
        sizes[level] = log.size
        log.close()
    assert sizes[high] < sizes[low]
