"""The broker's periodic jobs on its event loop (retention, flush, checkpoints: what
Kafka's KafkaScheduler runs): one failing run is logged, and the next comes all the same."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from kt.metadata.store import MetadataStoreError

log = logging.getLogger(__name__)


@dataclass
class BackgroundTask:
    """A periodic job on the event loop: retention, flush, checkpoints."""

    name: str
    interval_s: float
    action: Any
    task: asyncio.Task | None = None

    def start(self) -> None:
        self.task = asyncio.create_task(self._run(), name=self.name)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            try:
                self.action()
            except MetadataStoreError as e:  # ZooKeeper away: one line, not a traceback
                log.warning("background task %s failed: %s: %s", self.name,
                            type(e).__name__, e)  # fmt: skip
            except Exception:
                log.exception("background task %s failed", self.name)
