"""The in-memory znode tree of the embedded store (ZooKeeper's DataTree).

The tree applies a list of operations atomically (a multi; a single call is a multi of
one) and reports what happened in three forms:
- results, one per operation, as the Session API returns them;
- watch events, (EventType, path) in the order ZooKeeper triggers them: create ->
  CREATED path, CHILD parent; delete -> DELETED path, CHILD parent; set -> CHANGED path;
- journal primitives, the persistent effects to replay after a restart:
    ("create", path, data)       a persistent node born at the record's zxid and time
    ("set", path, data)          a persistent node's data, version + 1
    ("delete", path)             a persistent node removed
    ("cversion", path, n)        a parent's cversion after an ephemeral child came or went
  Ephemeral nodes are never journaled, but their coming and going moves the parent's
  cversion, and with it the sequence numbers handed out under that parent.

The tree knows nothing of locks, sessions' watches or files: the embedded store holds
its lock around every call. Each write calls `race_window()` between its checks and its
change; it does nothing, and the concurrency tests make a thread yield there, so that a
store without its lock shows its races (tests/metadata/test_concurrency.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from kt.metadata.store import (
    ANY_VERSION,
    SEQUENCE_FORMAT,
    BadArgumentsError,
    BadVersionError,
    CheckOp,
    CreateOp,
    DeleteOp,
    EventType,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    Op,
    RolledBackError,
    RuntimeInconsistency,
    SetDataOp,
    Stat,
    ZookeeperError,
    join_path,
    parent_of,
    validate_path,
)

Event = tuple[EventType, str]
Primitive = tuple[Any, ...]


def race_window() -> None:
    """The point between a write's checks and its change (see the module docstring)."""


class DataNode:
    """One znode. Invariant: `children` holds exactly the names of existing child nodes."""

    __slots__ = (
        "data",
        "czxid",
        "mzxid",
        "ctime",
        "mtime",
        "version",
        "cversion",
        "pzxid",
        "ephemeral_owner",
        "children",
    )

    def __init__(self, data: bytes, zxid: int, time_ms: int, ephemeral_owner: int = 0) -> None:
        self.data = data
        self.czxid = self.mzxid = self.pzxid = zxid
        self.ctime = self.mtime = time_ms
        self.version = 0
        self.cversion = 0
        self.ephemeral_owner = ephemeral_owner
        self.children: set[str] = set()

    def stat(self) -> Stat:
        return Stat(
            self.czxid, self.mzxid, self.ctime, self.mtime, self.version, self.cversion, 0,
            self.ephemeral_owner, len(self.data), len(self.children), self.pzxid,
        )  # fmt: skip


class _Change:
    """The state of one multi being applied: its zxid, time, and what to undo or report."""

    def __init__(self, zxid: int, time_ms: int, session_id: int) -> None:
        self.zxid = zxid
        self.time_ms = time_ms
        self.session_id = session_id
        self.undo: list[Callable[[], None]] = []
        self.events: list[Event] = []
        self.primitives: list[Primitive] = []


class DataTree:
    """All znodes, by path, and the last zxid applied.

    Invariants: "/" always exists; every node's parent exists and is persistent;
    `ephemerals[s]` is exactly the set of paths owned by session s; a failed multi
    leaves the tree (and `zxid`) as it was.
    """

    def __init__(self) -> None:
        self.nodes: dict[str, DataNode] = {"/": DataNode(b"", 0, 0)}
        self.zxid = 0
        self.ephemerals: dict[int, set[str]] = {}

    # -- reads -----------------------------------------------------------------------

    def get_node(self, path: str) -> DataNode | None:
        validate_path(path)
        return self.nodes.get(path)

    def children(self, path: str) -> list[str]:
        node = self.get_node(path)
        if node is None:
            raise NoNodeError(path=path)
        return sorted(node.children)

    def subtree_post_order(self, path: str) -> list[str]:
        """`path` and all its descendants, children before parents."""
        out: list[str] = []
        stack = [(path, False)]
        while stack:
            current, expanded = stack.pop()
            if expanded:
                out.append(current)
                continue
            stack.append((current, True))
            for name in sorted(self.nodes[current].children, reverse=True):
                stack.append((join_path(current, name), False))
        return out

    def persistent_nodes(self) -> Iterator[tuple[str, DataNode]]:
        """Persistent nodes, parents before children (the snapshot order)."""
        stack = ["/"]
        while stack:
            path = stack.pop()
            node = self.nodes[path]
            yield path, node
            for name in sorted(node.children, reverse=True):
                child = join_path(path, name)
                if not self.nodes[child].ephemeral_owner:
                    stack.append(child)

    # -- writes ----------------------------------------------------------------------

    def apply(
        self, ops: Sequence[Op], session_id: int, time_ms: int, is_multi: bool = False
    ) -> tuple[list[Any], list[Event], list[Primitive]]:
        """Apply `ops` all or nothing; return (results, events, journal primitives)."""
        change = _Change(self.zxid + 1, time_ms, session_id)
        results: list[Any] = []
        for i, op in enumerate(ops):
            try:
                results.append(self._apply_one(op, change))
            except ZookeeperError as error:
                for undo in reversed(change.undo):
                    undo()
                if is_multi:
                    after = len(ops) - i - 1
                    error.results = [RolledBackError()] * i + [error]
                    error.results += [RuntimeInconsistency()] * after
                raise
        if change.events:
            self.zxid = change.zxid
        return results, change.events, change.primitives

    def _apply_one(self, op: Op, change: _Change) -> Any:
        if isinstance(op, CreateOp):
            return self._create(op, change)
        if isinstance(op, SetDataOp):
            return self._set(op, change)
        if isinstance(op, DeleteOp):
            self._delete(op, change)
            return True
        if isinstance(op, CheckOp):
            node = self._existing(op.path)
            _check_version(node, op.version, op.path)
            return True
        raise TypeError(f"not a metadata operation: {op!r}")

    def _existing(self, path: str) -> DataNode:
        node = self.get_node(path)
        if node is None:
            raise NoNodeError(path=path)
        return node

    def _create(self, op: CreateOp, change: _Change) -> str:
        validate_path(op.path, op.sequential)
        if op.path == "/":
            raise NodeExistsError(path="/")
        parent_path = parent_of(op.path)
        parent = self.nodes.get(parent_path)
        if parent is None:
            raise NoNodeError(path=op.path)
        if parent.ephemeral_owner:
            raise NoChildrenForEphemeralsError(path=op.path)
        path = op.path + SEQUENCE_FORMAT % parent.cversion if op.sequential else op.path
        if path in self.nodes:
            raise NodeExistsError(path=path)
        race_window()
        owner = change.session_id if op.ephemeral else 0
        self._add_node(path, DataNode(op.data, change.zxid, change.time_ms, owner), change)
        if owner:
            self.ephemerals.setdefault(owner, set()).add(path)
            change.undo.append(lambda: self.ephemerals[owner].discard(path))
            change.primitives.append(("cversion", parent_path, parent.cversion))
        else:
            change.primitives.append(("create", path, op.data))
        change.events += [(EventType.CREATED, path), (EventType.CHILD, parent_path)]
        return path

    def _set(self, op: SetDataOp, change: _Change) -> Stat:
        node = self._existing(op.path)
        _check_version(node, op.version, op.path)
        saved = (node.data, node.version, node.mzxid, node.mtime)
        race_window()

        def undo() -> None:
            node.data, node.version, node.mzxid, node.mtime = saved

        change.undo.append(undo)
        self._set_node(node, op.data, change.zxid, change.time_ms)
        if not node.ephemeral_owner:
            change.primitives.append(("set", op.path, op.data))
        change.events.append((EventType.CHANGED, op.path))
        return node.stat()

    def _delete(self, op: DeleteOp, change: _Change) -> None:
        if op.path == "/":
            raise BadArgumentsError("cannot delete /", "/")
        node = self._existing(op.path)
        _check_version(node, op.version, op.path)
        if node.children:
            raise NotEmptyError(path=op.path)
        race_window()
        parent_path = parent_of(op.path)
        self._remove_node(op.path, change)
        owner = node.ephemeral_owner
        if owner:
            self.ephemerals[owner].discard(op.path)
            change.undo.append(lambda: self.ephemerals[owner].add(op.path))
            cversion = self.nodes[parent_path].cversion
            change.primitives.append(("cversion", parent_path, cversion))
        else:
            change.primitives.append(("delete", op.path))
        change.events += [(EventType.DELETED, op.path), (EventType.CHILD, parent_path)]

    # -- the primitive mutations, shared by live writes and journal replay -------------

    def _add_node(self, path: str, node: DataNode, change: _Change | None) -> None:
        parent = self.nodes[parent_of(path)]
        saved = (parent.cversion, parent.pzxid)
        name = path.rsplit("/", 1)[1]
        self.nodes[path] = node
        parent.children.add(name)
        parent.cversion += 1
        parent.pzxid = node.czxid
        if change is not None:

            def undo() -> None:
                del self.nodes[path]
                parent.children.discard(name)
                parent.cversion, parent.pzxid = saved

            change.undo.append(undo)

    def _remove_node(self, path: str, change: _Change | None) -> None:
        node = self.nodes.pop(path)
        parent = self.nodes[parent_of(path)]
        saved = (parent.cversion, parent.pzxid)
        name = path.rsplit("/", 1)[1]
        parent.children.discard(name)
        parent.cversion += 1
        parent.pzxid = change.zxid if change is not None else parent.pzxid
        if change is not None:

            def undo() -> None:
                self.nodes[path] = node
                parent.children.add(name)
                parent.cversion, parent.pzxid = saved

            change.undo.append(undo)

    @staticmethod
    def _set_node(node: DataNode, data: bytes, zxid: int, time_ms: int) -> None:
        node.data = data
        node.version += 1
        node.mzxid = zxid
        node.mtime = time_ms

    def replay(self, zxid: int, time_ms: int, primitives: Sequence[Primitive]) -> None:
        """Re-apply one journal record's primitives (persistent effects only)."""
        for prim in primitives:
            kind, path = prim[0], prim[1]
            if kind == "create":
                self._add_node(path, DataNode(prim[2], zxid, time_ms), None)
            elif kind == "set":
                self._set_node(self.nodes[path], prim[2], zxid, time_ms)
            elif kind == "delete":
                self._remove_node(path, None)
                self.nodes[parent_of(path)].pzxid = zxid
            elif kind == "cversion":
                parent = self.nodes[path]
                parent.cversion, parent.pzxid = prim[2], zxid
            else:
                raise ValueError(f"unknown journal primitive {kind!r}")
        self.zxid = zxid

    def restore(self, path: str, node: DataNode) -> None:
        """Put back a node read from a snapshot; its parent is already restored."""
        if path == "/":
            node.children = self.nodes["/"].children
            self.nodes["/"] = node
            return
        self.nodes[path] = node
        self.nodes[parent_of(path)].children.add(path.rsplit("/", 1)[1])


def _check_version(node: DataNode, version: int, path: str) -> None:
    if version != ANY_VERSION and version != node.version:
        raise BadVersionError(f"{path}: version {node.version}, expected {version}", path)
