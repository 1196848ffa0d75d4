"""A share group's offsets, for the admin side (DescribeShareGroupOffsets: Kafka's
GroupCoordinatorService.describeShareGroupOffsets and describeShareGroupAllOffsets).

A share partition's offsets are its start offset on the share coordinator
(ReadShareGroupStateSummary), the leader epoch its state was last read at, and its lag:
the partition's latest offset, less the start offset, less the records past the start
already delivered to completion. Asked for all its partitions, a group names those whose
state the group coordinator initialized.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kt.broker.group import share_partition_metadata as spm
from kt.broker.partition_metadata_client import PartitionMetadataClient
from kt.broker.replication.partition import TopicPartition
from kt.broker.share.share_coordinator import ShareStateError
from kt.broker.share.share_state import SharePartitionKey
from kt.errors import KafkaError

ZERO_UUID = uuid.UUID(int=0)


@dataclass
class PartitionOffsets:
    partition: int
    start_offset: int = -1
    leader_epoch: int = 0
    lag: int = -1
    error: str = "NONE"
    message: str | None = None
    delivered: int = -1  # the state's delivery complete count (not answered)


@dataclass
class TopicOffsets:
    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionOffsets] = field(default_factory=list)


@dataclass
class GroupOffsets:
    error: str = "NONE"
    message: str | None = None
    topics: list[TopicOffsets] = field(default_factory=list)


class ShareGroupOffsets:
    def __init__(
        self,
        groups: Any,
        persister: Any,
        cache: Any,
        partition_metadata: PartitionMetadataClient,
    ) -> None:
        self.groups = groups  # the ShareGroupCoordinator
        self.persister = persister
        self.cache = cache
        self.partition_metadata = partition_metadata

    async def describe(
        self, group_id: str, topics: Sequence[tuple[str, Sequence[int]]] | None
    ) -> GroupOffsets:
        """The offsets of `topics` (name, partitions), or of every initialized share
        partition of the group when None."""
        status = self.groups.manager.group_status(group_id)
        if status != "NONE":
            return GroupOffsets(status)
        wanted: dict[uuid.UUID, tuple[str, list[int]]] = {}
        missing = []
        if topics is None:
            holder = self.groups.manager.get_group(group_id)
            share = holder.share if holder is not None else None
            info = share.partition_metadata if share is not None else None
            for topic_id, partitions in spm.initialized_partitions(info).items():
                name = self.cache.topic_for_id(topic_id)
                if name is not None:
                    wanted[topic_id] = (name, sorted(partitions))
        else:
            for name, partitions in topics:
                topic_id = self.cache.topic_id(name) if self.cache.topic_partitions(name) else None
                if topic_id is None:
                    missing.append(TopicOffsets(name, ZERO_UUID, [
                        PartitionOffsets(p) for p in partitions]))  # fmt: skip
                else:
                    wanted[topic_id] = (name, list(partitions))
        found = [await self._topic(group_id, t, name, ps) for t, (name, ps) in wanted.items()]
        await self._lag(found)
        return GroupOffsets(topics=found + missing)

    async def _topic(self, group_id: str, topic_id: uuid.UUID, name: str,
                     partitions: list[int]) -> TopicOffsets:  # fmt: skip
        out = TopicOffsets(name, topic_id)
        for partition in partitions:
            try:
                state = await self.persister.read_summary(
                    SharePartitionKey(group_id, topic_id, partition)
                )
            except ShareStateError:  # Kafka answers such a partition without its error
                out.partitions.append(PartitionOffsets(partition))
                continue
            out.partitions.append(PartitionOffsets(
                partition, state.start_offset, state.leader_epoch,
                delivered=state.delivery_complete_count))  # fmt: skip
        return out

    async def _lag(self, topics: list[TopicOffsets]) -> None:
        """computeShareGroupLagAndBuildResponse: the partitions with a start offset and a
        delivered count get their lag, or the error of their latest offset."""
        known = [(t, p) for t in topics for p in t.partitions
                 if p.start_offset != -1 and p.delivered != -1]  # fmt: skip
        if not known:
            return
        latest = await self.partition_metadata.latest_offsets(
            TopicPartition(t.name, p.partition) for t, p in known)  # fmt: skip
        for t, p in known:
            error, offset = latest[TopicPartition(t.name, p.partition)]
            if error != "NONE":  # the partition answers its error alone
                p.start_offset, p.leader_epoch, p.error = 0, 0, error
                p.message = KafkaError(error).error.message
            else:
                p.lag = offset - p.start_offset - p.delivered
