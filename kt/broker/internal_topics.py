"""The internal topics a coordinator needs, created on their first use (Kafka's
AutoTopicCreationManager for them): `__consumer_offsets`, `__transaction_state` and
`__share_group_state`, with the configs their coordinators enforce."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kt.broker.admin.admin_manager import NewTopic
from kt.broker.group.group_metadata_manager import GROUP_METADATA_TOPIC
from kt.broker.share.share_coordinator_service import SHARE_GROUP_STATE_TOPIC

if TYPE_CHECKING:
    from kt.broker.broker_services import BrokerServices

log = logging.getLogger(__name__)


def create_internal_topic(broker: BrokerServices, topic: str) -> None:
    """AutoTopicCreationManager for __consumer_offsets and __transaction_state (compacted)
    and __share_group_state (KIP-932's share coordinator; never cleaned: retention -1),
    with their configured partitions, replication factor and min ISR (but offsets').
    Until that many brokers are alive the topic is not created, and FindCoordinator
    answers COORDINATOR_NOT_AVAILABLE, as Kafka has since 0.11. Store reads and writes:
    run on the broker's store threads."""
    cfg = broker.config
    live = len(broker.admin_manager.live_brokers())
    if topic == GROUP_METADATA_TOPIC:
        partitions = cfg["offsets.topic.num.partitions"]
        rf = cfg["offsets.topic.replication.factor"]
        configs = {"cleanup.policy": "compact", "compression.type": "producer",
                   "segment.bytes": str(cfg["offsets.topic.segment.bytes"])}  # fmt: skip
    elif topic == SHARE_GROUP_STATE_TOPIC:  # ShareCoordinatorService's topic configs
        partitions = cfg["share.coordinator.state.topic.num.partitions"]
        rf = cfg["share.coordinator.state.topic.replication.factor"]
        configs = {"cleanup.policy": "delete", "compression.type": "producer",
                   "retention.ms": "-1",
                   "min.insync.replicas": str(cfg["share.coordinator.state.topic.min.isr"]),
                   "segment.bytes": str(cfg["share.coordinator.state.topic.segment.bytes"])}  # fmt: skip  # noqa: E501
    else:  # TransactionLog's enforced topic configs
        partitions = cfg["transaction.state.log.num.partitions"]
        rf = cfg["transaction.state.log.replication.factor"]
        configs = {"cleanup.policy": "compact", "compression.type": "uncompressed",
                   "min.insync.replicas": str(cfg["transaction.state.log.min.isr"]),
                   "unclean.leader.election.enable": "false",
                   "segment.bytes": str(cfg["transaction.state.log.segment.bytes"])}  # fmt: skip
    if live < rf:
        log.info(
            "Not creating %s: %d live brokers, fewer than its replication factor %d",
            topic, live, rf,
        )  # fmt: skip
        return
    broker.admin_manager.create_topic(
        NewTopic(topic, partitions, rf, configs=configs), validate_only=False
    )
