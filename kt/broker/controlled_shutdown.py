"""A broker's controlled shutdown (controlled.shutdown.enable, a part of KafkaServer): before
it stops, it asks the controller to move its leadership away, so that clients never wait
for its session to expire (Kafka's KafkaServer.controlledShutdown)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from kt.broker.broker_to_controller import BrokerToControllerChannel
from kt.errors import KafkaError
from kt.metadata.store import MetadataStoreError
from kt.protocol import ApiKey
from kt.protocol.messages import ControlledShutdownRequest

log = logging.getLogger(__name__)


class ControlledShutdown:
    """Mixed into KafkaServer: uses its config, store, metadata cache and controller."""

    broker_id: int
    config: Any
    store: Any
    zk: Any
    controller: Any
    controller_started: bool
    metadata_cache: Any
    inter_broker_security: dict[str, Any]
    _broker_endpoint: Callable[[int], tuple[str, int] | None]  # KafkaServer's

    async def _controlled_shutdown(self) -> None:
        """Ask the controller to move this broker's leadership away before it stops
        (controlled.shutdown.enable), retrying controlled.shutdown.max.retries times,
        controlled.shutdown.retry.backoff.ms apart. A controller that did not answer may
        have been stopping too (SIGTERM to every broker at once): the next try goes as
        soon as /controller names another, instead of after the whole backoff (three
        brokers stopped together took 10 s, two backoffs, to exit)."""
        cfg = self.config
        if not cfg["controlled.shutdown.enable"] or self.zk is None or not self.controller_started:
            return
        backoff_s = cfg["controlled.shutdown.retry.backoff.ms"] / 1000
        asked, failed = -1, False
        for attempt in range(cfg["controlled.shutdown.max.retries"]):
            if attempt:
                await self._controlled_shutdown_backoff(asked if failed else None, backoff_s)
            try:
                asked = self.metadata_cache.controller_id
                remaining = await self._ask_controller_to_shut_down(asked)
                failed = False
            except (KafkaError, MetadataStoreError) as e:
                log.warning("[KafkaServer id=%s] controlled shutdown: %s", self.broker_id, e)
                failed = True
                continue
            if remaining is not None and not remaining:
                log.info("[KafkaServer id=%s] Controlled shutdown succeeded", self.broker_id)
                return
            log.info("[KafkaServer id=%s] controlled shutdown: still leading %s",
                     self.broker_id, remaining)  # fmt: skip
        log.warning("[KafkaServer id=%s] proceeding to do an unclean shutdown as all the "
                    "controlled shutdown attempts failed", self.broker_id)  # fmt: skip

    async def _controlled_shutdown_backoff(
        self, failed_controller: int | None, wait_s: float
    ) -> None:
        """Wait out the backoff, or, after `failed_controller` did not answer, only until
        the controller's UpdateMetadata names another (the metadata cache: no ZooKeeper
        read on the event loop)."""
        cache = self.metadata_cache
        deadline = time.monotonic() + wait_s
        while (remaining := deadline - time.monotonic()) > 0:
            if failed_controller is not None and cache.controller_id not in (
                failed_controller, -1,
            ):  # fmt: skip
                return
            await cache.wait_changed(remaining)

    async def _ask_controller_to_shut_down(self, controller_id: int) -> list[Any] | None:
        """The partitions this broker still leads after the controller moved what it
        could; None when `controller_id` is not the controller. Over the wire: connect,
        send, close (KafkaServer.controlledShutdown's connection)."""
        channel = BrokerToControllerChannel(
            "controlled-shutdown", self.broker_id, self.store, self.metadata_cache,
            self._broker_endpoint, self.inter_broker_security,
        )  # fmt: skip
        local = channel.local_controller(controller_id)
        if local is not None:
            return await local.controlled_shutdown(self.broker_id)
        if self._broker_endpoint(controller_id) is None:
            return None
        request = ControlledShutdownRequest(broker_id=self.broker_id)
        try:
            response = await channel.send(
                controller_id, ApiKey.CONTROLLED_SHUTDOWN, lambda _version: request
            )
        finally:
            channel.close()
        if response.error_code:
            raise KafkaError(response.error_code, "ControlledShutdown refused")
        return list(response.remaining_partitions)
