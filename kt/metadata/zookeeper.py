"""The ZooKeeper backend of the metadata store: a real ensemble through kazoo.

Chosen when `zookeeper.connect` is set. Each session is a KazooClient of its own (one
ZooKeeper session per broker, as each Kafka broker has), and every call maps 1:1 onto
kazoo's (see store.py): kazoo's exceptions become the store's, its ZnodeStat a Stat, its
WatchedEvent ours. A chroot in the connect string (`host:2181/kafka`) is created if it
is missing, as Kafka creates it, and is then transparent.

kazoo reconnects on its own after a connection loss; after a session expiry it opens a
new session, and the listeners hear LOST then CONNECTED: the broker re-registers. Its
reconnect delay is capped at a second (kazoo's default grows to 60 s, and a broker came
back minutes after its ZooKeeper had), as Kafka's ZooKeeper client tries the next server
within a second; each change of state is one log line. SASL to ZooKeeper and the ACLs
of zookeeper.set.acl are Kafka's (kt.metadata.zookeeper_security).
"""

from __future__ import annotations

import logging
import os
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from kazoo import exceptions as kx
from kazoo.client import KazooClient
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KazooState

from kt.metadata import store as s
from kt.metadata.zookeeper_security import default_acls, require_sasl_for_acls, zookeeper_sasl
from kt.metrics.meters import Histogram

log = logging.getLogger(__name__)
Acls = Callable[[str], "list[Any] | None"]

# kazoo's exceptions, most specific first (ConnectionClosedError is a SessionExpiredError).
_ERRORS: tuple[tuple[type[Exception], type[s.MetadataStoreError]], ...] = (
    (kx.NoNodeError, s.NoNodeError),
    (kx.NodeExistsError, s.NodeExistsError),
    (kx.BadVersionError, s.BadVersionError),
    (kx.NotEmptyError, s.NotEmptyError),
    (kx.NoChildrenForEphemeralsError, s.NoChildrenForEphemeralsError),
    (kx.BadArgumentsError, s.BadArgumentsError),
    (kx.RolledBackError, s.RolledBackError),
    (kx.RuntimeInconsistency, s.RuntimeInconsistency),
    (kx.ConnectionClosedError, s.ConnectionClosedError),
    (kx.SessionExpiredError, s.SessionExpiredError),
)
_STATES = {
    KazooState.CONNECTED: s.SessionState.CONNECTED,
    KazooState.SUSPENDED: s.SessionState.SUSPENDED,
    KazooState.LOST: s.SessionState.LOST,
}


def _translate(error: Exception, path: str | None = None) -> s.MetadataStoreError:
    for theirs, ours in _ERRORS:
        if isinstance(error, theirs):
            return ours(str(error) or "", path)  # type: ignore[call-arg]
    return s.MetadataStoreError(f"{type(error).__name__}: {error}")


@contextmanager
def _kazoo_errors(path: str | None = None) -> Iterator[None]:
    try:
        yield
    except kx.AuthFailedError:  # the session's SASL login was refused (after CONNECTED)
        raise s.MetadataStoreError(
            "ZooKeeper refused the SASL login (AuthFailedError): check the username and "
            "password of the JAAS Client login"
        ) from None
    except kx.KazooException as e:
        raise _translate(e, path) from e


def _stat(stat: Any) -> s.Stat:
    return s.Stat(
        stat.czxid, stat.mzxid, stat.ctime, stat.mtime, stat.version, stat.cversion,
        stat.aversion, stat.ephemeralOwner, stat.dataLength, stat.numChildren, stat.pzxid,
    )  # fmt: skip


def _watch(callback: s.WatchCallback | None) -> Callable[[Any], Any] | None:
    if callback is None:
        return None

    def fire(event: Any) -> Any:
        return callback(s.WatchedEvent(s.EventType(event.type), event.state, event.path))

    return fire


# Reconnect for ever, after at most a second (jittered): kazoo's default doubles its
# delay up to 60 s.
# (A dict: each client builds a KazooRetry of its own, which keeps its attempts.)
RECONNECT = {"max_tries": -1, "delay": 0.1, "backoff": 2, "max_jitter": 0.2, "max_delay": 1.0}
_STATE_LINES = {
    KazooState.SUSPENDED: "connection to ZooKeeper lost, reconnecting",
    KazooState.LOST: "ZooKeeper session ended",
    KazooState.CONNECTED: "connected to ZooKeeper",
}


# The clients kt is closing itself: their session's end is the expected one.
_CLOSING: weakref.WeakSet[KazooClient] = weakref.WeakSet()


def _log_state(name: str, client: KazooClient, state: Any) -> None:
    """One line per change of the session's state (on kazoo's thread): a warning for a
    lost connection or session, but not for the end of a session kt closed."""
    if state == KazooState.LOST and client in _CLOSING:
        log.info("[ZooKeeperClient %s] ZooKeeper session closed", name)
        return
    level = logging.INFO if state == KazooState.CONNECTED else logging.WARNING
    log.log(level, "[ZooKeeperClient %s] %s", name, _STATE_LINES.get(state, state))


def _stop(client: KazooClient) -> None:
    """End a session kt no longer needs."""
    _CLOSING.add(client)
    try:
        client.stop()
    finally:
        client.close()


def split_connect(connect: str) -> tuple[str, str]:
    """("host:port,host:port", "/chroot" or "") from a zookeeper.connect string."""
    hosts, slash, chroot = connect.partition("/")
    return hosts, (slash + chroot).rstrip("/") if chroot else ""


class ZooKeeperSession(s.Session):
    """One ZooKeeper session (a started KazooClient), chroot applied by kazoo. `acls`
    gives the ACLs of a znode it creates (zookeeper.set.acl), None: kazoo's default."""

    def __init__(
        self, client: KazooClient, name: str, connect: str, acls: Acls | None = None
    ) -> None:
        self._client = client
        self.name = name
        self.connect = connect  # hosts and chroot
        self._acls = acls
        self._listeners: dict[s.StateListener, Callable[[Any], Any]] = {}
        # The broker's ZooKeeperClientMetrics ZooKeeperRequestLatencyMs, once it has one.
        self.request_latency: Histogram | None = None

    @contextmanager
    def _request(self, path: str | None = None) -> Iterator[None]:
        """One request to ZooKeeper: its errors as the store's, its latency recorded."""
        start = time.monotonic()
        try:
            with _kazoo_errors(path):
                yield
        finally:
            if self.request_latency is not None:
                self.request_latency.update((time.monotonic() - start) * 1000)

    def _acl(self, path: str) -> list[Any] | None:
        return None if self._acls is None else self._acls(path)

    @property
    def session_id(self) -> int:
        session = self._client.client_id
        return session[0] if session else 0

    @property
    def state(self) -> s.SessionState:
        return _STATES[self._client.state]

    def create(
        self,
        path: str,
        data: bytes = b"",
        ephemeral: bool = False,
        sequential: bool = False,
        make_parents: bool = False,
    ) -> str:
        s.validate_path(path, sequential)
        if make_parents and self._acls is not None:  # each parent its own ACLs
            self.ensure_path(path.rsplit("/", 1)[0] or "/")
            make_parents = False
        with self._request(path):
            return self._client.create(
                path, s.check_data(data), acl=self._acl(path), ephemeral=ephemeral,
                sequence=sequential, makepath=make_parents,
            )  # fmt: skip

    def get(self, path: str, watch: s.WatchCallback | None = None) -> tuple[bytes, s.Stat]:
        with self._request(path):
            data, stat = self._client.get(path, watch=_watch(watch))
        return data or b"", _stat(stat)

    def set(self, path: str, data: bytes, version: int = s.ANY_VERSION) -> s.Stat:
        with self._request(path):
            return _stat(self._client.set(path, s.check_data(data), version))

    def delete(self, path: str, version: int = s.ANY_VERSION, recursive: bool = False) -> None:
        if recursive and version != s.ANY_VERSION:
            raise ValueError("a recursive delete takes no version")
        with self._request(path):
            self._client.delete(path, version=version, recursive=recursive)

    def get_children(self, path: str, watch: s.WatchCallback | None = None) -> list[str]:
        with self._request(path):
            return sorted(self._client.get_children(path, watch=_watch(watch)))

    def exists(self, path: str, watch: s.WatchCallback | None = None) -> s.Stat | None:
        with self._request(path):
            stat = self._client.exists(path, watch=_watch(watch))
        return None if stat is None else _stat(stat)

    def ensure_path(self, path: str) -> None:
        s.validate_path(path)
        with self._request(path):
            if self._acls is None:
                self._client.ensure_path(path)
                return
            partial = ""
            for part in path.strip("/").split("/"):  # Kafka's createRecursive
                partial += "/" + part
                if self._client.exists(partial) is None:
                    try:
                        self._client.create(partial, b"", acl=self._acl(partial))
                    except kx.NodeExistsError:
                        pass

    def multi(self, ops: Sequence[s.Op]) -> list[Any]:
        transaction = self._client.transaction()
        for op in ops:
            if isinstance(op, s.CreateOp):
                transaction.create(op.path, op.data, acl=self._acl(op.path),
                                   ephemeral=op.ephemeral, sequence=op.sequential)  # fmt: skip
            elif isinstance(op, s.SetDataOp):
                transaction.set_data(op.path, op.data, op.version)
            elif isinstance(op, s.DeleteOp):
                transaction.delete(op.path, op.version)
            elif isinstance(op, s.CheckOp):
                transaction.check(op.path, op.version)
            else:
                raise TypeError(f"not a metadata operation: {op!r}")
        with self._request():
            results = transaction.commit()
        if not any(isinstance(r, Exception) for r in results):
            return [_stat(r) if hasattr(r, "czxid") else r for r in results]
        ours = [_translate(r) if isinstance(r, Exception) else r for r in results]
        failed = next(
            e for e in ours
            if isinstance(e, Exception)
            and not isinstance(e, s.RolledBackError | s.RuntimeInconsistency)
        )  # fmt: skip
        failed.results = ours  # type: ignore[attr-defined]
        raise failed

    def add_listener(self, listener: s.StateListener) -> None:
        def hear(state: Any) -> None:
            listener(_STATES[state])

        self._listeners[listener] = hear
        self._client.add_listener(hear)

    def remove_listener(self, listener: s.StateListener) -> None:
        self._client.remove_listener(self._listeners.pop(listener))

    def close(self) -> None:
        _stop(self._client)

    def expire(self) -> None:
        """A second client takes the session over with its id and password and closes it,
        which ends it on the server; this client then meets SESSION_EXPIRED on its
        connection, reports LOST, and kazoo starts a new session."""
        session_id, password = self._client.client_id
        thief = KazooClient(hosts=self.connect, client_id=(session_id, password), timeout=10)
        try:
            thief.start(timeout=10)
        finally:
            thief.stop()
            thief.close()


class ZooKeeperStore(s.MetadataStore):
    """Sessions on one ZooKeeper ensemble, given Kafka's `zookeeper.connect` string."""

    def __init__(
        self, connect: str, *, session_timeout_ms: int = 18_000,
        connection_timeout_ms: int = 18_000, set_acl: bool = False,
        env: Mapping[str, str] = os.environ,
    ) -> None:  # fmt: skip
        """`set_acl`: zookeeper.set.acl; `env`: where KAFKA_OPTS names the JAAS file that
        holds the SASL login (kt.metadata.zookeeper_security)."""
        self.hosts, self.chroot = split_connect(connect)
        self.session_timeout_s = session_timeout_ms / 1000
        self.connection_timeout_s = connection_timeout_ms / 1000
        self.sasl = zookeeper_sasl(env)
        require_sasl_for_acls(set_acl, self.sasl, env)
        self.acls = default_acls if set_acl else None
        if self.chroot:
            with self._client(self.hosts) as root:
                ZooKeeperSession(root, "", self.hosts, self.acls).ensure_path(self.chroot)
        self._sessions: list[ZooKeeperSession] = []

    @contextmanager
    def _client(self, hosts: str) -> Iterator[KazooClient]:
        client = self._start(hosts)
        try:
            yield client
        finally:
            _stop(client)

    def _start(self, hosts: str, name: str = "") -> KazooClient:
        client = KazooClient(hosts=hosts, timeout=self.session_timeout_s,
                             connection_retry=RECONNECT, sasl_options=self.sasl)  # fmt: skip
        client.add_listener(lambda state: _log_state(name or hosts, client, state))
        try:
            client.start(timeout=self.connection_timeout_s)
        except (KazooTimeoutError, kx.AuthFailedError) as e:
            _stop(client)
            what = "authenticate to" if isinstance(e, kx.AuthFailedError) else "connect to"
            raise s.MetadataStoreError(
                f"cannot {what} ZooKeeper at {hosts}: {type(e).__name__} {e}"
            ) from None
        return client

    def session(self, name: str = "") -> ZooKeeperSession:
        connect = self.hosts + self.chroot
        session = ZooKeeperSession(self._start(connect, name), name, connect, self.acls)
        self._sessions.append(session)
        return session

    def close(self) -> None:
        sessions, self._sessions = self._sessions, []
        for session in sessions:
            session.close()
