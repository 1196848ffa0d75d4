"""The controller's event thread (Kafka's ControllerEventManager).

Every controller event (a store watch firing, a request that needs the controller, the
election itself) is queued and processed one at a time, in order, on a thread of the
controller's own, "controller-event-thread-<broker id>". That thread runs an asyncio
loop of its own, so the controller's blocking metadata-store calls (ZooKeeper reads and
writes) hold up only the controller, never the broker's event loop that serves clients;
the controller's requests to other brokers (its channel's senders) run on that loop too.

Invariants:
- one event at a time, in the order queued, on the event thread;
- `put` is safe from any thread; `call` is awaited from any other loop;
- `queue_size` and the queue times (from `put` to the start of processing, Kafka's
  EventQueueTimeMs) are readable from any thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kt.metadata.store import MetadataStoreError
from kt.metrics.meters import Histogram

log = logging.getLogger(__name__)
T = TypeVar("T")

STOP_TIMEOUT_S = 10.0  # how long stopping waits for an event that is blocked in the store


# Kafka's ControllerState of each event (ControllerState.scala): the value of the
# ControllerState gauge while the event runs, and the ControllerStats timer of its kind.
CONTROLLER_STATES = {
    "ControllerChange": (1, "ControllerChangeRateAndTimeMs"),
    "Startup": (1, "ControllerChangeRateAndTimeMs"),
    "Expire": (1, "ControllerChangeRateAndTimeMs"),
    "BrokerChange": (2, "LeaderElectionRateAndTimeMs"),
    "TopicChange": (3, "TopicChangeRateAndTimeMs"),
    "PartitionModifications": (3, "TopicChangeRateAndTimeMs"),
    "TopicDeletion": (4, "TopicDeletionRateAndTimeMs"),
    "PartitionReassignment": (5, "PartitionReassignmentRateAndTimeMs"),
    "ApiPartitionReassignment": (5, "PartitionReassignmentRateAndTimeMs"),
    "AutoPreferredReplicaLeaderElection": (6, "AutoLeaderBalanceRateAndTimeMs"),
    "PreferredReplicaElection": (7, "ManualLeaderBalanceRateAndTimeMs"),
    "ReplicaLeaderElection": (7, "ManualLeaderBalanceRateAndTimeMs"),
    "ControlledShutdown": (8, "ControlledShutdownRateAndTimeMs"),
    "IsrChangeNotification": (9, "IsrChangeRateAndTimeMs"),
    "ListPartitionReassignments": (15, "ListPartitionReassignmentRateAndTimeMs"),
}
IDLE = 0


@dataclass
class EventQueueStats:
    """Kafka's ControllerEventManager and ControllerStats metrics: EventQueueTimeMs,
    the ControllerState gauge (the kind of the event running, 0 when idle) and each
    kind's RateAndTimeMs timer."""

    queue_time_ms: Histogram = field(default_factory=Histogram)
    rate_and_time_ms: dict[str, Histogram] = field(default_factory=lambda: {
        timer: Histogram() for _, timer in CONTROLLER_STATES.values()})  # fmt: skip
    state: int = IDLE


class ControllerEventManager:
    """A thread with its own event loop that processes queued controller events."""

    def __init__(self, broker_id: int) -> None:
        self.name = f"controller-event-thread-{broker_id}"
        self.stats = EventQueueStats()
        self._queued = 0
        self._queued_lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._events: asyncio.Queue[tuple[str, Callable[[], Any], float]] | None = None
        self._thread: threading.Thread | None = None

    @property
    def started(self) -> bool:
        return self._thread is not None

    @property
    def queue_size(self) -> int:
        return self._queued

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        assert self._loop is not None, "the controller's event thread has not started"
        return self._loop

    def start(self) -> None:
        """Start the thread; its loop runs (and `put` may be called) on return."""
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), name=self.name,
                                        daemon=True)  # fmt: skip
        self._thread.start()
        ready.wait()

    def put(self, name: str, action: Callable[[], Any]) -> None:
        """Queue an event; `action` runs on the event thread, its coroutine awaited there
        before the next event starts."""
        loop = self.loop
        if loop.is_closed():  # stopped: a late store watch finds no one to tell
            return
        with self._queued_lock:
            self._queued += 1
        try:
            loop.call_soon_threadsafe(self._enqueue, name, action, time.monotonic())
        except RuntimeError:  # closed in between
            with self._queued_lock:
                self._queued -= 1

    async def call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run `coroutine` on the event thread's loop (not as a queued event) and await
        its result from the caller's loop."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        return await asyncio.wrap_future(future)

    async def ask(self, name: str, action: Callable[[], Awaitable[T] | T]) -> T:
        """Queue `action` as event `name` and await its result from another loop."""
        done: concurrent.futures.Future[T] = concurrent.futures.Future()

        async def run() -> None:
            try:
                result = action()
                done.set_result(await result if asyncio.iscoroutine(result) else result)
            except BaseException as e:
                done.set_exception(e)
                raise

        self.put(name, run)
        return await asyncio.wrap_future(done)

    async def stop(self, last: Callable[[], Awaitable[None]] | None = None) -> None:
        """Stop processing: run `last` on the event thread after the event in progress,
        cancel what runs there (the queue, the channel's senders), and end the thread.
        Waits at most STOP_TIMEOUT_S for an event blocked in the store."""
        thread, loop = self._thread, self._loop
        if thread is None or loop is None or loop.is_closed():
            return

        async def finish() -> None:
            try:
                if last is not None:
                    await last()
            except MetadataStoreError as e:
                log.warning("%s stopping: %s: %s", self.name, type(e).__name__, e)
            except Exception:
                log.exception("%s stopping", self.name)
            finally:
                loop.stop()

        loop.call_soon_threadsafe(lambda: loop.create_task(finish(), name="controller-stop"))
        await asyncio.to_thread(thread.join, STOP_TIMEOUT_S)
        if thread.is_alive():
            log.warning("%s did not stop within %.0f s (a metadata store call blocked)",
                        self.name, STOP_TIMEOUT_S)  # fmt: skip

    # -- the thread -------------------------------------------------------------------

    def _enqueue(self, name: str, action: Callable[[], Any], queued_at: float) -> None:
        assert self._events is not None
        self._events.put_nowait((name, action, queued_at))

    def _run(self, ready: threading.Event) -> None:
        loop = self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self._events = asyncio.Queue()
        processor = loop.create_task(self._process(), name="controller-events")
        ready.set()
        try:
            loop.run_forever()
        finally:
            processor.cancel()
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in pending:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _process(self) -> None:
        assert self._events is not None
        while True:
            name, action, queued_at = await self._events.get()
            with self._queued_lock:
                self._queued -= 1
            started = time.monotonic()
            self.stats.queue_time_ms.update((started - queued_at) * 1000)
            state, timer = CONTROLLER_STATES.get(name, (IDLE, None))
            self.stats.state = state
            try:
                result = action()
                if asyncio.iscoroutine(result):
                    await result
            except MetadataStoreError as e:  # ZooKeeper away: the session's state says more
                log.warning("controller event %s failed: %s: %s", name, type(e).__name__, e)
            except Exception:
                log.exception("controller event %s failed", name)
            finally:
                self.stats.state = IDLE
                if timer is not None:
                    elapsed_ms = (time.monotonic() - started) * 1000
                    self.stats.rate_and_time_ms[timer].update(elapsed_ms)


async def call_in_loop(loop: asyncio.AbstractEventLoop, function: Callable[[], T]) -> T:
    """Run `function` on `loop` (another thread's: a broker's event loop) and await its
    result from the running loop; on the same loop it just runs."""
    if asyncio.get_running_loop() is loop:
        return function()
    done: concurrent.futures.Future[T] = concurrent.futures.Future()

    def run() -> None:
        try:
            done.set_result(function())
        except BaseException as e:
            done.set_exception(e)

    loop.call_soon_threadsafe(run)
    return await asyncio.wrap_future(done)
