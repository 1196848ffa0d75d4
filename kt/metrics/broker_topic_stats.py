"""Kafka's BrokerTopicStats: the BrokerTopicMetrics meters of each topic (tag `topic`)
and of all topics (no tag), marked once per partition of a produce or fetch request,
never per record.

As Kafka counts them: a produce to a partition marks TotalProduceRequestsPerSec, then
BytesInPerSec (the batches' bytes) and MessagesInPerSec (their records) when appended,
BytesRejectedPerSec when a batch is over max.message.bytes, FailedProduceRequestsPerSec
for any other error than the expected ones (not the leader, unknown partition, too
large, corrupt, storage); a fetch marks TotalFetchRequestsPerSec, BytesOutPerSec for a
consumer (ReplicationBytesOutPerSec, all topics only, for a follower), and
FailedFetchRequestsPerSec for an unexpected error. A follower's appends mark
ReplicationBytesInPerSec.
"""

from __future__ import annotations

from kt.errors import KafkaError
from kt.metrics.meters import Meter
from kt.metrics.registry import MetricsRegistry

_METERS = ("MessagesInPerSec", "BytesInPerSec", "BytesOutPerSec", "BytesRejectedPerSec",
           "FailedProduceRequestsPerSec", "FailedFetchRequestsPerSec",
           "TotalProduceRequestsPerSec", "TotalFetchRequestsPerSec",
           "ProduceMessageConversionsPerSec", "FetchMessageConversionsPerSec")  # fmt: skip
_ALL_TOPICS_ONLY = ("ReplicationBytesInPerSec", "ReplicationBytesOutPerSec")

# Errors Kafka's ReplicaManager answers without counting a failed request.
_EXPECTED = frozenset(KafkaError(name).code for name in (
    "UNKNOWN_TOPIC_OR_PARTITION", "NOT_LEADER_OR_FOLLOWER", "RECORD_LIST_TOO_LARGE",
    "MESSAGE_TOO_LARGE", "CORRUPT_MESSAGE", "KAFKA_STORAGE_ERROR", "UNKNOWN_LEADER_EPOCH",
    "FENCED_LEADER_EPOCH", "REPLICA_NOT_AVAILABLE", "OFFSET_OUT_OF_RANGE",
    "INCONSISTENT_TOPIC_ID",
))  # fmt: skip
_TOO_LARGE = KafkaError("MESSAGE_TOO_LARGE").code
_UNKNOWN = KafkaError("UNKNOWN_TOPIC_OR_PARTITION").code


class BrokerTopicMetrics:
    """One topic's meters, or all topics' (topic None). As Kafka's MeterWrapper, all
    topics' exist from the start and a topic's once first marked (a topic no fetch has
    failed on has no FailedFetchRequestsPerSec)."""

    def __init__(self, registry: MetricsRegistry, topic: str | None) -> None:
        self._registry = registry
        self._tags = (("topic", topic),) if topic is not None else ()
        self._meters: dict[str, Meter] = {}
        if topic is None:
            for name in _METERS + _ALL_TOPICS_ONLY:
                self.meter(name)

    def meter(self, name: str) -> Meter:
        meter = self._meters.get(name)
        if meter is None:
            meter = self._meters[name] = self._registry.meter(
                "kafka.server", "BrokerTopicMetrics", name, self._tags
            )
        return meter


class BrokerTopicStats:
    def __init__(self, registry: MetricsRegistry) -> None:
        self.registry = registry
        self.all = BrokerTopicMetrics(registry, None)
        self._topics: dict[str, BrokerTopicMetrics] = {}

    def topic(self, topic: str) -> BrokerTopicMetrics:
        stats = self._topics.get(topic)
        if stats is None:
            stats = self._topics[topic] = BrokerTopicMetrics(self.registry, topic)
        return stats

    def remove(self, topic: str) -> None:
        """A deleted topic's meters go (Kafka's removeMetrics on deletion)."""
        if self._topics.pop(topic, None) is not None:
            self.registry.remove_tagged(("topic", topic))

    def _mark(self, topic: str | None, name: str, n: int) -> None:
        if topic is not None:
            self.topic(topic).meter(name).count += n
        self.all.meter(name).count += n

    def produced(self, topic: str, error_code: int, size: int, records: int) -> None:
        """One partition of a produce request, appended (error 0) or refused. A topic this
        broker does not host gets no meters of its own (a late fetch of a deleted topic
        would bring its meters back; a client naming topics at random would make series)."""
        topic_or_none = None if error_code == _UNKNOWN else topic
        self._mark(topic_or_none, "TotalProduceRequestsPerSec", 1)
        if error_code == 0:
            self._mark(topic, "BytesInPerSec", size)
            self._mark(topic, "MessagesInPerSec", records)
        elif error_code == _TOO_LARGE:
            self._mark(topic, "BytesRejectedPerSec", size)
        elif error_code not in _EXPECTED:
            self._mark(topic, "FailedProduceRequestsPerSec", 1)

    def fetched(self, topic: str, error_code: int, size: int, follower: bool) -> None:
        """One partition of a fetch request, as answered (a topic not hosted: as above)."""
        self._mark(None if error_code == _UNKNOWN else topic, "TotalFetchRequestsPerSec", 1)
        if error_code != 0:
            if error_code not in _EXPECTED:
                self._mark(topic, "FailedFetchRequestsPerSec", 1)
        elif follower:
            self.all.meter("ReplicationBytesOutPerSec").count += size
        else:
            self._mark(topic, "BytesOutPerSec", size)

    def replicated(self, size: int) -> None:
        """A follower appended `size` bytes fetched from its leader."""
        self.all.meter("ReplicationBytesInPerSec").count += size
