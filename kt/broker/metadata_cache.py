"""What this broker knows of the cluster, for Metadata and DescribeCluster answers.

Kafka's ZkMetadataCache: filled by the controller's UpdateMetadata requests (live
brokers, and leader/ISR/replicas per partition), read by every request handler.
Replaced wholesale or per partition, never half-updated: readers on the event loop see
either the old or the new state.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field

from kt.broker.replication.purgatory import wait_event
from kt.metadata.znodes import BrokerEndPoint


@dataclass(frozen=True)
class Broker:
    """A live broker as UpdateMetadata describes it (kafka.cluster.Broker): an endpoint
    per listener, and its rack."""

    broker_id: int
    endpoints: tuple[BrokerEndPoint, ...]
    rack: str | None = None

    def endpoint(self, listener_name: str) -> BrokerEndPoint | None:
        """Its endpoint on a listener, or None: a client that came in on a listener this
        broker lacks is not told of it (MetadataCache.getAliveBrokerNode)."""
        for endpoint in self.endpoints:
            if endpoint.listener_name == listener_name:
                return endpoint
        return None


@dataclass
class PartitionState:
    """Leader, epoch, replicas and ISR of one partition as the controller last said."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    offline_replicas: list[int] = field(default_factory=list)
    controller_epoch: int = 0
    zk_version: int = -1  # the state znode's version this state was read or written at


@dataclass
class MetadataCache:
    broker_id: int
    cluster_id: str = ""
    controller_id: int = -1
    brokers: dict[int, Broker] = field(default_factory=dict)
    partitions: dict[str, dict[int, PartitionState]] = field(default_factory=dict)
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)
    _topic_names: dict[uuid.UUID, str] = field(default_factory=dict, init=False, repr=False)
    _changed: asyncio.Event | None = field(default=None, init=False, repr=False)
    # Bumped whenever a topic or partition is added, changed or removed: who derives
    # something from the topics (a consumer group's subscribed partitions) recomputes it
    # only when this moved.
    topics_version: int = field(default=0, init=False)

    def notify_changed(self) -> None:
        """Wake everyone in `wait_changed` (the controller finished an update)."""
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    async def wait_changed(self, timeout_s: float) -> bool:
        """Wait for the next update, at most `timeout_s`; True if one came."""
        if self._changed is None:
            self._changed = asyncio.Event()
        return await wait_event(self._changed, timeout_s)

    def update_brokers(self, brokers: list[Broker], controller_id: int) -> None:
        self.brokers = {b.broker_id: b for b in brokers}
        self.controller_id = controller_id

    def name_controller(self, controller_id: int) -> None:
        """The controller as this broker read it from the metadata store (-1: none)."""
        if controller_id != self.controller_id:
            self.controller_id = controller_id
            self.notify_changed()

    def update_partition(self, state: PartitionState, topic_id: uuid.UUID | None = None) -> None:
        self.topics_version += 1
        self.partitions.setdefault(state.topic, {})[state.partition] = state
        if topic_id is not None and self.topic_ids.get(state.topic) != topic_id:
            self._topic_names.pop(self.topic_ids.get(state.topic), None)  # type: ignore[arg-type]
            self.topic_ids[state.topic] = topic_id
            self._topic_names[topic_id] = state.topic

    def remove_topic(self, topic: str) -> None:
        self.topics_version += 1
        self.partitions.pop(topic, None)
        topic_id = self.topic_ids.pop(topic, None)
        if topic_id is not None:
            self._topic_names.pop(topic_id, None)

    def contains(self, topic: str) -> bool:
        return topic in self.partitions

    def topic_partitions(self, topic: str) -> dict[int, PartitionState]:
        return self.partitions.get(topic, {})

    def all_topics(self) -> list[str]:
        return sorted(self.partitions)

    def topic_id(self, topic: str) -> uuid.UUID:
        return self.topic_ids.get(topic, uuid.UUID(int=0))

    def topic_for_id(self, topic_id: uuid.UUID) -> str | None:
        return self._topic_names.get(topic_id)

    def alive_broker(self, broker_id: int) -> Broker | None:
        return self.brokers.get(broker_id)
