"""The leader's view of its followers (Kafka's Partition and Replica): the high watermark
is the smallest log end offset in the ISR, a follower that stops catching up leaves the
ISR after replica.lag.time.max.ms, one that reaches the high watermark rejoins it, and
every ISR change goes through the writer (the state znode) first."""

from __future__ import annotations

from kt.broker.partition import Partition, ReplicaState, TopicPartition
from kt.config import LogConfig
from kt.storage.log import Log
from tests.storage._batches import Clock, batch

TP = TopicPartition("t", 0)
LAG_MS = 10_000


class Writer:
    """An ISR writer that records each write, and can lose a compare-and-set."""

    def __init__(self) -> None:
        self.writes: list[list[int]] = []
        self.conflict = False

    def __call__(self, partition: Partition, isr: list[int]) -> int | None:
        if self.conflict:
            return None
        self.writes.append(list(isr))
        return partition.zk_version + 1


def leader(tmp_path, writer: Writer) -> Partition:
    log = Log(str(tmp_path / "t-0"), LogConfig(), clock=Clock())
    partition = Partition(TP, 1, log, isr_writer=writer)
    assert partition.make_leader(0, [1, 2, 3], [1, 2, 3], controller_epoch=1, zk_version=4)
    return partition


def produce(partition: Partition, records: int) -> int:
    info = partition.append_records_to_leader(memoryview(bytearray(batch(records))), -1)
    return info.last_offset + 1


def test_the_high_watermark_is_the_smallest_log_end_offset_in_the_isr(tmp_path) -> None:
    partition = leader(tmp_path, Writer())
    end = produce(partition, 5)
    assert partition.high_watermark == 0
    assert partition.update_follower_fetch_state(2, end) is False  # 3 is still at 0
    assert partition.high_watermark == 0
    assert partition.update_follower_fetch_state(3, 3) is True
    assert partition.high_watermark == 3
    assert not partition.acks_satisfied(end)
    partition.update_follower_fetch_state(3, end)
    assert partition.high_watermark == end and partition.acks_satisfied(end)


def test_a_follower_that_stops_catching_up_leaves_the_isr(tmp_path) -> None:
    writer = Writer()
    partition = leader(tmp_path, writer)
    end = produce(partition, 5)
    partition.update_follower_fetch_state(2, end)
    now = partition.remote_replicas[2].last_caught_up_ms
    partition.remote_replicas[3].last_caught_up_ms = now  # as if it had fetched then too
    assert partition.maybe_shrink_isr(LAG_MS, now + LAG_MS) is False  # not over the lag yet
    assert partition.isr == [1, 2, 3]
    # 3 has not caught up since: out after the lag, and the HW moves to 2's offset.
    partition.remote_replicas[2].last_caught_up_ms = now + LAG_MS
    assert partition.maybe_shrink_isr(LAG_MS, now + LAG_MS + 1) is True
    assert writer.writes == [[1, 2]] and partition.isr == [1, 2]
    assert partition.zk_version == 5
    assert partition.high_watermark == end


def test_a_follower_rejoins_once_it_reaches_the_high_watermark(tmp_path) -> None:
    writer = Writer()
    partition = leader(tmp_path, writer)
    partition.isr = [1, 2]
    end = produce(partition, 5)
    partition.update_follower_fetch_state(2, end)
    partition.update_follower_fetch_state(3, end - 1)  # behind the HW: stays out
    assert partition.isr == [1, 2] and writer.writes == []
    partition.update_follower_fetch_state(3, end)
    assert partition.isr == [1, 2, 3] and writer.writes == [[1, 2, 3]]


def test_an_isr_write_that_loses_its_compare_and_set_changes_nothing(tmp_path) -> None:
    writer = Writer()
    partition = leader(tmp_path, writer)
    writer.conflict = True  # the controller wrote the state znode since
    assert partition.maybe_shrink_isr(LAG_MS, partition.remote_replicas[2].last_caught_up_ms
                                      + LAG_MS + 1) is False  # fmt: skip
    assert partition.isr == [1, 2, 3] and partition.zk_version == 4


def test_catching_up_counts_from_the_leaders_end_at_the_previous_fetch() -> None:
    """Replica.updateFetchState: fetching from where the leader ended at the previous
    fetch means the follower was caught up at that fetch's time."""
    replica = ReplicaState()
    replica.update_fetch_state(fetch_offset=10, leader_end_offset=10, now_ms=1_000)
    assert replica.last_caught_up_ms == 1_000
    replica.update_fetch_state(fetch_offset=10, leader_end_offset=20, now_ms=2_000)
    assert replica.last_caught_up_ms == 1_000
    replica.update_fetch_state(fetch_offset=20, leader_end_offset=30, now_ms=3_000)
    assert replica.last_caught_up_ms == 2_000  # it had all of the leader's log at 2_000
    replica.update_fetch_state(fetch_offset=25, leader_end_offset=40, now_ms=4_000)
    assert replica.last_caught_up_ms == 2_000
