"""SASL mechanisms as a Kafka broker configures them (KIP-43, KIP-84, KIP-255).

A SASL listener's mechanisms are `listener.name.<l>.sasl.enabled.mechanisms` (else
`sasl.enabled.mechanisms`); each mechanism's JAAS configuration is
`listener.name.<l>.<mechanism>.sasl.jaas.config` (else `sasl.jaas.config`), read as
Kafka's JaasConfig reads one line: `<LoginModule> <flag> key="value" ...;`.

- PLAIN: the users are the module's `user_<name>="<password>"` options
  (PlainServerCallbackHandler); `username`/`password` are what this broker sends to
  other brokers.
- SCRAM-SHA-256 / SCRAM-SHA-512: the users' credentials are in the metadata store at
  `/config/users/<user>` (kt/security/scram.py); `username`/`password` are this broker's.
- OAUTHBEARER: unsecured JWS tokens (`alg` none) as Kafka's default
  OAuthBearerUnsecuredValidatorCallbackHandler accepts them: the principal is the
  `sub` claim (or `unsecuredValidatorPrincipalClaimName`), `exp` must be in the future
  and `iat` in the past within `unsecuredValidatorAllowableClockSkewMs`, and
  `unsecuredValidatorRequiredScope` names scopes the `scope` claim must hold.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kt.errors import InvalidConfigError
from kt.security.sasl_errors import SaslAuthenticationError, SaslError
from kt.security.scram import MECHANISMS as SCRAM_MECHANISMS

PLAIN = "PLAIN"
OAUTHBEARER = "OAUTHBEARER"
SUPPORTED = (PLAIN, *SCRAM_MECHANISMS, OAUTHBEARER)
_JAAS_OPTION = re.compile(r'\s*([A-Za-z0-9_.\-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s;]+)')


@dataclass(frozen=True)
class JaasConfig:
    """One login module's line: its class, control flag and options."""

    login_module: str
    flag: str
    options: dict[str, str]

    @classmethod
    def parse(cls, text: str, key: str) -> JaasConfig:
        text = text.strip()
        if not text.endswith(";"):
            raise InvalidConfigError(f"{key}: a JAAS configuration must end with ';'")
        body = text[:-1].strip()
        if ";" in re.sub(r'"(?:[^"\\]|\\.)*"', '""', body):  # a ';' outside the quotes
            raise InvalidConfigError(f"{key}: kt reads one login module per JAAS configuration")
        parts = body.split(None, 2)
        if len(parts) < 2 or parts[1] not in ("required", "requisite", "sufficient", "optional"):
            raise InvalidConfigError(
                f"{key}: expected '<LoginModule> <required|requisite|sufficient|optional> "
                'key="value" ...;\''
            )
        options: dict[str, str] = {}
        rest = parts[2] if len(parts) == 3 else ""
        position = 0
        while position < len(rest):
            if rest[position:].strip() == "":
                break
            match = _JAAS_OPTION.match(rest, position)
            if match is None:
                raise InvalidConfigError(f"{key}: cannot read the options at {rest[position:]!r}")
            value = match.group(2)
            if value.startswith('"'):
                value = re.sub(r"\\(.)", r"\1", value[1:-1])
            options[match.group(1)] = value
            position = match.end()
        return cls(parts[0], parts[1], options)


@dataclass
class SaslListenerConfig:
    """The SASL mechanisms of one listener and their JAAS options."""

    mechanisms: tuple[str, ...]
    jaas: dict[str, JaasConfig] = field(default_factory=dict)
    reauth_ms: int = 0  # connections.max.reauth.ms: 0 = sessions never expire

    def plain_users(self) -> dict[str, str]:
        options = self.jaas[PLAIN].options if PLAIN in self.jaas else {}
        return {k[len("user_") :]: v for k, v in options.items() if k.startswith("user_")}


def listener_sasl_config(get: Callable[[str], str | None], listener: str) -> SaslListenerConfig:
    """A SASL listener's mechanisms and JAAS options from the broker's keys (`get` reads
    a key for this listener: listener.name.<l>.<key>, else <key>)."""
    text = get("sasl.enabled.mechanisms") or "GSSAPI"
    mechanisms = tuple(m.strip().upper() for m in text.split(",") if m.strip())
    for mechanism in mechanisms:
        if mechanism not in SUPPORTED:
            raise InvalidConfigError(
                f"sasl.enabled.mechanisms={text}: kt does not support SASL mechanism "
                f"{mechanism} (only {', '.join(SUPPORTED)})"
            )
    jaas = {}
    for mechanism in mechanisms:
        key = f"{mechanism.lower()}.sasl.jaas.config"
        value = get(key) or get("sasl.jaas.config")
        if value is None:
            if mechanism == PLAIN:
                raise InvalidConfigError(
                    f"listener.name.{listener.lower()}.{key}: PLAIN needs a JAAS configuration "
                    'naming its users (user_<name>="<password>")'
                )
            continue
        jaas[mechanism] = JaasConfig.parse(value, f"listener.name.{listener.lower()}.{key}")
    return SaslListenerConfig(mechanisms, jaas, int(get("connections.max.reauth.ms") or 0))


# -- PLAIN ----------------------------------------------------------------------------


def plain_authenticate(token: bytes, users: Mapping[str, str]) -> str:
    """The user a SASL/PLAIN response authenticates (PlainSaslServer.evaluateResponse)."""
    tokens = token.decode("utf-8", errors="replace").split("\x00", 3)
    if len(tokens) != 3:
        raise SaslAuthenticationError(
            f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(tokens)}"
        )
    authzid, username, password = tokens
    if not username:
        raise SaslAuthenticationError("Authentication failed: username not specified")
    if not password:
        raise SaslAuthenticationError("Authentication failed: password not specified")
    expected = users.get(username)
    if expected is None or not _equal(expected, password):
        raise SaslAuthenticationError("Authentication failed: Invalid username or password")
    if authzid and authzid != username:
        raise SaslAuthenticationError(
            "Authentication failed: Client requested an "
            "authorization id that is different from username"
        )
    return username


def _equal(a: str, b: str) -> bool:
    import hmac

    return hmac.compare_digest(a.encode(), b.encode())


# -- OAUTHBEARER (unsecured JWS) -------------------------------------------------------


def _b64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def oauthbearer_authenticate(token: bytes, options: Mapping[str, str]) -> str:
    """The principal of an OAUTHBEARER client response carrying an unsecured JWS
    (OAuthBearerUnsecuredJws and its validator); raises SaslError with the RFC 7628
    error JSON's status as message."""
    text = token.decode("utf-8", errors="replace")
    if not text.startswith(("n,", "y,")):
        raise SaslError("Invalid OAUTHBEARER client first message")
    _, _, rest = text.partition(",")
    _, _, kvpairs = rest.partition(",")
    auth = ""
    for pair in kvpairs.split("\x01"):
        if pair.startswith("auth="):
            auth = pair[len("auth=") :]
    scheme, _, jws = auth.partition(" ")
    if scheme.lower() != "bearer" or not jws:
        raise SaslError("invalid_token: no Bearer token")
    pieces = jws.split(".")
    if len(pieces) != 3:
        raise SaslError("invalid_token: not a JWS of three parts")
    try:
        header = json.loads(_b64url(pieces[0]))
        claims = json.loads(_b64url(pieces[1]))
    except (ValueError, binascii.Error) as e:
        raise SaslError(f"invalid_token: {e}") from None
    if header.get("alg") != "none" or pieces[2]:
        raise SaslError("invalid_token: only unsecured JWS (alg none) is accepted")
    skew_ms = int(options.get("unsecuredValidatorAllowableClockSkewMs", "0"))
    now_s = time.time()
    exp = claims.get("exp")
    if not isinstance(exp, int | float) or exp * 1000 + skew_ms <= now_s * 1000:
        raise SaslError("invalid_token: the token has expired")
    iat = claims.get("iat")
    if isinstance(iat, int | float) and iat * 1000 - skew_ms > now_s * 1000:
        raise SaslError("invalid_token: the token was issued in the future")
    principal = claims.get(options.get("unsecuredValidatorPrincipalClaimName", "sub"))
    if not isinstance(principal, str) or not principal.strip():
        raise SaslError("invalid_token: no principal claim")
    required = options.get("unsecuredValidatorRequiredScope", "").split()
    scope_claim = claims.get(options.get("unsecuredValidatorScopeClaimName", "scope"), [])
    scopes = set(scope_claim.split() if isinstance(scope_claim, str) else scope_claim)
    if not set(required) <= scopes:
        raise SaslError("insufficient_scope: the token lacks a required scope")
    return principal


def unsecured_token(principal: str, lifetime_s: int = 3600, scope: list[str] | None = None) -> str:
    """An unsecured JWS as Kafka's OAuthBearerUnsecuredLoginCallbackHandler makes one."""

    def encode(value: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    now = int(time.time())
    claims: dict = {"sub": principal, "iat": now, "exp": now + lifetime_s}
    if scope:
        claims["scope"] = scope
    return f"{encode({'alg': 'none'})}.{encode(claims)}."
