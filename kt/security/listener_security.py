"""A broker's listeners' security, as KafkaConfig reads it (a part of KafkaConfig): each
TLS listener's context and each SASL listener's mechanisms, built when the configuration
is read, and how this broker connects to other brokers' listeners (TLS in client mode,
its SASL identity for sasl.mechanism.inter.broker.protocol)."""

from __future__ import annotations

import logging
import ssl
from typing import TYPE_CHECKING, Any

from kt.endpoints import require
from kt.errors import InvalidConfigError

if TYPE_CHECKING:
    from kt.security.sasl import SaslListenerConfig
    from kt.security.sasl_client import ClientSasl
    from kt.security.ssl_factory import ClientTls

log = logging.getLogger(__name__)


class ListenerSecurity:
    """Mixed into KafkaConfig: reads its `originals`, `listener_config` and values."""

    originals: dict[str, str]
    listener_config: Any

    def _read_security(self) -> None:
        self._client_tls: dict[str, ClientTls] = {}
        self._server_tls = {
            e.listener_name: self._build_server_tls(e.listener_name)
            for e in self.listener_config.bound if e.security_protocol in ("SSL", "SASL_SSL")
        }  # fmt: skip
        self._sasl = {
            e.listener_name: self._build_sasl(e.listener_name)
            for e in self.listener_config.bound
            if e.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")
        }
        for name in {self.listener_config.inter_broker, self.listener_config.controller_listener}:
            self.client_security(name)  # the identity brokers present to each other, now

    def listener_protocol(self, listener_name: str) -> str:
        """The security protocol of one of this broker's listeners."""
        for endpoint in (*self.listener_config.bound, *self.listener_config.advertised):
            if endpoint.listener_name == listener_name:
                return endpoint.security_protocol
        raise InvalidConfigError(f"no listener named {listener_name}")

    def server_tls(self, listener_name: str) -> ssl.SSLContext | None:
        """The TLS context of a listener whose protocol is SSL or SASL_SSL, else None."""
        return self._server_tls.get(listener_name)

    def sasl_config(self, listener_name: str) -> SaslListenerConfig | None:
        """The SASL mechanisms and JAAS options of a SASL listener, else None."""
        return self._sasl.get(listener_name)

    def _build_sasl(self, listener_name: str) -> SaslListenerConfig:
        from kt.security.sasl import listener_sasl_config
        from kt.security.ssl_factory import listener_lookup

        return listener_sasl_config(listener_lookup(self.originals, listener_name), listener_name)

    def _build_server_tls(self, listener_name: str) -> ssl.SSLContext:
        from kt.security.ssl_factory import listener_lookup, sasl_ssl_lookup, server_context

        if self.listener_protocol(listener_name) != "SASL_SSL":
            return server_context(listener_lookup(self.originals, listener_name))
        prefixed = f"listener.name.{listener_name.lower()}.ssl.client.auth"
        broker_wide = (self.originals.get("ssl.client.auth") or "none").strip().lower()
        if prefixed not in self.originals and broker_wide != "none":
            log.warning("Broker configuration 'ssl.client.auth' is applied only to SSL "
                        "listeners. Listener-prefixed configuration can be used to enable "
                        "SSL client authentication for SASL_SSL listeners.")  # fmt: skip
        return server_context(sasl_ssl_lookup(self.originals, listener_name))

    def client_security(self, listener_name: str) -> dict[str, Any]:
        """How this broker connects to other brokers' `listener_name` listener:
        AsyncBrokerConnection's `tls` and `sasl`."""
        return {"tls": self.client_tls(listener_name), "sasl": self.client_sasl(listener_name)}

    def client_sasl(self, listener_name: str) -> ClientSasl | None:
        """The identity this broker authenticates with on another broker's SASL listener:
        sasl.mechanism.inter.broker.protocol, and the username and password (or
        OAUTHBEARER subject) of that mechanism's JAAS configuration on the listener."""
        sasl = self.sasl_config(listener_name)
        if sasl is None:
            return None
        from kt.security.sasl_client import sasl_from_jaas

        value = self["sasl.mechanism.inter.broker.protocol"]  # type: ignore[index]
        mechanism = str(value).strip().upper()
        key = f"listener.name.{listener_name.lower()}.{mechanism.lower()}.sasl.jaas.config"
        require(
            mechanism in sasl.mechanisms,
            "sasl.mechanism.inter.broker.protocol must be included in sasl.enabled.mechanisms "
            "when SASL is used for inter-broker communication",
        )
        jaas = sasl.jaas.get(mechanism)
        if jaas is None:
            raise InvalidConfigError(f"{key}: must name this broker's identity for {mechanism}")
        return sasl_from_jaas(mechanism, jaas, key)

    def client_tls(self, listener_name: str) -> ClientTls | None:
        """How this broker connects to others' `listener_name` listener: the listener's
        ssl.* keys in client mode (its truststore, its keystore for client auth)."""
        if self.listener_protocol(listener_name) not in ("SSL", "SASL_SSL"):
            return None
        if listener_name not in self._client_tls:
            from kt.security.ssl_factory import client_context, listener_lookup

            self._client_tls[listener_name] = client_context(
                listener_lookup(self.originals, listener_name)
            )
        return self._client_tls[listener_name]
