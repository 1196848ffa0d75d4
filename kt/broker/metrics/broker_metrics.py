"""The gauges of one broker, read when a scrape asks: Kafka's ReplicaManager,
Partition, Log, LogManager, KafkaController, SocketServer, KafkaRequestHandlerPool and
KafkaServer beans, each computed from the broker's own state in one pass.

Values as Kafka's gauges give them: a Partition's UnderReplicated, InSyncReplicasCount,
ReplicasCount, UnderMinIsr and AtMinIsr are those of the partition's leader and 0 on
its followers, so summing a cluster counts each partition once; the KafkaController's
are the active controller's and 0 on the other brokers.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from kt.broker.metrics.kafka_exporter import PARTITION_SERIES
from kt.metrics.exposition import gauge_name, kafka_metric_name
from kt.metrics.registry import MetricName, MetricsRegistry
from kt.storage.log_flush_stats import LOG_FLUSH_TIMER

if TYPE_CHECKING:
    from collections.abc import Callable

    from kt.broker.broker_services import BrokerServices
    from kt.broker.network.socket_server import SocketServer


def register_broker_metrics(
    registry: MetricsRegistry, broker: BrokerServices, socket_servers: list[SocketServer],
    broker_state: Callable[[], int],
) -> None:  # fmt: skip
    """The broker's gauges and meters: `socket_servers` is the broker's list of listeners
    (read at each scrape), `broker_state` its BrokerState."""
    _replica_manager(broker, registry)
    _partitions_and_logs(broker, registry)
    _controller(broker, registry)
    _network(socket_servers, registry)
    _kafka_server(broker_state, registry)
    _group_coordinator(broker, registry)
    flush = MetricName("kafka.log", "LogFlushStats", "LogFlushRateAndTimeMs")
    registry.histograms[flush] = LOG_FLUSH_TIMER


# GroupMetadataManager's gauges (kafka.coordinator.group; Strimzi's rules export no bean of
# a dotted domain, so these take the name its generic gauge rule would give them).
_GROUP_STATES = (("NumGroupsPreparingRebalance", "PreparingRebalance"),
                 ("NumGroupsCompletingRebalance", "CompletingRebalance"),
                 ("NumGroupsStable", "Stable"), ("NumGroupsDead", "Dead"),
                 ("NumGroupsEmpty", "Empty"))  # fmt: skip


def _group_coordinator(broker: BrokerServices, registry: MetricsRegistry) -> None:
    def groups() -> list[Any]:
        return list(broker.group_coordinator.manager.groups.values())

    def gauge(name: str, value: Any) -> None:
        registry.gauge("kafka.coordinator.group", "GroupMetadataManager", name, value)

    gauge("NumGroups", lambda: len(groups()))
    gauge("NumOffsets", lambda: sum(len(g.offsets) for g in groups()))
    for name, state in _GROUP_STATES:
        gauge(name, lambda state=state: sum(g.state.value == state for g in groups()))


def _leaders(rm: Any) -> list[Any]:
    return [p for p in list(rm.partitions.values()) if p.is_leader]


def _replica_manager(broker: BrokerServices, registry: MetricsRegistry) -> None:
    def gauge(name: str, value: Any) -> None:
        registry.gauge("kafka.server", "ReplicaManager", name, value)

    rm = broker.replica_manager
    for name, meter in (("IsrExpandsPerSec", rm.isr_expands), ("IsrShrinksPerSec", rm.isr_shrinks),
                        ("FailedIsrUpdatesPerSec", rm.failed_isr_updates)):  # fmt: skip
        registry.meters[MetricName("kafka.server", "ReplicaManager", name)] = meter
    gauge("LeaderCount", lambda: len(_leaders(rm)))
    gauge("PartitionCount", lambda: len(rm.partitions))
    gauge("OfflineReplicaCount", lambda: len(rm.offline_partitions))
    gauge("UnderReplicatedPartitions",
          lambda: sum(len(p.isr) < len(p.replicas) for p in _leaders(rm)))  # fmt: skip
    gauge("UnderMinIsrPartitionCount",
          lambda: sum(len(p.isr) < p.min_insync_replicas for p in _leaders(rm)))  # fmt: skip
    gauge("AtMinIsrPartitionCount",
          lambda: sum(len(p.isr) == p.min_insync_replicas for p in _leaders(rm)))  # fmt: skip


# The gauges of each partition this broker hosts: Kafka's Partition (the leader's
# values, 0 on a follower) and Log beans, and kafka_exporter's partition series (from
# the leader only), in one table: (domain, type, name) or a kafka_exporter name.
_PARTITION_GAUGES = (
    ("kafka.cluster", "Partition", "UnderReplicated"),
    ("kafka.cluster", "Partition", "InSyncReplicasCount"),
    ("kafka.cluster", "Partition", "ReplicasCount"),
    ("kafka.cluster", "Partition", "UnderMinIsr"),
    ("kafka.cluster", "Partition", "AtMinIsr"),
    ("kafka.cluster", "Partition", "LastStableOffsetLag"),
    ("kafka.log", "Log", "Size"),
    ("kafka.log", "Log", "LogStartOffset"),
    ("kafka.log", "Log", "LogEndOffset"),
    ("kafka.log", "Log", "NumLogSegments"),
)


def _partition_row(p: Any) -> list[float | None]:
    log_ = p.log
    isr, replicas = len(p.isr), len(p.replicas)
    beans: list[float | None] = [0, 0, 0, 0, 0, 0]
    if p.is_leader:
        hw = log_.high_watermark
        beans = [int(isr < replicas), isr, replicas, int(isr < p.min_insync_replicas),
                 int(isr == p.min_insync_replicas), hw - log_.last_stable_offset]  # fmt: skip
        exporter: list[float | None] = [
            hw, log_.log_start_offset, replicas, isr, p.leader_id,
            int(replicas > 0 and p.replicas[0] == p.leader_id), int(isr < replicas),
        ]  # fmt: skip
    else:
        exporter = [None] * len(PARTITION_SERIES)
    return [*beans, log_.size, log_.log_start_offset, log_.log_end_offset,
            len(log_.segments), *exporter]  # fmt: skip


def _partitions_and_logs(broker: BrokerServices, registry: MetricsRegistry) -> None:
    def rows() -> Iterator[tuple[tuple[str, ...], list[float | None]]]:
        for p in list(broker.replica_manager.partitions.values()):
            yield (p.tp.topic, str(p.tp.partition)), _partition_row(p)

    columns = [(gauge_name(MetricName(*bean)), "gauge", str(MetricName(*bean)))
               for bean in _PARTITION_GAUGES]  # fmt: skip
    columns += [(name, "gauge", name) for name in PARTITION_SERIES]
    registry.gauge_table(columns, ("topic", "partition"), rows)

    def offline_dirs() -> int:
        lm = broker.log_manager
        return len(lm.log_dirs) - len(lm.live_log_dirs)

    registry.gauge("kafka.log", "LogManager", "OfflineLogDirectoryCount", offline_dirs)


def _controller(broker: BrokerServices, registry: MetricsRegistry) -> None:
    controller = broker.controller

    def active() -> Any:
        return controller if controller.is_active else None

    def on_active(compute: Any) -> Any:
        def value() -> float:
            current = active()
            return 0 if current is None else compute(current.ctx)

        return value

    def gauge(name: str, value: Any) -> None:
        registry.gauge("kafka.controller", "KafkaController", name, value)

    gauge("ActiveControllerCount", lambda: int(active() is not None))
    gauge("OfflinePartitionsCount", on_active(lambda ctx: sum(
        s.leader == -1 for tp, s in list(ctx.states.items())
        if tp.topic not in ctx.topics_to_delete)))  # fmt: skip
    gauge(
        "PreferredReplicaImbalanceCount",
        on_active(
            lambda ctx: sum(
                bool(s.replicas) and s.leader != s.replicas[0] for s in list(ctx.states.values())
            )
        ),
    )
    gauge("GlobalTopicCount", on_active(lambda ctx: len(ctx.assignments)))
    gauge("GlobalPartitionCount", on_active(lambda ctx: sum(
        len(parts) for parts in list(ctx.assignments.values()))))  # fmt: skip
    gauge("ActiveBrokerCount", on_active(lambda ctx: len(ctx.live_brokers)))
    gauge("FencedBrokerCount", lambda: 0)  # ZooKeeper mode fences no broker (KRaft's)
    gauge("TopicsToDeleteCount", on_active(lambda ctx: len(ctx.topics_to_delete)))
    gauge("ControllerState", lambda: controller.events.stats.state)


def register_controller_metrics(controller: Any, registry: MetricsRegistry) -> None:
    """The controller's own: its event queue and ControllerStats (created with it)."""
    stats = controller.events.stats
    registry.histograms[MetricName("kafka.controller", "ControllerEventManager",
                                   "EventQueueTimeMs")] = stats.queue_time_ms  # fmt: skip
    registry.gauge("kafka.controller", "ControllerEventManager", "EventQueueSize",
                   lambda: controller.events.queue_size)  # fmt: skip
    for timer, histogram in stats.rate_and_time_ms.items():
        registry.histograms[MetricName("kafka.controller", "ControllerStats", timer)] = histogram
    unclean = MetricName("kafka.controller", "ControllerStats", "UncleanLeaderElectionsPerSec")
    registry.meters[unclean] = controller.unclean_leader_elections


class LoopIdle:
    """The share of the time the broker's event loop thread did not run, between one
    read and the next (its CPU time from /proc): kt's one loop is both Kafka's network
    processors and its request handlers, so both idle gauges read it."""

    def __init__(self) -> None:
        self.thread_id = threading.get_native_id()  # created on the loop's thread
        self._last = (time.monotonic(), self._cpu())
        self._idle = 1.0
        self._lock = threading.Lock()

    def _cpu(self) -> float:
        try:
            with open(f"/proc/self/task/{self.thread_id}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def ratio(self) -> float:
        with self._lock:
            now, cpu = time.monotonic(), self._cpu()
            wall = now - self._last[0]
            if wall >= 0.5:  # shorter windows say little at the clock's 10 ms ticks
                busy = (cpu - self._last[1]) / wall
                self._idle = min(1.0, max(0.0, 1.0 - busy))
                self._last = (now, cpu)
            return self._idle


def _network(socket_servers: list[SocketServer], registry: MetricsRegistry) -> None:
    idle = LoopIdle()
    registry.gauge("kafka.network", "SocketServer", "NetworkProcessorAvgIdlePercent", idle.ratio)
    registry.gauge("kafka.server", "KafkaRequestHandlerPool", "RequestHandlerAvgIdlePercent",
                   idle.ratio)  # fmt: skip

    def connections() -> Iterator[tuple[tuple[str, ...], list[float | None]]]:
        for listener in list(socket_servers):
            yield (listener.listener_name, "0"), [listener.connection_count]

    name = kafka_metric_name("socket-server-metrics", "connection-count")
    help_ = "kafka.server:type=socket-server-metrics connection-count"
    registry.gauge_table([(name, "gauge", help_)], ("listener", "networkProcessor"), connections)


def _kafka_server(broker_state: Callable[[], int], registry: MetricsRegistry) -> None:
    def io(field: bytes) -> Any:
        def value() -> float:
            try:
                with open("/proc/self/io", "rb") as f:
                    lines = f.readlines()
            except OSError:  # not Linux, or not allowed: Kafka's gauge reads 0 then too
                return 0
            return next((int(line.split()[1]) for line in lines if line.startswith(field)), 0)

        return value

    registry.gauge("kafka.server", "KafkaServer", "linux-disk-read-bytes", io(b"read_bytes:"))
    registry.gauge("kafka.server", "KafkaServer", "linux-disk-write-bytes", io(b"write_bytes:"))
    registry.gauge("kafka.server", "KafkaServer", "BrokerState", broker_state)
