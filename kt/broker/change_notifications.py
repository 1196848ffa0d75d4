"""Sequential change notifications in the metadata store (Kafka's
ZkNodeChangeNotificationListener).

Whoever changes a config, a quota, a credential or an ACL also creates a sequential node
`<directory>/<prefix><n>` naming what changed. Every broker watches the directory and,
for each notification newer than the last it read, reads what it names (on a store
thread) and applies it (on the event loop). Used for /config/changes
(DynamicConfigManager) and the two ACL change directories (AclAuthorizer).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from kt.metadata import znodes as z
from kt.metadata.store import MetadataStoreError, NoNodeError

log = logging.getLogger(__name__)

T = TypeVar("T")


class ChangeNotificationListener(Generic[T]):
    """Invariant: `last_seen` is the sequence number of the newest notification read (or
    there before `begin`); each notification is read once, in order, one reader at a time.

    `read(data)` turns a notification's data into what `apply` takes, on a store thread
    (a NoNodeError skips it; any other error is logged and skips it); `apply(items)` gets
    the items of one pass, in order, on the event loop."""

    def __init__(
        self, directory: str, prefix: str, session: Callable[[], Any],
        store_call: Callable[..., Awaitable[Any]], store_open: Callable[[], bool],
        read: Callable[[bytes], T], apply: Callable[[list[T]], None],
    ) -> None:  # fmt: skip
        self.directory, self.prefix = directory, prefix
        self._session, self._store_call, self._store_open = session, store_call, store_open
        self._read, self._apply = read, apply
        self.last_seen = -1
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reading = threading.Lock()  # one reader at a time: notifications stay in order

    def begin(self, loop: asyncio.AbstractEventLoop) -> None:
        """Watch the directory from now on (a store call): the notifications already there
        are reflected in what the caller reads next."""
        self._loop = loop
        children = self._session().get_children(self.directory, self._on_watch)
        self.last_seen = max((self._sequence(c) for c in children), default=-1)

    def process_soon(self) -> None:
        """Read the new notifications (on a store thread), then apply them (here)."""
        if not self._store_open():
            return
        future = asyncio.ensure_future(self._store_call(self._read_changes))
        future.add_done_callback(self._apply_read)

    def _on_watch(self, _event: Any) -> None:
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self.process_soon)

    def _read_changes(self) -> list[T]:
        """What the notifications newer than the last seen name (watching again)."""
        items = []
        with self._reading:
            session = self._session()
            try:
                children = session.get_children(self.directory, self._on_watch)
            except MetadataStoreError:  # the session closed during shutdown, or expired
                return []
            for child in sorted(children, key=self._sequence):
                sequence = self._sequence(child)
                if sequence <= self.last_seen:
                    continue
                self.last_seen = sequence
                try:
                    data, _ = session.get(f"{self.directory}/{child}")
                    items.append(self._read(data))
                except NoNodeError:
                    continue
                except Exception as e:
                    log.warning("Ignoring the change notification %s/%s: %s: %s",
                                self.directory, child, type(e).__name__, e)  # fmt: skip
        return items

    def _apply_read(self, future: asyncio.Future) -> None:
        if future.cancelled() or future.exception() is not None:
            return  # the broker is stopping
        self._apply(future.result())

    def _sequence(self, child: str) -> int:
        try:
            return z.sequence_number(child, self.prefix)
        except ValueError:  # not a notification of ours: never read
            return -1
