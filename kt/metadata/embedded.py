"""The embedded metadata store: ZooKeeper's semantics in-process, persisted in a log dir.

One `EmbeddedStore` serves every broker of a process (`kt server-start a b c`, the pytest
cluster fixture); each broker holds its own `EmbeddedSession`, as it would hold its own
ZooKeeper session. The store persists under `<first log dir>/__kt_metadata/` (see
kt.metadata.journal for the files), or nowhere when given no directory.

Threading: every call takes the store's one lock, so calls from the brokers' event loops
and from background threads are serialised, each an atomic step. Watch callbacks and
state listeners never run under that lock: each session owns a callback thread
("kt-metadata-<name>") that runs them one at a time, in the order the changes happened
(events are queued under the lock, in zxid order). A callback may call back into the
store. Like a kazoo client, a session whose callback blocks delays only its own later
callbacks.

Sessions end with `close()` (the broker stopped) or `expire()` (what ZooKeeper does to a
client it lost): either way its ephemeral nodes are deleted at once, firing the other
sessions' watches, and its own watches are dropped without firing. After `expire()` the
session carries on under a new session id, as a kazoo client reconnects: its listeners
hear LOST then CONNECTED, and it must re-create its ephemeral nodes and re-set watches.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kt.metadata.data_tree import DataTree, Event
from kt.metadata.journal import MetadataLog
from kt.metadata.store import (
    ANY_VERSION,
    CheckOp,
    ConnectionClosedError,
    CreateOp,
    DeleteOp,
    EventType,
    MetadataStore,
    MetadataStoreError,
    NoNodeError,
    Op,
    Session,
    SessionState,
    SetDataOp,
    Stat,
    StateListener,
    WatchCallback,
    WatchedEvent,
    check_data,
    parent_of,
    validate_path,
)

log = logging.getLogger(__name__)

METADATA_DIR_NAME = "__kt_metadata"
DEFAULT_COMPACT_BYTES = 4 << 20
_KEEPER_STATE = "CONNECTED"  # the keeper state every delivered WatchedEvent carries


def metadata_dir(log_dir: str | Path) -> Path:
    """Where the embedded store of a broker whose first log dir is `log_dir` lives."""
    return Path(log_dir) / METADATA_DIR_NAME


class EmbeddedStore(MetadataStore):
    """The shared tree, its lock, its journal and the open sessions.

    Invariants: the tree is only read or changed under `_lock`; a write is journaled
    (and fsync'ed when `sync`) before its watches are queued and before the call
    returns; `_sessions` holds exactly the open sessions, by id.
    """

    def __init__(
        self,
        directory: str | Path | None = None,
        *,
        sync: bool = True,
        compact_bytes: int = DEFAULT_COMPACT_BYTES,
    ) -> None:
        self._lock = threading.RLock()
        self._log = MetadataLog(Path(directory), sync) if directory is not None else None
        self._tree = self._log.recover() if self._log is not None else DataTree()
        self._compact_bytes = compact_bytes
        self._sessions: dict[int, EmbeddedSession] = {}
        self.failure: str | None = None  # why the store went offline (an I/O error)
        # Told, on the thread that met it, when an I/O error takes the store offline.
        self.on_failure: Callable[[str], None] | None = None
        # ZooKeeper session ids are 64-bit and never reused; start from the clock.
        self._session_ids = itertools.count((time.time_ns() // 1_000_000) << 12 | 1)
        self._closed = False

    @classmethod
    def in_log_dir(cls, log_dir: str | Path, **options: Any) -> EmbeddedStore:
        return cls(metadata_dir(log_dir), **options)

    def session(self, name: str = "") -> EmbeddedSession:
        with self._lock:
            if self._closed:
                raise ConnectionClosedError("the metadata store is closed")
            session = EmbeddedSession(self, next(self._session_ids), name)
            self._sessions[session.session_id] = session
            return session

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            sessions = list(self._sessions.values())
        for session in sessions:
            session.close()
        with self._lock:
            self._closed = True
            if self._log is None:
                return
            try:
                if self.failure is None:
                    self._log.write_snapshot(self._tree)
            except OSError as e:  # the journal still holds every write
                log.error("metadata snapshot not written at close: %s", e)
            finally:
                self._log.close()

    def __enter__(self) -> EmbeddedStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- called by sessions, under _lock ------------------------------------------------

    def _commit(self, session_id: int, ops: Sequence[Op], is_multi: bool = False) -> list[Any]:
        if self.failure is not None:
            raise ConnectionClosedError(f"the metadata store is offline: {self.failure}")
        now = time.time_ns() // 1_000_000
        results, events, primitives = self._tree.apply(ops, session_id, now, is_multi)
        if self._log is not None and primitives:
            try:
                self._log.append(self._tree.zxid, now, primitives)
                if self._log.journal_bytes > self._compact_bytes:
                    self._log.write_snapshot(self._tree)
            except OSError as e:
                # The tree holds a write that its files do not: it serves nothing more.
                self._fail(e)
                raise MetadataStoreError(f"the metadata store is offline: {e}") from e
        self._trigger(events)
        return results

    def _fail(self, error: OSError) -> None:
        """An I/O error on the store's files: every later read and write is refused, close
        writes no snapshot, and `on_failure` is told (the broker process stops)."""
        self.failure = f"I/O error on {self._log.directory if self._log else 'its files'}: {error}"
        if self.on_failure is not None:
            self.on_failure(self.failure)

    def _trigger(self, events: list[Event]) -> None:
        for session in self._sessions.values():
            session._trigger(events)


class EmbeddedSession(Session):
    """One client of an EmbeddedStore (see the module docstring for threading).

    Invariants: watch tables are only touched under the store's lock; a closed session
    is out of the store's session table and fails every call with ConnectionClosedError.
    """

    def __init__(self, store: EmbeddedStore, session_id: int, name: str) -> None:
        self._store = store
        self._session_id = session_id
        self.name = name or f"session-{session_id:x}"
        self._state = SessionState.CONNECTED
        self._data_watches: dict[str, dict[WatchCallback, None]] = {}
        self._child_watches: dict[str, dict[WatchCallback, None]] = {}
        self._listeners: list[StateListener] = []
        self._callbacks = _CallbackThread(f"kt-metadata-{self.name}")

    @property
    def session_id(self) -> int:
        return self._session_id

    @property
    def state(self) -> SessionState:
        return self._state

    def _open_tree(self) -> DataTree:
        if self._state is SessionState.LOST:
            raise ConnectionClosedError(f"session {self.name} is closed")
        if self._store.failure is not None:
            raise ConnectionClosedError(f"the metadata store is offline: {self._store.failure}")
        return self._store._tree

    # -- reads -----------------------------------------------------------------------

    def get(self, path: str, watch: WatchCallback | None = None) -> tuple[bytes, Stat]:
        with self._store._lock:
            node = self._open_tree().get_node(path)
            if node is None:
                raise NoNodeError(path=path)
            if watch is not None:
                self._data_watches.setdefault(path, {})[watch] = None
            return node.data, node.stat()

    def exists(self, path: str, watch: WatchCallback | None = None) -> Stat | None:
        with self._store._lock:
            node = self._open_tree().get_node(path)
            if watch is not None:
                self._data_watches.setdefault(path, {})[watch] = None
            return node.stat() if node is not None else None

    def get_children(self, path: str, watch: WatchCallback | None = None) -> list[str]:
        with self._store._lock:
            children = self._open_tree().children(path)
            if watch is not None:
                self._child_watches.setdefault(path, {})[watch] = None
            return children

    # -- writes ----------------------------------------------------------------------

    def create(
        self,
        path: str,
        data: bytes = b"",
        ephemeral: bool = False,
        sequential: bool = False,
        make_parents: bool = False,
    ) -> str:
        op = CreateOp(path, check_data(data), ephemeral, sequential)
        with self._store._lock:
            tree = self._open_tree()
            validate_path(path, sequential)
            ops: list[Op] = []
            if make_parents:
                ops = [CreateOp(p) for p in _missing(tree, parent_of(path))]
            return self._store._commit(self._session_id, [*ops, op])[-1]

    def set(self, path: str, data: bytes, version: int = ANY_VERSION) -> Stat:
        op = SetDataOp(path, check_data(data), version)
        with self._store._lock:
            self._open_tree()
            return self._store._commit(self._session_id, [op])[0]

    def delete(self, path: str, version: int = ANY_VERSION, recursive: bool = False) -> None:
        with self._store._lock:
            tree = self._open_tree()
            if not recursive:
                self._store._commit(self._session_id, [DeleteOp(path, version)])
                return
            if version != ANY_VERSION:
                raise ValueError("a recursive delete takes no version")
            if tree.get_node(path) is None:
                return
            ops = [DeleteOp(p) for p in tree.subtree_post_order(path)]
            self._store._commit(self._session_id, ops)

    def ensure_path(self, path: str) -> None:
        with self._store._lock:
            tree = self._open_tree()
            validate_path(path)
            ops = [CreateOp(p) for p in _missing(tree, path)]
            if ops:
                self._store._commit(self._session_id, ops)

    def multi(self, ops: Sequence[Op]) -> list[Any]:
        for op in ops:
            if not isinstance(op, CreateOp | SetDataOp | DeleteOp | CheckOp):
                raise TypeError(f"not a metadata operation: {op!r}")
        with self._store._lock:
            self._open_tree()
            return self._store._commit(self._session_id, list(ops), is_multi=True)

    # -- session life ------------------------------------------------------------------

    def add_listener(self, listener: StateListener) -> None:
        with self._store._lock:
            self._listeners.append(listener)

    def remove_listener(self, listener: StateListener) -> None:
        with self._store._lock:
            self._listeners.remove(listener)

    def close(self) -> None:
        with self._store._lock:
            if self._state is SessionState.LOST:
                return
            self._end_session()
            self._state = SessionState.LOST
            self._tell_listeners(SessionState.LOST)
        self._callbacks.stop()

    def expire(self) -> None:
        """Expire the session as ZooKeeper would, then carry on under a new session id."""
        with self._store._lock:
            self._open_tree()
            self._end_session()
            self._tell_listeners(SessionState.LOST)
            self._session_id = next(self._store._session_ids)
            self._store._sessions[self._session_id] = self
            self._tell_listeners(SessionState.CONNECTED)

    def wait_callbacks(self, timeout: float = 10.0) -> bool:
        """Block until every callback queued so far has run (tests, orderly shutdown)."""
        return self._callbacks.flush(timeout)

    def _end_session(self) -> None:
        store = self._store
        self._data_watches.clear()
        self._child_watches.clear()
        del store._sessions[self._session_id]
        owned = sorted(store._tree.ephemerals.get(self._session_id, ()))
        # One write, as ZooKeeper's closeSession is one transaction (none on a failed store).
        if owned and store.failure is None:
            store._commit(self._session_id, [DeleteOp(path) for path in owned])
        store._tree.ephemerals.pop(self._session_id, None)

    def _tell_listeners(self, state: SessionState) -> None:
        for listener in self._listeners:
            self._callbacks.submit(listener, state)

    def _trigger(self, events: list[Event]) -> None:
        """Queue the callbacks `events` fire, kazoo's way (under the store's lock)."""
        for kind, path in events:
            fired: list[WatchCallback] = []
            if kind is not EventType.CHILD:
                fired += self._data_watches.pop(path, {})
            if kind is EventType.DELETED or kind is EventType.CHILD:
                fired += self._child_watches.pop(path, {})
            if fired:
                event = WatchedEvent(kind, _KEEPER_STATE, path)
                for callback in fired:
                    self._callbacks.submit(callback, event)

    def __repr__(self) -> str:
        return f"EmbeddedSession({self.name!r}, id=0x{self._session_id:x}, {self._state})"


def _missing(tree: DataTree, path: str) -> list[str]:
    """The nodes on `path` (itself included) that do not exist yet, top-down."""
    missing: list[str] = []
    while path != "/" and tree.nodes.get(path) is None:
        missing.append(path)
        path = parent_of(path)
    return missing[::-1]


_STOP = object()


class _CallbackThread:
    """Runs one session's callbacks in submission order on a thread of its own.

    Invariant: a callback's exception is logged and never stops the later callbacks.
    The thread starts with the first callback and ends after `stop()`, once everything
    queued before it has run.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._stopped = False

    def submit(self, callback: Callable[[Any], Any], arg: Any) -> None:
        self._queue.put((callback, arg))
        if self._thread is None:
            with self._start_lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                    self._thread.start()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            callback, arg = item
            try:
                callback(arg)
            except Exception:
                log.exception("%s: metadata callback %r failed", self._name, callback)

    def flush(self, timeout: float) -> bool:
        if self._thread is threading.current_thread():
            raise RuntimeError("wait_callbacks() called from a callback would deadlock")
        if self._stopped:
            return True  # stop() ran everything queued before it
        done = threading.Event()
        self.submit(lambda _arg: done.set(), None)
        return done.wait(timeout)

    def stop(self) -> None:
        with self._start_lock:
            self._stopped = True
            thread = self._thread
            if thread is None:
                return
            self._queue.put(_STOP)
        if thread is not threading.current_thread():
            thread.join(timeout=10.0)
