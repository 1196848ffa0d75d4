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
import threading
from typing import TYPE_CHECKING, Any

from kt.metadata import znodes as z
from kt.metadata.store import MetadataStoreError, NoNodeError

if TYPE_CHECKING:
    from kt.broker.server import KafkaServer

log = logging.getLogger(__name__)


class DynamicConfigManager:
    """Reads config change notifications on the broker's store threads, in order, and
    applies what they name on the broker's event loop."""

    def __init__(self, server: KafkaServer) -> None:
        self.server = server
        self.last_seen = -1
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reading = threading.Lock()  # one reader at a time: notifications stay in order

    async def startup(self) -> None:
        self._loop = asyncio.get_running_loop()
        # Notifications written before start-up are already reflected in what we read.
        children = await self.server.store_call(self._children)
        if children:
            self.last_seen = max(_sequence(c) for c in children)

    def _children(self) -> list[str]:
        return self.server.zk.session.get_children(z.CONFIG_CHANGES, self._on_watch)

    def _on_watch(self, _event: Any) -> None:
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self.process_soon)

    def process_soon(self) -> None:
        """Read the new notifications (on a store thread), then apply them (here)."""
        if not self.server.store_calls_open:
            return
        future = asyncio.ensure_future(self.server.store_call(self._read_changes))
        future.add_done_callback(self._apply_read)

    def _read_changes(self) -> list[tuple[str, Any]]:
        """The entities named by notifications newer than the last seen, each with what
        it now holds (watching the directory again)."""
        changes = []
        with self._reading:
            try:
                children = self._children()
            except MetadataStoreError:  # the session closed during shutdown, or expired
                return []
            for child in sorted(children, key=_sequence):
                sequence = _sequence(child)
                if sequence <= self.last_seen:
                    continue
                self.last_seen = sequence
                try:
                    data, _ = self.server.zk.session.get(f"{z.CONFIG_CHANGES}/{child}")
                    entity = z.decode_config_change(data)
                    changes.append((entity, self._read_entity(entity)))
                except NoNodeError:
                    continue
                except Exception:
                    log.exception("cannot read config change %s", child)
        return changes

    def _read_entity(self, entity_path: str) -> Any:
        entity_type, _, name = entity_path.partition("/")
        if entity_type == "topics":
            return self.server.read_topic_config(name)
        if entity_type == "brokers" and name in (str(self.server.broker_id), "<default>"):
            return self.server.read_dynamic_broker_config()
        return None

    def _apply_read(self, future: asyncio.Future) -> None:
        if future.cancelled() or future.exception() is not None:
            return  # the broker is stopping
        for entity_path, value in future.result():
            self.apply(entity_path, value)

    def apply(self, entity_path: str, value: Any) -> None:
        entity_type, _, name = entity_path.partition("/")
        if entity_type in ("users", "clients", "ips"):  # a quota (or a credential) changed
            asyncio.ensure_future(self.server.reload_quotas())
        elif entity_type == "topics":
            self.server.log_manager.update_topic_config(name, value)
            for tp, partition in self.server.replica_manager.partitions.items():
                if tp.topic == name:
                    partition.min_insync_replicas = value.min_insync_replicas
            log.info("applied new config of topic %s", name)
        elif value is not None:
            self.server.apply_dynamic_broker_config(*value)
            log.info("applied new dynamic config of broker %s", name)


def _sequence(name: str) -> int:
    return z.sequence_number(name, z.CONFIG_CHANGE_PREFIX)
