"""KafkaApis: decode a request frame, run its handler, encode the response.

The dispatch table maps each API key to its handler; ApiVersions advertises exactly
the APIs in this table (capped by what kt.protocol speaks), so a client never sends a
request that this broker would not answer. A version outside the advertised range gets
Kafka's UNSUPPORTED_VERSION answer; a malformed frame closes the connection.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from kt.broker import features
from kt.broker.api import request_authorization
from kt.broker.api.handlers import (
    acls,
    cluster,
    configs,
    consumer_groups,
    controller,
    elections,
    fetch,
    groups,
    log_dirs,
    produce,
    quotas,
    reassignments,
    scram,
    share_groups,
    streams_groups,
    topics,
    transactions,
)
from kt.broker.api.handlers.produce import CloseConnection
from kt.broker.api.request_time import LoopTime
from kt.broker.network.socket_server import RequestContext
from kt.errors import ProtocolError
from kt.protocol import (
    SUPPORTED_VERSIONS,
    ApiKey,
    UnsupportedVersion,
    decode_request,
    encode_response_parts,
    unsupported_version_response,
)
from kt.protocol import messages as m

if TYPE_CHECKING:
    from kt.broker.broker_services import BrokerServices

log = logging.getLogger(__name__)

HANDLERS = {
    ApiKey.METADATA: cluster.metadata,
    ApiKey.DESCRIBE_CLUSTER: cluster.describe_cluster,
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: cluster.describe_topic_partitions,
    ApiKey.PRODUCE: produce.produce,
    ApiKey.INIT_PRODUCER_ID: transactions.init_producer_id,
    ApiKey.ADD_PARTITIONS_TO_TXN: transactions.add_partitions_to_txn,
    ApiKey.ADD_OFFSETS_TO_TXN: transactions.add_offsets_to_txn,
    ApiKey.END_TXN: transactions.end_txn,
    ApiKey.WRITE_TXN_MARKERS: transactions.write_txn_markers,
    ApiKey.TXN_OFFSET_COMMIT: transactions.txn_offset_commit,
    ApiKey.DESCRIBE_TRANSACTIONS: transactions.describe_transactions,
    ApiKey.LIST_TRANSACTIONS: transactions.list_transactions,
    ApiKey.DESCRIBE_PRODUCERS: transactions.describe_producers,
    ApiKey.FETCH: fetch.fetch,
    ApiKey.LIST_OFFSETS: fetch.list_offsets,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: fetch.offset_for_leader_epoch,
    ApiKey.CREATE_TOPICS: topics.create_topics,
    ApiKey.DELETE_TOPICS: topics.delete_topics,
    ApiKey.CREATE_PARTITIONS: topics.create_partitions,
    ApiKey.DELETE_RECORDS: topics.delete_records,
    ApiKey.DESCRIBE_CONFIGS: configs.describe_configs,
    ApiKey.ALTER_CONFIGS: configs.alter_configs,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: configs.incremental_alter_configs,
    ApiKey.LIST_CONFIG_RESOURCES: configs.list_config_resources,
    ApiKey.DESCRIBE_LOG_DIRS: log_dirs.describe_log_dirs,
    ApiKey.ALTER_REPLICA_LOG_DIRS: log_dirs.alter_replica_log_dirs,
    ApiKey.ELECT_LEADERS: elections.elect_leaders,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: reassignments.alter_partition_reassignments,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: reassignments.list_partition_reassignments,
    ApiKey.DESCRIBE_ACLS: acls.describe_acls,
    ApiKey.CREATE_ACLS: acls.create_acls,
    ApiKey.DELETE_ACLS: acls.delete_acls,
    ApiKey.DESCRIBE_CLIENT_QUOTAS: quotas.describe_client_quotas,
    ApiKey.ALTER_CLIENT_QUOTAS: quotas.alter_client_quotas,
    ApiKey.SASL_HANDSHAKE: scram.sasl_handshake,
    ApiKey.SASL_AUTHENTICATE: scram.sasl_authenticate,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: scram.describe_user_scram_credentials,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: scram.alter_user_scram_credentials,
    ApiKey.LEADER_AND_ISR: controller.leader_and_isr,
    ApiKey.UPDATE_METADATA: controller.update_metadata,
    ApiKey.STOP_REPLICA: controller.stop_replica,
    ApiKey.CONTROLLED_SHUTDOWN: controller.controlled_shutdown,
    ApiKey.ALTER_PARTITION: controller.alter_partition,
    ApiKey.ALLOCATE_PRODUCER_IDS: controller.allocate_producer_ids,
    ApiKey.FIND_COORDINATOR: groups.find_coordinator,
    ApiKey.JOIN_GROUP: groups.join_group,
    ApiKey.SYNC_GROUP: groups.sync_group,
    ApiKey.HEARTBEAT: groups.heartbeat,
    ApiKey.LEAVE_GROUP: groups.leave_group,
    ApiKey.OFFSET_COMMIT: groups.offset_commit,
    ApiKey.OFFSET_FETCH: groups.offset_fetch,
    ApiKey.OFFSET_DELETE: groups.offset_delete,
    ApiKey.DESCRIBE_GROUPS: groups.describe_groups,
    ApiKey.LIST_GROUPS: groups.list_groups,
    ApiKey.DELETE_GROUPS: groups.delete_groups,
    ApiKey.CONSUMER_GROUP_HEARTBEAT: consumer_groups.consumer_group_heartbeat,
    ApiKey.CONSUMER_GROUP_DESCRIBE: consumer_groups.consumer_group_describe,
    ApiKey.SHARE_GROUP_HEARTBEAT: share_groups.share_group_heartbeat,
    ApiKey.SHARE_GROUP_DESCRIBE: share_groups.share_group_describe,
    ApiKey.SHARE_FETCH: share_groups.share_fetch,
    ApiKey.SHARE_ACKNOWLEDGE: share_groups.share_acknowledge,
    ApiKey.INITIALIZE_SHARE_GROUP_STATE: share_groups.initialize_share_group_state,
    ApiKey.READ_SHARE_GROUP_STATE: share_groups.read_share_group_state,
    ApiKey.WRITE_SHARE_GROUP_STATE: share_groups.write_share_group_state,
    ApiKey.DELETE_SHARE_GROUP_STATE: share_groups.delete_share_group_state,
    ApiKey.READ_SHARE_GROUP_STATE_SUMMARY: share_groups.read_share_group_state_summary,
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: share_groups.describe_share_group_offsets,
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: share_groups.alter_share_group_offsets,
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: share_groups.delete_share_group_offsets,
    ApiKey.STREAMS_GROUP_HEARTBEAT: streams_groups.streams_group_heartbeat,
    ApiKey.STREAMS_GROUP_DESCRIBE: streams_groups.streams_group_describe,
}
# Served while group.coordinator.rebalance.protocols lists their protocol (share groups are
# always served, as on Kafka 4.4: kt.broker.features).
_PROTOCOL_APIS = {
    "consumer": (ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE),
    "streams": (ApiKey.STREAMS_GROUP_HEARTBEAT, ApiKey.STREAMS_GROUP_DESCRIBE),
}


class KafkaApis:
    """The request handler the network layer calls for every frame."""

    def __init__(self, broker: BrokerServices) -> None:
        self.broker = broker
        self.handlers = {ApiKey.API_VERSIONS: self.api_versions, **HANDLERS}
        self.finalized = features.finalized_levels(broker.config)
        protocols = broker.config.list_of("group.coordinator.rebalance.protocols")
        for protocol, keys in _PROTOCOL_APIS.items():
            if protocol not in protocols:
                for key in keys:
                    del self.handlers[key]

    def connection_closed(self, ctx: RequestContext) -> None:
        """A client's connection closed: what the broker kept for it ends."""
        share_groups.connection_closed(self.broker, ctx)

    def advertised_versions(self) -> dict[ApiKey, tuple[int, int]]:
        return {key: SUPPORTED_VERSIONS[key] for key in self.handlers if key in SUPPORTED_VERSIONS}

    async def api_versions(
        self, broker: BrokerServices, header: Any, request: Any, ctx: RequestContext
    ) -> Any:
        """Advertise exactly the APIs this broker handles (kt.protocol.api_keys)."""
        R = m.ApiVersionsResponse
        keys = [
            R.ApiVersion(api_key=int(k), min_version=lo, max_version=hi)
            for k, (lo, hi) in sorted(self.advertised_versions().items())
        ]
        return R(
            error_code=0, api_keys=keys, throttle_time_ms=0,
            supported_features=[
                R.SupportedFeatureKey(name=f.name, min_version=f.min_version,
                                      max_version=f.max_version)
                for f in features.SUPPORTED
            ],
            finalized_features_epoch=features.FINALIZED_FEATURES_EPOCH,
            finalized_features=[
                R.FinalizedFeatureKey(name=name, min_version_level=level, max_version_level=level)
                for name, level in sorted(self.finalized.items())
            ],
        )  # fmt: skip

    async def handle(self, frame: memoryview, ctx: RequestContext) -> list[Any] | None:
        try:
            header, request = decode_request(frame)
        except UnsupportedVersion as e:
            log.info("unsupported version from %s: %s", ctx.client_host, e)
            return [unsupported_version_response(e.header)]
        if header.api_key == ApiKey.FETCH and header.api_version >= 15:
            # From v15 a follower names itself in the ReplicaState tagged field (KIP-903).
            request.replica_id = request.replica_state.replica_id if request.replica_state else -1
        if not self.broker.serving.is_set() and not _from_a_broker(header.api_key, request):
            # Kafka enables request processing at the end of its start-up: a client's
            # request waits until this broker's metadata names itself and a controller
            # (an answer before that names no broker, and librdkafka may never ask again).
            await self.broker.serving.wait()
        handler = self.handlers.get(header.api_key)
        if handler is None:
            raise ProtocolError(f"no handler for API key {header.api_key}")
        ctx.api_key, ctx.api_version = header.api_key, header.api_version
        ctx.correlation_id, ctx.client_id = header.correlation_id, header.client_id or ""
        ctx.from_follower = header.api_key == ApiKey.FETCH and request.replica_id >= 0
        authorizer = self.broker.authorizer
        if authorizer is not None:
            code = request_authorization.refusal(authorizer, ctx, header.api_key, request)
            if code is not None:
                response = request_authorization.error_response(header.api_key, request, code)
                return encode_response_parts(header, response)
        quota = self.broker.request_quota
        client = header.client_id or ""
        try:
            if not _has_request_quota(quota, header.api_key, request, ctx.user, client):
                response = await handler(self.broker, header, request, ctx)
            else:  # timed step by step: a cost only the clients with a quota pay
                timed = LoopTime(handler(self.broker, header, request, ctx))
                response = await timed
                throttle = quota.record(ctx.user, client, timed.seconds * 100)
                if throttle > 0:
                    _throttle(response, ctx, throttle)
        except CloseConnection as e:
            raise ProtocolError(str(e)) from None
        if response is None:
            return None
        return encode_response_parts(header, response)


# Not counted against request quotas (Kafka answers them with sendResponseExemptThrottle):
# the controller's requests and the brokers' own, and SASL's, which come before a user.
_EXEMPT = frozenset({
    ApiKey.LEADER_AND_ISR, ApiKey.UPDATE_METADATA, ApiKey.STOP_REPLICA,
    ApiKey.CONTROLLED_SHUTDOWN, ApiKey.ALTER_PARTITION, ApiKey.WRITE_TXN_MARKERS,
    ApiKey.ALLOCATE_PRODUCER_IDS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE,
})  # fmt: skip


def _from_a_broker(api_key: ApiKey, request: Any) -> bool:
    """A controller's or another broker's request, a follower's (Fetch, ListOffsets,
    OffsetForLeaderEpoch name a replica id), or ApiVersions, which every connection sends
    first (the controller's too) and which does not depend on the metadata."""
    return (
        api_key in _EXEMPT
        or api_key == ApiKey.API_VERSIONS
        or getattr(request, "replica_id", -1) >= 0
    )


def _has_request_quota(quota: Any, api_key: ApiKey, request: Any, user: str, client: str) -> bool:
    """Whether a request_percentage quota applies to this request: its client has one,
    and it is not a controller's or broker's request, or a follower's Fetch."""
    if not quota.quotas or api_key in _EXEMPT:
        return False
    if api_key == ApiKey.FETCH and getattr(request, "replica_id", -1) >= 0:
        return False
    return quota.quota_entity(user, client) is not None


def _throttle(response: Any, ctx: RequestContext, throttle_ms: int) -> None:
    """The request quota's throttle, where it is longer than a byte rate's: in the answer
    and on the connection (muted that long), as Kafka throttles by the larger of both."""
    ctx.throttle_ms = max(ctx.throttle_ms, throttle_ms)
    if response is not None and hasattr(response, "throttle_time_ms"):
        response.throttle_time_ms = max(response.throttle_time_ms or 0, throttle_ms)
