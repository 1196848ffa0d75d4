"""The broker's periodic jobs on its event loop (retention, flush, checkpoints: what
Kafka's KafkaScheduler runs): one failing run is logged, and the next comes all the same."""

from __future__ import annotations

import asyncio
import functools
import logging
from dataclasses import dataclass
from typing import Any

from kt.metadata.store import MetadataStoreError
from kt.storage.log import wall_clock_ms
from kt.storage.log_cleaner import LogCleaner

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


def broker_tasks(
    cfg: Any, lm: Any, replica_manager: Any, group_service: Any, txn_coordinator: Any
) -> list[BackgroundTask]:
    """The jobs a broker schedules (KafkaServer's and LogManager's KafkaScheduler tasks,
    under Kafka's names), not started."""
    tasks = [
        BackgroundTask(
            "kafka-log-retention",
            cfg["log.retention.check.interval.ms"] / 1000,
            lambda: lm.cleanup_logs(),
        ),
        BackgroundTask("kafka-log-flusher", 1.0, lambda: lm.flush_dirty_logs()),
        BackgroundTask(
            "isr-expiration",
            cfg["replica.lag.time.max.ms"] / 2000,
            replica_manager.maybe_shrink_isr,
        ),
        BackgroundTask(
            "delete-expired-group-metadata",
            cfg["offsets.retention.check.interval.ms"] / 1000,
            functools.partial(
                group_service.start_offsets_cleanup, cfg["offsets.retention.minutes"] * 60_000
            ),
        ),
        BackgroundTask(
            "transaction-abort",
            cfg["transaction.abort.timed.out.transaction.cleanup.interval.ms"] / 1000,
            txn_coordinator.start_abort_timed_out_transactions,
        ),
        BackgroundTask(
            "transactionalId-expiration",
            cfg["transaction.remove.expired.transaction.cleanup.interval.ms"] / 1000,
            txn_coordinator.start_remove_expired_transactional_ids,
        ),
        BackgroundTask(
            "kafka-recovery-point-checkpoint",
            cfg["log.flush.offset.checkpoint.interval.ms"] / 1000,
            lambda: lm.checkpoint_all(),
        ),
    ]
    if cfg["log.cleaner.enable"]:
        cleaner = LogCleaner(wall_clock_ms)
        tasks.append(
            BackgroundTask(
                "kafka-log-cleaner",
                cfg["log.cleaner.backoff.ms"] / 1000,
                lambda: cleaner.clean_logs(lm.all_logs()),
            )
        )
    return tasks
