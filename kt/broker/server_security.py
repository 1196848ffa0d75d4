"""The security parts of a KafkaServer (mixed into it): its authorizer, its SASL
listeners' authenticators and the SCRAM credentials they read, and the client quotas
(reloaded from the store when they change)."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from kt.broker.quota_manager import ip_quotas_from_store, quotas_from_store
from kt.errors import KafkaError
from kt.metadata.store import MetadataStoreError

log = logging.getLogger("kt.broker.server")


class ServerSecurity:
    """Mixed into KafkaServer: uses its config, store, zk, apis and quota managers."""

    config: Any
    zk: Any
    apis: Any
    produce_quota: Any
    fetch_quota: Any
    request_quota: Any
    connection_quotas: Any
    store_call: Callable[..., Any]  # KafkaServer's: a store call on its store threads
    store_executor: Any  # KafkaServer's store threads

    async def reload_quotas(self) -> None:
        """Every client quota from the store (at start-up, and when one changes)."""
        try:
            for manager in (self.produce_quota, self.fetch_quota, self.request_quota):
                manager.update(await self.store_call(quotas_from_store, self.zk, manager.kind))
            self.connection_quotas.update(await self.store_call(ip_quotas_from_store, self.zk))
        except (KafkaError, MetadataStoreError) as e:  # the store is away or closing
            log.warning("Client quotas not reloaded: %s", e)

    async def _start_authorizer(self) -> Any:
        """authorizer.class.name: Kafka's AclAuthorizer, its ACLs loaded, or None."""
        cfg = self.config
        if not cfg["authorizer.class.name"].strip():
            return None
        from kt.broker.authorizer import AclAuthorizer

        supers = {u.strip() for u in (cfg["super.users"] or "").split(";") if u.strip()}
        authorizer = AclAuthorizer(
            self.zk, self.store_executor, supers, cfg["allow.everyone.if.no.acl.found"]
        )
        await authorizer.startup()
        return authorizer

    def _sasl_authenticator(self, listener_name: str) -> Callable[[], Any] | None:
        """A SASL listener's authenticator factory (one authenticator per connection)."""
        sasl = self.config.sasl_config(listener_name)
        if sasl is None:
            return None
        from kt.security.sasl_authenticator import SaslServerAuthenticator

        return functools.partial(SaslServerAuthenticator, sasl, self.apis.handle,
                                 self.scram_credential)  # fmt: skip

    async def scram_credential(self, user: str, mechanism: str) -> Any:
        """A user's SCRAM credential for `mechanism` from `/config/users/<user>`, or None."""
        from kt.metadata.znodes import sanitize
        from kt.security.scram import ScramCredential

        config = await self.store_call(self.zk.get_entity_config, "users", sanitize(user))
        text = config.get(mechanism)
        if text is None:
            return None
        try:
            return ScramCredential.from_text(text)
        except ValueError as e:
            log.warning("Ignoring the %s credential of %s: %s", mechanism, user, e)
            return None
