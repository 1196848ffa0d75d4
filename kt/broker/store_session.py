"""A broker's session with its metadata store (ZooKeeper, or the embedded store), a part of
KafkaServer: the session's state changes (SessionExpireListener's meters; after an
expiry the broker registers again and its controller re-elects, Kafka's
SessionExpirationHandler, since its ephemeral znodes went with the old session), and the
steps of a shutdown that need the store, given up when it is away."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kt.metadata.store import MetadataStoreError, SessionState

log = logging.getLogger(__name__)

# How long a stopping broker waits for a step that needs the metadata store (resigning as
# controller, closing the session) before it goes on without it: a ZooKeeper that is away
# never answers, and SIGTERM must end the broker all the same (Kafka 3.9 exits in 0.5 s).
STORE_STEP_AT_SHUTDOWN_S = 3.0


_SESSION_METERS = {
    SessionState.LOST: "ZooKeeperExpiresPerSec",
    SessionState.SUSPENDED: "ZooKeeperDisconnectsPerSec",
    SessionState.CONNECTED: "ZooKeeperSyncConnectsPerSec",
}


class StoreSession:
    """Mixed into KafkaServer: uses its store client, controller, metrics and dynamic
    configs."""

    broker_id: int
    zk: Any
    controller: Any
    controller_requests: Any
    controller_started: bool
    metrics: Any
    dynamic_config: Any
    authorizer: Any
    advertised_endpoints: list[Any]
    config: Any
    store_call: Any
    _shutting_down: bool

    def _init_store_session(self) -> None:
        self._session_lost = False
        self.store_reachable = True  # the store session is connected (SUSPENDED/LOST: not)
        self._store_lost = asyncio.Event()  # set when the session is not connected
        self._session_task: asyncio.Task | None = None

    def _on_session_state(self, state: SessionState, loop: asyncio.AbstractEventLoop) -> None:
        """The metadata session expired (LOST) and a new one began (CONNECTED): the broker
        registers again and the controller re-elects (Kafka's SessionExpirationHandler);
        its ephemeral znodes went with the old session."""
        meter = _SESSION_METERS.get(state)
        if meter is not None:  # SessionExpireListener's
            self.metrics.meter("kafka.server", "SessionExpireListener", meter).mark()
        self.store_reachable = state is SessionState.CONNECTED
        if not self.store_reachable:  # wakes a controlled shutdown waiting on the store
            loop.call_soon_threadsafe(self._store_lost.set)
        if state is SessionState.LOST:
            self._session_lost = True
        elif state is SessionState.CONNECTED and self._session_lost and not self._shutting_down:
            self._session_lost = False
            loop.call_soon_threadsafe(self._on_new_session)

    def _on_new_session(self) -> None:
        if self._shutting_down or self.zk is None or not self.controller_started:
            return
        log.info("[KafkaServer id=%s] metadata session expired: registering again", self.broker_id)
        self._session_task = asyncio.get_running_loop().create_task(self._register_again())

    async def _register_again(self) -> None:
        assert self.zk is not None and self.controller is not None
        try:
            registration = await self.store_call(
                self.zk.register_broker,
                self.broker_id, self.advertised_endpoints, self.config["broker.rack"],
            )  # fmt: skip
            self.controller_requests.broker_epoch = registration.epoch
        except MetadataStoreError as e:  # the next session's CONNECTED tries again
            log.warning("[KafkaServer id=%s] cannot register again: %s: %s",
                        self.broker_id, type(e).__name__, e)  # fmt: skip
            return
        self.controller.on_session_expired()
        # the change notifications read and watched again (ZkNodeChangeNotificationListener's
        # ZkStateChangeHandler.afterInitializingSession)
        self.dynamic_config.process_soon()
        if self.authorizer is not None:
            self.authorizer.process_soon()

    async def _unless_the_store_goes(self, step: Any, what: str) -> None:
        """Run a step of the shutdown that waits on the store, giving it up if the store's
        session is lost meanwhile (a ZooKeeper that went away answers nothing)."""
        self._store_lost.clear()
        if not self.store_reachable:  # lost since the caller looked
            self._store_lost.set()
        task = asyncio.ensure_future(step)
        lost = asyncio.ensure_future(self._store_lost.wait())
        await asyncio.wait((task, lost), return_when=asyncio.FIRST_COMPLETED)
        lost.cancel()
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            log.warning("[KafkaServer id=%s] %s given up: the metadata store is unreachable",
                        self.broker_id, what)  # fmt: skip
        else:
            task.result()

    async def _store_step(self, step: Any, what: str) -> None:
        """A step of the shutdown that needs the metadata store, given at most
        STORE_STEP_AT_SHUTDOWN_S: the broker stops without it rather than never."""
        try:
            await asyncio.wait_for(step, STORE_STEP_AT_SHUTDOWN_S)
        except TimeoutError:
            log.warning("[KafkaServer id=%s] %s: no answer from the metadata store within "
                        "%.0f s; going on without it", self.broker_id, what,
                        STORE_STEP_AT_SHUTDOWN_S)  # fmt: skip
