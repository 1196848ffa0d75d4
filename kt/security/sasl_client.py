"""The client side of SASL, for kt's tools and for brokers connecting to each other's
SASL listeners: Kafka's client keys (`security.protocol` SASL_PLAINTEXT or SASL_SSL,
`sasl.mechanism`, `sasl.jaas.config` naming `username`/`password`, or for OAUTHBEARER
`unsecuredLoginStringClaim_sub`) and the token exchange of each mechanism, as a generator
that yields each token and is sent the broker's answer to it."""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass

from kt.errors import InvalidConfigError
from kt.security.sasl import OAUTHBEARER, PLAIN, SUPPORTED, JaasConfig, unsecured_token
from kt.security.scram import MECHANISMS as SCRAM_MECHANISMS
from kt.security.scram import ScramClient

Exchange = Generator[bytes, bytes, None]


@dataclass(frozen=True)
class ClientSasl:
    """One identity and mechanism to authenticate with."""

    mechanism: str
    username: str
    password: str = ""

    def exchange(self) -> Exchange:
        if self.mechanism == PLAIN:
            yield f"\x00{self.username}\x00{self.password}".encode()
        elif self.mechanism == OAUTHBEARER:
            token = unsecured_token(self.username)
            yield f"n,,\x01auth=Bearer {token}\x01\x01".encode()
        else:
            scram = ScramClient(SCRAM_MECHANISMS[self.mechanism], self.username, self.password)
            server_first = yield scram.first_message()
            server_final = yield scram.final_message(server_first)
            scram.verify(server_final)


def sasl_from_jaas(mechanism: str, jaas: JaasConfig, key: str) -> ClientSasl:
    """The identity a JAAS configuration names for `mechanism`."""
    mechanism = mechanism.strip().upper()
    if mechanism not in SUPPORTED:
        raise InvalidConfigError(
            f"sasl.mechanism={mechanism}: kt does not support SASL mechanism {mechanism} "
            f"(only {', '.join(SUPPORTED)})"
        )
    options = jaas.options
    if mechanism == OAUTHBEARER:
        subject = options.get("unsecuredLoginStringClaim_sub")
        if not subject:
            raise InvalidConfigError(f"{key}: OAUTHBEARER needs unsecuredLoginStringClaim_sub")
        return ClientSasl(mechanism, subject)
    if "username" not in options or "password" not in options:
        raise InvalidConfigError(f"{key}: {mechanism} needs username and password options")
    return ClientSasl(mechanism, options["username"], options["password"])


def client_sasl_for(props: Mapping[str, str]) -> ClientSasl | None:
    """A client's SASL from its properties: None unless security.protocol is
    SASL_PLAINTEXT or SASL_SSL."""
    protocol = (props.get("security.protocol") or "PLAINTEXT").strip().upper()
    if protocol not in ("SASL_PLAINTEXT", "SASL_SSL"):
        return None
    jaas_text = props.get("sasl.jaas.config")
    if not jaas_text:
        raise InvalidConfigError(
            f"security.protocol={protocol}: sasl.jaas.config must name the client's identity"
        )
    jaas = JaasConfig.parse(jaas_text, "sasl.jaas.config")
    return sasl_from_jaas(props.get("sasl.mechanism") or "GSSAPI", jaas, "sasl.jaas.config")


def check_handshake(response: object, mechanism: str) -> None:
    """A SaslHandshake answer: KafkaError unless the broker takes `mechanism`."""
    from kt.errors import KafkaError

    code = getattr(response, "error_code", 0)
    if code:
        offered = ", ".join(getattr(response, "mechanisms", ()) or ())
        raise KafkaError(code, f"SASL mechanism {mechanism} refused (the broker offers "
                               f"{offered or 'none'})")  # fmt: skip


def next_token(exchange: Exchange, response: object) -> bytes | None:
    """Give a SaslAuthenticate answer to the exchange: its next token, or None once the
    exchange is complete; KafkaError with the broker's message on a failure."""
    from kt.errors import KafkaError
    from kt.security.sasl_errors import SaslError

    code = getattr(response, "error_code", 0)
    if code:
        raise KafkaError(code, getattr(response, "error_message", None) or "SASL failed")
    try:
        return exchange.send(bytes(getattr(response, "auth_bytes", b"")))
    except StopIteration:
        return None
    except SaslError as e:
        raise KafkaError("SASL_AUTHENTICATION_FAILED", str(e)) from None


def client_security(props: Mapping[str, str]) -> dict[str, object]:
    """KafkaClient's `tls` and `sasl` from a client's properties (security.protocol and
    the ssl.* / sasl.* keys)."""
    from kt.security.ssl_factory import client_tls_for

    return {"tls": client_tls_for(props), "sasl": client_sasl_for(props)}
