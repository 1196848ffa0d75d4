"""The broker's configs as the metadata store holds them (Kafka's ConfigRepository, read
on the store threads: a topic's effective LogConfig, this broker's dynamic overrides) and
the dynamic broker configs that act at once (DynamicBrokerConfig's reconfiguration of the
replication throttles). Mixed into KafkaServer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kt.errors import InvalidConfigError, KafkaError
from kt.log_config import LogConfig


class ConfigRepository:
    """Mixed into KafkaServer: uses its config, store, log manager and replica manager."""

    broker_id: int
    config: Any
    zk: Any
    log_manager: Any
    replica_manager: Any
    topic_defaults: LogConfig
    store_call: Callable[..., Awaitable[Any]]  # KafkaServer's

    def read_dynamic_broker_config(self) -> tuple[dict[str, str], dict[str, str]]:
        """This broker's dynamic config and the cluster default (a store read)."""
        assert self.zk is not None
        return (self.zk.get_entity_config("brokers", str(self.broker_id)),
                self.zk.get_entity_config("brokers", "<default>"))  # fmt: skip

    def apply_dynamic_broker_config(self, mine: dict[str, str], default: dict[str, str]) -> None:
        """The dynamic broker configs that act at once: this broker's override, else the
        cluster default, else server.properties (DynamicBrokerConfig's precedence).
        Today: the replication throttle rates."""
        rm = self.replica_manager
        for key, quota in (("leader.replication.throttled.rate", rm.leader_quota),
                           ("follower.replication.throttled.rate", rm.follower_quota),
                           ("replica.alter.log.dirs.io.max.bytes.per.second",
                            rm.log_dir_mover.quota)):  # fmt: skip
            value = mine.get(key) or default.get(key)
            quota.update_quota(float(value) if value else float(self.config[key]))

    def read_topic_config(self, topic: str) -> LogConfig:
        """A topic's effective config as stored now: this broker's defaults and the topic's
        overrides (a store read)."""
        assert self.zk is not None
        overrides = self.zk.get_entity_config("topics", topic)
        try:
            return self.topic_defaults.with_overrides(overrides)
        except InvalidConfigError as e:  # say which topic: the store may hold many
            raise InvalidConfigError(f"Topic {topic}'s config in the metadata store: {e}") from None

    def topic_config(self, topic: str) -> LogConfig:
        """A topic's config as this broker knows it: read when the topic's first replica
        came here, and kept current by the config change notifications."""
        assert self.log_manager is not None
        return self.log_manager.config_for(topic)

    async def load_topic_configs(self, topics: set[str]) -> dict[str, KafkaError]:
        """Read the config of each topic this broker has not seen yet (LeaderAndIsr for a
        new topic: Kafka's fetchLogConfig), off the event loop; the topics whose config
        could not be read, with the error (their replicas wait for the next LeaderAndIsr
        rather than start with configs that may not be theirs)."""
        assert self.log_manager is not None
        known = self.log_manager.topic_configs
        failed = {}
        for topic in sorted(t for t in topics if t not in known):
            try:
                config = await self.store_call(self.read_topic_config, topic)
            except KafkaError as e:
                failed[topic] = e
                continue
            known.setdefault(topic, config)
        return failed
