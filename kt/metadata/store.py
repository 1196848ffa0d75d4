"""The metadata store interface: ZooKeeper's data model and semantics, backend-neutral.

Both backends (embedded, and ZooKeeper through kazoo) implement this module's `Session`,
so the controller and the brokers cannot tell which one they run on. Names follow kazoo
(KazooClient, WatchedEvent, ZnodeStat, kazoo.exceptions), so the kazoo backend maps each
call 1:1:

  Session.create(path, data, ephemeral, sequential, make_parents)
                        -> KazooClient.create(path, value, ephemeral=, sequence=, makepath=)
  Session.get / set / delete / get_children / exists / ensure_path / transaction
                        -> the KazooClient methods of the same names
  Session.multi(ops)    -> TransactionRequest(...).commit(), raising the failing op's error
  Session.add_listener  -> KazooClient.add_listener (states CONNECTED, SUSPENDED, LOST)
  Session.close         -> KazooClient.stop() + close()

ZooKeeper semantics this interface promises (and the tests check on the embedded backend):
- A path is absolute, "/"-separated, with no empty, "." or ".." component; "/" always
  exists. Parents must exist unless `make_parents` (their data is empty).
- Every node carries a Stat: `version` counts sets of its data, `cversion` counts
  creations and deletions of its children, zxids order every write in the store.
- `set`/`delete` with `version` != -1 succeed only if it equals the node's version
  (BadVersionError otherwise): the compare-and-set Kafka's controller relies on.
- A sequential node's name ends with the parent's cversion, zero-padded to 10 digits.
- Ephemeral nodes belong to the session that created them, cannot have children, and are
  deleted when that session closes or expires.
- Watches are one-shot and per session. `get` and `exists` set data watches (`exists`
  also on a missing node: it then fires CREATED); `get_children` sets child watches. A
  data watch fires CHANGED on set and DELETED on delete; a child watch fires CHILD when a
  child is created or deleted and DELETED when the node itself goes. The same callable
  registered twice for the same path and kind fires once. `get`/`get_children` on a
  missing node raise NoNodeError and leave no watch.
- Callbacks run outside the store's locks, one at a time per session, in the order the
  changes happened; a session's callback sees the change that fired it already applied.
- `multi` applies all of its operations or none, later operations seeing earlier ones.
"""

from __future__ import annotations

import enum
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

ANY_VERSION = -1
SEQUENCE_FORMAT = "%010d"

# -- errors: kazoo.exceptions, with ZooKeeper's KeeperException codes --------------------


class MetadataStoreError(Exception):
    """Base of every metadata store error (kazoo's KazooException)."""


class ZookeeperError(MetadataStoreError):
    """An error ZooKeeper itself reports; `code` is KeeperException.Code."""

    code = -1

    def __init__(self, message: str = "", path: str | None = None) -> None:
        super().__init__(message or (f"{type(self).__name__}: {path}" if path else ""))
        self.path = path
        self.results: list[Any] | None = None  # set when raised by a failed multi


class RolledBackError(ZookeeperError):
    """In a failed multi's results: this operation was undone (it would have succeeded)."""

    code = 0


class RuntimeInconsistency(ZookeeperError):
    """In a failed multi's results: this operation was never tried."""

    code = -2


class BadArgumentsError(ZookeeperError):
    code = -8


class NoNodeError(ZookeeperError):
    code = -101


class BadVersionError(ZookeeperError):
    code = -103


class NoChildrenForEphemeralsError(ZookeeperError):
    code = -108


class NodeExistsError(ZookeeperError):
    code = -110


class NotEmptyError(ZookeeperError):
    code = -111


class ControllerMovedError(MetadataStoreError):
    """A controller's write fenced off: /controller_epoch moved on since its election
    (Kafka's ControllerMovedException)."""


class SessionExpiredError(ZookeeperError):
    code = -112


class ConnectionClosedError(SessionExpiredError):
    """The session was closed by its owner; no further calls are possible."""


# -- stats, events, states ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Stat:
    """A znode's metadata at the time of the call (ZooKeeper's Stat, kazoo's ZnodeStat).

    Times are milliseconds since the epoch; `ephemeral_owner` is the owning session id,
    0 for a persistent node; `aversion` is always 0 (kt sets no ACLs).
    """

    czxid: int
    mzxid: int
    ctime: int
    mtime: int
    version: int
    cversion: int
    aversion: int
    ephemeral_owner: int
    data_length: int
    num_children: int
    pzxid: int


class EventType(enum.StrEnum):
    """Watch event types, spelled as kazoo's EventType strings."""

    CREATED = "CREATED"
    DELETED = "DELETED"
    CHANGED = "CHANGED"
    CHILD = "CHILD"
    NONE = "NONE"


class SessionState(enum.StrEnum):
    """Connection states a listener hears, spelled as kazoo's KazooState."""

    CONNECTED = "CONNECTED"
    SUSPENDED = "SUSPENDED"
    LOST = "LOST"


class WatchedEvent(NamedTuple):
    """What a watch callback receives (kazoo's WatchedEvent): type, keeper state, path."""

    type: EventType
    state: str
    path: str


WatchCallback = Callable[[WatchedEvent], Any]
StateListener = Callable[[SessionState], Any]

# -- paths -------------------------------------------------------------------------------

_BAD_CHARS = re.compile("[\u0000-\u001f\u007f-\u009f\ud800-\uf8ff\ufff0-\uffff]")


def validate_path(path: str, sequential: bool = False) -> None:
    """Raise BadArgumentsError unless `path` is a valid znode path (PathUtils.validatePath).

    A sequential create may end in "/": the counter becomes the last component.
    """
    if not isinstance(path, str):
        raise TypeError(f"path must be a str, not {type(path).__name__}")
    check = path + "1" if sequential else path
    if not check.startswith("/"):
        raise BadArgumentsError(f"path must start with /: {path!r}", path)
    if check == "/":
        return
    if check.endswith("/"):
        raise BadArgumentsError(f"path must not end with /: {path!r}", path)
    for part in check[1:].split("/"):
        if part in ("", ".", ".."):
            raise BadArgumentsError(f"invalid path component {part!r} in {path!r}", path)
    if _BAD_CHARS.search(check):
        raise BadArgumentsError(f"invalid character in path {path!r}", path)


def parent_of(path: str) -> str:
    """The parent path: "/a/b" -> "/a", "/a" -> "/"."""
    head = path.rsplit("/", 1)[0]
    return head or "/"


def join_path(parent: str, child: str) -> str:
    return f"/{child}" if parent == "/" else f"{parent}/{child}"


# -- multi operations --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CreateOp:
    path: str
    data: bytes = b""
    ephemeral: bool = False
    sequential: bool = False


@dataclass(frozen=True, slots=True)
class SetDataOp:
    path: str
    data: bytes
    version: int = ANY_VERSION


@dataclass(frozen=True, slots=True)
class DeleteOp:
    path: str
    version: int = ANY_VERSION


@dataclass(frozen=True, slots=True)
class CheckOp:
    path: str
    version: int


Op = CreateOp | SetDataOp | DeleteOp | CheckOp


class Transaction:
    """A builder for one atomic multi (kazoo's TransactionRequest).

    Invariant: committed at most once. `commit()` returns one result per operation (the
    created path, the new Stat, or True); if any operation fails, nothing is applied and
    that operation's error is raised, its `results` holding kazoo's per-operation view
    (RolledBackError before the failure, the error itself, RuntimeInconsistency after).
    As a context manager it commits on a clean exit.
    """

    def __init__(self, session: Session) -> None:
        self._session = session
        self.operations: list[Op] = []
        self.committed = False

    def create(
        self, path: str, data: bytes = b"", ephemeral: bool = False, sequential: bool = False
    ) -> None:
        self.operations.append(CreateOp(path, check_data(data), ephemeral, sequential))

    def set_data(self, path: str, data: bytes, version: int = ANY_VERSION) -> None:
        self.operations.append(SetDataOp(path, check_data(data), version))

    def delete(self, path: str, version: int = ANY_VERSION) -> None:
        self.operations.append(DeleteOp(path, version))

    def check(self, path: str, version: int) -> None:
        self.operations.append(CheckOp(path, version))

    def commit(self) -> list[Any]:
        if self.committed:
            raise ValueError("Transaction already committed")
        self.committed = True
        return self._session.multi(self.operations)

    def __enter__(self) -> Transaction:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.commit()


def check_data(data: bytes) -> bytes:
    """Znode data is bytes, as in kazoo; anything else is a caller's bug."""
    if not isinstance(data, bytes):
        raise TypeError(f"znode data must be bytes, not {type(data).__name__}")
    return data


# -- the interface -----------------------------------------------------------------------


class Session(ABC):
    """One client's handle on the store (a KazooClient): the unit of ephemeral ownership.

    Invariants: `session_id` is unique in the store and never 0; once closed or expired,
    every call raises ConnectionClosedError or SessionExpiredError, the session's
    ephemeral nodes are gone, and its watches never fire again.
    """

    @property
    @abstractmethod
    def session_id(self) -> int: ...

    @property
    @abstractmethod
    def state(self) -> SessionState: ...

    @abstractmethod
    def create(
        self,
        path: str,
        data: bytes = b"",
        ephemeral: bool = False,
        sequential: bool = False,
        make_parents: bool = False,
    ) -> str:
        """Create a node; return its actual path (with the sequence suffix, if any)."""

    @abstractmethod
    def get(self, path: str, watch: WatchCallback | None = None) -> tuple[bytes, Stat]: ...

    @abstractmethod
    def set(self, path: str, data: bytes, version: int = ANY_VERSION) -> Stat: ...

    @abstractmethod
    def delete(self, path: str, version: int = ANY_VERSION, recursive: bool = False) -> None:
        """Delete a node. `recursive` deletes the subtree in one atomic step, and, like
        kazoo and Kafka's deleteRecursive, is a no-op for a missing path; it takes no
        version."""

    @abstractmethod
    def get_children(self, path: str, watch: WatchCallback | None = None) -> list[str]:
        """Children's names, sorted."""

    @abstractmethod
    def exists(self, path: str, watch: WatchCallback | None = None) -> Stat | None: ...

    @abstractmethod
    def ensure_path(self, path: str) -> None:
        """Create `path` and any missing parents (empty data); fine if it exists."""

    @abstractmethod
    def multi(self, ops: Sequence[Op]) -> list[Any]:
        """Apply `ops` atomically; see Transaction for results and errors."""

    @abstractmethod
    def add_listener(self, listener: StateListener) -> None:
        """Call `listener(state)` on session state changes (LOST on close or expiry)."""

    @abstractmethod
    def remove_listener(self, listener: StateListener) -> None: ...

    @abstractmethod
    def close(self) -> None:
        """End the session: its ephemeral nodes go (firing other sessions' watches)."""

    @abstractmethod
    def expire(self) -> None:
        """Have the server expire the session, as it does when the client has been away
        past the session timeout: its ephemeral nodes go, listeners hear LOST, then
        CONNECTED on a new session. For tests of what a broker does then."""

    def transaction(self) -> Transaction:
        return Transaction(self)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class MetadataStore(ABC):
    """A metadata store backend: hands out sessions. Several brokers of one process may
    hold sessions on the same store."""

    @abstractmethod
    def session(self, name: str = "") -> Session:
        """Open a new session; `name` only labels threads and logs."""

    @abstractmethod
    def close(self) -> None:
        """Close every session still open and release the backend."""
