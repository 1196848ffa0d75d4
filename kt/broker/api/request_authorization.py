"""Authorization of whole requests, before their handler runs (KafkaApis' checks on the
cluster and on transactional ids); the per-topic and per-group checks are in the
handlers (kt/broker/api/handlers/authz.py). A refused request gets its API's response with
the error: in its top-level error code where it has one, in every entry otherwise.

APIs whose Kafka checks are per resource but that kt checks as a whole here (stricter
than Kafka, never looser): DescribeConfigs, AlterConfigs, IncrementalAlterConfigs,
CreatePartitions, DeleteRecords, DescribeProducers, DescribeTransactions and
ListTransactions ask for the operation on the cluster unless the principal may do it on
every resource named.
"""

from __future__ import annotations

from typing import Any

from kt.errors import (
    CLUSTER_AUTHORIZATION_FAILED,
    GROUP_AUTHORIZATION_FAILED,
    TOPIC_AUTHORIZATION_FAILED,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
)
from kt.protocol import ApiKey
from kt.protocol import messages as m
from kt.security import acls as a

# API -> the operation it needs on the cluster (KafkaApis).
CLUSTER_OPERATIONS = {
    ApiKey.LEADER_AND_ISR: a.CLUSTER_ACTION, ApiKey.UPDATE_METADATA: a.CLUSTER_ACTION,
    ApiKey.STOP_REPLICA: a.CLUSTER_ACTION, ApiKey.CONTROLLED_SHUTDOWN: a.CLUSTER_ACTION,
    ApiKey.ALTER_PARTITION: a.CLUSTER_ACTION, ApiKey.WRITE_TXN_MARKERS: a.CLUSTER_ACTION,
    ApiKey.ALLOCATE_PRODUCER_IDS: a.CLUSTER_ACTION, ApiKey.ELECT_LEADERS: a.ALTER,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: a.ALTER,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: a.DESCRIBE, ApiKey.DESCRIBE_LOG_DIRS: a.DESCRIBE,
    ApiKey.ALTER_REPLICA_LOG_DIRS: a.ALTER, ApiKey.DESCRIBE_CLIENT_QUOTAS: a.DESCRIBE_CONFIGS,
    ApiKey.ALTER_CLIENT_QUOTAS: a.ALTER_CONFIGS, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: a.DESCRIBE,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: a.ALTER,
}  # fmt: skip
# API -> (operation, resource type, the resources a request names): whole request.
TOPIC_NAMES = {
    ApiKey.CREATE_PARTITIONS: (a.ALTER, lambda r: [t.name for t in r.topics]),
    ApiKey.DELETE_RECORDS: (a.DELETE, lambda r: [t.name for t in r.topics]),
    ApiKey.DESCRIBE_PRODUCERS: (a.READ, lambda r: [t.name for t in r.topics]),
}  # fmt: skip
CONFIG_APIS = {ApiKey.DESCRIBE_CONFIGS: a.DESCRIBE_CONFIGS, ApiKey.ALTER_CONFIGS: a.ALTER_CONFIGS,
               ApiKey.INCREMENTAL_ALTER_CONFIGS: a.ALTER_CONFIGS}  # fmt: skip
TXN_ID_APIS = (ApiKey.INIT_PRODUCER_ID, ApiKey.ADD_OFFSETS_TO_TXN, ApiKey.END_TXN,
               ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.TXN_OFFSET_COMMIT)  # fmt: skip
TOPIC_RESOURCE, BROKER_RESOURCE, GROUP_RESOURCE = 2, 4, 32


def refusal(authorizer: Any, ctx: Any, api_key: ApiKey, request: Any) -> int | None:
    """The error code that refuses the whole request, or None to let it through."""
    if api_key in CLUSTER_OPERATIONS:
        ok = authorizer.authorize_cluster(ctx, CLUSTER_OPERATIONS[api_key])
        return None if ok else CLUSTER_AUTHORIZATION_FAILED
    if api_key == ApiKey.OFFSET_FOR_LEADER_EPOCH:  # followers: CLUSTER_ACTION, clients: DESCRIBE
        if getattr(request, "replica_id", -1) >= 0:
            ok = authorizer.authorize_cluster(ctx, a.CLUSTER_ACTION)
            return None if ok else CLUSTER_AUTHORIZATION_FAILED
        ok = all(authorizer.authorize(ctx, a.DESCRIBE, a.TOPIC, t.topic) for t in request.topics)
        return None if ok else TOPIC_AUTHORIZATION_FAILED
    if api_key in TOPIC_NAMES:
        operation, names = TOPIC_NAMES[api_key]
        ok = all(authorizer.authorize(ctx, operation, a.TOPIC, t) for t in names(request))
        return None if ok else TOPIC_AUTHORIZATION_FAILED
    if api_key in CONFIG_APIS:
        operation = CONFIG_APIS[api_key]
        for resource in request.resources:
            if resource.resource_type == TOPIC_RESOURCE:
                ok = authorizer.authorize(ctx, operation, a.TOPIC, resource.resource_name)
                refusal = TOPIC_AUTHORIZATION_FAILED
            elif resource.resource_type == GROUP_RESOURCE:
                ok = authorizer.authorize(ctx, operation, a.GROUP, resource.resource_name)
                refusal = GROUP_AUTHORIZATION_FAILED
            else:
                ok = authorizer.authorize_cluster(ctx, operation)
                refusal = CLUSTER_AUTHORIZATION_FAILED
            if not ok:
                return refusal
        return None
    if api_key in (ApiKey.DESCRIBE_TRANSACTIONS, ApiKey.LIST_TRANSACTIONS):
        ids = list(getattr(request, "transactional_ids", None) or [])
        if ids and all(authorizer.authorize(ctx, a.DESCRIBE, a.TRANSACTIONAL_ID, t) for t in ids):
            return None
        ok = authorizer.authorize_cluster(ctx, a.DESCRIBE)
        return None if ok else (TRANSACTIONAL_ID_AUTHORIZATION_FAILED if ids
                                else CLUSTER_AUTHORIZATION_FAILED)  # fmt: skip
    if api_key in TXN_ID_APIS:
        return _transactional_refusal(authorizer, ctx, api_key, request)
    return None


def _transactional_refusal(authorizer: Any, ctx: Any, api_key: ApiKey, request: Any) -> int | None:
    if api_key == ApiKey.INIT_PRODUCER_ID and request.transactional_id is None:
        ok = authorizer.authorize_cluster(ctx, a.IDEMPOTENT_WRITE) or authorizer.may_write_a_topic(
            ctx
        )
        return None if ok else CLUSTER_AUTHORIZATION_FAILED
    if api_key == ApiKey.ADD_PARTITIONS_TO_TXN:
        ids = [t.transactional_id for t in request.transactions] or [
            request.v3_and_below_transactional_id]  # fmt: skip
        topics = [t.name for t in request.v3_and_below_topics] + [
            t.name for x in request.transactions for t in x.topics]  # fmt: skip
        if not all(authorizer.authorize(ctx, a.WRITE, a.TRANSACTIONAL_ID, t) for t in ids):
            return TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        ok = all(authorizer.authorize(ctx, a.WRITE, a.TOPIC, t) for t in topics)
        return None if ok else TOPIC_AUTHORIZATION_FAILED
    txn_id = request.transactional_id
    if not authorizer.authorize(ctx, a.WRITE, a.TRANSACTIONAL_ID, txn_id):
        return TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    group_api = api_key in (ApiKey.ADD_OFFSETS_TO_TXN, ApiKey.TXN_OFFSET_COMMIT)
    if group_api and not authorizer.authorize(ctx, a.READ, a.GROUP, request.group_id):
        return 30  # GROUP_AUTHORIZATION_FAILED
    if api_key == ApiKey.TXN_OFFSET_COMMIT:
        ok = all(authorizer.authorize(ctx, a.READ, a.TOPIC, t.name) for t in request.topics)
        return None if ok else TOPIC_AUTHORIZATION_FAILED
    return None


def error_response(api_key: ApiKey, request: Any, code: int) -> Any:
    """The API's response carrying `code`: at the top when it has a top-level error code,
    else in each entry the request named (the shapes Kafka's getErrorResponse builds)."""
    name = type(request).__name__.removesuffix("Request") + "Response"
    cls = getattr(m, name)
    fields = getattr(cls, "__slots__", ())
    if api_key == ApiKey.ADD_PARTITIONS_TO_TXN and not request.transactions:
        R = cls
        return R(results_by_topic_v3_and_below=[R.AddPartitionsToTxnTopicResult(
            name=t.name, results_by_partition=[R.AddPartitionsToTxnPartitionResult(
                partition_index=p, partition_error_code=code) for p in t.partitions])
            for t in request.v3_and_below_topics])  # fmt: skip
    if "error_code" in fields:
        return cls(error_code=code)
    if api_key in CONFIG_APIS:
        describe = api_key == ApiKey.DESCRIBE_CONFIGS
        entry = cls.DescribeConfigsResult if describe else cls.AlterConfigsResourceResponse
        return cls(
            results=[
                entry(error_code=code, resource_type=r.resource_type, resource_name=r.resource_name)
                for r in request.resources
            ]
        )
    return cls()
