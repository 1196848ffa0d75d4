"""Topic, broker and group configs as the admin side reads and writes them (Kafka's
ConfigHelper for DescribeConfigs, ZkAdminManager.alterConfigs and incrementalAlterConfigs).

Topic overrides live in /config/topics/<t>, broker overrides in /config/brokers/<id>
(or <default>), a group's (KIP-848's group configs) in /config/groups/<g> (the name
sanitized); each write also leaves a /config/changes notification that every broker
watches (DynamicConfigManager). A describe reports each key's effective value and where
it came from, with Kafka's ConfigSource numbers. The methods read and write the store:
run them on the broker's store threads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kt.broker.group.group_config import GROUP_KEYS, broker_value
from kt.broker.group.group_config import validate as validate_group_config
from kt.config import (
    BROKER_KEYS,
    TOPIC_CONFIGS_BY_NAME,
    TOPIC_DEFAULTS_FROM_BROKER,
    InvalidConfigError,
    KafkaConfig,
    LogConfig,
)
from kt.errors import KafkaError
from kt.metadata.znodes import sanitize
from kt.storage.names import validate_topic_name

if TYPE_CHECKING:
    from kt.broker.config_repository import ConfigRepository
    from kt.broker.metadata_cache import MetadataCache
    from kt.metadata.kafka_zk_client import KafkaZkClient

TOPIC = 2
BROKER = 4
BROKER_LOGGER = 8
GROUP = 32

# ConfigSource (DescribeConfigsResponse.ConfigSource)
DYNAMIC_TOPIC_CONFIG = 1
DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5
DYNAMIC_GROUP_CONFIG = 8

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


class ConfigAdmin:
    """Describes and alters this broker's and its cluster's topic and broker configs."""

    def __init__(
        self, broker_id: int, config: KafkaConfig, zk: KafkaZkClient,
        metadata_cache: MetadataCache, configs: ConfigRepository,
    ) -> None:  # fmt: skip
        self.broker_id = broker_id
        self.config = config  # server.properties
        self.zk = zk
        self.metadata_cache = metadata_cache
        self.configs = configs

    def describe(
        self, rtype: int, name: str, keys: list[str] | None, synonyms: bool
    ) -> list[ConfigEntry]:
        """A resource's config entries, as stored now (store reads)."""
        if rtype == TOPIC:
            validate_topic_name(name)
            if not self.metadata_cache.contains(name):
                raise KafkaError("UNKNOWN_TOPIC_OR_PARTITION", f"Topic {name} does not exist.")
            config = self.configs.read_topic_config(name)
            return self.describe_topic(name, config, keys, synonyms)
        if rtype == BROKER:
            if name and name != str(self.broker_id):
                raise KafkaError(
                    "INVALID_REQUEST", f"Unexpected broker id, expected {self.broker_id}"
                )
            return self.describe_broker(keys, synonyms)
        if rtype == GROUP:
            return self.describe_group(name, keys, synonyms)
        raise KafkaError("INVALID_REQUEST", f"Unsupported resource type {rtype}")

    def describe_group(
        self, group: str, keys: list[str] | None, include_synonyms: bool
    ) -> list[ConfigEntry]:
        """A group's entries (GroupConfig's keys): its override, else the broker key that
        supplies the default (as set in server.properties, or Kafka's default)."""
        overrides = self.zk.get_entity_config("groups", sanitize(group))
        entries = []
        for name, key in sorted(GROUP_KEYS.items()):
            if keys is not None and name not in keys:
                continue
            synonyms: list[tuple[str, str | None, int]] = []
            if name in overrides:
                synonyms.append((name, overrides[name], DYNAMIC_GROUP_CONFIG))
            if key.synonym is None:
                synonyms.append((name, key.default, DEFAULT_CONFIG))
            else:
                value, static = broker_value(self.config, key.synonym, key.default)
                if static:
                    synonyms.append((key.synonym, value, STATIC_BROKER_CONFIG))
                synonyms.append((key.synonym, key.default, DEFAULT_CONFIG))
            entries.append(ConfigEntry(name, synonyms[0][1], synonyms[0][2],
                                       synonyms=synonyms if include_synonyms else []))  # fmt: skip
        return entries

    def describe_topic(
        self, topic: str, config: LogConfig, keys: list[str] | None, include_synonyms: bool
    ) -> list[ConfigEntry]:
        """A topic's entries: `config` its effective config, with where each value comes
        from (its override, a broker key, the default) as ConfigHelper says it."""
        overrides = self.zk.get_entity_config("topics", topic)
        # Where a topic key's broker synonyms may be set, highest precedence first.
        layers = (
            (DYNAMIC_BROKER_CONFIG, self.zk.get_entity_config("brokers", str(self.broker_id))),
            (DYNAMIC_DEFAULT_BROKER_CONFIG, self.zk.get_entity_config("brokers", "<default>")),
            (STATIC_BROKER_CONFIG, self.config.originals),
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

    def describe_broker(self, keys: list[str] | None, include_synonyms: bool) -> list[ConfigEntry]:
        """This broker's entries: each key's value from its dynamic config, the cluster
        default, server.properties or the default, sensitive values left out."""
        dynamic = self.zk.get_entity_config("brokers", str(self.broker_id))
        dynamic_default = self.zk.get_entity_config("brokers", "<default>")
        static = self.config.originals
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

    def alter(
        self, rtype: int, name: str, change: Callable[[dict[str, str]], dict[str, str]],
        validate_only: bool,
    ) -> None:  # fmt: skip
        """Read, change, validate and write one resource's config (store reads and a write):
        `change` maps its overrides as stored to the new ones. KafkaError if refused."""
        new = change(self._current(rtype, name))
        self._validate_and_write(rtype, name, new, validate_only)

    def _validate_and_write(
        self, rtype: int, name: str, new: dict[str, str], validate_only: bool
    ) -> None:
        if rtype == TOPIC:
            validate_topic_name(name)
            if not self.metadata_cache.contains(name):
                raise KafkaError("UNKNOWN_TOPIC_OR_PARTITION", f"Topic {name} does not exist.")
            for key in new:
                if key not in TOPIC_CONFIGS_BY_NAME:
                    raise InvalidConfigError(f"Unknown topic config name: {key}")
            self.configs.topic_defaults.with_overrides(new)
            entity_type = "topics"
        elif rtype == BROKER:
            if name and name != str(self.broker_id) and name != "<default>":
                raise KafkaError("INVALID_REQUEST", f"Unexpected broker id {name}")
            for key in new:
                if key not in BROKER_KEYS:
                    raise InvalidConfigError(f"Unknown broker config name: {key}")
            KafkaConfig({**self.config.originals, **new})
            entity_type, name = "brokers", name or "<default>"
        elif rtype == GROUP:
            if not name:
                raise KafkaError("INVALID_REQUEST", "Group name must not be empty.")
            validate_group_config(new, self.config)
            entity_type, name = "groups", sanitize(name)
        else:
            raise KafkaError("INVALID_REQUEST", f"Unsupported resource type {rtype}")
        if not validate_only:
            self.zk.change_entity_config(entity_type, name, new)

    def _current(self, rtype: int, name: str) -> dict[str, str]:
        if rtype == GROUP:
            return self.zk.get_entity_config("groups", sanitize(name))
        entity = "topics" if rtype == TOPIC else "brokers"
        return self.zk.get_entity_config(entity, name or "<default>")


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


def apply_ops(current: dict[str, str], ops: list[tuple[int, str, str | None]]) -> dict[str, str]:
    """IncrementalAlterConfigs' operations (SET, DELETE, APPEND, SUBTRACT) on `current`."""
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


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(value)
    return str(value)
