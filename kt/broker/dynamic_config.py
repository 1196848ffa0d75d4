"""Config changes made anywhere in the cluster reach every broker (DynamicConfigManager).

Whoever changes /config/topics/<t> or /config/brokers/<id> also creates a sequential
/config/changes/config_change_<n> notification naming the entity. Every broker watches
that directory and, for each notification newer than the last it processed, re-reads
the entity: topics get their new LogConfig (segment, retention, flush, timestamp type
and min.insync.replicas apply at once), brokers their dynamic overrides.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from kt.broker.change_notifications import ChangeNotificationListener
from kt.metadata import znodes as z

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from kt.broker.config_repository import ConfigRepository
    from kt.broker.group.group_config import GroupConfigs
    from kt.broker.replication.replica_manager import ReplicaManager
    from kt.broker.store_executor import StoreExecutor
    from kt.config import KafkaConfig
    from kt.metadata.kafka_zk_client import KafkaZkClient
    from kt.storage.log_manager import LogManager

log = logging.getLogger(__name__)


class DynamicConfigManager:
    """Reads config change notifications on the broker's store threads, in order, and
    applies what they name on the broker's event loop."""

    def __init__(
        self, broker_id: int, config: KafkaConfig, zk: KafkaZkClient, store: StoreExecutor,
        configs: ConfigRepository, log_manager: LogManager, replica_manager: ReplicaManager,
        reload_quotas: Callable[[], Awaitable[None]], group_configs: GroupConfigs,
    ) -> None:  # fmt: skip
        self.broker_id = broker_id
        self.zk = zk
        self.group_configs = group_configs
        self.config = config
        self.store = store
        self.configs = configs
        self.log_manager = log_manager
        self.replica_manager = replica_manager
        self.reload_quotas = reload_quotas  # every client quota from the store again
        self.notifications: ChangeNotificationListener[tuple[str, Any]] = (
            ChangeNotificationListener(
                z.CONFIG_CHANGES, z.CONFIG_CHANGE_PREFIX, lambda: zk.session, store.call,
                lambda: store.open, self._read_change, self._apply_all,
            )
        )  # fmt: skip

    async def startup(self) -> None:
        # Notifications written before start-up are already reflected in what we read.
        await self.store.call(self.notifications.begin, asyncio.get_running_loop())
        for group, overrides in await self.store.call(self._read_all_groups):
            self.group_configs.update(group, overrides)

    def _read_all_groups(self) -> list[tuple[str, dict[str, str]]]:
        """Every group's config overrides (store reads)."""
        return [(z.desanitize(name) or "", self.zk.get_entity_config("groups", name))
                for name in self.zk.entity_names("groups")]  # fmt: skip

    def process_soon(self) -> None:
        """Read the new notifications (on a store thread), then apply them (here)."""
        self.notifications.process_soon()

    def _read_change(self, data: bytes) -> tuple[str, Any]:
        entity = z.decode_config_change(data)
        return entity, self._read_entity(entity)

    def _read_entity(self, entity_path: str) -> Any:
        entity_type, _, name = entity_path.partition("/")
        if entity_type == "topics":
            return self.configs.read_topic_config(name)
        if entity_type == "brokers" and name in (str(self.broker_id), "<default>"):
            return self.configs.read_dynamic_broker_config(self.broker_id)
        if entity_type == "groups":
            return self.zk.get_entity_config("groups", name)
        return None

    def _apply_all(self, changes: list[tuple[str, Any]]) -> None:
        for entity_path, value in changes:
            self.apply(entity_path, value)

    def apply(self, entity_path: str, value: Any) -> None:
        entity_type, _, name = entity_path.partition("/")
        if entity_type in ("users", "clients", "ips"):  # a quota (or a credential) changed
            asyncio.ensure_future(self.reload_quotas())
        elif entity_type == "groups":  # the name as stored: sanitized
            group = z.desanitize(name) or ""
            self.group_configs.update(group, value)
            log.info("applied new config of group %s", group)
        elif entity_type == "topics":
            self.log_manager.update_topic_config(name, value)
            for tp, partition in self.replica_manager.partitions.items():
                if tp.topic == name:
                    partition.min_insync_replicas = value.min_insync_replicas
            log.info("applied new config of topic %s", name)
        elif value is not None:
            self.replica_manager.reconfigure_throttles(*value, self.config)
            log.info("applied new dynamic config of broker %s", name)
