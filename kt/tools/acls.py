"""`kt acls` (kafka-acls.sh, AclCommand with --bootstrap-server): ACLs added, removed and
listed through the admin API, with AclCommand's conveniences (--producer, --consumer,
--idempotent) and its output: "Adding ACLs for resource `ResourcePattern(...)`:" and
"Current ACLs for resource `...`:" blocks, one tab-led `(principal=..., host=...,
operation=..., permissionType=...)` line per ACL. Kafka prints a resource's ACLs in hash
order; kt sorts them."""

from __future__ import annotations

from dataclasses import dataclass

from kt.client.admin import AdminClient
from kt.security import acls as a

TYPE_WORDS = {a.TOPIC: "TOPIC", a.GROUP: "GROUP", a.CLUSTER: "CLUSTER",
              a.TRANSACTIONAL_ID: "TRANSACTIONAL_ID", 6: "DELEGATION_TOKEN", 7: "USER",
              a.ANY: "ANY"}  # fmt: skip
PATTERN_WORDS = {v: k for k, v in a.PATTERN_TYPES.items()}
OPERATION_WORDS = {v: k for k, v in a.OPERATIONS.items()}
PERMISSION_WORDS = {v: k for k, v in a.PERMISSIONS.items()}


NO_RESOURCE = (
    "You must provide at least one resource: --topic <topic> or --cluster or "
    "--group <group> or --transactional-id <id>"
)


class AclCommandError(Exception):
    """Bad options: the message, exit 1."""


@dataclass(frozen=True)
class Options:
    topics: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    cluster: bool = False
    transactional_ids: tuple[str, ...] = ()
    pattern_type: str | None = None
    allow_principals: tuple[str, ...] = ()
    deny_principals: tuple[str, ...] = ()
    allow_hosts: tuple[str, ...] = ()
    deny_hosts: tuple[str, ...] = ()
    operations: tuple[str, ...] = ()
    producer: bool = False
    consumer: bool = False
    idempotent: bool = False
    principals: tuple[str, ...] = ()  # --principal, for --list


def pattern_text(p: a.ResourcePattern) -> str:
    return (f"ResourcePattern(resourceType={TYPE_WORDS[p.resource_type]}, name={p.name}, "
            f"patternType={PATTERN_WORDS[p.pattern_type]})")  # fmt: skip


def filter_text(resource_type: int, name: str | None, pattern_type: int) -> str:
    return (f"ResourcePatternFilter(resourceType={TYPE_WORDS[resource_type]}, "
            f"name={name}, patternType={PATTERN_WORDS[pattern_type]})")  # fmt: skip


def entry_text(e: a.AccessControlEntry) -> str:
    return (f"(principal={e.principal}, host={e.host}, operation={OPERATION_WORDS[e.operation]}, "
            f"permissionType={PERMISSION_WORDS[e.permission]})")  # fmt: skip


def _block(title: str, entries: list[a.AccessControlEntry]) -> list[str]:
    """`title`: then the entries, as AclCommand's `$Newline ${...mkString} $Newline`."""
    body = "\n".join("\t" + entry_text(e) for e in sorted(entries, key=entry_text))
    return f"{title}: \n {body} \n".split("\n")


def _resources(o: Options, pattern_type: int) -> list[tuple[int, str, int]]:
    """(type, name, pattern type) of each resource the options name."""
    out = [(a.TOPIC, t, pattern_type) for t in o.topics]
    out += [(a.GROUP, g, pattern_type) for g in o.groups]
    out += [(a.TRANSACTIONAL_ID, t, pattern_type) for t in o.transactional_ids]
    if o.cluster:
        out.append((a.CLUSTER, a.CLUSTER_NAME, pattern_type))
    return out


def _operation(name: str) -> int:
    key = name.strip().upper().replace("-", "_")
    aliases = {"IDEMPOTENTWRITE": "IDEMPOTENT_WRITE", "CLUSTERACTION": "CLUSTER_ACTION",
               "DESCRIBECONFIGS": "DESCRIBE_CONFIGS", "ALTERCONFIGS": "ALTER_CONFIGS"}  # fmt: skip
    key = aliases.get(key, key)
    if key not in a.OPERATIONS or key in ("ANY", "UNKNOWN"):
        raise AclCommandError(f"Unknown operation: {name}")
    return a.OPERATIONS[key]


def _entries(o: Options, operations: list[int]) -> list[a.AccessControlEntry]:
    """AclCommand.getAcl: every principal x host x operation; hosts default to `*`."""
    out = []
    for principals, hosts, permission in ((o.allow_principals, o.allow_hosts, a.ALLOW),
                                          (o.deny_principals, o.deny_hosts, a.DENY)):  # fmt: skip
        for principal in principals:
            for host in hosts or ("*",):
                for operation in operations:
                    out.append(a.AccessControlEntry(principal, host, operation, permission))
    return out


def resource_acls(o: Options, pattern_type: int) -> dict[tuple, list[a.AccessControlEntry]]:
    """AclCommand.getResourceFilterToAcls: what --add adds (and --remove removes)."""
    found: dict[tuple, list[a.AccessControlEntry]] = {}
    resources = _resources(o, pattern_type)
    if not o.producer and not o.consumer:
        operations = [_operation(x) for x in o.operations] or [a.ALL]
        for resource in resources:
            found[resource] = _entries(o, operations)
    if o.producer:
        for resource in resources:
            if resource[0] == a.TOPIC:
                found[resource] = _entries(o, [a.WRITE, a.DESCRIBE, a.CREATE])
            elif resource[0] == a.TRANSACTIONAL_ID:
                found[resource] = _entries(o, [a.WRITE, a.DESCRIBE])
        if o.idempotent:
            found[(a.CLUSTER, a.CLUSTER_NAME, a.LITERAL)] = _entries(o, [a.IDEMPOTENT_WRITE])
    if o.consumer:
        for resource in resources:
            if resource[0] == a.TOPIC:
                found[resource] = _entries(o, [a.READ, a.DESCRIBE]) + found.get(resource, [])
            elif resource[0] == a.GROUP:
                found[resource] = _entries(o, [a.READ])
    return found


def add(admin: AdminClient, o: Options) -> list[str]:
    pattern_type = a.PATTERN_TYPES[(o.pattern_type or "LITERAL").upper()]
    if pattern_type not in (a.LITERAL, a.PREFIXED):
        word = PATTERN_WORDS[pattern_type]
        raise AclCommandError(
            f"A '--resource-pattern-type' value of '{word}' is not valid when adding acls."
        )
    found = resource_acls(o, pattern_type)
    if not found:
        raise AclCommandError(NO_RESOURCE)
    if any(not entries for entries in found.values()):
        raise AclCommandError("You must specify one of: --allow-principal, --deny-principal "
                              "when trying to add ACLs.")  # fmt: skip
    lines = []
    for (kind, name, pattern), entries in found.items():
        resource = a.ResourcePattern(kind, name, pattern)
        lines += _block(f"Adding ACLs for resource `{pattern_text(resource)}`", entries)
        admin.create_acls([(resource, e) for e in entries])
    return lines


def remove(admin: AdminClient, o: Options) -> list[str]:
    pattern_type = a.PATTERN_TYPES[(o.pattern_type or "LITERAL").upper()]
    found = resource_acls(o, pattern_type)
    if not found:
        raise AclCommandError(NO_RESOURCE)
    for (kind, name, pattern), entries in found.items():
        filters = [a.AclBindingFilter(kind, name, pattern)] if not entries else [
            a.AclBindingFilter(kind, name, pattern, e.principal, e.host, e.operation,
                               e.permission) for e in entries]  # fmt: skip
        admin.delete_acls(filters)
    return []


def list_acls(admin: AdminClient, o: Options) -> list[str]:
    pattern_type = a.PATTERN_TYPES[(o.pattern_type or "ANY").upper()]
    resources = _resources(o, pattern_type)
    filters = [a.AclBindingFilter(kind, name, pattern) for kind, name, pattern in resources] or [
        a.AclBindingFilter()]  # fmt: skip
    by_pattern: dict[a.ResourcePattern, set[a.AccessControlEntry]] = {}
    for binding_filter in filters:
        for pattern, entry in admin.describe_acls(binding_filter):
            by_pattern.setdefault(pattern, set()).add(entry)
    lines = []
    groups = [(None, by_pattern)]
    if o.principals:
        groups = [(p, {k: {e for e in v if e.principal == p} for k, v in by_pattern.items()})
                  for p in o.principals]  # fmt: skip
    for principal, resources_acls in groups:
        if principal is not None:
            lines.append(f"ACLs for principal `{principal}`")
        for pattern in sorted(resources_acls, key=pattern_text):
            entries = list(resources_acls[pattern])
            if entries:
                lines += _block(f"Current ACLs for resource `{pattern_text(pattern)}`", entries)
    return lines
