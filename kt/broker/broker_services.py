"""The broker's parts that the request layer works with, declared in one place.

Kafka's KafkaApis takes its collaborators in its constructor (the request channel, the
replica manager, the coordinators, the metadata cache, the quotas, ...); kt's KafkaApis
takes one BrokerServices and hands it to every handler (`handler(broker, header,
request, ctx)`). The server builds it whole, before the first listener opens, and nothing
in it changes afterwards: a handler reaches no further than these fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio

    from kt.broker.admin.admin_manager import AdminManager
    from kt.broker.admin.client_quotas import ClientQuotaAdmin
    from kt.broker.admin.configs import ConfigAdmin
    from kt.broker.admin.scram_credentials import ScramCredentialAdmin
    from kt.broker.authorizer import AclAuthorizer
    from kt.broker.controller.kafka_controller import KafkaController
    from kt.broker.group.classic_protocol_members import ClassicProtocolMembers
    from kt.broker.group.consumer_group_coordinator import ConsumerGroupCoordinator
    from kt.broker.group.group_coordinator import GroupCoordinator
    from kt.broker.group.share_group_coordinator import ShareGroupCoordinator
    from kt.broker.group.streams_group_coordinator import StreamsGroupCoordinator
    from kt.broker.metadata_cache import MetadataCache
    from kt.broker.producer_id_manager import ProducerIdManager
    from kt.broker.quota_manager import ClientQuotaManager
    from kt.broker.replication.controller_requests import ControllerRequests
    from kt.broker.replication.replica_manager import ReplicaManager
    from kt.broker.share.share_coordinator_service import ShareCoordinatorService
    from kt.broker.share.share_group_offsets import ShareGroupOffsets
    from kt.broker.share.share_partition_manager import SharePartitionManager
    from kt.broker.share.share_session import ShareSessionCache
    from kt.broker.store_executor import StoreExecutor
    from kt.broker.transaction.transaction_coordinator import TransactionCoordinator
    from kt.config import KafkaConfig
    from kt.metrics.broker_topic_stats import BrokerTopicStats
    from kt.storage.log_manager import LogManager


@dataclass(frozen=True)
class BrokerServices:
    """One broker's services, as its request handlers see them."""

    config: KafkaConfig
    broker_id: int
    metadata_cache: MetadataCache
    log_manager: LogManager
    replica_manager: ReplicaManager
    controller_requests: ControllerRequests  # what the controller's requests do here
    controller: KafkaController  # this broker's own (active or not)
    group_coordinator: GroupCoordinator  # classic groups, and the groups' offsets
    consumer_groups: ConsumerGroupCoordinator  # Kafka 4's consumer groups (KIP-848)
    classic_members: ClassicProtocolMembers  # classic members of consumer groups (migration)
    share_groups: ShareGroupCoordinator  # share groups' membership (KIP-932)
    share_partitions: SharePartitionManager  # the share partitions led here
    share_sessions: ShareSessionCache  # share group members' fetch sessions
    share_coordinator: ShareCoordinatorService  # share partitions' state held here
    share_offsets: ShareGroupOffsets  # share groups' offsets, for the admin side
    streams_groups: StreamsGroupCoordinator  # streams groups' membership (KIP-1071)
    txn_coordinator: TransactionCoordinator
    producer_id_manager: ProducerIdManager
    admin_manager: AdminManager  # topics and partitions
    config_admin: ConfigAdmin  # topic and broker configs
    client_quotas: ClientQuotaAdmin
    scram_credentials: ScramCredentialAdmin
    authorizer: AclAuthorizer | None  # None without authorizer.class.name
    produce_quota: ClientQuotaManager
    fetch_quota: ClientQuotaManager
    request_quota: ClientQuotaManager
    topic_stats: BrokerTopicStats
    store: StoreExecutor  # the store's threads: admin calls run there
    # Set once the broker's metadata names itself and a controller: clients' requests
    # wait for it (the controller's and other brokers' do not).
    serving: asyncio.Event
