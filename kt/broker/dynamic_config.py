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

from kt.metadata import znodes as z
from kt.metadata.store import NoNodeError

if TYPE_CHECKING:
    from kt.broker.server import KafkaServer

log = logging.getLogger(__name__)


class DynamicConfigManager:
    """Applies config change notifications on the broker's event loop, in order."""

    def __init__(self, server: KafkaServer) -> None:
        self.server = server
        self.last_seen = -1
        self._loop: asyncio.AbstractEventLoop | None = None

    def startup(self) -> None:
        self._loop = asyncio.get_running_loop()
        # Notifications written before start-up are already reflected in what we read.
        children = self._children()
        if children:
            self.last_seen = max(_sequence(c) for c in children)

    def _children(self) -> list[str]:
        return self.server.zk.session.get_children(z.CONFIG_CHANGES, self._on_watch)

    def _on_watch(self, _event: Any) -> None:
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self.process)

    def process(self) -> None:
        try:
            children = self._children()
        except Exception:  # the session closed during shutdown
            return
        for child in sorted(children, key=_sequence):
            sequence = _sequence(child)
            if sequence <= self.last_seen:
                continue
            self.last_seen = sequence
            try:
                data, _ = self.server.zk.session.get(f"{z.CONFIG_CHANGES}/{child}")
                self.apply(z.decode_config_change(data))
            except NoNodeError:
                continue
            except Exception:
                log.exception("cannot apply config change %s", child)

    def apply(self, entity_path: str) -> None:
        entity_type, _, name = entity_path.partition("/")
        if entity_type == "topics":
            config = self.server.topic_config(name)
            self.server.log_manager.update_topic_config(name, config)
            for tp, partition in self.server.replica_manager.partitions.items():
                if tp.topic == name:
                    partition.min_insync_replicas = config.min_insync_replicas
            log.info("applied new config of topic %s", name)
        elif entity_type == "brokers" and name in (str(self.server.broker_id), "<default>"):
            self.server.apply_dynamic_broker_config()
            log.info("applied new dynamic config of broker %s", name)


def _sequence(name: str) -> int:
    return z.sequence_number(name, z.CONFIG_CHANGE_PREFIX)
