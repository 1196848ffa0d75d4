"""The broker's metadata store calls, off the event loop (Kafka runs them on its request
handler threads, num.io.threads of them).

ZooKeeper reads and writes for admin requests, configs and registration block; they run on
a few threads of their own so that a ZooKeeper that is slow or away holds up the request
that needs it, not every client (kazoo queues a call until it is connected again).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from kt.errors import store_error
from kt.metadata.store import MetadataStoreError

log = logging.getLogger(__name__)
T = TypeVar("T")
# Store calls in flight at once: admin requests, config reads, registration.
STORE_CALL_THREADS = 4


class StoreExecutor:
    """Runs blocking store calls on `STORE_CALL_THREADS` threads; `call` awaits one.

    Invariant: once shut down it runs nothing more (`open` is False)."""

    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self._threads = ThreadPoolExecutor(
            STORE_CALL_THREADS, thread_name_prefix=f"kt-store-calls-{broker_id}"
        )
        self._open = True

    @property
    def open(self) -> bool:
        return self._open

    async def call(self, function: Callable[..., T], *args: Any) -> T:
        """Run `function(*args)` on the store threads and await it. A store error comes
        back as a KafkaError, UNKNOWN_SERVER_ERROR as Kafka answers a ZooKeeper exception."""
        try:
            return await asyncio.get_running_loop().run_in_executor(
                self._threads, functools.partial(function, *args)
            )
        except MetadataStoreError as e:
            log.warning("[KafkaServer id=%s] metadata store: %s: %s",
                        self.broker_id, type(e).__name__, e)  # fmt: skip
            raise store_error(e) from None

    def shutdown(self) -> None:
        """Run nothing more; calls queued and not started are cancelled."""
        self._open = False
        self._threads.shutdown(wait=False, cancel_futures=True)
