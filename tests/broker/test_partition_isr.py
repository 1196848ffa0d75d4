"""The leader's view of its followers (Kafka's Partition and Replica): the high watermark
is the smallest log end offset in the maximal ISR, a follower that stops catching up leaves
the ISR after replica.lag.time.max.ms, one that reaches the high watermark rejoins it, and
every ISR change is a proposal to the controller (AlterPartition) that counts only once
the controller has written it (PendingExpandIsr / PendingShrinkIsr)."""

from __future__ import annotations

from kt.broker.replication.partition import (
    Partition,
    PendingIsrChange,
    ReplicaState,
    TopicPartition,
)
from kt.config import LogConfig
from kt.storage.log import Log
from tests.storage._batches import Clock, batch

TP = TopicPartition("t", 0)
LAG_MS = 10_000


class Controller:
    """Takes the leader's proposals; the test answers them."""

    def __init__(self) -> None:
        self.proposals: list[PendingIsrChange] = []

    def __call__(self, partition: Partition, pending: PendingIsrChange) -> None:
        self.proposals.append(pending)

    def commit(self, partition: Partition) -> bool:
        pending = self.proposals[-1]
        return partition.complete_isr_change(
            pending, pending.isr, pending.partition_epoch + 1, pending.leader_epoch
        )


def leader(tmp_path, controller: Controller) -> Partition:
    log = Log(str(tmp_path / "t-0"), LogConfig(), clock=Clock())
    partition = Partition(TP, 1, log, isr_proposer=controller)
    assert partition.make_leader(0, [1, 2, 3], [1, 2, 3], controller_epoch=1, zk_version=4)
    return partition


def produce(partition: Partition, records: int) -> int:
    info = partition.append_records_to_leader(memoryview(bytearray(batch(records))), -1)
    return info.last_offset + 1


def test_the_high_watermark_is_the_smallest_log_end_offset_in_the_isr(tmp_path) -> None:
    partition = leader(tmp_path, Controller())
    end = produce(partition, 5)
    assert partition.high_watermark == 0
    assert partition.update_follower_fetch_state(2, end) is False  # 3 is still at 0
    assert partition.high_watermark == 0
    assert partition.update_follower_fetch_state(3, 3) is True
    assert partition.high_watermark == 3
    assert not partition.acks_satisfied(end)
    partition.update_follower_fetch_state(3, end)
    assert partition.high_watermark == end and partition.acks_satisfied(end)


def lagging(tmp_path, controller: Controller) -> tuple[Partition, int, int]:
    """A leader whose follower 3 has not caught up for longer than the lag."""
    partition = leader(tmp_path, controller)
    end = produce(partition, 5)
    partition.update_follower_fetch_state(2, end)
    now = partition.remote_replicas[2].last_caught_up_ms
    partition.remote_replicas[3].last_caught_up_ms = now
    return partition, end, now + LAG_MS + 1


def test_a_follower_that_stops_catching_up_leaves_the_isr_once_the_controller_wrote_it(
    tmp_path,
) -> None:
    controller = Controller()
    partition, end, later = lagging(tmp_path, controller)
    assert partition.maybe_shrink_isr(LAG_MS, later - 1) is False  # not over the lag yet
    assert controller.proposals == []
    partition.remote_replicas[2].last_caught_up_ms = later
    # Proposed: until the controller writes it, 3 still counts (PendingShrinkIsr).
    assert partition.maybe_shrink_isr(LAG_MS, later) is False
    assert [p.isr for p in controller.proposals] == [[1, 2]]
    assert controller.proposals[0].partition_epoch == 4
    assert partition.isr == [1, 2, 3] and partition.high_watermark == 0
    assert partition.maybe_shrink_isr(LAG_MS, later + 1) is False  # one proposal at a time
    assert len(controller.proposals) == 1
    assert controller.commit(partition) is True  # the HW moves to 2's offset
    assert partition.isr == [1, 2] and partition.zk_version == 5
    assert partition.high_watermark == end and partition.pending_isr is None


def test_a_follower_rejoins_once_it_reaches_the_high_watermark(tmp_path) -> None:
    controller = Controller()
    partition, end, later = lagging(tmp_path, controller)
    partition.remote_replicas[2].last_caught_up_ms = later
    partition.maybe_shrink_isr(LAG_MS, later)
    controller.commit(partition)
    more = produce(partition, 3)
    partition.update_follower_fetch_state(3, end - 1)  # behind the HW: stays out
    assert len(controller.proposals) == 1
    partition.update_follower_fetch_state(3, end)
    assert [p.isr for p in controller.proposals[1:]] == [[1, 2, 3]]
    # PendingExpandIsr: 3 counts for the high watermark at once, the ISR waits.
    assert partition.maximal_isr == [1, 2, 3] and partition.isr == [1, 2]
    partition.update_follower_fetch_state(2, more)
    assert partition.high_watermark == end  # 3 holds it back now
    controller.commit(partition)
    assert partition.isr == [1, 2, 3] and partition.zk_version == 6


def test_a_refused_proposal_changes_nothing(tmp_path) -> None:
    controller = Controller()
    partition, _, later = lagging(tmp_path, controller)
    partition.remote_replicas[2].last_caught_up_ms = later
    partition.maybe_shrink_isr(LAG_MS, later)
    pending = controller.proposals[0]
    # The controller wrote the state znode since: the leader waits for its LeaderAndIsr.
    assert not partition.complete_isr_change(pending, None, -1, error="INVALID_UPDATE_VERSION")
    assert partition.isr == [1, 2, 3] and partition.zk_version == 4
    assert partition.pending_isr is pending
    assert partition.maybe_shrink_isr(LAG_MS, later + 1) is False
    assert len(controller.proposals) == 1
    # The LeaderAndIsr comes: the proposal goes, the next check proposes again.
    partition.make_leader(1, [1, 2, 3], [1, 2, 3], controller_epoch=1, zk_version=7)
    assert partition.pending_isr is None
    partition.remote_replicas[3].last_caught_up_ms = 0
    partition.maybe_shrink_isr(LAG_MS, later + 1)
    assert controller.proposals[-1].partition_epoch == 7
    assert controller.proposals[-1].leader_epoch == 1
    # An answer to the proposal LeaderAndIsr replaced is ignored.
    assert not partition.complete_isr_change(pending, [1, 2], 5, 0)
    assert partition.isr == [1, 2, 3] and partition.zk_version == 7


def test_an_ineligible_replica_drops_the_proposal(tmp_path) -> None:
    controller = Controller()
    partition, _, later = lagging(tmp_path, controller)
    partition.remote_replicas[2].last_caught_up_ms = later
    partition.maybe_shrink_isr(LAG_MS, later)
    partition.complete_isr_change(controller.proposals[0], None, -1, error="INELIGIBLE_REPLICA")
    assert partition.pending_isr is None and partition.isr == [1, 2, 3]


def test_without_a_controller_a_change_commits_at_once(tmp_path) -> None:
    log = Log(str(tmp_path / "t-0"), LogConfig(), clock=Clock())
    partition = Partition(TP, 1, log)
    partition.make_leader(0, [1, 2], [1, 2], controller_epoch=1, zk_version=4)
    now = partition.remote_replicas[2].last_caught_up_ms
    partition.maybe_shrink_isr(LAG_MS, now + LAG_MS + 1)
    assert partition.isr == [1] and partition.pending_isr is None


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
