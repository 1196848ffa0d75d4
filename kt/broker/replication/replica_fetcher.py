"""Followers copy their leaders' logs (Kafka's ReplicaFetcherManager and ReplicaFetcherThread).

One fetcher per source broker fetches every partition this broker follows there, on the
event loop, over the wire (kt.client's AsyncBrokerConnection), whether the leader is in
another process or in this one: the embedded cluster replicates with the same code.

A partition added to a fetcher first finds where its log diverges from the leader's
(KIP-101/KIP-279): OffsetForLeaderEpoch with the follower's latest epoch; the leader
answers the end offset of that epoch in its own log, and the follower truncates to it
(or, when the leader never had that epoch, to the end of its own epoch below the
leader's answer, and asks again). Then it fetches from its log end offset with
replica_id set, appends what comes back as a follower (offsets and epochs kept), and
takes the leader's high watermark, bounded by its own log end offset.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kt.broker.replication.partition import TopicPartition
from kt.broker.replication.purgatory import wait_event
from kt.client.async_connection import AsyncBrokerConnection
from kt.errors import KafkaError, KafkaStorageError, ProtocolError
from kt.protocol import ApiKey
from kt.protocol import messages as m
from kt.storage.log_offsets import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP

log = logging.getLogger(__name__)

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1
_LENGTH = struct.Struct(">i")
# Errors after which a partition waits for the controller's next word (LeaderAndIsr).
_WAIT_FOR_LEADER = frozenset(
    {
        "NOT_LEADER_OR_FOLLOWER",
        "FENCED_LEADER_EPOCH",
        "UNKNOWN_LEADER_EPOCH",
        "UNKNOWN_TOPIC_OR_PARTITION",
        "LEADER_NOT_AVAILABLE",
        "KAFKA_STORAGE_ERROR",
    }
)


@dataclass
class FetcherConfig:
    """The replica.fetch.* settings of the broker."""

    broker_id: int
    max_wait_ms: int = 500
    min_bytes: int = 1
    max_bytes: int = 1048576
    response_max_bytes: int = 10485760
    backoff_ms: int = 1000
    security: dict[str, Any] = field(default_factory=dict)  # inter-broker tls and sasl
    # Fetch and ListOffsets at most at the versions inter.broker.protocol.version names
    caps: dict[Any, int] = field(default_factory=dict)

    @classmethod
    def from_broker_config(cls, broker_id: int, cfg: Any) -> FetcherConfig:
        return cls(
            broker_id,
            max_wait_ms=cfg["replica.fetch.wait.max.ms"],
            min_bytes=cfg["replica.fetch.min.bytes"],
            max_bytes=cfg["replica.fetch.max.bytes"],
            response_max_bytes=cfg["replica.fetch.response.max.bytes"],
            backoff_ms=cfg["replica.fetch.backoff.ms"],
            security=cfg.client_security(cfg.listener_config.inter_broker),
            caps=cfg.inter_broker_protocol.caps,
        )


@dataclass
class PartitionFetchState:
    """Where one followed partition stands: its leader's epoch as the controller said,
    whether its divergence is still to be found, and a back-off after an error."""

    leader_epoch: int
    truncating: bool = True
    delayed_until: float = 0.0
    in_sync: bool = False  # caught up with the leader's high watermark at the last fetch

    def is_ready(self, now: float) -> bool:
        return now >= self.delayed_until


_States = dict[TopicPartition, PartitionFetchState]


class ReplicaFetcher:
    """Fetches the partitions this broker follows from one leader broker (a task).

    Invariants: one request at a time to the leader; a partition's log is only changed
    here while the partition is in `partitions` (a role change removes it first).
    """

    def __init__(
        self,
        source_broker_id: int,
        replica_manager: Any,
        config: FetcherConfig,
        endpoint_for: Callable[[int], tuple[str, int] | None],
    ) -> None:
        self.source_broker_id = source_broker_id
        self.replica_manager = replica_manager
        self.config = config
        self.endpoint_for = endpoint_for
        self.partitions: dict[TopicPartition, PartitionFetchState] = {}
        self._wakeup = asyncio.Event()
        self._connection: AsyncBrokerConnection | None = None
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"ReplicaFetcher-{config.broker_id}-{source_broker_id}"
        )

    # -- partitions ---------------------------------------------------------------

    def add_partitions(self, partitions: dict[TopicPartition, int]) -> None:
        """Follow these partitions (tp -> leader epoch), each finding its divergence first."""
        for tp, leader_epoch in partitions.items():
            self.partitions[tp] = PartitionFetchState(leader_epoch)
        self._wakeup.set()

    def remove_partitions(self, tps: list[TopicPartition]) -> None:
        for tp in tps:
            self.partitions.pop(tp, None)

    async def shutdown(self) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        self._close()

    # -- the loop -----------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            now = time.monotonic()
            ready = {tp: s for tp, s in self.partitions.items() if s.is_ready(now)}
            if not ready:
                self._wakeup.clear()
                delays = [s.delayed_until - now for s in self.partitions.values()]
                timeout = min(delays) if delays else None
                await wait_event(self._wakeup, timeout)
                continue
            try:
                connection = await self._connect()
                truncating = {tp: s for tp, s in ready.items() if s.truncating}
                if truncating:
                    await self._truncate(connection, truncating)
                fetching = {tp: s for tp, s in ready.items() if not s.truncating}
                if fetching:
                    await self._fetch(connection, fetching)
            except (KafkaError, ProtocolError) as e:
                log.info(
                    "[ReplicaFetcher broker=%s leader=%s] %s; backing off",
                    self.config.broker_id, self.source_broker_id, e,
                )  # fmt: skip
                self._close()
                await asyncio.sleep(self.config.backoff_ms / 1000)

    async def _connect(self) -> AsyncBrokerConnection:
        if self._connection is not None and not self._connection.closed:
            return self._connection
        endpoint = self.endpoint_for(self.source_broker_id)
        if endpoint is None:
            raise KafkaError("LEADER_NOT_AVAILABLE", f"broker {self.source_broker_id} is not alive")
        self._connection = await AsyncBrokerConnection.connect(
            *endpoint, client_id=f"broker-{self.config.broker_id}-fetcher-0",
            caps=self.config.caps, **self.config.security,
        )  # fmt: skip
        return self._connection

    def _close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _delay(self, tp: TopicPartition, state: PartitionFetchState) -> None:
        state.delayed_until = time.monotonic() + self.config.backoff_ms / 1000

    def _current(self, tp: TopicPartition, state: PartitionFetchState) -> Any:
        """The partition's log, if the answer about it still counts (no role change since)."""
        if self.partitions.get(tp) is not state:
            return None
        partition = self.replica_manager.partitions.get(tp)
        return partition.log if partition is not None else None

    # -- finding the divergence ---------------------------------------------------------

    async def _truncate(self, connection: AsyncBrokerConnection, partitions: _States) -> None:
        R = m.OffsetForLeaderEpochRequest
        asked: dict[TopicPartition, int] = {}
        by_topic: dict[str, list[Any]] = {}
        for tp, state in partitions.items():
            log_ = self._current(tp, state)
            if log_ is None:
                continue
            epoch = log_.latest_epoch()
            if epoch is None:  # nothing written under any epoch: nothing to truncate
                state.truncating = False
                continue
            asked[tp] = epoch
            by_topic.setdefault(tp.topic, []).append(
                R.OffsetForLeaderPartition(
                    partition=tp.partition,
                    current_leader_epoch=state.leader_epoch,
                    leader_epoch=epoch,
                )  # fmt: skip
            )
        if not by_topic:
            return
        request = R(
            replica_id=self.config.broker_id,
            topics=[R.OffsetForLeaderTopic(topic=t, partitions=ps) for t, ps in by_topic.items()],
        )
        response = await connection.send(ApiKey.OFFSET_FOR_LEADER_EPOCH, request)
        for topic in response.topics:
            for p in topic.partitions:
                tp = TopicPartition(topic.topic, p.partition)
                state = partitions.get(tp)
                log_ = self._current(tp, state) if state is not None else None
                if log_ is None or tp not in asked:
                    continue
                if p.error_code:
                    self._on_partition_error(tp, state, p.error_code)
                    continue
                self._truncate_to_divergence(tp, state, log_, p.leader_epoch, p.end_offset)

    def _truncate_to_divergence(
        self,
        tp: TopicPartition,
        state: PartitionFetchState,
        log_: Any,
        leader_epoch: int,
        leader_end_offset: int,
    ) -> None:
        """AbstractFetcherThread.getOffsetTruncationState, then the truncation."""
        end = log_.log_end_offset
        if leader_end_offset == UNDEFINED_EPOCH_OFFSET:
            # The leader knows no epoch at or below ours: keep what is committed.
            target, done = min(log_.high_watermark, end), True
        else:
            found = log_.end_offset_for_epoch(leader_epoch)
            if found is None:
                target, done = min(leader_end_offset, end), True
            elif found[0] != leader_epoch:
                # We never had the leader's epoch: cut to the end of ours below it, ask again.
                target, done = min(found[1], end), False
            else:
                target, done = min(leader_end_offset, found[1], end), True
        if target < end:
            log.info(
                "[ReplicaFetcher broker=%s] Truncating %s to offset %d (leader epoch %d ends at "
                "%d)", self.config.broker_id, tp, target, leader_epoch, leader_end_offset,
            )  # fmt: skip
            log_.truncate_to(target)
        state.truncating = not done

    # -- fetching -----------------------------------------------------------------------

    async def _fetch(self, connection: AsyncBrokerConnection, partitions: _States) -> None:
        R = m.FetchRequest
        by_topic: dict[str, list[Any]] = {}
        quota = self.replica_manager.follower_quota
        throttled = {
            tp for tp, state in partitions.items()
            if not state.in_sync and self.replica_manager.follower_throttles(tp)
        }  # fmt: skip
        held_back = throttled if quota.is_quota_exceeded() else set()
        for tp, state in partitions.items():
            log_ = self._current(tp, state)
            if log_ is None or tp in held_back:  # shouldFollowerThrottle
                continue
            by_topic.setdefault(tp.topic, []).append(
                R.FetchPartition(
                    partition=tp.partition,
                    current_leader_epoch=state.leader_epoch,
                    fetch_offset=log_.log_end_offset,
                    log_start_offset=log_.log_start_offset,
                    partition_max_bytes=(
                        max(1, min(self.config.max_bytes, quota.allowance()))
                        if tp in throttled
                        else self.config.max_bytes
                    ),
                )
            )
        if not by_topic:
            if held_back:  # everything waits for the rate to fall: not a busy loop
                await asyncio.sleep(quota.window_s / 10)
            return
        request = R(
            replica_id=self.config.broker_id,
            max_wait_ms=self.config.max_wait_ms,
            min_bytes=self.config.min_bytes,
            max_bytes=self.config.response_max_bytes,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=[R.FetchTopic(topic=t, partitions=ps) for t, ps in by_topic.items()],
        )
        response = await connection.send(ApiKey.FETCH, request)
        if response.error_code:
            raise KafkaError(response.error_code, "Fetch refused")
        for topic in response.responses:
            for p in topic.partitions:
                tp = TopicPartition(topic.topic, p.partition_index)
                state = partitions.get(tp)
                log_ = self._current(tp, state) if state is not None else None
                if log_ is None:
                    continue
                if p.error_code == KafkaError("OFFSET_OUT_OF_RANGE").code:
                    await self._handle_out_of_range(connection, tp, state, log_)
                elif p.error_code:
                    self._on_partition_error(tp, state, p.error_code)
                else:
                    self._process_partition_data(tp, state, log_, p)
                    if tp in throttled:
                        quota.record(len(p.records or b""))

    def _process_partition_data(
        self, tp: TopicPartition, state: PartitionFetchState, log_: Any, data: Any
    ) -> None:
        records = _whole_batches(data.records)
        try:
            if len(records):
                log_.append_as_follower(records)
                if (stats := self.replica_manager.topic_stats) is not None:
                    stats.replicated(len(records))
            log_.high_watermark = data.high_watermark  # bounded by our log end offset
            state.in_sync = log_.log_end_offset >= data.high_watermark
            if data.log_start_offset > log_.log_start_offset:
                log_.maybe_increment_log_start_offset(
                    min(data.log_start_offset, log_.high_watermark)
                )
        except KafkaStorageError:
            self.partitions.pop(tp, None)  # our log dir is offline: nothing to fetch into
            return
        except KafkaError as e:
            log.error(
                "[ReplicaFetcher broker=%s] Error processing data for %s: %s",
                self.config.broker_id, tp, e,
            )  # fmt: skip
            self._delay(tp, state)
            return
        self.replica_manager.wake(tp)

    async def _handle_out_of_range(
        self,
        connection: AsyncBrokerConnection,
        tp: TopicPartition,
        state: PartitionFetchState,
        log_: Any,
    ) -> None:
        """ReplicaFetcherThread.handleOutOfRangeError: we are past the leader's end (cut
        back to it) or before its start (start over at its log start offset)."""
        leader_end = await self._leader_offset(connection, tp, state, LATEST_TIMESTAMP)
        if leader_end is None:
            return
        if leader_end < log_.log_end_offset:
            log.warning(
                "[ReplicaFetcher broker=%s] %s: our log end %d is past the leader's %d; "
                "truncating", self.config.broker_id, tp, log_.log_end_offset, leader_end,
            )  # fmt: skip
            log_.truncate_to(leader_end)
            return
        leader_start = await self._leader_offset(connection, tp, state, EARLIEST_TIMESTAMP)
        if leader_start is not None and leader_start > log_.log_end_offset:
            log_.truncate_fully_and_start_at(leader_start)

    async def _leader_offset(
        self,
        connection: AsyncBrokerConnection,
        tp: TopicPartition,
        state: PartitionFetchState,
        timestamp: int,
    ) -> int | None:
        R = m.ListOffsetsRequest
        request = R(
            replica_id=self.config.broker_id,
            isolation_level=0,
            topics=[
                R.ListOffsetsTopic(
                    name=tp.topic,
                    partitions=[
                        R.ListOffsetsPartition(
                            partition_index=tp.partition,
                            current_leader_epoch=state.leader_epoch,
                            timestamp=timestamp,
                        )
                    ],
                )
            ],
        )
        response = await connection.send(ApiKey.LIST_OFFSETS, request)
        p = response.topics[0].partitions[0]
        if p.error_code:
            self._on_partition_error(tp, state, p.error_code)
            return None
        return int(p.offset)

    def _on_partition_error(
        self, tp: TopicPartition, state: PartitionFetchState, code: int
    ) -> None:
        error = KafkaError(code)
        level = logging.INFO if error.name in _WAIT_FOR_LEADER else logging.WARNING
        log.log(
            level, "[ReplicaFetcher broker=%s] %s from leader %s for %s; backing off",
            self.config.broker_id, error.name, self.source_broker_id, tp,
        )  # fmt: skip
        self._delay(tp, state)


def _whole_batches(records: Any) -> memoryview:
    """The whole batches at the front of a fetched record set: a leader may end a
    response with part of a batch that did not fit (Kafka does), which the next fetch
    asks for again."""
    if not records:
        return memoryview(b"")
    view = memoryview(records)
    position, end = 0, len(view)
    while end - position >= 12:
        size = _LENGTH.unpack_from(view, position + 8)[0] + 12
        if size < 12 or position + size > end:
            break
        position += size
    return view[:position]


class ReplicaFetcherManager:
    """The fetchers of one broker, one per source broker (num.replica.fetchers = 1)."""

    def __init__(
        self,
        replica_manager: Any,
        config: FetcherConfig,
        endpoint_for: Callable[[int], tuple[str, int] | None],
    ) -> None:
        self.replica_manager = replica_manager
        self.config = config
        self.endpoint_for = endpoint_for
        self.fetchers: dict[int, ReplicaFetcher] = {}
        self._shut_down = False

    def add_fetcher_for_partitions(self, partitions: dict[TopicPartition, tuple[int, int]]) -> None:
        """Follow each partition (tp -> (leader id, leader epoch)) from its leader."""
        if self._shut_down:
            return  # the broker is stopping: a late LeaderAndIsr starts nothing
        self.remove_fetcher_for_partitions(list(partitions))
        by_leader: dict[int, dict[TopicPartition, int]] = {}
        for tp, (leader, epoch) in partitions.items():
            by_leader.setdefault(leader, {})[tp] = epoch
        for leader, states in by_leader.items():
            fetcher = self.fetchers.get(leader)
            if fetcher is None:
                fetcher = self.fetchers[leader] = ReplicaFetcher(
                    leader, self.replica_manager, self.config, self.endpoint_for
                )
            fetcher.add_partitions(states)
            log.info(
                "[ReplicaFetcherManager broker=%s] Added fetcher to broker %s for partitions %s",
                self.config.broker_id, leader, sorted(map(str, states)),
            )  # fmt: skip

    def remove_fetcher_for_partitions(self, tps: list[TopicPartition]) -> None:
        for fetcher in self.fetchers.values():
            fetcher.remove_partitions(tps)

    async def shutdown(self) -> None:
        self._shut_down = True
        fetchers, self.fetchers = list(self.fetchers.values()), {}
        for fetcher in fetchers:
            await fetcher.shutdown()
