"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for topics and brokers.

Topic overrides live in /config/topics/<t>, broker overrides in /config/brokers/<id>
(or <default>); each write also leaves a /config/changes notification that every broker
watches (DynamicConfigManager). A describe reports each key's effective value and where
it came from, with Kafka's ConfigSource numbers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kt.config import (
    BROKER_KEYS,
    TOPIC_CONFIGS_BY_NAME,
    TOPIC_DEFAULTS_FROM_BROKER,
    InvalidConfigError,
    KafkaConfig,
    LogConfig,
)
from kt.errors import KafkaError, store_error
from kt.metadata.store import MetadataStoreError
from kt.protocol import messages as m
from kt.storage.names import validate_topic_name

if TYPE_CHECKING:
    from kt.broker.broker_services import BrokerServices

TOPIC = 2
BROKER = 4
BROKER_LOGGER = 8

# ConfigSource (DescribeConfigsResponse.ConfigSource)
DYNAMIC_TOPIC_CONFIG = 1
DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
# Topic key -> the broker keys that supply its default, highest precedence first.
BROKER_SYNONYMS: dict[str, tuple[str, ...]] = {
    **{t: (b,) for b, t in TOPIC_DEFAULTS_FROM_BROKER.items()},
    "retention.ms": ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
    "segment.ms": ("log.roll.ms", "log.roll.hours"),
    "segment.jitter.ms": ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    "flush.ms": ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
}
SENSITIVE_WORDS = ("password", "secret", "sasl.jaas")
# Kafka's PASSWORD-type keys whose names say nothing of it: key material inline.
SENSITIVE_KEYS = ("ssl.keystore.key", "ssl.keystore.certificate.chain",
                  "ssl.truststore.certificates")  # fmt: skip


@dataclass
class ConfigEntry:
    name: str
    value: str | None
    config_source: int
    read_only: bool = False
    is_sensitive: bool = False
    synonyms: list[tuple[str, str | None, int]] = field(default_factory=list)


def describe_topic_configs(
    broker: BrokerServices,
    topic: str,
    config: LogConfig,
    keys: list[str] | None,
    include_synonyms: bool,
) -> list[ConfigEntry]:
    overrides = broker.zk.get_entity_config("topics", topic)
    # Where a topic key's broker synonyms may be set, highest precedence first.
    layers = (
        (DYNAMIC_BROKER_CONFIG, broker.zk.get_entity_config("brokers", str(broker.broker_id))),
        (DYNAMIC_DEFAULT_BROKER_CONFIG, broker.zk.get_entity_config("brokers", "<default>")),
        (STATIC_BROKER_CONFIG, broker.config.originals),
        (DEFAULT_CONFIG, {k: _text(d) for k, (_, d) in BROKER_KEYS.items() if d is not None}),
    )
    entries = []
    for name, value in sorted(config.to_props().items()):
        if keys is not None and name not in keys:
            continue
        synonyms: list[tuple[str, str | None, int]] = []
        if name in overrides:
            synonyms.append((name, overrides[name], DYNAMIC_TOPIC_CONFIG))
        synonyms += _broker_synonyms(BROKER_SYNONYMS.get(name, ()), layers)
        source = synonyms[0][2] if synonyms else DEFAULT_CONFIG
        entries.append(
            ConfigEntry(name, value, source, synonyms=synonyms if include_synonyms else [])
        )
    return entries


def _broker_synonyms(
    keys: tuple[str, ...], layers: tuple[tuple[int, Mapping[str, str]], ...]
) -> list[tuple[str, str | None, int]]:
    """Kafka's ConfigHelper.configSynonyms: every value of `keys`, layer by layer, then all
    before the first mention of the main key (`keys[0]`) dropped. So retention.ms shows no
    default of log.retention.hours unless log.retention.ms itself is set somewhere."""
    found = [(k, values[k], source) for source, values in layers for k in keys if k in values]
    while found and found[0][0] != keys[0]:
        found.pop(0)
    return found


def describe_broker_configs(
    broker: BrokerServices, keys: list[str] | None, include_synonyms: bool
) -> list[ConfigEntry]:
    dynamic = broker.zk.get_entity_config("brokers", str(broker.broker_id))
    dynamic_default = broker.zk.get_entity_config("brokers", "<default>")
    static = broker.config.originals
    entries = []
    for name, (_, default) in sorted(BROKER_KEYS.items()):
        if keys is not None and name not in keys:
            continue
        synonyms: list[tuple[str, str | None, int]] = []
        for source, values in (
            (DYNAMIC_BROKER_CONFIG, dynamic),
            (DYNAMIC_DEFAULT_BROKER_CONFIG, dynamic_default),
            (STATIC_BROKER_CONFIG, static),
        ):
            if name in values:
                synonyms.append((name, values[name], source))
        synonyms.append((name, None if default is None else _text(default), DEFAULT_CONFIG))
        value, source = synonyms[0][1], synonyms[0][2]
        sensitive = any(w in name for w in SENSITIVE_WORDS) or name in SENSITIVE_KEYS
        entries.append(
            ConfigEntry(
                name,
                None if sensitive else value,
                source,
                read_only=False,
                is_sensitive=sensitive,
                synonyms=synonyms if include_synonyms else [],
            )
        )
    return entries


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(value)
    return str(value)


async def describe_configs(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    Result = m.DescribeConfigsResponse.DescribeConfigsResult
    results = []
    for res in request.resources:
        keys = list(res.configuration_keys) if res.configuration_keys is not None else None
        synonyms = header.api_version >= 1 and request.include_synonyms
        try:
            entries = await broker.store.call(
                _describe_resource, broker, res.resource_type, res.resource_name, keys, synonyms
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


def _describe_resource(
    broker: BrokerServices, rtype: int, name: str, keys: list[str] | None, synonyms: bool
) -> list[ConfigEntry]:
    """A resource's config entries, as stored now (on the broker's store threads)."""
    if rtype == TOPIC:
        validate_topic_name(name)
        if not broker.metadata_cache.contains(name):
            raise KafkaError("UNKNOWN_TOPIC_OR_PARTITION", f"Topic {name} does not exist.")
        config = broker.configs.read_topic_config(name)
        return describe_topic_configs(broker, name, config, keys, synonyms)
    if rtype == BROKER:
        if name and name != str(broker.broker_id):
            raise KafkaError(
                "INVALID_REQUEST", f"Unexpected broker id, expected {broker.broker_id}"
            )
        return describe_broker_configs(broker, keys, synonyms)
    raise KafkaError("INVALID_REQUEST", f"Unsupported resource type {rtype}")


def _apply_ops(current: dict[str, str], ops: list[tuple[int, str, str | None]]) -> dict[str, str]:
    new = dict(current)
    for op, name, value in ops:
        if op == SET:
            new[name] = value or ""
        elif op == DELETE:
            new.pop(name, None)
        elif op in (APPEND, SUBTRACT):
            items = [v for v in new.get(name, "").split(",") if v]
            change = [v.strip() for v in (value or "").split(",") if v.strip()]
            if op == APPEND:
                items += [v for v in change if v not in items]
            else:
                items = [v for v in items if v not in change]
            new[name] = ",".join(items)
        else:
            raise KafkaError("INVALID_REQUEST", f"Unknown config operation {op}")
    return new


def _validate_and_write(
    broker: BrokerServices, rtype: int, name: str, new: dict[str, str], validate_only: bool
) -> None:
    if rtype == TOPIC:
        validate_topic_name(name)
        if not broker.metadata_cache.contains(name):
            raise KafkaError("UNKNOWN_TOPIC_OR_PARTITION", f"Topic {name} does not exist.")
        for key in new:
            if key not in TOPIC_CONFIGS_BY_NAME:
                raise InvalidConfigError(f"Unknown topic config name: {key}")
        broker.configs.topic_defaults.with_overrides(new)
        entity_type = "topics"
    elif rtype == BROKER:
        if name and name != str(broker.broker_id) and name != "<default>":
            raise KafkaError("INVALID_REQUEST", f"Unexpected broker id {name}")
        for key in new:
            if key not in BROKER_KEYS:
                raise InvalidConfigError(f"Unknown broker config name: {key}")
        KafkaConfig({**broker.config.originals, **new})
        entity_type, name = "brokers", name or "<default>"
    else:
        raise KafkaError("INVALID_REQUEST", f"Unsupported resource type {rtype}")
    if not validate_only:
        broker.zk.change_entity_config(entity_type, name, new)


def _current(broker: BrokerServices, rtype: int, name: str) -> dict[str, str]:
    entity = "topics" if rtype == TOPIC else "brokers"
    return broker.zk.get_entity_config(entity, name or "<default>")


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
            _alter_one, broker, res, lambda cur, o=ops: _apply_ops(cur, o), request.validate_only
        ))  # fmt: skip
    return m.IncrementalAlterConfigsResponse(responses=responses, throttle_time_ms=0)


def _alter_one(broker: BrokerServices, res: Any, change: Any, validate_only: bool) -> Any:
    """Read, change, validate and write one resource's config (on the store threads)."""
    try:
        new = change(_current(broker, res.resource_type, res.resource_name))
        _validate_and_write(broker, res.resource_type, res.resource_name, new, validate_only)
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
