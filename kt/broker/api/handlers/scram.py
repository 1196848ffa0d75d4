"""DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554), as Kafka's
ZkAdminManager answers them (the store's side in kt.broker.admin.scram_credentials), and
the SASL requests that reach the request handlers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kt.broker.admin.scram_credentials import CODES
from kt.protocol import messages as m

if TYPE_CHECKING:
    from kt.broker.broker_services import BrokerServices


async def describe_user_scram_credentials(
    broker: BrokerServices, header: Any, request: Any, ctx: Any
) -> Any:
    users = [u.name for u in request.users] if request.users else None
    results = await broker.store.call(broker.scram_credentials.describe, users)
    R = m.DescribeUserScramCredentialsResponse
    return R(error_code=0, error_message=None, results=[
        R.DescribeUserScramCredentialsResult(
            user=user, error_code=CODES[error], error_message=message,
            credential_infos=[R.CredentialInfo(mechanism=mech, iterations=iterations)
                              for mech, iterations in infos],
        ) for user, error, message, infos in results
    ])  # fmt: skip


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
    results = await broker.store.call(
        broker.scram_credentials.alter, request.upsertions, request.deletions
    )
    R = m.AlterUserScramCredentialsResponse
    return R(results=[
        R.AlterUserScramCredentialsResult(user=user, error_code=CODES[error],
                                          error_message=message)
        for user, error, message in results
    ])  # fmt: skip
