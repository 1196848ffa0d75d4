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


class BrokerTopicMetrics:
    """One topic's meters, or all topics' (topic None)."""

    def __init__(self, registry: MetricsRegistry, topic: str | None) -> None:
        tags = (("topic", topic),) if topic is not None else ()
        names = _METERS + (_ALL_TOPICS_ONLY if topic is None else ())
        meters = {n: registry.meter("kafka.server", "BrokerTopicMetrics", n, tags) for n in names}
        self.messages_in = meters["MessagesInPerSec"]
        self.bytes_in = meters["BytesInPerSec"]
        self.bytes_out = meters["BytesOutPerSec"]
        self.bytes_rejected = meters["BytesRejectedPerSec"]
        self.failed_produce = meters["FailedProduceRequestsPerSec"]
        self.failed_fetch = meters["FailedFetchRequestsPerSec"]
        self.total_produce = meters["TotalProduceRequestsPerSec"]
        self.total_fetch = meters["TotalFetchRequestsPerSec"]
        self.replication_bytes_in = meters.get("ReplicationBytesInPerSec")
        self.replication_bytes_out = meters.get("ReplicationBytesOutPerSec")


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

    def produced(self, topic: str, error_code: int, size: int, records: int) -> None:
        """One partition of a produce request, appended (error 0) or refused."""
        stats, all_ = self.topic(topic), self.all
        stats.total_produce.count += 1
        all_.total_produce.count += 1
        if error_code == 0:
            stats.bytes_in.count += size
            all_.bytes_in.count += size
            stats.messages_in.count += records
            all_.messages_in.count += records
        elif error_code == _TOO_LARGE:
            stats.bytes_rejected.count += size
            all_.bytes_rejected.count += size
        elif error_code not in _EXPECTED:
            stats.failed_produce.count += 1
            all_.failed_produce.count += 1

    def fetched(self, topic: str, error_code: int, size: int, follower: bool) -> None:
        """One partition of a fetch request, as answered."""
        stats, all_ = self.topic(topic), self.all
        stats.total_fetch.count += 1
        all_.total_fetch.count += 1
        if error_code != 0:
            if error_code not in _EXPECTED:
                stats.failed_fetch.count += 1
                all_.failed_fetch.count += 1
        elif follower:
            all_.replication_bytes_out.count += size  # type: ignore[union-attr]
        else:
            stats.bytes_out.count += size
            all_.bytes_out.count += size
