"""DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554), as Kafka's
ZkAdminManager answers them: credentials live in `/config/users/<sanitized user>` under
the mechanism's name, in ScramCredentialUtils' text; the client sends the salt and the
salted password, and the broker derives the stored and server keys (the password never
travels). A user whose request is invalid in any way gets one result with the first
error, and nothing of that user's is changed."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from kt.metadata.znodes import desanitize, sanitize
from kt.protocol import messages as m
from kt.security.scram import BY_ID, MAX_ITERATIONS, ScramCredential

if TYPE_CHECKING:
    from kt.broker.broker_services import BrokerServices

EMPTY_USER = "Username must not be empty"
UNKNOWN_MECHANISM = "Unknown SCRAM mechanism"
CODES = {"NONE": 0, "UNSUPPORTED_SASL_MECHANISM": 33, "RESOURCE_NOT_FOUND": 91,
         "DUPLICATE_RESOURCE": 92, "UNACCEPTABLE_CREDENTIAL": 93}  # fmt: skip


async def describe_user_scram_credentials(
    broker: BrokerServices, header: Any, request: Any, ctx: Any
) -> Any:
    users = [u.name for u in request.users] if request.users else None
    results = await broker.store.call(describe, broker, users)
    R = m.DescribeUserScramCredentialsResponse
    return R(error_code=0, error_message=None, results=[
        R.DescribeUserScramCredentialsResult(
            user=user, error_code=CODES[error], error_message=message,
            credential_infos=[R.CredentialInfo(mechanism=mech, iterations=iterations)
                              for mech, iterations in infos],
        ) for user, error, message, infos in results
    ])  # fmt: skip


def _infos(config: dict[str, str]) -> list[tuple[int, int]]:
    return [(mech_id, ScramCredential.from_text(config[mech.name]).iterations)
            for mech_id, mech in sorted(BY_ID.items()) if mech.name in config]  # fmt: skip


def describe(broker: BrokerServices, users: list[str] | None) -> list[tuple]:
    """(user, error, message, [(mechanism id, iterations)]) per user (store reads)."""
    zk = broker.zk
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


async def sasl_handshake(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    """A SaslHandshake that reached the request handlers: on a listener without SASL, or
    (a re-authentication aside) after authentication; Kafka answers ILLEGAL_SASL_STATE."""
    return m.SaslHandshakeResponse(error_code=34, mechanisms=[])


async def sasl_authenticate(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    return m.SaslAuthenticateResponse(
        error_code=34, error_message="SaslAuthenticate request received after successful "
        "authentication",
    )  # fmt: skip


async def alter_user_scram_credentials(
    broker: BrokerServices, header: Any, request: Any, ctx: Any
) -> Any:
    results = await broker.store.call(alter, broker, request.upsertions, request.deletions)
    R = m.AlterUserScramCredentialsResponse
    return R(results=[
        R.AlterUserScramCredentialsResult(user=user, error_code=CODES[error],
                                          error_message=message)
        for user, error, message in results
    ])  # fmt: skip


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


def alter(broker: BrokerServices, upsertions: list[Any], deletions: list[Any]) -> list[tuple]:
    """(user, error, message) per user (store reads and writes)."""
    illegal = _illegal(upsertions, deletions)
    results = [(user, error, message) for user, (error, message) in illegal.items()]
    pairs = [(x.name, x.mechanism) for x in (*upsertions, *deletions) if x.name not in illegal]
    duplicated = {user for (user, _), n in Counter(pairs).items() if n > 1}
    for user in sorted(duplicated):
        message = "A user credential cannot be altered twice in the same request"
        results.append((user, "DUPLICATE_RESOURCE", message))
    zk = broker.zk
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
