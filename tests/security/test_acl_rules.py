"""AclAuthorizer's rules (kt/security/acls.py): patterns that match a resource, deny over
allow, implied operations, wildcards, allow.everyone.if.no.acl.found; Kafka's znode
JSON and change notifications; Describe/DeleteAcls filters."""

from __future__ import annotations

import json

from kt.security import acls as a

ALICE = "User:alice"


def entry(operation: int, permission: int = a.ALLOW, principal: str = ALICE,
          host: str = "*") -> a.AccessControlEntry:  # fmt: skip
    return a.AccessControlEntry(principal, host, operation, permission)


def check(acls: dict, name: str, operation: int, principal: str = ALICE,
          host: str = "10.0.0.1", allow_if_none: bool = False) -> bool:  # fmt: skip
    entries = a.matching_entries(acls, a.TOPIC, name)
    return a.authorized(entries, principal, host, operation, allow_if_none)


def test_literal_wildcard_and_prefixed_patterns_match() -> None:
    acls = {
        a.ResourcePattern(a.TOPIC, "orders", a.LITERAL): {entry(a.WRITE)},
        a.ResourcePattern(a.TOPIC, "logs-", a.PREFIXED): {entry(a.READ)},
        a.ResourcePattern(a.TOPIC, "*", a.LITERAL): {entry(a.DESCRIBE, principal="User:bob")},
    }
    assert check(acls, "orders", a.WRITE) and not check(acls, "orders", a.READ)
    assert check(acls, "logs-app", a.READ) and not check(acls, "log", a.READ)
    assert check(acls, "anything", a.DESCRIBE, principal="User:bob")


def test_deny_wins_and_implied_operations() -> None:
    acls = {a.ResourcePattern(a.TOPIC, "*", a.LITERAL): {entry(a.ALL)},
            a.ResourcePattern(a.TOPIC, "secret", a.LITERAL): {entry(a.READ, a.DENY)}}  # fmt: skip
    assert check(acls, "secret", a.WRITE) and not check(acls, "secret", a.READ)
    implied = {a.ResourcePattern(a.TOPIC, "t", a.LITERAL): {entry(a.WRITE),
                                                            entry(a.ALTER_CONFIGS)}}  # fmt: skip
    assert check(implied, "t", a.DESCRIBE) and check(implied, "t", a.DESCRIBE_CONFIGS)
    assert not check(implied, "t", a.READ)
    hosts = {a.ResourcePattern(a.TOPIC, "t", a.LITERAL): {entry(a.READ, host="10.0.0.2")}}
    assert not check(hosts, "t", a.READ) and check(hosts, "t", a.READ, host="10.0.0.2")
    everyone = {a.ResourcePattern(a.TOPIC, "t", a.LITERAL): {entry(a.READ, principal="User:*")}}
    assert check(everyone, "t", a.READ, principal="User:carol")


def test_no_acl_at_all() -> None:
    """allow.everyone.if.no.acl.found decides only where a resource has no ACL at all."""
    acls = {a.ResourcePattern(a.TOPIC, "t", a.LITERAL): {entry(a.READ, principal="User:bob")}}
    assert not check({}, "t", a.READ) and check({}, "t", a.READ, allow_if_none=True)
    assert not check(acls, "t", a.READ, allow_if_none=True)  # ACLs exist: not for alice


def test_znodes_and_notifications_in_kafkas_format() -> None:
    pattern = a.ResourcePattern(a.GROUP, "g-", a.PREFIXED)
    assert pattern.path() == "/kafka-acl-extended/prefixed/Group/g-"
    assert a.ResourcePattern(a.TOPIC, "t", a.LITERAL).path() == "/kafka-acl/Topic/t"
    data = a.encode_acls({entry(a.READ)})
    stored = {"principal": ALICE, "permissionType": "Allow", "operation": "Read", "host": "*"}
    assert json.loads(data) == {"version": 1, "acls": [stored]}
    assert a.decode_acls(data) == {entry(a.READ)}
    for p in (pattern, a.ResourcePattern(a.CLUSTER, "kafka-cluster", a.LITERAL)):
        directory, note = p.change_notification()
        assert a.decode_change(directory, note) == p
    assert a.ResourcePattern(a.TOPIC, "t", a.LITERAL).change_notification() == (
        "/kafka-acl-changes", b"Topic:t")  # fmt: skip


def test_filters() -> None:
    literal = a.ResourcePattern(a.TOPIC, "logs-app", a.LITERAL)
    prefixed = a.ResourcePattern(a.TOPIC, "logs-", a.PREFIXED)
    other = a.ResourcePattern(a.TOPIC, "other", a.LITERAL)
    match = a.AclBindingFilter(a.TOPIC, "logs-app", a.MATCH)
    assert [match.matches(p, entry(a.READ)) for p in (literal, prefixed, other)] == [
        True, True, False]  # fmt: skip
    exact = a.AclBindingFilter(a.ANY, "logs-", a.PREFIXED, principal=ALICE, operation=a.READ)
    assert exact.matches(prefixed, entry(a.READ)) and not exact.matches(prefixed, entry(a.WRITE))
