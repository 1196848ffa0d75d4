"""Tasks a part of the broker starts on the event loop and does not await (writing
records after a timer fired, loading a partition, sending markers): held until they end,
so that none is collected while it runs, and cancelled together when the part stops."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any


class TaskSet:
    def __init__(self) -> None:
        self._running: set[asyncio.Task] = set()

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str | None = None) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        return task

    def cancel_all(self) -> None:
        for task in list(self._running):
            task.cancel()
