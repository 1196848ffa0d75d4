"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for topics, brokers and groups
(the store's side in kt.broker.admin.configs), and ListConfigResources."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kt.broker.admin.configs import DEFAULT_CONFIG, apply_ops
from kt.broker.api.handlers import authz
from kt.errors import CLUSTER_AUTHORIZATION_FAILED, KafkaError, store_error
from kt.metadata.store import MetadataStoreError
from kt.protocol import messages as m
from kt.security import acls as a

if TYPE_CHECKING:
    from kt.broker.broker_services import BrokerServices


async def describe_configs(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    Result = m.DescribeConfigsResponse.DescribeConfigsResult
    results = []
    for res in request.resources:
        keys = list(res.configuration_keys) if res.configuration_keys is not None else None
        synonyms = header.api_version >= 1 and request.include_synonyms
        try:
            entries = await broker.store.call(
                broker.config_admin.describe, res.resource_type, res.resource_name, keys, synonyms
            )
        except KafkaError as e:
            results.append(
                Result(
                    error_code=e.code,
                    error_message=str(e),
                    resource_type=res.resource_type,
                    resource_name=res.resource_name,
                    configs=[],
                )  # fmt: skip
            )
            continue
        configs = [
            m.DescribeConfigsResponse.DescribeConfigsResourceResult(
                name=e.name,
                value=e.value,
                read_only=e.read_only,
                is_default=e.config_source == DEFAULT_CONFIG,
                config_source=e.config_source,
                is_sensitive=e.is_sensitive,
                synonyms=[
                    m.DescribeConfigsResponse.DescribeConfigsSynonym(name=n, value=v, source=s)
                    for n, v, s in e.synonyms
                ],
            )
            for e in entries
        ]
        results.append(
            Result(
                error_code=0,
                error_message=None,
                resource_type=res.resource_type,
                resource_name=res.resource_name,
                configs=configs,
            )  # fmt: skip
        )
    return m.DescribeConfigsResponse(results=results, throttle_time_ms=0)


async def alter_configs(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    """The legacy API: the request's configs replace the entity's overrides whole."""
    responses = []
    for res in request.resources:
        new = {c.name: c.value for c in res.configs if c.value is not None}
        responses.append(await broker.store.call(
            _alter_one, broker, res, lambda _cur, n=new: n, request.validate_only
        ))  # fmt: skip
    return m.AlterConfigsResponse(responses=responses, throttle_time_ms=0)


async def incremental_alter_configs(
    broker: BrokerServices, header: Any, request: Any, ctx: Any
) -> Any:
    responses = []
    for res in request.resources:
        ops = [(c.config_operation, c.name, c.value) for c in res.configs]
        responses.append(await broker.store.call(
            _alter_one, broker, res, lambda cur, o=ops: apply_ops(cur, o), request.validate_only
        ))  # fmt: skip
    return m.IncrementalAlterConfigsResponse(responses=responses, throttle_time_ms=0)


def _alter_one(broker: BrokerServices, res: Any, change: Any, validate_only: bool) -> Any:
    """Read, change, validate and write one resource's config (on the store threads)."""
    try:
        broker.config_admin.alter(res.resource_type, res.resource_name, change, validate_only)
        code, message = 0, None
    except KafkaError as e:
        code, message = e.code, str(e)
    except MetadataStoreError as e:
        code, message = store_error(e).code, str(store_error(e))
    # Both responses share this shape (AlterConfigsResourceResponse).
    return m.AlterConfigsResponse.AlterConfigsResourceResponse(
        error_code=code,
        error_message=message,
        resource_type=res.resource_type,
        resource_name=res.resource_name,
    )


# ConfigResource.Type ids ListConfigResources lists (KIP-1142); v0 lists client metrics
# resources only (it was ListClientMetricsResources), of which kt has none.
TOPIC_TYPE, BROKER_TYPE, CLIENT_METRICS_TYPE, GROUP_TYPE = 2, 4, 16, 32


async def list_config_resources(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    """The config resources of each type asked for (all when none is): every topic, every
    live broker, and the groups that have group configs."""
    R = m.ListConfigResourcesResponse
    if not authz.cluster_allowed(broker, ctx, a.DESCRIBE_CONFIGS):
        return R(error_code=CLUSTER_AUTHORIZATION_FAILED, config_resources=[])
    if header.api_version == 0:
        return R(error_code=0, config_resources=[])
    wanted = set(request.resource_types) or {TOPIC_TYPE, BROKER_TYPE, CLIENT_METRICS_TYPE,
                                             GROUP_TYPE}  # fmt: skip
    unknown = wanted - {TOPIC_TYPE, BROKER_TYPE, CLIENT_METRICS_TYPE, GROUP_TYPE}
    if unknown:
        return R(error_code=KafkaError("UNSUPPORTED_VERSION").code, config_resources=[])
    found: list[tuple[str, int]] = []
    if TOPIC_TYPE in wanted:
        found += [(t, TOPIC_TYPE) for t in broker.metadata_cache.all_topics()]
    if BROKER_TYPE in wanted:
        found += [(str(b), BROKER_TYPE) for b in sorted(broker.metadata_cache.brokers)]
    if GROUP_TYPE in wanted:
        found += [(g, GROUP_TYPE) for g in sorted(broker.consumer_groups.group_configs.overrides)]
    return R(error_code=0, config_resources=[
        R.ConfigResource(resource_name=name, resource_type=kind) for name, kind in found
    ])  # fmt: skip
