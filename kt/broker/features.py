"""The feature flags a broker reports in ApiVersions (KIP-584), for the features kt serves.

Kafka 4's clients and tools read them (Admin.describeFeatures, kafka-features.sh): each
supported feature with its range of levels, and the finalized level of each enabled one.
kt's levels follow from its configuration and do not change while it runs:
- group.version 0-1: level 1 is the consumer group protocol (KIP-848), finalized while
  group.coordinator.rebalance.protocols lists consumer;
- share.version 0-1: level 1 is share groups (KIP-932), always finalized: Kafka 4.4 gates
  share groups on this feature alone (KafkaApis.isShareGroupProtocolEnabled), finalized when
  a cluster is formatted, and its group.coordinator.rebalance.protocols no longer names
  them (level 2, their dead-letter queues of KIP-1191, kt does not serve;
  ShareVersion.supportsShareGroupDLQ);
- streams.version 0-1: level 1 is streams groups (KIP-1071), finalized while
  group.coordinator.rebalance.protocols lists streams (KafkaApis.isStreamsGroupProtocolEnabled
  wants both; Kafka 4.4 lists it by default);
- transaction.version 0-0: level 2 is KIP-890's second part, which kt does not serve, so
  its clients keep to the transactions protocol kt answers (level 0 is never finalized).
"""

from __future__ import annotations

from dataclasses import dataclass

from kt.config import KafkaConfig

# The finalized levels are fixed at start-up: one epoch for the broker's life.
FINALIZED_FEATURES_EPOCH = 0


@dataclass(frozen=True)
class Feature:
    name: str
    min_version: int
    max_version: int


SUPPORTED = (Feature("group.version", 0, 1), Feature("share.version", 0, 1),
             Feature("streams.version", 0, 1), Feature("transaction.version", 0, 0))  # fmt: skip


def finalized_levels(config: KafkaConfig) -> dict[str, int]:
    """Each enabled feature's finalized level (features at level 0 are left out)."""
    levels = {}
    protocols = config.list_of("group.coordinator.rebalance.protocols")
    if "consumer" in protocols:
        levels["group.version"] = 1
    levels["share.version"] = 1
    if "streams" in protocols:
        levels["streams.version"] = 1
    return levels
