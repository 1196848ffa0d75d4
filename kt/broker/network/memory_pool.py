"""The request memory pool: queued.max.request.bytes, as Kafka's SimpleMemoryPool.

Every byte a connection reads is held from the pool until the request it belongs to has
been answered (or the connection closes). While the pool is spent, connections stop
reading from their sockets: the kernel's buffers and TCP's window then hold the clients
back, and reading resumes, oldest waiter first, as requests finish. Kafka's pool is not
strict either: a read may take it below zero, but none starts while it is spent.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable


class MemoryPool:
    """Bytes of requests in flight against a capacity; capacity <= 0 means unbounded
    (queued.max.request.bytes' default, -1)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.used = 0
        self._waiting: deque[Callable[[], None]] = deque()

    @property
    def bounded(self) -> bool:
        return self.capacity > 0

    @property
    def spent(self) -> bool:
        return self.bounded and self.used >= self.capacity

    def take(self, size: int) -> None:
        self.used += size

    def release(self, size: int) -> None:
        """Give bytes back, and let waiting connections read again while there is room."""
        self.used -= size
        while self._waiting and not self.spent:
            self._waiting.popleft()()

    def wait(self, resume: Callable[[], None]) -> None:
        """Call `resume` once the pool has room again."""
        self._waiting.append(resume)

    def forget(self, resume: Callable[[], None]) -> None:
        try:
            self._waiting.remove(resume)
        except ValueError:
            pass
