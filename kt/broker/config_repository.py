"""The broker's configs as the metadata store holds them (Kafka's ConfigRepository, read
on the store threads): a topic's effective LogConfig, this broker's dynamic overrides."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kt.errors import InvalidConfigError, KafkaError
from kt.log_config import LogConfig


class ConfigRepository:
    """Reads configs from the store (`zk`); `store_call` runs a read on the store threads.

    The read_* methods block (call them on a store thread); load_topic_configs awaits."""

    def __init__(
        self, zk: Any, topic_defaults: LogConfig, store_call: Callable[..., Awaitable[Any]]
    ) -> None:
        self.zk = zk
        self.topic_defaults = topic_defaults  # server.properties' topic keys
        self.store_call = store_call

    def read_dynamic_broker_config(self, broker_id: int) -> tuple[dict[str, str], dict[str, str]]:
        """A broker's dynamic config and the cluster default (a store read)."""
        return (self.zk.get_entity_config("brokers", str(broker_id)),
                self.zk.get_entity_config("brokers", "<default>"))  # fmt: skip

    def read_topic_config(self, topic: str) -> LogConfig:
        """A topic's effective config as stored now: this broker's defaults and the topic's
        overrides (a store read)."""
        overrides = self.zk.get_entity_config("topics", topic)
        try:
            return self.topic_defaults.with_overrides(overrides)
        except InvalidConfigError as e:  # say which topic: the store may hold many
            raise InvalidConfigError(f"Topic {topic}'s config in the metadata store: {e}") from None

    async def load_topic_configs(
        self, topics: set[str], known: dict[str, LogConfig]
    ) -> dict[str, KafkaError]:
        """Read into `known` the config of each topic not in it yet (LeaderAndIsr for a
        topic new to this broker: Kafka's fetchLogConfig), off the event loop; the topics
        whose config could not be read, with the error (their replicas wait for the next
        LeaderAndIsr rather than start with configs that may not be theirs)."""
        failed = {}
        for topic in sorted(t for t in topics if t not in known):
            try:
                config = await self.store_call(self.read_topic_config, topic)
            except KafkaError as e:
                failed[topic] = e
                continue
            known.setdefault(topic, config)
        return failed
