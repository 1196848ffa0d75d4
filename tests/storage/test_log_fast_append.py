"""The leader's one-pass append (assign_offsets_to_client_batch, then
LogSegment.append_batch) against the general path it stands in for
(validate_and_assign_offsets, needs_roll, LogSegment.append): the same appends through
both give the same results, the same errors and the same files, byte for byte."""

from __future__ import annotations

import dataclasses
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kt.storage.log
from kt.config import LogConfig
from kt.errors import KafkaError
from kt.storage.batch_header import set_base_offset, set_log_append_time
from kt.storage.control_records import COMMIT, EndTransactionMarker, build_end_txn_marker_batch
from kt.storage.log import Log
from kt.storage.log_segment import LogSegment
from kt.storage.record_batch import Record, build_batch
from tests.storage._batches import TS, Clock, batch, legacy_message_set


def corrupt(data: bytes) -> bytes:
    """One byte of the last record flipped: the CRC no longer matches."""
    return data[:-1] + bytes([data[-1] ^ 0xFF])


def outcome(log: Log, data: bytes, leader_epoch: int) -> tuple:
    """An append's LogAppendInfo as a tuple, or the error code it raised."""
    try:
        return dataclasses.astuple(log.append_as_leader(bytearray(data), leader_epoch))
    except KafkaError as e:
        return ("error", e.code)


def general_outcome(log: Log, data: bytes, leader_epoch: int) -> tuple:
    """The same append with the one-pass check declining every batch."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kt.storage.log, "assign_offsets_to_client_batch", lambda *args: None)
        return outcome(log, data, leader_epoch)


def files(log: Log) -> dict[str, bytes]:
    out = {}
    for name in sorted(os.listdir(log.dir)):
        with open(os.path.join(log.dir, name), "rb") as f:
            out[name] = f.read()
    return out


@st.composite
def requests(draw) -> tuple[bytes, int]:  # type: ignore[no-untyped-def]
    """(produce request data, leader epoch): mostly plain batches, and the cases that must
    take the general path, which refuses some (a corrupt batch, the client rules, magic 1)."""
    ts = TS + draw(st.integers(-3_000, 30_000))
    count = draw(st.integers(1, 6))
    value_size = draw(st.integers(0, 400))
    kind = draw(
        st.sampled_from(
            ["plain"] * 8
            + ["two batches", "idempotent", "control", "corrupt", "no timestamp"]
            + ["base offset", "transactional", "offset range", "no records", "legacy"]
        )
    )
    if kind == "two batches":
        data = batch(count, ts, value_size) + batch(1, ts + 5, value_size)
    elif kind == "idempotent":
        data = batch(count, ts, value_size, pid=7, epoch=0, seq=draw(st.integers(0, 3)))
    elif kind == "control":
        marker = EndTransactionMarker(COMMIT, 0)
        data = build_end_txn_marker_batch(marker, producer_id=7, producer_epoch=0, timestamp=ts)
    elif kind == "corrupt":
        data = corrupt(batch(count, ts, value_size))
    elif kind == "no timestamp":
        data = batch(count, -1, value_size, ts_step=0)
    elif kind == "base offset":
        data = bytearray(batch(count, ts, value_size))
        set_base_offset(data, 0, 5)
    elif kind == "transactional":  # without a producer id
        data = batch(count, ts, value_size, transactional=True)
    elif kind == "offset range":  # a last offset delta that is not the record count's
        records = [Record(None, ts + i, None, b"v" * value_size) for i in range(count)]
        data = build_batch(records, last_offset=draw(st.sampled_from([-1, count, count + 3])))
    elif kind == "no records":  # lastOffsetDelta -1, yet a timestamp and a sound CRC
        data = bytearray(build_batch([], last_offset=-1))
        set_log_append_time(data, 0, ts)
    elif kind == "legacy":  # magic 1: refused by a leader
        data = legacy_message_set(1, count, 0)
    else:
        data = batch(count, ts, value_size)
    return data, draw(st.sampled_from([0, 0, 0, 1, 2]))


configs = st.builds(
    LogConfig,
    segment_bytes=st.sampled_from([1 << 30, 1_500, 4_000]),
    segment_index_bytes=st.sampled_from([10 << 20, 24, 96]),
    index_interval_bytes=st.sampled_from([1, 300, 4096]),
    segment_ms=st.sampled_from([7 * 86_400_000, 10_000]),
    max_message_bytes=st.sampled_from([1_048_588, 1_200]),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(config=configs, appends=st.lists(requests(), min_size=1, max_size=25))
def test_the_one_pass_append_gives_the_general_paths_log(tmp_path_factory, config, appends):
    directory = tmp_path_factory.mktemp("logs")
    clock = Clock()
    one_pass = Log(str(directory / "a-0"), config, clock=clock)
    general = Log(str(directory / "b-0"), config, clock=clock)
    for data, epoch in appends:
        clock.now += 1
        assert outcome(one_pass, data, epoch) == general_outcome(general, data, epoch)
    assert one_pass.log_end_offset == general.log_end_offset
    assert [s.base_offset for s in one_pass.segments] == [s.base_offset for s in general.segments]
    assert files(one_pass) == files(general)
    one_pass.close()
    general.close()


def test_a_plain_client_batch_takes_the_one_pass_append(tmp_path, monkeypatch):
    taken = []
    append_batch = LogSegment.append_batch

    def spy(segment, *args):  # type: ignore[no-untyped-def]
        taken.append(append_batch(segment, *args))
        return taken[-1]

    monkeypatch.setattr(LogSegment, "append_batch", spy)
    log = Log(str(tmp_path / "t-0"), LogConfig(index_interval_bytes=1), clock=Clock())
    for i in range(4):
        log.append_as_leader(bytearray(batch(3, TS + 10 * i, 20)), leader_epoch=0)
    # The first batch goes the general way (an empty segment: its first timestamp is
    # set there); the others take one pass, and each adds its index entries.
    assert taken == [False, True, True, True]
    segment = log.active_segment
    assert (segment.offset_index.entries, segment.time_index.entries) == (3, 3)
    assert log.log_end_offset == 12


def append_both_ways(tmp_path, config: LogConfig, appends: list[bytes]) -> list[int]:
    """Append `appends` through both ways, require the same outcomes and files, and return
    the segments' base offsets."""
    clock = Clock()
    one_pass = Log(str(tmp_path / "a-0"), config, clock=clock)
    general = Log(str(tmp_path / "b-0"), config, clock=clock)
    for data in appends:
        assert outcome(one_pass, data, 0) == general_outcome(general, data, 0)
    bases = [s.base_offset for s in one_pass.segments]
    assert bases == [s.base_offset for s in general.segments]
    assert files(one_pass) == files(general)
    one_pass.close()
    general.close()
    return bases


# Random appends seldom land exactly on a roll's threshold; these put one on each side.


@pytest.mark.parametrize(("slack", "bases"), [(-1, [0, 2, 4]), (0, [0, 3]), (1, [0, 3])])
def test_the_one_pass_rolls_at_segment_bytes_where_the_general_way_does(tmp_path, slack, bases):
    size = len(batch(1, TS, 100))
    config = LogConfig(segment_bytes=3 * size + slack)
    assert append_both_ways(tmp_path, config, [batch(1, TS + i, 100) for i in range(5)]) == bases


@pytest.mark.parametrize(("slack", "bases"), [(-1, [0]), (0, [0]), (1, [0, 1])])
def test_the_one_pass_rolls_at_segment_ms_where_the_general_way_does(tmp_path, slack, bases):
    appends = [batch(1, TS), batch(1, TS + 10_000 + slack)]
    assert append_both_ways(tmp_path, LogConfig(segment_ms=10_000), appends) == bases


@pytest.mark.parametrize("index_bytes", [24, 36, 48])
@pytest.mark.parametrize("step", [1, 0])  # one timestamp for all: only the offset index fills
def test_the_one_pass_rolls_on_a_full_index_where_the_general_way_does(tmp_path, index_bytes, step):
    config = LogConfig(segment_index_bytes=index_bytes, index_interval_bytes=1)
    bases = append_both_ways(tmp_path, config, [batch(1, TS + step * i) for i in range(10)])
    assert len(bases) > 1


@pytest.mark.parametrize("batches_per_interval", [1, 2])
def test_the_one_pass_indexes_at_the_interval_where_the_general_way_does(
    tmp_path, batches_per_interval
):
    # An entry comes after *more* than index.interval.bytes: here exactly that many.
    size = len(batch(1, TS, 100))
    config = LogConfig(index_interval_bytes=batches_per_interval * size)
    append_both_ways(tmp_path, config, [batch(1, TS + i, 100) for i in range(8)])
