"""SCRAM credentials in the metadata store (KIP-554, ZkAdminManager's
describeUserScramCredentials and alterUserScramCredentials): they live in
`/config/users/<sanitized user>` under the mechanism's name, in ScramCredentialUtils'
text; the client sends the salt and the salted password, and the broker derives the
stored and server keys (the password never travels). A user whose request is invalid in
any way gets one result with the first error, and nothing of that user's is changed. The
functions read and write the store: run them on the broker's store threads."""

from __future__ import annotations

from collections import Counter
from typing import Any

from kt.metadata.kafka_zk_client import KafkaZkClient
from kt.metadata.znodes import desanitize, sanitize
from kt.security.scram import BY_ID, MAX_ITERATIONS, ScramCredential

EMPTY_USER = "Username must not be empty"
UNKNOWN_MECHANISM = "Unknown SCRAM mechanism"
CODES = {"NONE": 0, "UNSUPPORTED_SASL_MECHANISM": 33, "RESOURCE_NOT_FOUND": 91,
         "DUPLICATE_RESOURCE": 92, "UNACCEPTABLE_CREDENTIAL": 93}  # fmt: skip


def _infos(config: dict[str, str]) -> list[tuple[int, int]]:
    return [(mech_id, ScramCredential.from_text(config[mech.name]).iterations)
            for mech_id, mech in sorted(BY_ID.items()) if mech.name in config]  # fmt: skip


def describe(zk: KafkaZkClient, users: list[str] | None) -> list[tuple]:
    """(user, error, message, [(mechanism id, iterations)]) per user (store reads)."""
    if not users:
        found = []
        for name in zk.entity_names("users"):
            infos = _infos(zk.get_entity_config("users", name))
            if infos:
                found.append((desanitize(name), "NONE", None, infos))
        return sorted(found, key=lambda r: r[0])
    counts = Counter(users)
    results = []
    for user in dict.fromkeys(users):
        if not user:
            results.append((user, "RESOURCE_NOT_FOUND", EMPTY_USER, []))
        elif counts[user] > 1:
            results.append((user, "DUPLICATE_RESOURCE", "Cannot describe SCRAM credentials for "
                            f"the same user twice in a single request: {user}", []))  # fmt: skip
        else:
            infos = _infos(zk.get_entity_config("users", sanitize(user)))
            if infos:
                results.append((user, "NONE", None, infos))
            else:
                results.append((user, "RESOURCE_NOT_FOUND", "Attempt to describe a user "
                                f"credential that does not exist: {user}", []))  # fmt: skip
    return results


def _illegal(upsertions: list[Any], deletions: list[Any]) -> dict[str, tuple[str, str]]:
    """user -> (error, message) for empty names, unknown mechanisms, bad iterations."""
    illegal: dict[str, tuple[str, str]] = {}
    for d in deletions:
        if not d.name:
            illegal[d.name] = ("UNACCEPTABLE_CREDENTIAL", EMPTY_USER)
        elif d.mechanism not in BY_ID:
            illegal[d.name] = ("UNSUPPORTED_SASL_MECHANISM", UNKNOWN_MECHANISM)
    for u in upsertions:
        if not u.name:
            illegal[u.name] = ("UNACCEPTABLE_CREDENTIAL", EMPTY_USER)
        elif u.mechanism not in BY_ID:
            illegal[u.name] = ("UNSUPPORTED_SASL_MECHANISM", UNKNOWN_MECHANISM)
        elif u.iterations > MAX_ITERATIONS:
            illegal[u.name] = ("UNACCEPTABLE_CREDENTIAL", "Too many iterations")
        elif u.iterations < BY_ID[u.mechanism].min_iterations:
            illegal[u.name] = ("UNACCEPTABLE_CREDENTIAL", "Too few iterations")
    return illegal


def alter(zk: KafkaZkClient, upsertions: list[Any], deletions: list[Any]) -> list[tuple]:
    """(user, error, message) per user (store reads and writes)."""
    illegal = _illegal(upsertions, deletions)
    results = [(user, error, message) for user, (error, message) in illegal.items()]
    pairs = [(x.name, x.mechanism) for x in (*upsertions, *deletions) if x.name not in illegal]
    duplicated = {user for (user, _), n in Counter(pairs).items() if n > 1}
    for user in sorted(duplicated):
        message = "A user credential cannot be altered twice in the same request"
        results.append((user, "DUPLICATE_RESOURCE", message))
    configs = {user: zk.get_entity_config("users", sanitize(user))
               for user, _ in pairs if user not in duplicated}  # fmt: skip
    missing = {d.name for d in deletions if d.name in configs
               and BY_ID[d.mechanism].name not in configs[d.name]}  # fmt: skip
    for user in sorted(missing):
        results.append((user, "RESOURCE_NOT_FOUND",
                        "Attempt to delete a user credential that does not exist"))  # fmt: skip
    for user, config in configs.items():
        if user in missing:
            continue
        for d in deletions:
            if d.name == user:
                config.pop(BY_ID[d.mechanism].name, None)
        for u in upsertions:
            if u.name == user:
                mechanism = BY_ID[u.mechanism]
                credential = ScramCredential.from_salted_password(
                    mechanism, bytes(u.salt), bytes(u.salted_password), u.iterations
                )
                config[mechanism.name] = credential.to_text()
        zk.change_entity_config("users", sanitize(user), config)
        results.append((user, "NONE", None))
    return results


class ScramCredentialAdmin:
    """The SCRAM credentials of one cluster's store, as the request handlers ask for them
    (on the broker's store threads)."""

    def __init__(self, zk: KafkaZkClient) -> None:
        self.zk = zk

    def describe(self, users: list[str] | None) -> list[tuple]:
        return describe(self.zk, users)

    def alter(self, upsertions: list[Any], deletions: list[Any]) -> list[tuple]:
        return alter(self.zk, upsertions, deletions)
