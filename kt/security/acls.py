"""ACLs as Kafka models and stores them (KIP-11, KIP-290; AclAuthorizer's semantics).

A binding is a resource pattern (type, name, LITERAL or PREFIXED) and an entry
(principal, host, operation, ALLOW or DENY). Stored in ZooKeeper as Kafka does: literal
patterns at `/kafka-acl/<Type>/<name>`, prefixed ones at
`/kafka-acl-extended/prefixed/<Type>/<name>`, each znode `{"version":1,"acls":[...]}`;
a change writes a sequential notification to `/kafka-acl-changes` (`Type:name`) or
`/kafka-acl-extended-changes` (JSON). The codes are the wire's (ResourceType,
PatternType, AclOperation, AclPermissionType).

Authorization (AclAuthorizer.authorize): a super user may do anything; otherwise the
ACLs of every pattern matching the resource count (its literal name, the literal `*`,
prefixes of its name): a DENY for the principal (or `User:*`) and host (or `*`) and the
operation (or All) refuses; else an ALLOW does, where READ, WRITE, DELETE and ALTER imply
DESCRIBE and ALTER_CONFIGS implies DESCRIBE_CONFIGS; with no ACL at all on the resource,
`allow.everyone.if.no.acl.found` decides.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

# Wire codes.
RESOURCE_TYPES = {"UNKNOWN": 0, "ANY": 1, "TOPIC": 2, "GROUP": 3, "CLUSTER": 4,
                  "TRANSACTIONAL_ID": 5, "DELEGATION_TOKEN": 6, "USER": 7}  # fmt: skip
PATTERN_TYPES = {"UNKNOWN": 0, "ANY": 1, "MATCH": 2, "LITERAL": 3, "PREFIXED": 4}
OPERATIONS = {"UNKNOWN": 0, "ANY": 1, "ALL": 2, "READ": 3, "WRITE": 4, "CREATE": 5, "DELETE": 6,
              "ALTER": 7, "DESCRIBE": 8, "CLUSTER_ACTION": 9, "DESCRIBE_CONFIGS": 10,
              "ALTER_CONFIGS": 11, "IDEMPOTENT_WRITE": 12, "CREATE_TOKENS": 13,
              "DESCRIBE_TOKENS": 14}  # fmt: skip
PERMISSIONS = {"UNKNOWN": 0, "ANY": 1, "DENY": 2, "ALLOW": 3}

# Names in the znodes (SecurityUtils.resourceTypeName / operationName / permissionTypeName).
TYPE_NAMES = {2: "Topic", 3: "Group", 4: "Cluster", 5: "TransactionalId",
              6: "DelegationToken", 7: "User"}  # fmt: skip
OPERATION_NAMES = {2: "All", 3: "Read", 4: "Write", 5: "Create", 6: "Delete", 7: "Alter",
                   8: "Describe", 9: "ClusterAction", 10: "DescribeConfigs",
                   11: "AlterConfigs", 12: "IdempotentWrite", 13: "CreateTokens",
                   14: "DescribeTokens"}  # fmt: skip
PERMISSION_NAMES = {2: "Deny", 3: "Allow"}
TYPE_CODES = {v: k for k, v in TYPE_NAMES.items()}
OPERATION_CODES = {v: k for k, v in OPERATION_NAMES.items()}
PERMISSION_CODES = {v: k for k, v in PERMISSION_NAMES.items()}

TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID = 2, 3, 4, 5
LITERAL, PREFIXED, ANY, MATCH = 3, 4, 1, 2
ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 2, 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12
DENY, ALLOW = 2, 3
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"
# What an ALLOW of the key implies (AclAuthorizer's implied operations).
IMPLIED_BY = {DESCRIBE: {DESCRIBE, READ, WRITE, DELETE, ALTER},
              DESCRIBE_CONFIGS: {DESCRIBE_CONFIGS, ALTER_CONFIGS}}  # fmt: skip

LITERAL_ROOT = "/kafka-acl"
EXTENDED_ROOT = "/kafka-acl-extended"
LITERAL_CHANGES = "/kafka-acl-changes"
EXTENDED_CHANGES = "/kafka-acl-extended-changes"
CHANGE_PREFIX = "acl_changes_"


@dataclass(frozen=True, order=True)
class ResourcePattern:
    resource_type: int
    name: str
    pattern_type: int

    def path(self) -> str:
        type_name = TYPE_NAMES[self.resource_type]
        if self.pattern_type == LITERAL:
            return f"{LITERAL_ROOT}/{type_name}/{self.name}"
        return f"{EXTENDED_ROOT}/prefixed/{type_name}/{self.name}"

    def change_notification(self) -> tuple[str, bytes]:
        """(the directory, the data) of this pattern's change notification."""
        if self.pattern_type == LITERAL:
            return LITERAL_CHANGES, f"{TYPE_NAMES[self.resource_type]}:{self.name}".encode()
        event = {"version": 1, "resourceType": TYPE_NAMES[self.resource_type],
                 "name": self.name, "patternType": "PREFIXED"}  # fmt: skip
        return EXTENDED_CHANGES, json.dumps(event).encode()


def decode_change(directory: str, data: bytes) -> ResourcePattern:
    text = data.decode()
    if directory == LITERAL_CHANGES:
        type_name, _, name = text.partition(":")
        return ResourcePattern(TYPE_CODES[type_name], name, LITERAL)
    event = json.loads(text)
    return ResourcePattern(TYPE_CODES[event["resourceType"]], event["name"],
                           PATTERN_TYPES[event["patternType"]])  # fmt: skip


@dataclass(frozen=True, order=True)
class AccessControlEntry:
    principal: str
    host: str
    operation: int
    permission: int

    def to_json(self) -> dict[str, str]:
        return {"principal": self.principal, "permissionType": PERMISSION_NAMES[self.permission],
                "operation": OPERATION_NAMES[self.operation], "host": self.host}  # fmt: skip

    @classmethod
    def from_json(cls, value: dict[str, str]) -> AccessControlEntry:
        return cls(value["principal"], value["host"], OPERATION_CODES[value["operation"]],
                   PERMISSION_CODES[value["permissionType"]])  # fmt: skip


def encode_acls(entries: Iterable[AccessControlEntry]) -> bytes:
    return json.dumps({"version": 1, "acls": [e.to_json() for e in sorted(entries)]}).encode()


def decode_acls(data: bytes) -> set[AccessControlEntry]:
    if not data:
        return set()
    return {AccessControlEntry.from_json(v) for v in json.loads(data).get("acls", [])}


@dataclass(frozen=True)
class AclBindingFilter:
    """A Describe/DeleteAcls filter: None (or ANY) matches anything; pattern MATCH
    matches every pattern that applies to the name (the literal, `*`, its prefixes)."""

    resource_type: int = ANY
    name: str | None = None
    pattern_type: int = ANY
    principal: str | None = None
    host: str | None = None
    operation: int = ANY
    permission: int = ANY

    def matches(self, pattern: ResourcePattern, entry: AccessControlEntry) -> bool:
        if self.resource_type != ANY and self.resource_type != pattern.resource_type:
            return False
        if not self._matches_pattern(pattern):
            return False
        return (
            (self.principal is None or self.principal == entry.principal)
            and (self.host is None or self.host == entry.host)
            and (self.operation == ANY or self.operation == entry.operation)
            and (self.permission == ANY or self.permission == entry.permission)
        )

    def _matches_pattern(self, pattern: ResourcePattern) -> bool:
        if self.pattern_type == MATCH:
            if self.name is None:
                return True
            if pattern.pattern_type == LITERAL:
                return pattern.name in (self.name, WILDCARD)
            return self.name.startswith(pattern.name)
        if self.pattern_type not in (ANY, pattern.pattern_type):
            return False
        return self.name is None or self.name == pattern.name


def matching_entries(
    acls: dict[ResourcePattern, set[AccessControlEntry]], resource_type: int, name: str
) -> list[AccessControlEntry]:
    """Every entry of the patterns that apply to (resource_type, name)."""
    found = []
    for candidate in (ResourcePattern(resource_type, name, LITERAL),
                      ResourcePattern(resource_type, WILDCARD, LITERAL)):  # fmt: skip
        found.extend(acls.get(candidate, ()))
    for pattern, entries in acls.items():
        if (pattern.pattern_type == PREFIXED and pattern.resource_type == resource_type
                and name.startswith(pattern.name)):  # fmt: skip
            found.extend(entries)
    return found


def authorized(
    entries: list[AccessControlEntry], principal: str, host: str, operation: int,
    allow_if_none: bool,
) -> bool:  # fmt: skip
    """AclAuthorizer.authorize over the entries of the matching patterns."""
    if not entries:
        return allow_if_none

    def applies(entry: AccessControlEntry) -> bool:
        return entry.principal in (principal, WILDCARD_PRINCIPAL) and entry.host in (host, WILDCARD)

    for entry in entries:
        if entry.permission == DENY and applies(entry) and entry.operation in (operation, ALL):
            return False
    allowed_by = IMPLIED_BY.get(operation, {operation})
    return any(
        entry.permission == ALLOW and applies(entry)
        and (entry.operation == ALL or entry.operation in allowed_by)
        for entry in entries
    )  # fmt: skip
