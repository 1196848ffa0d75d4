"""One topic-partition as this broker holds it (Kafka's cluster.Partition).

Invariants:
- only the leader accepts produce; followers append what they fetch from the leader;
- the high watermark never exceeds the log end offset of any ISR member, and never
  moves backwards while this broker stays leader: HW = min(LEO) over the maximal ISR
  (the committed ISR, plus a replica whose joining is proposed and not yet committed);
- the leader proposes ISR changes to the controller (AlterPartition, KIP-497) and changes
  `isr` only when the controller has written it; one proposal at a time (Kafka's
  PendingExpandIsr / PendingShrinkIsr), dropped by the next LeaderAndIsr;
- leader_epoch only grows; requests carrying an older epoch get FENCED_LEADER_EPOCH.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kt.errors import KafkaError
from kt.storage.producer_state import ORIGIN_CLIENT

log = logging.getLogger(__name__)


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass
class ReplicaState:
    """What the leader knows of one follower (Kafka's Replica): its log end offset, when
    it was last caught up, and the leader's log end offset at its previous fetch."""

    log_end_offset: int = 0
    last_caught_up_ms: int = 0
    last_fetch_ms: int = 0
    last_fetch_leader_log_end_offset: int = 0

    def update_fetch_state(self, fetch_offset: int, leader_end_offset: int, now_ms: int) -> None:
        """Replica.updateFetchState: a follower that fetches from the leader's log end is
        caught up now; one that fetches from where the leader's log ended at its previous
        fetch was caught up then."""
        if fetch_offset >= leader_end_offset:
            self.last_caught_up_ms = max(self.last_caught_up_ms, now_ms)
        elif fetch_offset >= self.last_fetch_leader_log_end_offset:
            self.last_caught_up_ms = max(self.last_caught_up_ms, self.last_fetch_ms)
        self.log_end_offset = fetch_offset
        self.last_fetch_leader_log_end_offset = leader_end_offset
        self.last_fetch_ms = now_ms


@dataclass(frozen=True)
class PendingIsrChange:
    """An ISR proposed to the controller and not yet committed: Kafka's PendingExpandIsr
    (`maximal_isr` = the committed ISR and the replica joining) and PendingShrinkIsr
    (`maximal_isr` = the committed ISR: the high watermark waits for the leaving replicas
    until the controller has written the smaller ISR)."""

    isr: list[int]
    maximal_isr: list[int]
    leader_epoch: int
    partition_epoch: int
    reason: str


# Sends a proposal to the controller; whoever sends it calls complete_isr_change with the
# answer. None where a test drives a partition alone: then a proposal commits at once.
IsrProposer = Callable[["Partition", PendingIsrChange], None]

# Answers after which the proposal stands until the next LeaderAndIsr (Kafka's
# Partition.handleAlterPartitionError): the controller knows a newer state.
AWAIT_LEADER_AND_ISR = frozenset({
    "FENCED_LEADER_EPOCH", "INVALID_UPDATE_VERSION", "UNKNOWN_TOPIC_OR_PARTITION",
    "UNKNOWN_TOPIC_ID", "INVALID_REQUEST", "NOT_LEADER_OR_FOLLOWER",
})  # fmt: skip
# Answers that drop the proposal at once: a later check proposes again.
NOT_ATTEMPTED = frozenset({"OPERATION_NOT_ATTEMPTED", "INELIGIBLE_REPLICA"})


@dataclass
class Partition:
    """A partition's log, its role on this broker, and its replica set."""

    tp: TopicPartition
    local_broker_id: int
    log: Any  # kt.storage.log.Log
    leader_id: int = -1
    leader_epoch: int = -1
    controller_epoch: int = -1
    replicas: list[int] = field(default_factory=list)
    isr: list[int] = field(default_factory=list)
    min_insync_replicas: int = 1
    remote_replicas: dict[int, ReplicaState] = field(default_factory=dict)
    zk_version: int = -1  # the state znode's version (AlterPartition's partition epoch)
    leader_epoch_start_offset: int = 0
    isr_proposer: IsrProposer | None = None
    pending_isr: PendingIsrChange | None = None

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_broker_id

    @property
    def maximal_isr(self) -> list[int]:
        return self.pending_isr.maximal_isr if self.pending_isr is not None else self.isr

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    def make_leader(
        self, leader_epoch: int, isr: list[int], replicas: list[int], controller_epoch: int,
        zk_version: int = -1,
    ) -> bool:  # fmt: skip
        """Become leader (LeaderAndIsr). Returns False if the request's epoch is stale."""
        if leader_epoch < self.leader_epoch:
            return False
        now = _now_ms()
        self.leader_id = self.local_broker_id
        self.leader_epoch = leader_epoch
        self.controller_epoch = controller_epoch
        self.zk_version = zk_version
        self.replicas = list(replicas)
        self.isr = list(isr)
        self.pending_isr = None
        # Every follower starts as caught up now: the lag clock starts with the new leader.
        self.remote_replicas = {
            r: ReplicaState(last_caught_up_ms=now) for r in replicas if r != self.local_broker_id
        }
        self.leader_epoch_start_offset = self.log.log_end_offset
        self.log.assign_epoch_start_offset(leader_epoch, self.log.log_end_offset)
        self.maybe_increment_high_watermark()
        return True

    def make_follower(
        self, leader_id: int, leader_epoch: int, isr: list[int], replicas: list[int],
        controller_epoch: int, zk_version: int = -1,
    ) -> bool:  # fmt: skip
        """Become a follower of `leader_id`. Returns False if the request's epoch is stale."""
        if leader_epoch < self.leader_epoch:
            return False
        self.leader_id = leader_id
        self.leader_epoch = leader_epoch
        self.controller_epoch = controller_epoch
        self.zk_version = zk_version
        self.replicas = list(replicas)
        self.isr = list(isr)
        self.pending_isr = None
        self.remote_replicas = {}
        return True

    def check_leader(self, current_leader_epoch: int = -1) -> None:
        """Raise the error a client expects when this broker cannot serve as leader."""
        if current_leader_epoch >= 0:
            if current_leader_epoch < self.leader_epoch:
                raise KafkaError("FENCED_LEADER_EPOCH")
            if current_leader_epoch > self.leader_epoch:
                raise KafkaError("UNKNOWN_LEADER_EPOCH")
        if not self.is_leader:
            raise KafkaError("NOT_LEADER_OR_FOLLOWER")

    def append_records_to_leader(
        self, records: memoryview, required_acks: int, origin: str = ORIGIN_CLIENT
    ) -> Any:
        """Append a produced batch; raises KafkaError with the code the client expects."""
        self.check_leader()
        if required_acks == -1 and len(self.isr) < self.min_insync_replicas:
            raise KafkaError(
                "NOT_ENOUGH_REPLICAS",
                f"The size of the current ISR {self.isr} is insufficient to satisfy the "
                f"min.isr requirement of {self.min_insync_replicas} for partition {self.tp}",
            )
        info = self.log.append_as_leader(records, self.leader_epoch, origin)
        self.maybe_increment_high_watermark()
        return info

    def maybe_increment_high_watermark(self) -> bool:
        """Move the HW to min LEO over the ISR; True if it moved."""
        if not self.is_leader:
            return False
        leo = self.log.log_end_offset
        for replica_id in self.maximal_isr:
            if replica_id != self.local_broker_id:
                state = self.remote_replicas.get(replica_id)
                leo = min(leo, state.log_end_offset if state else 0)
        if leo > self.log.high_watermark:
            self.log.high_watermark = leo
            return True
        return False

    def acks_satisfied(self, required_offset: int) -> bool:
        """acks=all: the ISR holds everything up to `required_offset` (exclusive)."""
        return self.log.high_watermark >= required_offset

    def update_follower_fetch_state(self, replica_id: int, fetch_offset: int) -> bool:
        """A follower fetched from `fetch_offset`: it has everything before it. It joins the
        ISR once caught up; True if the high watermark moved."""
        if replica_id not in self.replicas or not self.is_leader:
            return False
        state = self.remote_replicas.setdefault(replica_id, ReplicaState())
        state.update_fetch_state(fetch_offset, self.log.log_end_offset, _now_ms())
        self.maybe_expand_isr(replica_id)
        return self.maybe_increment_high_watermark()

    def maybe_expand_isr(self, replica_id: int) -> None:
        """A follower outside the ISR that has reached the high watermark, and the start of
        the leader's epoch, rejoins it (Partition.maybeExpandIsr): proposed to the
        controller, counted for the high watermark at once."""
        if replica_id in self.isr or self.pending_isr is not None:
            return
        state = self.remote_replicas[replica_id]
        if (
            state.log_end_offset >= self.log.high_watermark
            and state.log_end_offset >= self.leader_epoch_start_offset
        ):
            isr = [*self.isr, replica_id]
            self._propose_isr(isr, isr, f"replica {replica_id} caught up")

    def maybe_shrink_isr(self, replica_lag_time_max_ms: int, now_ms: int | None = None) -> bool:
        """Followers not caught up within `replica_lag_time_max_ms` leave the ISR
        (Partition.maybeShrinkIsr); True if the high watermark moved."""
        if not self.is_leader or self.pending_isr is not None:
            return False
        now = _now_ms() if now_ms is None else now_ms
        out_of_sync = [
            r for r in self.isr
            if r != self.local_broker_id
            and now - self.remote_replicas.setdefault(r, ReplicaState(last_caught_up_ms=now))
            .last_caught_up_ms > replica_lag_time_max_ms
        ]  # fmt: skip
        if not out_of_sync:
            return False
        isr = [r for r in self.isr if r not in out_of_sync]
        lag = f"lag over {replica_lag_time_max_ms} ms"
        self._propose_isr(isr, list(self.isr), f"out of sync replicas {out_of_sync} ({lag})")
        return self.maybe_increment_high_watermark()

    def _propose_isr(self, isr: list[int], maximal_isr: list[int], reason: str) -> None:
        pending = PendingIsrChange(isr, maximal_isr, self.leader_epoch, self.zk_version, reason)
        self.pending_isr = pending
        if self.isr_proposer is None:
            self.complete_isr_change(pending, isr, self.zk_version)
        else:
            self.isr_proposer(self, pending)

    def complete_isr_change(
        self, pending: PendingIsrChange, isr: list[int] | None, partition_epoch: int,
        leader_epoch: int | None = None, error: str | None = None,
    ) -> bool:  # fmt: skip
        """The controller's answer to `pending`: the ISR it wrote (with the state znode's
        new version) or an error name. An answer to a proposal that a LeaderAndIsr has
        replaced since changes nothing. True if the high watermark moved."""
        if self.pending_isr is not pending:
            return False
        if error is not None:
            if error in NOT_ATTEMPTED:
                self.pending_isr = None
            elif error not in AWAIT_LEADER_AND_ISR:
                log.warning("[Partition %s broker=%s] AlterPartition failed: %s; proposing "
                            "again", self.tp, self.local_broker_id, error)  # fmt: skip
                if self.isr_proposer is not None:
                    self.isr_proposer(self, pending)
            else:
                log.info(
                    "[Partition %s broker=%s] AlterPartition answered %s: waiting for the "
                    "controller's LeaderAndIsr", self.tp, self.local_broker_id, error,
                )  # fmt: skip
            return False
        if leader_epoch is not None and leader_epoch != self.leader_epoch:
            return False  # answered for an epoch this broker has left
        assert isr is not None
        log.info("[Partition %s broker=%s] ISR updated from %s to %s: %s",
                 self.tp, self.local_broker_id, self.isr, isr, pending.reason)  # fmt: skip
        self.isr, self.zk_version, self.pending_isr = list(isr), partition_epoch, None
        return self.maybe_increment_high_watermark()


def _now_ms() -> int:
    return int(time.time() * 1000)
