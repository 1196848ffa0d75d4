"""Timers keyed by (group, member) on the event loop (the coordinator's CoordinatorTimer):
scheduling a key again replaces its timer; a timer that fires is forgotten first."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

Key = tuple[str, str]


class MemberTimers:
    """One pending timer per (group id, member id)."""

    def __init__(self) -> None:
        self._handles: dict[Key, asyncio.TimerHandle] = {}

    def schedule(self, key: Key, delay_ms: int, callback: Callable[..., None], *args: Any) -> None:
        self.cancel(key)
        self._handles[key] = asyncio.get_running_loop().call_later(
            max(delay_ms, 0) / 1000, self._fire, key, callback, args
        )

    def schedule_if_absent(
        self, key: Key, delay_ms: int, callback: Callable[..., None], *args: Any
    ) -> None:
        if key not in self._handles:
            self.schedule(key, delay_ms, callback, *args)

    def is_scheduled(self, key: Key) -> bool:
        return key in self._handles

    def _fire(self, key: Key, callback: Callable[..., None], args: tuple) -> None:
        self._handles.pop(key, None)
        callback(*args)

    def cancel(self, key: Key) -> None:
        handle = self._handles.pop(key, None)
        if handle is not None:
            handle.cancel()

    def cancel_all(self) -> None:
        for handle in self._handles.values():
            handle.cancel()
        self._handles.clear()
