"""producer-perf-test's Stats counts a batch at once: the same totals, maxima and
sampled latencies as ProducerPerformance.Stats.record called for each of its records."""

from __future__ import annotations

import io
from unittest import mock

from hypothesis import given
from hypothesis import strategies as st

from kt.tools.producer_perf import Stats

HOUR_MS = 3_600_000  # no window is printed within a test


def per_record(num_records: int, batches: list[tuple[list[int], int]]) -> Stats:
    """Java's Stats.record, one record at a time."""
    stats = Stats(num_records, io.StringIO(), reporting_interval_ms=HOUR_MS)
    for send_times, now in batches:
        for sent in send_times:
            latency = now - sent
            stats.count += 1
            stats.bytes += 10
            stats.total_latency += latency
            stats.max_latency = max(stats.max_latency, latency)
            if stats.iteration % stats.sampling == 0:
                stats.latencies.append(latency)
            stats.iteration += 1
    return stats


@given(
    # Stats samples every (num_records // 500_000)th latency: 1 up to 1 M records, then more
    num_records=st.one_of(st.integers(1, 1000), st.integers(2, 5).map(lambda k: k * 500_000)),
    batches=st.lists(
        st.tuples(st.lists(st.integers(0, 1000), max_size=40), st.integers(1000, 2000)),
        max_size=30,
    ),
)
def test_a_batch_counts_as_its_records_one_by_one(
    num_records: int, batches: list[tuple[list[int], int]]
) -> None:
    stats = Stats(num_records, io.StringIO(), reporting_interval_ms=HOUR_MS)
    for send_times, now in batches:
        stats.record_batch(send_times, 10, now)
    expected = per_record(num_records, batches)
    assert (stats.count, stats.bytes, stats.total_latency, stats.max_latency) == (
        expected.count, expected.bytes, expected.total_latency, expected.max_latency
    )  # fmt: skip
    assert stats.iteration == expected.iteration
    assert stats.latencies == expected.latencies
    assert stats.window_count == expected.count


@given(
    num_records=st.one_of(st.integers(1, 1000), st.integers(2, 5).map(lambda k: k * 500_000)),
    batches=st.lists(
        st.tuples(st.lists(st.integers(0, 1000), max_size=40), st.integers(1000, 2000)),
        max_size=30,
    ),
)
def test_one_record_at_a_time_counts_as_java(
    num_records: int, batches: list[tuple[list[int], int]]
) -> None:
    """Stats.delivered, the lean path each record's callback takes, counts as Java's."""
    stats = Stats(num_records, io.StringIO(), reporting_interval_ms=HOUR_MS)
    for send_times, now in batches:
        with mock.patch("time.time_ns", return_value=now * 1_000_000):
            for sent in send_times:
                stats.delivered(sent, 10, None, 0)
    stats.fold()
    expected = per_record(num_records, batches)
    assert (stats.count, stats.bytes, stats.total_latency, stats.max_latency,
            stats.iteration, stats.latencies, stats.window_count, stats.window_max_latency) == (
        expected.count, expected.bytes, expected.total_latency, expected.max_latency,
        expected.iteration, expected.latencies, expected.count, expected.max_latency)  # fmt: skip
