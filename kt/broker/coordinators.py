"""A broker's coordinators, built from its config: the group coordinator and the
transaction coordinator, with the WriteTxnMarkers sender its marker channel uses (kept
out of server.py, which only starts them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kt.broker.group import assignors
from kt.broker.group.consumer_group_coordinator import (
    ConsumerGroupCoordinator,
    ConsumerGroupSettings,
)
from kt.broker.group.group_config import (
    SHARE_AUTO_OFFSET_RESET,
    SHARE_ISOLATION_LEVEL,
    GroupConfigs,
)
from kt.broker.group.group_coordinator import GroupCoordinator
from kt.broker.group.group_coordinator_service import GroupCoordinatorService
from kt.broker.group.group_metadata_manager import GROUP_METADATA_TOPIC, GroupMetadataManager
from kt.broker.group.share_group_coordinator import ShareGroupCoordinator, ShareGroupSettings
from kt.broker.group.streams_group_coordinator import (
    StreamsGroupCoordinator,
    StreamsGroupSettings,
)
from kt.broker.inter_broker_connections import InterBrokerConnections
from kt.broker.partition_metadata_client import PartitionMetadataClient
from kt.broker.share.persister import Persister
from kt.broker.share.share_coordinator_service import (
    SHARE_GROUP_STATE_TOPIC,
    ShareCoordinatorService,
)
from kt.broker.share.share_group_offsets import ShareGroupOffsets
from kt.broker.share.share_partition import SharePartitionConfig
from kt.broker.share.share_partition_manager import ShareFetchSettings, SharePartitionManager
from kt.broker.share.share_session import ShareSessionCache
from kt.broker.share.share_state import SharePartitionKey
from kt.broker.transaction import marker_writer
from kt.broker.transaction.transaction_coordinator import TransactionCoordinator
from kt.broker.transaction.transaction_log import TRANSACTION_STATE_TOPIC
from kt.broker.transaction.transaction_marker_channel import TransactionMarkerChannelManager
from kt.broker.transaction.transaction_state_manager import TransactionStateManager
from kt.protocol import ApiKey

if TYPE_CHECKING:
    from collections.abc import Callable

    from kt.broker.metadata_cache import MetadataCache
    from kt.broker.producer_id_manager import ProducerIdManager
    from kt.broker.replication.replica_manager import ReplicaManager
    from kt.config import KafkaConfig


def create_group_coordinator(
    cfg: KafkaConfig, cache: MetadataCache, replica_manager: ReplicaManager
) -> GroupCoordinator:
    """The classic group coordinator with the broker's group.* and offsets.* settings."""

    def partition_count() -> int:
        known = cache.topic_partitions(GROUP_METADATA_TOPIC)
        return len(known) or cfg["offsets.topic.num.partitions"]

    manager = GroupMetadataManager(
        replica_manager,
        partition_count,
        commit_timeout_ms=int(cfg.originals.get("offsets.commit.timeout.ms", 5000)),
        load_buffer_size=cfg["offsets.load.buffer.size"],
    )
    coordinator = GroupCoordinator(
        manager,
        min_session_timeout_ms=cfg["group.min.session.timeout.ms"],
        max_session_timeout_ms=cfg["group.max.session.timeout.ms"],
        initial_rebalance_delay_ms=cfg["group.initial.rebalance.delay.ms"],
        max_group_size=cfg["group.max.size"],
    )
    return coordinator


def consumer_group_settings(cfg: KafkaConfig) -> ConsumerGroupSettings:
    """The group.consumer.* settings; assignors by Kafka's class names or short names."""
    names = [assignors.CLASS_NAMES.get(n, n) for n in cfg.list_of("group.consumer.assignors")]
    return ConsumerGroupSettings(
        max_size=cfg["group.consumer.max.size"],
        assignors=tuple(dict.fromkeys(names)),
        migration_policy=cfg["group.consumer.migration.policy"].lower(),
        classic_max_size=cfg["group.max.size"],
    )


def create_consumer_group_coordinator(
    cfg: KafkaConfig, cache: MetadataCache, group_coordinator: GroupCoordinator
) -> ConsumerGroupCoordinator:
    """The coordinator of Kafka 4's consumer groups, beside the classic one: the same
    groups cache and `__consumer_offsets` partitions, the broker's group.consumer.*
    settings."""
    coordinator = ConsumerGroupCoordinator(
        group_coordinator.manager,
        cache,
        consumer_group_settings(cfg),
        GroupConfigs(cfg),
        group_coordinator,
    )
    return coordinator


def streams_group_settings(cfg: KafkaConfig) -> StreamsGroupSettings:
    """The streams groups' settings (group.streams.*)."""
    return StreamsGroupSettings(
        max_size=cfg["group.streams.max.size"],
        session_timeout_ms=cfg["group.streams.session.timeout.ms"],
        heartbeat_interval_ms=cfg["group.streams.heartbeat.interval.ms"],
        num_standby_replicas=cfg["group.streams.num.standby.replicas"],
        initial_rebalance_delay_ms=cfg["group.streams.initial.rebalance.delay.ms"],
        assignment_interval_ms=cfg["group.streams.assignment.interval.ms"],
        task_offset_interval_ms=cfg["group.streams.task.offset.interval.ms"],
        acceptable_recovery_lag=cfg["group.streams.acceptable.recovery.lag"],
    )


def create_streams_group_coordinator(
    cfg: KafkaConfig, cache: MetadataCache, manager: GroupMetadataManager,
    group_configs: GroupConfigs,
) -> StreamsGroupCoordinator:  # fmt: skip
    """The coordinator of streams groups (KIP-1071), over the same groups cache."""
    return StreamsGroupCoordinator(manager, cache, streams_group_settings(cfg),
                                   group_configs=group_configs)  # fmt: skip


def create_group_coordinator_service(
    replica_manager: ReplicaManager, classic: GroupCoordinator,
    consumer: ConsumerGroupCoordinator, share: ShareGroupCoordinator,
    streams: StreamsGroupCoordinator,
) -> GroupCoordinatorService:  # fmt: skip
    """The group coordinators over the groups cache: it loads and drops the groups as the
    broker gains and loses __consumer_offsets leadership."""
    service = GroupCoordinatorService(classic.manager, classic, consumer, share, streams)
    replica_manager.leadership_listeners.append(service.on_leadership_change)
    return service


class TxnMarkerSender:
    """WriteTxnMarkers to a partition leader: this broker's own partitions directly (the
    replica manager, the group metadata manager), another broker's over a connection to
    its inter-broker listener (kept open)."""

    def __init__(
        self, broker_id: int, request_timeout_ms: int, replica_manager: ReplicaManager,
        group_manager: GroupMetadataManager, connections: InterBrokerConnections,
    ) -> None:  # fmt: skip
        self.broker_id = broker_id
        self.request_timeout_ms = request_timeout_ms
        self.replica_manager = replica_manager
        self.group_manager = group_manager
        self.connections = connections

    async def send(self, broker_id: int, request: Any) -> Any:
        if broker_id == self.broker_id:
            return await marker_writer.write_txn_markers(
                self.replica_manager, self.group_manager, request, self.request_timeout_ms
            )
        timeout_s = self.request_timeout_ms / 1000 + 5
        return await self.connections.send(broker_id, ApiKey.WRITE_TXN_MARKERS, request, timeout_s)

    def close(self) -> None:
        self.connections.close()


def create_transaction_coordinator(
    cfg: KafkaConfig, broker_id: int, cache: MetadataCache, replica_manager: ReplicaManager,
    group_manager: GroupMetadataManager, producer_id_manager: ProducerIdManager,
    broker_endpoint: Callable[[int], tuple[str, int] | None], security: dict[str, Any],
) -> TransactionCoordinator:  # fmt: skip
    """The transaction coordinator with the broker's transaction.* settings; it loads and
    drops transactional ids as the broker gains and loses __transaction_state leadership.
    Its markers reach other brokers at `broker_endpoint`, with the inter-broker listener's
    `security`."""

    def partition_count() -> int:
        known = cache.topic_partitions(TRANSACTION_STATE_TOPIC)
        return len(known) or cfg["transaction.state.log.num.partitions"]

    manager = TransactionStateManager(
        replica_manager,
        partition_count,
        request_timeout_ms=cfg["request.timeout.ms"],
        transaction_max_timeout_ms=cfg["transaction.max.timeout.ms"],
        transactional_id_expiration_ms=cfg["transactional.id.expiration.ms"],
        load_buffer_size=cfg["transaction.state.log.load.buffer.size"],
    )
    connections = InterBrokerConnections(
        f"broker-{broker_id}-txn-marker-sender", broker_endpoint, security,
        unknown="NOT_LEADER_OR_FOLLOWER",
    )  # fmt: skip
    sender = TxnMarkerSender(
        broker_id, cfg["request.timeout.ms"], replica_manager, group_manager, connections
    )
    markers = TransactionMarkerChannelManager(manager, cache, sender.send, sender.close)
    coordinator = TransactionCoordinator(manager, markers, producer_id_manager.generate_producer_id)
    replica_manager.leadership_listeners.append(coordinator.on_leadership_change)
    return coordinator


def share_group_settings(cfg: KafkaConfig) -> ShareGroupSettings:
    """The share groups' membership settings (group.share.*)."""
    return ShareGroupSettings(
        max_size=cfg["group.share.max.size"],
        session_timeout_ms=cfg["group.share.session.timeout.ms"],
        heartbeat_interval_ms=cfg["group.share.heartbeat.interval.ms"],
        initialize_retry_interval_ms=max(
            cfg["group.share.initialize.retry.interval.ms"], cfg["offsets.commit.timeout.ms"]
        ),
    )


def share_fetch_settings(cfg: KafkaConfig, configs: GroupConfigs,
                         group_id: str) -> ShareFetchSettings:  # fmt: skip
    """The share settings a share partition of `group_id` reads: its group configs
    (share.*), else the broker's group.share.* keys."""
    return ShareFetchSettings(
        SharePartitionConfig(
            max_in_flight_records=configs.value(group_id, "share.partition.max.record.locks"),
            max_delivery_count=configs.value(group_id, "share.delivery.count.limit"),
            record_lock_duration_ms=configs.value(group_id, "share.record.lock.duration.ms"),
            renew_acknowledge_enabled=configs.flag(group_id, "share.renew.acknowledge.enable"),
        ),
        auto_offset_reset=configs.text(group_id, SHARE_AUTO_OFFSET_RESET),
        isolation_level=configs.text(group_id, SHARE_ISOLATION_LEVEL),
    )


@dataclass
class ShareGroupParts:
    """Share groups' parts (KIP-932): membership on the group coordinator's partitions,
    the share coordinator on `__share_group_state`, the share partitions this broker leads
    and the members' share sessions."""

    groups: ShareGroupCoordinator
    coordinator: ShareCoordinatorService
    partitions: SharePartitionManager
    sessions: ShareSessionCache
    offsets: ShareGroupOffsets  # the admin side: a share group's offsets


def create_share_group_parts(
    cfg: KafkaConfig, broker_id: int, cache: MetadataCache, replica_manager: ReplicaManager,
    manager: GroupMetadataManager, create_state_topic: Callable[[], Any],
    broker_endpoint: Callable[[int], tuple[str, int] | None], security: dict[str, Any],
    group_configs: GroupConfigs,
) -> ShareGroupParts:  # fmt: skip
    def state_partitions() -> int:
        known = cache.topic_partitions(SHARE_GROUP_STATE_TOPIC)
        return len(known) or cfg["share.coordinator.state.topic.num.partitions"]

    def topic_partitions(topic_id: Any) -> int | None:
        name = cache.topic_for_id(topic_id)
        return len(cache.topic_partitions(name)) if name is not None else None

    coordinator = ShareCoordinatorService(
        replica_manager, state_partitions, topic_partitions,
        updates_per_snapshot=cfg["share.coordinator.snapshot.update.records.per.snapshot"],
    )  # fmt: skip
    replica_manager.leadership_listeners.append(coordinator.on_leadership_change)

    def coordinator_leader(key: SharePartitionKey) -> int | None:
        known = cache.topic_partitions(SHARE_GROUP_STATE_TOPIC)
        if not known:
            return None
        state = known.get(key.coordinator_partition(len(known)))
        return state.leader if state is not None else -1

    connections = InterBrokerConnections(f"broker-{broker_id}-share-persister",
                                         broker_endpoint, security)  # fmt: skip
    persister = Persister(coordinator, coordinator_leader, broker_id, create_state_topic,
                          connections, cfg["request.timeout.ms"] / 1000)  # fmt: skip
    groups = ShareGroupCoordinator(manager, cache, share_group_settings(cfg), persister,
                                   group_configs=group_configs)  # fmt: skip
    partitions = SharePartitionManager(
        replica_manager, persister, lambda group: share_fetch_settings(cfg, group_configs, group)
    )
    sessions = ShareSessionCache(cfg["group.share.max.share.sessions"])
    latest = PartitionMetadataClient(broker_id, replica_manager, cache, InterBrokerConnections(
        f"broker-{broker_id}-partition-metadata", broker_endpoint, security),
        cfg["request.timeout.ms"] / 1000)  # fmt: skip
    offsets = ShareGroupOffsets(groups, persister, cache, latest)
    return ShareGroupParts(groups, coordinator, partitions, sessions, offsets)
