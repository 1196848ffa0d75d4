"""The time a request's handler runs on the broker's event loop: Kafka's request thread
time, which `request_percentage` quotas measure (ClientRequestQuotaManager).

A handler is a coroutine that runs in steps: it works, then waits (a purgatory, a disk
or store thread, another broker), then works again. Only the steps count; the waits do
not, as a Kafka request parked in a purgatory holds no request handler thread. The
wrapper drives the coroutine step by step, as the task awaiting it would, and adds up
each step's time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine, Generator
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class LoopTime(Generic[T]):
    """Await `coroutine`; afterwards `seconds` is the time its steps ran."""

    __slots__ = ("_coroutine", "_clock", "seconds")

    def __init__(
        self, coroutine: Coroutine[Any, Any, T], clock: Callable[[], float] = time.perf_counter
    ) -> None:
        self._coroutine = coroutine
        self._clock = clock
        self.seconds = 0.0

    def __await__(self) -> Generator[Any, Any, T]:
        steps = self._coroutine.__await__()
        sent: Any = None
        thrown: BaseException | None = None
        while True:
            began = self._clock()
            try:
                yielded = steps.send(sent) if thrown is None else steps.throw(thrown)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            finally:
                self.seconds += self._clock() - began
            try:
                sent, thrown = (yield yielded), None
            except BaseException as e:  # a cancellation (or close) of the awaiting task
                sent, thrown = None, e
