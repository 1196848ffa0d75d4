"""A broker's coordinators, built from its config: the group coordinator and the
transaction coordinator, with the WriteTxnMarkers sender its marker channel uses (kept
out of server.py, which only starts them)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kt.broker.group.group_coordinator import GroupCoordinator
from kt.broker.group.group_metadata_manager import GROUP_METADATA_TOPIC, GroupMetadataManager
from kt.broker.inter_broker_connections import InterBrokerConnections
from kt.broker.transaction import marker_writer
from kt.broker.transaction.transaction_coordinator import TransactionCoordinator
from kt.broker.transaction.transaction_log import TRANSACTION_STATE_TOPIC
from kt.broker.transaction.transaction_marker_channel import TransactionMarkerChannelManager
from kt.broker.transaction.transaction_state_manager import TransactionStateManager
from kt.protocol import ApiKey

if TYPE_CHECKING:
    from kt.broker.server import KafkaServer


def create_group_coordinator(server: KafkaServer) -> GroupCoordinator:
    """The group coordinator with the broker's group.* and offsets.* settings; it loads and
    unloads groups as the broker gains and loses __consumer_offsets leadership."""
    cfg, cache = server.config, server.metadata_cache

    def partition_count() -> int:
        known = cache.topic_partitions(GROUP_METADATA_TOPIC)
        return len(known) or cfg["offsets.topic.num.partitions"]

    manager = GroupMetadataManager(
        server.replica_manager,
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
    server.replica_manager.leadership_listeners.append(coordinator.on_leadership_change)
    return coordinator


class TxnMarkerSender:
    """WriteTxnMarkers to a partition leader: this broker's own partitions directly,
    another broker's over a connection to its inter-broker listener (kept open)."""

    def __init__(self, server: KafkaServer) -> None:
        self.server = server
        self.connections = InterBrokerConnections(
            f"broker-{server.broker_id}-txn-marker-sender", server._broker_endpoint,
            server.inter_broker_security, unknown="NOT_LEADER_OR_FOLLOWER",
        )  # fmt: skip

    async def send(self, broker_id: int, request: Any) -> Any:
        server = self.server
        if broker_id == server.broker_id:
            return await marker_writer.write_txn_markers(
                server.replica_manager, server.group_coordinator.manager, request,
                server.config["request.timeout.ms"],
            )  # fmt: skip
        timeout_s = server.config["request.timeout.ms"] / 1000 + 5
        return await self.connections.send(broker_id, ApiKey.WRITE_TXN_MARKERS, request, timeout_s)

    def close(self) -> None:
        self.connections.close()


def create_transaction_coordinator(server: KafkaServer) -> TransactionCoordinator:
    """The transaction coordinator with the broker's transaction.* settings; it loads and
    drops transactional ids as the broker gains and loses __transaction_state leadership."""
    cfg, cache = server.config, server.metadata_cache

    def partition_count() -> int:
        known = cache.topic_partitions(TRANSACTION_STATE_TOPIC)
        return len(known) or cfg["transaction.state.log.num.partitions"]

    manager = TransactionStateManager(
        server.replica_manager,
        partition_count,
        request_timeout_ms=cfg["request.timeout.ms"],
        transaction_max_timeout_ms=cfg["transaction.max.timeout.ms"],
        transactional_id_expiration_ms=cfg["transactional.id.expiration.ms"],
        load_buffer_size=cfg["transaction.state.log.load.buffer.size"],
    )
    sender = TxnMarkerSender(server)
    markers = TransactionMarkerChannelManager(manager, cache, sender.send, sender.close)
    coordinator = TransactionCoordinator(
        manager, markers, server.producer_id_manager.generate_producer_id
    )
    server.replica_manager.leadership_listeners.append(coordinator.on_leadership_change)
    return coordinator
