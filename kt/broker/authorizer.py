"""The broker's authorizer (Kafka's AclAuthorizer, `authorizer.class.name`
kafka.security.authorizer.AclAuthorizer): every broker holds all ACLs in memory, loaded
from the metadata store at start-up and kept current by the ACL change notifications any
broker writes; CreateAcls and DeleteAcls change the znodes with conditional writes
(retried on a concurrent change) and then notify. The rules are kt/security/acls.py's.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import TYPE_CHECKING, Any

from kt.metadata.store import BadVersionError, MetadataStoreError, NodeExistsError, NoNodeError
from kt.security import acls as a

if TYPE_CHECKING:
    from kt.broker.server import KafkaServer

log = logging.getLogger(__name__)

AUTHORIZER_CLASSES = ("kafka.security.authorizer.AclAuthorizer",
                      "kafka.security.auth.SimpleAclAuthorizer")  # fmt: skip


class AclAuthorizer:
    """Invariant: `acls` holds, for every pattern with at least one ACL in the store as of
    the last notification read, its entries."""

    def __init__(self, server: KafkaServer, super_users: set[str], allow_if_none: bool) -> None:
        self.server = server
        self.super_users = super_users
        self.allow_if_none = allow_if_none
        self.acls: dict[a.ResourcePattern, set[a.AccessControlEntry]] = {}
        self._last_seen = {a.LITERAL_CHANGES: -1, a.EXTENDED_CHANGES: -1}
        self._reading = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- decisions ------------------------------------------------------------------------

    def authorize(self, ctx: Any, operation: int, resource_type: int, name: str) -> bool:
        principal = getattr(ctx, "principal", "User:ANONYMOUS")
        if principal in self.super_users:
            return True
        entries = a.matching_entries(self.acls, resource_type, name)
        allowed = a.authorized(entries, principal, ctx.client_host, operation,
                               self.allow_if_none)  # fmt: skip
        if not allowed:
            log.debug("Principal = %s is Denied operation = %s from host = %s on resource = "
                     "%s:%s", principal, a.OPERATION_NAMES.get(operation), ctx.client_host,
                     a.TYPE_NAMES.get(resource_type), name)  # fmt: skip
        return allowed

    def authorize_cluster(self, ctx: Any, operation: int) -> bool:
        return self.authorize(ctx, operation, a.CLUSTER, a.CLUSTER_NAME)

    def may_write_a_topic(self, ctx: Any) -> bool:
        """Some ACL lets the principal WRITE some topic (authorizeByResourceType, which
        Kafka 3.x accepts for an idempotent producer's InitProducerId, KIP-679)."""
        principal = getattr(ctx, "principal", "User:ANONYMOUS")
        if principal in self.super_users:
            return True
        for pattern, entries in self.acls.items():
            if pattern.resource_type != a.TOPIC:
                continue
            for entry in entries:
                if a.authorized([entry], principal, ctx.client_host, a.WRITE, False):
                    return True
        return False

    def bindings(self, binding_filter: a.AclBindingFilter) -> list[tuple]:
        return sorted((pattern, entry) for pattern, entries in self.acls.items()
                      for entry in entries if binding_filter.matches(pattern, entry))  # fmt: skip

    # -- loading and change notifications ---------------------------------------------

    async def startup(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.acls = await self.server.store_call(self._load_all)

    def _load_all(self) -> dict[a.ResourcePattern, set[a.AccessControlEntry]]:
        session = self.server.zk.session
        for path in (a.LITERAL_ROOT, a.EXTENDED_ROOT, a.LITERAL_CHANGES, a.EXTENDED_CHANGES):
            session.ensure_path(path)
        for directory in self._last_seen:  # what is already there is in what we read
            children = session.get_children(directory, self._on_watch(directory))
            self._last_seen[directory] = max((_sequence(c) for c in children), default=-1)
        found = {}
        roots = [(a.LITERAL_ROOT, a.LITERAL), (f"{a.EXTENDED_ROOT}/prefixed", a.PREFIXED)]
        for root, pattern_type in roots:
            try:
                type_names = session.get_children(root)
            except NoNodeError:
                continue
            for type_name in type_names:
                if type_name not in a.TYPE_CODES:
                    continue
                for name in session.get_children(f"{root}/{type_name}"):
                    pattern = a.ResourcePattern(a.TYPE_CODES[type_name], name, pattern_type)
                    entries = self._read(pattern)[0]
                    if entries:
                        found[pattern] = entries
        return found

    def _read(self, pattern: a.ResourcePattern) -> tuple[set[a.AccessControlEntry], int]:
        try:
            data, stat = self.server.zk.session.get(pattern.path())
        except NoNodeError:
            return set(), -1
        return a.decode_acls(data), stat.version

    def _on_watch(self, directory: str) -> Any:
        def fire(_event: Any) -> None:
            if self._loop is not None and not self._loop.is_closed():
                self._loop.call_soon_threadsafe(self._process_soon, directory)

        return fire

    def _process_soon(self, directory: str) -> None:
        if not self.server.store_calls_open:
            return
        future = asyncio.ensure_future(self.server.store_call(self._read_changes, directory))
        future.add_done_callback(self._apply)

    def _read_changes(self, directory: str) -> dict[a.ResourcePattern, set]:
        """The patterns named by notifications newer than the last seen, as they are now."""
        changed = {}
        with self._reading:
            session = self.server.zk.session
            try:
                children = session.get_children(directory, self._on_watch(directory))
            except MetadataStoreError:
                return {}
            for child in sorted(children, key=_sequence):
                if _sequence(child) <= self._last_seen[directory]:
                    continue
                self._last_seen[directory] = _sequence(child)
                try:
                    data, _ = session.get(f"{directory}/{child}")
                    pattern = a.decode_change(directory, data)
                except NoNodeError:
                    continue
                except (ValueError, KeyError) as e:
                    log.warning("Ignoring the ACL change notification %s: %s", child, e)
                    continue
                changed[pattern] = self._read(pattern)[0]
        return changed

    def _apply(self, future: asyncio.Future) -> None:
        if future.cancelled() or future.exception() is not None:
            return
        for pattern, entries in future.result().items():
            self._set(pattern, entries)

    def _set(self, pattern: a.ResourcePattern, entries: set[a.AccessControlEntry]) -> None:
        if entries:
            self.acls[pattern] = set(entries)
        else:
            self.acls.pop(pattern, None)

    # -- changes ------------------------------------------------------------------------

    async def create(self, bindings: list[tuple[a.ResourcePattern, a.AccessControlEntry]]) -> None:
        by_pattern: dict[a.ResourcePattern, set[a.AccessControlEntry]] = {}
        for pattern, entry in bindings:
            by_pattern.setdefault(pattern, set()).add(entry)
        for pattern, entries in by_pattern.items():
            now = await self.server.store_call(self._update, pattern, entries, set())
            self._set(pattern, now)

    async def delete(self, binding_filter: a.AclBindingFilter) -> list[tuple]:
        """Remove the bindings the filter matches; the removed ones."""
        doomed = self.bindings(binding_filter)
        by_pattern: dict[a.ResourcePattern, set[a.AccessControlEntry]] = {}
        for pattern, entry in doomed:
            by_pattern.setdefault(pattern, set()).add(entry)
        for pattern, entries in by_pattern.items():
            now = await self.server.store_call(self._update, pattern, set(), entries)
            self._set(pattern, now)
        return doomed

    def _update(self, pattern: a.ResourcePattern, add: set, remove: set) -> set:
        """Conditionally rewrite the pattern's znode (again on a concurrent change), then
        notify every broker; what the znode holds afterwards."""
        session = self.server.zk.session
        while True:
            current, version = self._read(pattern)
            new = (current | add) - remove
            if new == current:
                return current
            try:
                if version < 0:
                    session.create(pattern.path(), a.encode_acls(new), make_parents=True)
                elif new:
                    session.set(pattern.path(), a.encode_acls(new), version)
                else:
                    session.delete(pattern.path(), version)
            except (BadVersionError, NodeExistsError, NoNodeError):
                continue
            directory, data = pattern.change_notification()
            session.create(f"{directory}/{a.CHANGE_PREFIX}", data, sequential=True,
                           make_parents=True)  # fmt: skip
            return new


def _sequence(child: str) -> int:
    try:
        return int(child.rsplit("_", 1)[-1])
    except ValueError:
        return -1
