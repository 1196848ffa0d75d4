"""The series of kafka_exporter (danielqsj/kafka_exporter: kafka_consumergroup_lag,
kafka_topic_partition_current_offset, ...), under its names and labels, served by the
brokers that own what they describe, so that summing them over the brokers gives the
one exporter's values, each series once:

- a partition's (kafka_topic_partition_*) by its leader (kt/broker/metrics/broker_metrics.py
  serves them with the partition's own gauges): current offset (the high
  watermark, what ListOffsets LATEST answers), oldest offset, replicas, in-sync
  replicas, leader, leader_is_preferred, under_replicated_partition;
- a group's (kafka_consumergroup_*) by its coordinator: for each topic the group has
  committed an offset of, every partition's committed offset (-1 where none) and its
  lag (the partition's high watermark minus that offset, -1 where none), their sums per
  topic, and the group's members;
- the cluster's (kafka_brokers, kafka_topic_partitions) by the active controller.

A group's partitions led by other brokers have their high watermarks asked for when a
scrape comes (ListOffsets over the inter-broker listener, before the scrape renders),
so a lag at rest is exactly the log end minus the commit.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from kt.broker.inter_broker_connections import InterBrokerConnections
from kt.broker.partition_metadata_client import latest_offsets_request
from kt.broker.replication.partition import TopicPartition
from kt.errors import KafkaError
from kt.protocol import ApiKey

if TYPE_CHECKING:
    from collections.abc import Callable

    from kt.broker.broker_services import BrokerServices

log = logging.getLogger(__name__)

REFRESH_TIMEOUT_S = 5.0

Row = tuple[tuple[str, ...], float]


class KafkaExporterSeries:
    """kafka_exporter's series of one broker; the other leaders' high watermarks asked at
    `broker_endpoint`, with the inter-broker listener's `security`."""

    def __init__(
        self, broker: BrokerServices, broker_endpoint: Callable[[int], tuple[str, int] | None],
        security: dict[str, Any],
    ) -> None:  # fmt: skip
        self.broker = broker
        self.high_watermarks: dict[TopicPartition, int] = {}  # other leaders', last asked
        self._connections = InterBrokerConnections(
            f"broker-{broker.broker_id}-consumer-lag", broker_endpoint, security,
            connect_timeout_s=5.0,
        )  # fmt: skip

    # -- on the scrape's thread ------------------------------------------------------

    async def refresh(self) -> None:
        """Ask the other leaders for the high watermarks the groups need (on the event
        loop, before a scrape renders; up to REFRESH_TIMEOUT_S, then the last ones known
        are served, and none for a leader that did not answer)."""
        if not self._groups():
            return
        try:
            async with asyncio.timeout(REFRESH_TIMEOUT_S):  # not wait_for: Python 3.11
                await self._ask_leaders()
        except TimeoutError:
            log.warning("consumer lag: the partition leaders did not answer within %s s",
                        REFRESH_TIMEOUT_S)  # fmt: skip

    def group_rows(self) -> dict[str, list[Row]]:
        out: dict[str, list[Row]] = {name: [] for name in _GROUP_SERIES}
        cache = self.broker.metadata_cache
        for group in self._groups():
            out["kafka_consumergroup_members"].append(((group.group_id,), len(group.members)))
            offsets = dict(group.offsets)
            for topic in sorted({t for t, _ in offsets}):
                current_sum = lag_sum = 0
                for partition in sorted(cache.topic_partitions(topic)):
                    committed = offsets.get((topic, partition))
                    offset = committed.offset if committed is not None else -1
                    end = self._high_watermark(TopicPartition(topic, partition))
                    labels = (group.group_id, topic, str(partition))
                    out["kafka_consumergroup_current_offset"].append((labels, offset))
                    current_sum += offset
                    if end is None:
                        continue  # its leader did not answer: no lag rather than a wrong one
                    lag = -1 if offset == -1 else end - offset
                    lag_sum += lag if offset != -1 else 0
                    out["kafka_consumergroup_lag"].append((labels, lag))
                group_topic = (group.group_id, topic)
                out["kafka_consumergroup_current_offset_sum"].append((group_topic, current_sum))
                out["kafka_consumergroup_lag_sum"].append((group_topic, lag_sum))
        return out

    def cluster_rows(self) -> dict[str, list[Row]]:
        controller = self.broker.controller
        if not controller.is_active:
            return {"kafka_brokers": [], "kafka_topic_partitions": []}
        ctx = controller.ctx
        topics = [((t,), len(parts)) for t, parts in sorted(list(ctx.assignments.items()))]
        return {"kafka_brokers": [((), len(ctx.live_brokers))], "kafka_topic_partitions": topics}

    # -- helpers -----------------------------------------------------------------------

    def _groups(self) -> list[Any]:
        groups = self.broker.group_coordinator.manager.groups
        return [g for g in list(groups.values()) if g.offsets or g.members]

    def _high_watermark(self, tp: TopicPartition) -> int | None:
        partition = self.broker.replica_manager.partitions.get(tp)
        if partition is not None and partition.is_leader:
            return partition.log.high_watermark
        return self.high_watermarks.get(tp)

    # -- on the event loop -------------------------------------------------------------

    async def _ask_leaders(self) -> None:
        cache = self.broker.metadata_cache
        by_leader: dict[int, list[TopicPartition]] = {}
        for group in self._groups():
            for topic in {t for t, _ in list(group.offsets)}:
                for partition, state in cache.topic_partitions(topic).items():
                    tp = TopicPartition(topic, partition)
                    if state.leader >= 0 and state.leader != self.broker.broker_id:
                        by_leader.setdefault(state.leader, []).append(tp)
        await asyncio.gather(*(self._ask(leader, tps) for leader, tps in by_leader.items()))

    async def _ask(self, leader: int, tps: list[TopicPartition]) -> None:
        try:
            connection = await self._connections.connection(leader)
            response = await connection.send(ApiKey.LIST_OFFSETS, latest_offsets_request(tps))
        except (KafkaError, OSError, EOFError) as e:
            log.info("consumer lag: broker %s did not answer ListOffsets: %s", leader, e)
            self._connections.close(leader)
            for tp in tps:
                self.high_watermarks.pop(tp, None)
            return
        for t in response.topics:
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index)
                if p.error_code == 0:
                    self.high_watermarks[tp] = p.offset
                else:
                    self.high_watermarks.pop(tp, None)

    def close(self) -> None:
        self._connections.close()


PARTITION_SERIES = (
    "kafka_topic_partition_current_offset", "kafka_topic_partition_oldest_offset",
    "kafka_topic_partition_replicas", "kafka_topic_partition_in_sync_replica",
    "kafka_topic_partition_leader", "kafka_topic_partition_leader_is_preferred",
    "kafka_topic_partition_under_replicated_partition",
)  # fmt: skip
_GROUP_SERIES = (
    "kafka_consumergroup_members", "kafka_consumergroup_current_offset",
    "kafka_consumergroup_lag", "kafka_consumergroup_current_offset_sum",
    "kafka_consumergroup_lag_sum",
)  # fmt: skip
LABELS = {
    **{name: ("topic", "partition") for name in PARTITION_SERIES},
    "kafka_consumergroup_members": ("consumergroup",),
    "kafka_consumergroup_current_offset": ("consumergroup", "topic", "partition"),
    "kafka_consumergroup_lag": ("consumergroup", "topic", "partition"),
    "kafka_consumergroup_current_offset_sum": ("consumergroup", "topic"),
    "kafka_consumergroup_lag_sum": ("consumergroup", "topic"),
    "kafka_brokers": (),
    "kafka_topic_partitions": ("topic",),
}


def rows(series: KafkaExporterSeries) -> Iterator[tuple[str, tuple[str, ...], list[Row]]]:
    """(name, label names, rows) of the groups' and the cluster's series."""
    for group in (series.group_rows(), series.cluster_rows()):
        for name, found in group.items():
            yield name, LABELS[name], found
