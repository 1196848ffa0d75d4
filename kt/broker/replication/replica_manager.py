"""The replica manager: the partitions this broker holds, and produce/fetch against them.

Kafka's ReplicaManager. Produce appends each partition's batch to its leader log and,
for acks=all, waits in the produce purgatory until the high watermark passes the batch.
Fetch reads file slices up to the high watermark (consumers) or the log end offset
(followers), and waits in the fetch purgatory until min_bytes are there or max_wait
passes. Appends notify the fetch purgatory; high-watermark moves notify both.

Runs on the broker's event loop: appends go to the page cache and are cheap.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kt.broker.metadata_cache import PartitionState
from kt.broker.replication.log_dir_mover import ReplicaAlterLogDirsManager
from kt.broker.replication.partition import Partition, PendingIsrChange, TopicPartition
from kt.broker.replication.purgatory import DelayedOperationPurgatory
from kt.broker.replication.replica_fetcher import FetcherConfig, ReplicaFetcherManager
from kt.broker.replication.replication_quota import ReplicationQuotaManager, is_throttled
from kt.errors import KafkaError, KafkaStorageError, RecordValidationError
from kt.metrics.broker_topic_stats import BrokerTopicStats
from kt.metrics.meters import Meter
from kt.storage.producer_state import ORIGIN_CLIENT

log = logging.getLogger(__name__)
state_change_log = logging.getLogger("state.change.logger")  # Kafka's state-change.log

CONSUMER_REPLICA_ID = -1
READ_UNCOMMITTED = 0
READ_COMMITTED = 1


@dataclass
class ProduceResult:
    error_code: int = 0
    error_message: str | None = None
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    last_offset: int = -1
    record_errors: list[tuple[int, str]] = field(default_factory=list)  # KIP-467


@dataclass
class FetchRequestPartition:
    tp: TopicPartition
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    log_start_offset: int = -1
    last_fetched_epoch: int = -1  # Fetch v12+: the epoch of the fetcher's last batch


@dataclass
class FetchResult:
    error_code: int = 0
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: Any = b""  # bytes or a FileSlice for sendfile
    aborted_transactions: list[Any] | None = None
    # (epoch, end offset) where the fetcher's log leaves this one: it truncates there
    diverging_epoch: tuple[int, int] | None = None

    @property
    def size(self) -> int:
        return len(self.records) if self.records is not None else 0


@dataclass
class ReplicaManager:
    """All partitions of this broker, keyed by TopicPartition."""

    broker_id: int
    log_manager: Any  # kt.storage.log_manager.LogManager
    log_config_for: Callable[[str], Any]  # topic -> its LogConfig (defaults + overrides)
    partitions: dict[TopicPartition, Partition] = field(default_factory=dict)
    produce_purgatory: DelayedOperationPurgatory = field(
        default_factory=lambda: DelayedOperationPurgatory("Produce")
    )
    fetch_purgatory: DelayedOperationPurgatory = field(
        default_factory=lambda: DelayedOperationPurgatory("Fetch")
    )
    # Called with (partitions this broker newly leads, partitions it does not lead) after
    # every LeaderAndIsr / StopReplica: the group coordinator loads and unloads groups.
    leadership_listeners: list[Callable[[list[Partition], list[TopicPartition]], None]] = field(
        default_factory=list
    )
    # Partitions whose log dir failed (Kafka's HostedPartition.Offline), until a restart.
    offline_partitions: set[TopicPartition] = field(default_factory=set)
    # A broker's fetcher settings, and where its followers find their leaders: with them
    # the replica manager builds its followers' fetchers (kt.broker.replication.replica_fetcher) and
    # its mover of replicas between log dirs (kt.broker.replication.log_dir_mover), as Kafka's does.
    # None where a test drives one broker without them.
    fetcher_config: FetcherConfig | None = None
    broker_endpoint: Callable[[int], tuple[str, int] | None] | None = None
    # The leaders' ISR proposals to the controller (kt.broker.replication.alter_partition_manager);
    # None where a test drives one broker without it (an ISR change then commits at once).
    alter_partition_manager: Any = None
    replica_lag_time_max_ms: int = 30_000
    # leader.replication.throttled.rate and follower.replication.throttled.rate.
    leader_quota: ReplicationQuotaManager = field(default_factory=ReplicationQuotaManager)
    follower_quota: ReplicationQuotaManager = field(default_factory=ReplicationQuotaManager)
    topic_stats: BrokerTopicStats | None = None  # the broker's BrokerTopicMetrics
    isr_expands: Meter = field(default_factory=Meter)  # ReplicaManager's IsrExpandsPerSec
    isr_shrinks: Meter = field(default_factory=Meter)  # ... IsrShrinksPerSec
    failed_isr_updates: Meter = field(default_factory=Meter)  # ... FailedIsrUpdatesPerSec

    def __post_init__(self) -> None:
        self.fetcher_manager: ReplicaFetcherManager | None = None
        self.log_dir_mover: ReplicaAlterLogDirsManager | None = None
        if self.fetcher_config is not None and self.broker_endpoint is not None:
            self.fetcher_manager = ReplicaFetcherManager(
                self, self.fetcher_config, self.broker_endpoint
            )
            self.log_dir_mover = ReplicaAlterLogDirsManager(self, self.log_manager)

    # -- partitions ---------------------------------------------------------------

    def get_partition(self, tp: TopicPartition) -> Partition:
        partition = self.partitions.get(tp)
        if partition is None:
            if tp in self.offline_partitions:
                raise _offline(tp)
            raise KafkaError("UNKNOWN_TOPIC_OR_PARTITION")
        return partition

    def handle_log_dir_failure(self, log_dir: str) -> None:
        """A log dir failed: its partitions go offline (ReplicaManager.handleLogDirFailure).
        Their waiting produces and fetches are woken, and find the partition offline."""
        offline = [tp for tp, p in self.partitions.items() if p.log.parent_dir == log_dir]
        if self.fetcher_manager is not None:
            self.fetcher_manager.remove_fetcher_for_partitions(offline)
        for tp in offline:
            del self.partitions[tp]
            self.offline_partitions.add(tp)
        log.error(
            "Broker %d stopped serving replicas in dir %s: %s",
            self.broker_id,
            log_dir,
            ", ".join(map(str, offline)) or "none",
        )
        for listener in self.leadership_listeners:
            listener([], offline)
        for tp in offline:
            self.wake(tp)

    def get_or_create_partition(self, tp: TopicPartition) -> Partition:
        partition = self.partitions.get(tp)
        if partition is None:
            if tp in self.offline_partitions:
                raise _offline(tp)
            config = self.log_config_for(tp.topic)
            log_ = self.log_manager.get_or_create_log(tp.topic, tp.partition, config)
            proposer = self._propose_isr if self.alter_partition_manager is not None else None
            partition = Partition(tp, self.broker_id, log_, isr_proposer=proposer)
            partition.min_insync_replicas = config.min_insync_replicas
            self.partitions[tp] = partition
        return partition

    def become_leader_or_follower(
        self,
        controller_id: int,
        controller_epoch: int,
        states: list[PartitionState],
        topic_ids: dict[str, Any],
    ) -> dict[TopicPartition, int]:
        """Apply a LeaderAndIsr request; returns an error code per partition."""
        state_change_log.info("[Broker id=%s] Handling LeaderAndIsr request from controller "
                              "%s epoch %s for %s partitions", self.broker_id, controller_id,
                              controller_epoch, len(states))  # fmt: skip
        errors: dict[TopicPartition, int] = {}
        leaders: list[Partition] = []
        resigned: list[TopicPartition] = []
        followers: dict[TopicPartition, tuple[int, int]] = {}
        for state in states:
            tp = TopicPartition(state.topic, state.partition)
            if self.broker_id not in state.replicas:
                errors[tp] = KafkaError("UNKNOWN_TOPIC_OR_PARTITION").code
                continue
            try:
                partition = self.get_or_create_partition(tp)
            except KafkaError as e:  # KAFKA_STORAGE_ERROR: its log dir is offline
                errors[tp] = e.code
                continue
            was_leader = partition.is_leader
            try:
                if state.leader == self.broker_id:
                    applied = partition.make_leader(
                        state.leader_epoch, state.isr, state.replicas, controller_epoch,
                        state.zk_version,
                    )  # fmt: skip
                else:
                    applied = partition.make_follower(
                        state.leader, state.leader_epoch, state.isr, state.replicas,
                        controller_epoch, state.zk_version,
                    )  # fmt: skip
            except KafkaStorageError as e:  # the epoch checkpoint: its log dir went offline
                errors[tp] = e.code
                continue
            errors[tp] = 0 if applied else KafkaError("STALE_CONTROLLER_EPOCH").code
            if applied and partition.is_leader:
                if not was_leader:  # new leadership only, as Partition.makeLeader's isNewLeader:
                    leaders.append(partition)  # a leader's new epoch (ISR change) reloads nothing
            elif applied:
                resigned.append(tp)
                if state.leader >= 0:
                    followers[tp] = (state.leader, state.leader_epoch)
            self.wake(tp)
        if self.fetcher_manager is not None:
            self.fetcher_manager.remove_fetcher_for_partitions([p.tp for p in leaders])
            self.fetcher_manager.remove_fetcher_for_partitions(
                [tp for tp in resigned if tp not in followers]
            )
            self.fetcher_manager.add_fetcher_for_partitions(followers)
        for listener in self.leadership_listeners:
            listener(leaders, resigned)
        return errors

    def reconfigure_throttles(
        self, mine: dict[str, str], default: dict[str, str], static: Any
    ) -> None:
        """The replication throttle rates, as the dynamic broker configs say: this broker's
        override, else the cluster default, else server.properties (`static`:
        DynamicBrokerConfig's precedence); they act at once."""
        for key, quota in (("leader.replication.throttled.rate", self.leader_quota),
                           ("follower.replication.throttled.rate", self.follower_quota),
                           ("replica.alter.log.dirs.io.max.bytes.per.second",
                            self.log_dir_mover.quota)):  # fmt: skip
            value = mine.get(key) or default.get(key)
            quota.update_quota(float(value) if value else float(static[key]))

    def wake_partition(self, topic: str, partition: int) -> None:
        self.wake(TopicPartition(topic, partition))

    def stop_replica(self, tp: TopicPartition, delete: bool) -> None:
        if self.fetcher_manager is not None:
            self.fetcher_manager.remove_fetcher_for_partitions([tp])
        if self.log_dir_mover is not None:
            self.log_dir_mover.abort(tp)
        partition = self.partitions.pop(tp, None)
        for listener in self.leadership_listeners:
            listener([], [tp])
        if delete:
            self.log_manager.delete_log(tp.topic, tp.partition)
            hosted = any(other.topic == tp.topic for other in self.partitions)
            if self.topic_stats is not None and not hosted:  # Kafka's removeMetrics(topic)
                self.topic_stats.remove(tp.topic)
        elif partition is not None:
            try:
                partition.log.flush()
            except KafkaStorageError:
                pass  # logged; its log dir is offline, and nothing more is written there
        # Wake anyone waiting on it: they re-check and find it gone.
        self.produce_purgatory.check_and_complete(tp)
        self.fetch_purgatory.check_and_complete(tp)

    def leader_partitions(self) -> Iterable[Partition]:
        return (p for p in self.partitions.values() if p.is_leader)

    def _propose_isr(self, partition: Partition, pending: PendingIsrChange) -> None:
        """Send a leader's ISR proposal to the controller; its answer goes back to the
        partition, and a high watermark it moves completes waiting produces and fetches."""
        future = self.alter_partition_manager.submit(
            partition.tp, pending.leader_epoch, pending.isr, pending.partition_epoch
        )

        def answered(future: Any) -> None:
            if future.cancelled():  # the broker is stopping
                return
            error = future.exception()
            if error is not None:
                name = error.name if isinstance(error, KafkaError) else "UNKNOWN_SERVER_ERROR"
                self.failed_isr_updates.mark()
                partition.complete_isr_change(pending, None, -1, error=name)
                return
            committed = future.result()
            before = len(partition.isr)
            moved = partition.complete_isr_change(
                pending, committed.isr, committed.partition_epoch, committed.leader_epoch
            )
            if partition.pending_isr is None and len(partition.isr) != before:
                (self.isr_expands if len(partition.isr) > before else self.isr_shrinks).mark()
            if moved:
                self.wake(partition.tp)

        future.add_done_callback(answered)

    def maybe_shrink_isr(self) -> None:
        """The periodic ISR check of every partition this broker leads (isr-expiration)."""
        for partition in list(self.leader_partitions()):
            if partition.maybe_shrink_isr(self.replica_lag_time_max_ms):
                self.wake(partition.tp)

    # -- produce ------------------------------------------------------------------

    async def append_records(
        self,
        timeout_ms: int,
        required_acks: int,
        entries: dict[TopicPartition, Any],
        origin: str = ORIGIN_CLIENT,
    ) -> dict[TopicPartition, ProduceResult]:
        """Append to the local leaders (Kafka's appendRecords). `origin` is the client's
        for Produce and the coordinator's for the group coordinator's own writes, which
        skip the rules made for clients (as Kafka's AppendOrigin.COORDINATOR does)."""
        results: dict[TopicPartition, ProduceResult] = {}
        for tp, records in entries.items():
            results[tp] = self._append_to_leader(tp, records, required_acks, origin)
        if required_acks == -1:
            await self._wait_for_acks(timeout_ms, results)
        return results

    def _append_to_leader(
        self, tp: TopicPartition, records: Any, required_acks: int, origin: str
    ) -> ProduceResult:
        try:
            partition = self.get_partition(tp)
            info = partition.append_records_to_leader(records, required_acks, origin)
        except RecordValidationError as e:
            self._count_produce(tp, e.code, records, 0)
            return ProduceResult(e.code, str(e), record_errors=e.record_errors)
        except KafkaError as e:
            self._count_produce(tp, e.code, records, 0)
            return ProduceResult(e.code, str(e) or None)
        self._count_produce(tp, 0, records, info.num_records)
        self.fetch_purgatory.check_and_complete(tp)
        return ProduceResult(
            base_offset=info.first_offset,
            last_offset=info.last_offset,
            log_append_time_ms=info.log_append_time,
            log_start_offset=partition.log.log_start_offset,
        )

    def _count_produce(self, tp: TopicPartition, error_code: int, records: Any, n: int) -> None:
        if self.topic_stats is not None:
            self.topic_stats.produced(tp.topic, error_code, len(records or b""), n)

    async def _wait_for_acks(
        self, timeout_ms: int, results: dict[TopicPartition, ProduceResult]
    ) -> None:
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            pending = []
            for tp, result in results.items():
                if result.error_code:
                    continue
                partition = self.partitions.get(tp)
                if tp in self.offline_partitions:
                    result.error_code = KafkaError("KAFKA_STORAGE_ERROR").code
                elif partition is None or not partition.is_leader:
                    result.error_code = KafkaError("NOT_LEADER_OR_FOLLOWER").code
                elif not partition.acks_satisfied(result.last_offset + 1):
                    pending.append(tp)
                elif len(partition.isr) < partition.min_insync_replicas:
                    # The ISR shrank below min.insync.replicas while the batch waited.
                    result.error_code = KafkaError("NOT_ENOUGH_REPLICAS_AFTER_APPEND").code
            if not pending:
                return
            remaining = deadline - time.monotonic()
            if not await self.produce_purgatory.wait_any(pending, remaining):
                for tp in pending:  # the deadline passed before the ISR caught up
                    results[tp].error_code = KafkaError("REQUEST_TIMED_OUT").code
                return

    # -- fetch --------------------------------------------------------------------

    async def fetch_messages(
        self,
        replica_id: int,
        max_wait_ms: int,
        min_bytes: int,
        max_bytes: int,
        isolation_level: int,
        fetch_partitions: list[FetchRequestPartition],
    ) -> dict[TopicPartition, FetchResult]:
        deadline = time.monotonic() + max_wait_ms / 1000
        tps = [fp.tp for fp in fetch_partitions]
        while True:
            results = self._read_from_local_logs(
                replica_id, max_bytes, isolation_level, fetch_partitions
            )
            total = sum(r.size for r in results.values())
            # an error or a diverging epoch is answered at once (ReplicaManager.fetchMessages)
            errors = any(r.error_code or r.diverging_epoch for r in results.values())
            if total >= min_bytes or errors or not fetch_partitions:
                return results
            remaining = deadline - time.monotonic()
            if not await self.fetch_purgatory.wait_any(tps, remaining):
                return results  # max_wait passed with less than min_bytes: answer what is there

    def _read_from_local_logs(
        self,
        replica_id: int,
        max_bytes: int,
        isolation_level: int,
        fetch_partitions: list[FetchRequestPartition],
    ) -> dict[TopicPartition, FetchResult]:
        results: dict[TopicPartition, FetchResult] = {}
        remaining = max_bytes
        min_one_message = True
        for fp in fetch_partitions:
            result = self._read_one(replica_id, isolation_level, fp, remaining, min_one_message)
            results[fp.tp] = result
            if result.size:
                min_one_message = False
                remaining = max(0, remaining - result.size)
        return results

    def _read_one(
        self,
        replica_id: int,
        isolation_level: int,
        fp: FetchRequestPartition,
        limit: int,
        min_one_message: bool,
    ) -> FetchResult:
        try:
            partition = self.get_partition(fp.tp)
            partition.check_leader(fp.current_leader_epoch)
            log_ = partition.log
            diverging = _diverging_epoch(log_, fp)
            if diverging is not None:  # nothing read, and no follower state updated
                return FetchResult(
                    high_watermark=log_.high_watermark,
                    last_stable_offset=log_.last_stable_offset,
                    log_start_offset=log_.log_start_offset,
                    diverging_epoch=diverging,
                )
            if replica_id >= 0:
                max_offset = None  # followers read to the log end
            elif isolation_level == READ_COMMITTED:
                max_offset = log_.last_stable_offset
            else:
                max_offset = log_.high_watermark
            throttled = replica_id >= 0 and self._leader_throttles(partition, replica_id)
            aborted = None
            if throttled and self.leader_quota.is_quota_exceeded():
                records: Any = b""  # held back: the throttled replica is over its rate
            else:
                if throttled:
                    limit = min(limit, self.leader_quota.allowance())
                info = log_.read(
                    fp.fetch_offset,
                    min(fp.max_bytes, limit),
                    max_offset=max_offset,
                    min_one_message=min_one_message,
                )
                records = info.records
                if throttled:
                    self.leader_quota.record(len(records))
                if replica_id < 0 and isolation_level == READ_COMMITTED:
                    aborted = log_.aborted_transactions_for(info)
            if replica_id >= 0 and partition.update_follower_fetch_state(
                replica_id, fp.fetch_offset
            ):
                self.produce_purgatory.check_and_complete(fp.tp)
                self.fetch_purgatory.check_and_complete(fp.tp)
        except KafkaError as e:
            return FetchResult(error_code=e.code)
        except ValueError as e:  # a size the client sent that no read can have (max_bytes < 0)
            log.error("Error processing fetch with max size %s from %s on partition %s: %s",
                      min(fp.max_bytes, limit), _fetch_source(replica_id), fp.tp, e)  # fmt: skip
            return FetchResult(error_code=KafkaError("UNKNOWN_SERVER_ERROR").code)
        return FetchResult(
            high_watermark=log_.high_watermark,
            last_stable_offset=log_.last_stable_offset,
            log_start_offset=log_.log_start_offset,
            records=records,
            aborted_transactions=aborted,
        )

    def _leader_throttles(self, partition: Partition, replica_id: int) -> bool:
        """shouldLeaderThrottle: a follower out of the ISR, of a partition throttled on this
        leader (leader.replication.throttled.replicas), while a rate is set."""
        if not self.leader_quota.bounded or replica_id in partition.isr:
            return False
        value = partition.log.config.leader_replication_throttled_replicas
        return is_throttled(value, partition.tp.partition, self.broker_id)

    def follower_throttles(self, tp: TopicPartition) -> bool:
        """Is this follower's replica of `tp` throttled (follower.replication.throttled.
        replicas), while a rate is set?"""
        partition = self.partitions.get(tp)
        if partition is None or not self.follower_quota.bounded:
            return False
        value = partition.log.config.follower_replication_throttled_replicas
        return is_throttled(value, tp.partition, self.broker_id)

    def wake(self, tp: TopicPartition) -> None:
        """The partition changed (append, HW move, role change): re-check its waiters."""
        self.produce_purgatory.check_and_complete(tp)
        self.fetch_purgatory.check_and_complete(tp)


def _fetch_source(replica_id: int) -> str:
    return f"replica {replica_id}" if replica_id >= 0 else "consumer"


def _offline(tp: TopicPartition) -> KafkaStorageError:
    return KafkaStorageError(f"Partition {tp} is in an offline log directory")


def _diverging_epoch(log_: Any, fp: FetchRequestPartition) -> tuple[int, int] | None:
    """Where a fetcher's log diverges from this leader's, from the epoch of its last
    fetched batch (Fetch v12+, KIP-595; Kafka's Partition.readRecords): the epoch and end
    offset of this log's that epoch when it ends before the fetch offset or is an older
    epoch. A follower whose uncommitted tail the new leader never had (a leader killed
    with it) truncates there instead of appending after records that are not the leader's."""
    if fp.last_fetched_epoch < 0:
        return None
    found = log_.end_offset_for_epoch(fp.last_fetched_epoch)
    if found is None:
        raise KafkaError(
            "OFFSET_OUT_OF_RANGE",
            f"Could not determine the end offset of the last fetched epoch {fp.last_fetched_epoch}",
        )
    if fp.fetch_offset < log_.log_start_offset:
        raise KafkaError("OFFSET_OUT_OF_RANGE")
    epoch, end_offset = found
    if epoch < fp.last_fetched_epoch or end_offset < fp.fetch_offset:
        return epoch, end_offset
    return None
