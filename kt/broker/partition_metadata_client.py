"""The latest offsets of partitions, asked of their leaders (Kafka's
NetworkPartitionMetadataClient): ListOffsets LATEST at read_uncommitted, the high
watermark, read from this broker's log for the partitions it leads."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from kt.broker.inter_broker_connections import InterBrokerConnections
from kt.broker.replication.partition import TopicPartition
from kt.errors import KafkaError
from kt.protocol import ApiKey
from kt.protocol import messages as m

LATEST = -1  # ListOffsets' LATEST_TIMESTAMP

OffsetResponse = tuple[str, int]  # (Kafka error name, offset)


def latest_offsets_request(tps: Iterable[TopicPartition]) -> Any:
    """ListOffsets LATEST at read_uncommitted (the high watermarks), as a consumer asks."""
    R = m.ListOffsetsRequest
    topics: dict[str, list[int]] = {}
    for tp in sorted(set(tps)):
        topics.setdefault(tp.topic, []).append(tp.partition)
    return R(replica_id=-1, isolation_level=0, topics=[
        R.ListOffsetsTopic(name=t, partitions=[
            R.ListOffsetsPartition(partition_index=p, timestamp=LATEST) for p in parts])
        for t, parts in topics.items()])  # fmt: skip


class PartitionMetadataClient:
    def __init__(
        self,
        broker_id: int,
        replica_manager: Any,
        cache: Any,
        connections: InterBrokerConnections,
        timeout_s: float = 30.0,
    ) -> None:
        self.broker_id = broker_id
        self.replica_manager = replica_manager
        self.cache = cache  # the metadata cache: each partition's leader
        self.connections = connections
        self.timeout_s = timeout_s

    async def latest_offsets(
        self, tps: Iterable[TopicPartition]
    ) -> dict[TopicPartition, OffsetResponse]:
        out: dict[TopicPartition, OffsetResponse] = {}
        by_leader: dict[int, list[TopicPartition]] = {}
        for tp in tps:
            state = self.cache.topic_partitions(tp.topic).get(tp.partition)
            if state is None:
                out[tp] = ("UNKNOWN_TOPIC_OR_PARTITION", -1)
            elif state.leader < 0:
                out[tp] = ("LEADER_NOT_AVAILABLE", -1)
            elif state.leader == self.broker_id:
                out[tp] = self._local(tp)
            else:
                by_leader.setdefault(state.leader, []).append(tp)
        asked = await asyncio.gather(*(self._ask(leader, ps) for leader, ps in by_leader.items()))
        for answers in asked:
            out.update(answers)
        return out

    def _local(self, tp: TopicPartition) -> OffsetResponse:
        try:
            partition = self.replica_manager.get_partition(tp)
            partition.check_leader(-1)
        except KafkaError as e:
            return e.name, -1
        return "NONE", partition.log.high_watermark

    async def _ask(
        self, leader: int, tps: list[TopicPartition]
    ) -> dict[TopicPartition, OffsetResponse]:
        try:
            request = latest_offsets_request(tps)
            response = await self.connections.send(leader, ApiKey.LIST_OFFSETS, request,
                                                   self.timeout_s)  # fmt: skip
        except (KafkaError, OSError, EOFError) as e:
            self.connections.close(leader)
            name = e.name if isinstance(e, KafkaError) else "NETWORK_EXCEPTION"
            return {tp: (name, -1) for tp in tps}
        out = {}
        for t in response.topics:
            for p in t.partitions:
                error = KafkaError(p.error_code).name if p.error_code else "NONE"
                out[TopicPartition(t.name, p.partition_index)] = (error, p.offset)
        return out
