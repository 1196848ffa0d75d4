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
from kt.storage.control_records import COMMIT, EndTransactionMarker, build_end_txn_marker_batch
from kt.storage.log import Log
from kt.storage.log_segment import LogSegment
from tests.storage._batches import TS, Clock, batch


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
    take the general path."""
    ts = TS + draw(st.integers(-3_000, 30_000))
    count = draw(st.integers(1, 6))
    value_size = draw(st.integers(0, 400))
    kind = draw(
        st.sampled_from(
            ["plain"] * 6 + ["two batches", "idempotent", "control", "corrupt", "no timestamp"]
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
