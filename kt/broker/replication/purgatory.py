"""Delayed operations: requests that wait for something to happen on a partition.

Kafka's DelayedOperationPurgatory keys waiting operations (a long-poll Fetch, an
acks=all Produce) by partition and completes them when that partition's log end offset
or high watermark moves. Here an operation is a coroutine that waits on `wait_any` for
one of its keys to be notified, or for its deadline; it re-checks its own condition after
every wake-up, so a spurious wake-up costs one check and nothing else.

All calls happen on the broker's event loop thread.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Hashable, Iterable

from kt.metrics.request_metrics import REMOTE_WAIT


class DelayedOperationPurgatory:
    """Watch keys -> futures of the operations waiting on them."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._watchers: dict[Hashable, set[asyncio.Future[None]]] = {}

    async def wait_any(self, keys: Iterable[Hashable], timeout_s: float) -> bool:
        """Wait until one of `keys` is notified (True) or `timeout_s` passes (False)."""
        if timeout_s <= 0:
            return False
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        keys = list(keys)
        for key in keys:
            self._watchers.setdefault(key, set()).add(future)
        try:
            # asyncio.wait, not wait_for: on Python 3.11 wait_for drops a cancellation that
            # arrives as the future completes, and a cancelled request (a broker stopping)
            # then waited out its whole timeout.
            remote = REMOTE_WAIT.get()
            if remote is None:
                done, _ = await asyncio.wait((future,), timeout=timeout_s)
            else:  # the request's RemoteTimeMs
                start = time.monotonic()
                try:
                    done, _ = await asyncio.wait((future,), timeout=timeout_s)
                finally:
                    remote.seconds += time.monotonic() - start
            return bool(done)
        finally:
            for key in keys:
                waiters = self._watchers.get(key)
                if waiters is not None:
                    waiters.discard(future)
                    if not waiters:
                        del self._watchers[key]

    def check_and_complete(self, key: Hashable) -> int:
        """Wake every operation watching `key`; returns how many were woken."""
        waiters = self._watchers.pop(key, None)
        if not waiters:
            return 0
        for future in waiters:
            if not future.done():
                future.set_result(None)
        return len(waiters)

    def watched(self) -> int:
        return sum(len(w) for w in self._watchers.values())


async def wait_event(event: asyncio.Event, timeout_s: float | None) -> bool:
    """Wait until `event` is set (True) or `timeout_s` passes (False), and let a
    cancellation through, which asyncio.wait_for on Python 3.11 may drop."""
    waiter = asyncio.ensure_future(event.wait())
    try:
        done, _ = await asyncio.wait((waiter,), timeout=timeout_s)
        return bool(done)
    finally:
        waiter.cancel()
