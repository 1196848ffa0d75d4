"""The broker's authorizer (Kafka's AclAuthorizer, `authorizer.class.name`
kafka.security.authorizer.AclAuthorizer): every broker holds all ACLs in memory, loaded
from the metadata store at start-up and kept current by the ACL change notifications any
broker writes; CreateAcls and DeleteAcls change the znodes with conditional writes
(retried on a concurrent change) and then notify. The rules are kt/security/acls.py's.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import TYPE_CHECKING, Any

from kt.broker.change_notifications import ChangeNotificationListener
from kt.metadata.store import BadVersionError, NodeExistsError, NoNodeError
from kt.security import acls as a

if TYPE_CHECKING:
    from kt.broker.store_executor import StoreExecutor
    from kt.metadata.kafka_zk_client import KafkaZkClient

log = logging.getLogger(__name__)

AUTHORIZER_CLASSES = ("kafka.security.authorizer.AclAuthorizer",
                      "kafka.security.auth.SimpleAclAuthorizer")  # fmt: skip


class AclAuthorizer:
    """Invariant: `acls` holds, for every pattern with at least one ACL in the store as of
    the last notification read, its entries."""

    def __init__(
        self, zk: KafkaZkClient, store: StoreExecutor, super_users: set[str], allow_if_none: bool
    ) -> None:
        self.zk = zk
        self.store = store
        self.super_users = super_users
        self.allow_if_none = allow_if_none
        self.acls: dict[a.ResourcePattern, set[a.AccessControlEntry]] = {}
        self._notifications = [
            ChangeNotificationListener(
                directory, a.CHANGE_PREFIX, lambda: zk.session, store.call, lambda: store.open,
                functools.partial(self._read_change, directory),
                self._apply,
            )
            for directory in (a.LITERAL_CHANGES, a.EXTENDED_CHANGES)
        ]  # fmt: skip

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

    def process_soon(self) -> None:
        """Read the ACL change notifications (on a store thread) and watch them again: a
        new store session begins with no watch of the old one."""
        for notifications in self._notifications:
            notifications.process_soon()

    async def startup(self) -> None:
        self.acls = await self.store.call(self._load_all, asyncio.get_running_loop())

    def _load_all(
        self, loop: asyncio.AbstractEventLoop
    ) -> dict[a.ResourcePattern, set[a.AccessControlEntry]]:
        session = self.zk.session
        for path in (a.LITERAL_ROOT, a.EXTENDED_ROOT, a.LITERAL_CHANGES, a.EXTENDED_CHANGES):
            session.ensure_path(path)
        for notifications in self._notifications:  # what is already there is in what we read
            notifications.begin(loop)
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
            data, stat = self.zk.session.get(pattern.path())
        except NoNodeError:
            return set(), -1
        return a.decode_acls(data), stat.version

    def _read_change(
        self, directory: str, data: bytes
    ) -> tuple[a.ResourcePattern, set[a.AccessControlEntry]]:
        """The pattern a notification names, with its entries as they are now."""
        pattern = a.decode_change(directory, data)
        return pattern, self._read(pattern)[0]

    def _apply(self, changes: list[tuple[a.ResourcePattern, set[a.AccessControlEntry]]]) -> None:
        for pattern, entries in changes:
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
            now = await self.store.call(self._update, pattern, entries, set())
            self._set(pattern, now)

    async def delete(self, binding_filter: a.AclBindingFilter) -> list[tuple]:
        """Remove the bindings the filter matches; the removed ones."""
        doomed = self.bindings(binding_filter)
        by_pattern: dict[a.ResourcePattern, set[a.AccessControlEntry]] = {}
        for pattern, entry in doomed:
            by_pattern.setdefault(pattern, set()).add(entry)
        for pattern, entries in by_pattern.items():
            now = await self.store.call(self._update, pattern, set(), entries)
            self._set(pattern, now)
        return doomed

    def _update(self, pattern: a.ResourcePattern, add: set, remove: set) -> set:
        """Conditionally rewrite the pattern's znode (again on a concurrent change), then
        notify every broker; what the znode holds afterwards."""
        session = self.zk.session
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
