"""TLS contexts from Kafka's `ssl.*` keys (Kafka's DefaultSslEngineFactory, SslConfigs).

A broker reads each key for a listener as `listener.name.<listener>.<key>` first, then
`<key>` (KafkaConfig's listener-prefixed overrides); a client reads the plain keys of its
properties. Keystores and truststores are Kafka's:

- `ssl.keystore.type=PEM`: `ssl.keystore.location` names one file with the certificate
  chain and the private key (an encrypted PKCS#8 key unlocked by `ssl.key.password`, or a
  plain one), or `ssl.keystore.certificate.chain` and `ssl.keystore.key` hold them inline;
  `ssl.truststore.location` a file of PEM certificates, or `ssl.truststore.certificates`
  inline.
- `PKCS12` (and `JKS` naming a PKCS12 file, which Java's keystores have accepted since
  JDK 9): read with `cryptography`, `ssl.keystore.password` unlocking the store and
  `ssl.key.password` (or the store's password) its key. A true JKS file (magic
  0xFEEDFEED) is refused with how to convert it.

`ssl.client.auth` (none, requested, required) asks clients for certificates;
`ssl.enabled.protocols` bounds the TLS versions; `ssl.endpoint.identification.algorithm`
(https, the default, or empty) decides whether a client checks the broker's name against
its certificate. Errors are InvalidConfigError naming the key, with Kafka's words where
Kafka has them.
"""

from __future__ import annotations

import os
import secrets
import ssl
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kt.errors import InvalidConfigError
from kt.security.trusted_ca_names import announce_trusted_cas

Lookup = Callable[[str], "str | None"]

PROTOCOL_VERSIONS = {
    "TLSv1": ssl.TLSVersion.TLSv1,
    "TLSv1.1": ssl.TLSVersion.TLSv1_1,
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}
DEFAULT_ENABLED_PROTOCOLS = "TLSv1.2,TLSv1.3"
CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
JKS_MAGIC = b"\xfe\xed\xfe\xed"


def listener_lookup(props: Mapping[str, str], listener_name: str) -> Lookup:
    """A broker's key for one listener: `listener.name.<name>.<key>`, else `<key>`."""
    prefix = f"listener.name.{listener_name.lower()}."

    def get(key: str) -> str | None:
        value = props.get(prefix + key)
        return value if value is not None else props.get(key)

    return get


def sasl_ssl_lookup(props: Mapping[str, str], listener_name: str) -> Lookup:
    """A SASL_SSL listener's keys: as `listener_lookup`, but `ssl.client.auth` only from
    the listener-prefixed key, else none (KIP-684, Kafka's ChannelBuilders: the
    broker-wide key asks for certificates on SSL listeners only)."""
    get = listener_lookup(props, listener_name)
    prefixed = f"listener.name.{listener_name.lower()}.ssl.client.auth"

    def sasl_ssl_get(key: str) -> str | None:
        return props.get(prefixed, "none") if key == "ssl.client.auth" else get(key)

    return sasl_ssl_get


def plain_lookup(props: Mapping[str, str]) -> Lookup:
    return props.get


@dataclass(frozen=True)
class ClientTls:
    """What a client connection needs to start TLS: the context and the name to check."""

    context: ssl.SSLContext
    check_hostname: bool

    def server_hostname(self, host: str) -> str | None:
        return host if self.check_hostname else None


def server_context(get: Lookup) -> ssl.SSLContext:
    """The context of a broker's SSL or SASL_SSL listener."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _protocols(context, get)
    _refuse_unsupported(get)
    if not _load_keystore(context, get):
        raise InvalidConfigError(
            "ssl.keystore.location: a key store is required for an SSL listener "
            "(or ssl.keystore.certificate.chain and ssl.keystore.key)"
        )
    auth = (get("ssl.client.auth") or "none").strip().lower()
    if auth not in CLIENT_AUTH:
        raise InvalidConfigError(
            f"Invalid value {auth} for configuration ssl.client.auth: "
            "String must be one of: required, requested, none"
        )
    context.verify_mode = CLIENT_AUTH[auth]
    if auth != "none":
        _load_truststore(context, get)
        announce_trusted_cas(context)
    return context


def client_context(get: Lookup) -> ClientTls:
    """The context of a client's connection with security.protocol SSL or SASL_SSL (and
    of a broker's connections to other brokers over such a listener)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _protocols(context, get)
    _refuse_unsupported(get)
    algorithm = get("ssl.endpoint.identification.algorithm")
    check = (algorithm if algorithm is not None else "https").strip().lower()
    if check not in ("https", ""):
        raise InvalidConfigError(
            f"ssl.endpoint.identification.algorithm={check}: only https or empty is known"
        )
    context.check_hostname = check == "https"
    context.verify_mode = ssl.CERT_REQUIRED
    _load_truststore(context, get)
    _load_keystore(context, get)  # a client certificate, for ssl.client.auth
    return ClientTls(context, check == "https")


def _protocols(context: ssl.SSLContext, get: Lookup) -> None:
    names = [p.strip() for p in (get("ssl.enabled.protocols") or DEFAULT_ENABLED_PROTOCOLS)
             .split(",") if p.strip()]  # fmt: skip
    unknown = [n for n in names if n not in PROTOCOL_VERSIONS]
    if unknown or not names:
        raise InvalidConfigError(
            f"ssl.enabled.protocols={','.join(names)}: "
            f"expected some of {', '.join(PROTOCOL_VERSIONS)}"
        )
    versions = sorted(PROTOCOL_VERSIONS[n] for n in names)
    context.minimum_version = versions[0]
    context.maximum_version = versions[-1]


def _refuse_unsupported(get: Lookup) -> None:
    if (get("ssl.cipher.suites") or "").strip():
        raise InvalidConfigError(
            f"ssl.cipher.suites={get('ssl.cipher.suites')}: kt does not support choosing "
            "cipher suites yet (OpenSSL's defaults for the enabled protocols are used)"
        )
    if (get("ssl.engine.factory.class") or "").strip():
        raise InvalidConfigError(
            f"ssl.engine.factory.class={get('ssl.engine.factory.class')}: kt does not "
            "support SSL engine factories"
        )
    rules = (get("ssl.principal.mapping.rules") or "DEFAULT").strip()
    if rules != "DEFAULT":
        raise InvalidConfigError(
            f"ssl.principal.mapping.rules={rules}: kt does not support principal mapping "
            "rules yet (only DEFAULT)"
        )


def _store_type(get: Lookup, key: str) -> str:
    return (get(key) or "JKS").strip().upper()


def _load_keystore(context: ssl.SSLContext, get: Lookup) -> bool:
    """Load the key store into `context`; False when none is configured."""
    chain, key = get("ssl.keystore.certificate.chain"), get("ssl.keystore.key")
    location = get("ssl.keystore.location")
    key_password = get("ssl.key.password")
    store_type = _store_type(get, "ssl.keystore.type")
    if chain or key:
        if not (chain and key):
            raise InvalidConfigError(
                "Invalid value for ssl.keystore.key: SSL key store certificate chain and "
                "key must both be set or neither"
            )
        if store_type != "PEM" or location:
            raise InvalidConfigError(
                "ssl.keystore.certificate.chain: an inline key store needs "
                "ssl.keystore.type=PEM and no ssl.keystore.location"
            )
        _load_pem_chain(context, f"{key.strip()}\n{chain.strip()}\n", key_password)
        return True
    if not location:
        return False
    if store_type == "PEM":
        if get("ssl.keystore.password"):
            raise InvalidConfigError(
                "ssl.keystore.password: SSL key store password cannot be specified with "
                "PEM format, only key password may be specified"
            )
        try:
            context.load_cert_chain(location, password=key_password)
        except (OSError, ssl.SSLError) as e:
            raise InvalidConfigError(f"ssl.keystore.location={location}: {_why(e)}") from None
        return True
    key_obj, certs = _read_pkcs12(location, get("ssl.keystore.password"), key_password,
                                  "ssl.keystore.location")  # fmt: skip
    if key_obj is None or not certs:
        raise InvalidConfigError(f"ssl.keystore.location={location}: no private key entry")
    from cryptography.hazmat.primitives import serialization

    password = secrets.token_hex(16)
    key_pem = key_obj.private_bytes(  # type: ignore[attr-defined]
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(password.encode()),
    ).decode()  # fmt: skip
    pem = key_pem + "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in certs)
    _load_pem_chain(context, pem, password)
    return True


def _load_pem_chain(context: ssl.SSLContext, pem: str, password: str | None) -> None:
    """load_cert_chain reads files only: the PEM goes through a private temporary file,
    removed at once."""
    with tempfile.TemporaryDirectory(prefix="kt-keystore-") as directory:
        path = os.path.join(directory, "keystore.pem")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(pem)
        try:
            context.load_cert_chain(path, password=password)
        except ssl.SSLError as e:
            raise InvalidConfigError(f"ssl.keystore: {_why(e)}") from None


def _load_truststore(context: ssl.SSLContext, get: Lookup) -> None:
    certificates = get("ssl.truststore.certificates")
    location = get("ssl.truststore.location")
    try:
        if certificates:
            context.load_verify_locations(cadata=certificates)
        elif not location:
            context.load_default_certs()  # as Java falls back on its own cacerts
        elif _store_type(get, "ssl.truststore.type") == "PEM":
            context.load_verify_locations(cafile=location)
        else:
            from cryptography.hazmat.primitives import serialization

            _, certs = _read_pkcs12(location, get("ssl.truststore.password"), None,
                                    "ssl.truststore.location")  # fmt: skip
            if not certs:
                raise InvalidConfigError(f"ssl.truststore.location={location}: no certificate")
            der = b"".join(c.public_bytes(serialization.Encoding.DER) for c in certs)
            context.load_verify_locations(cadata=der)
    except (OSError, ssl.SSLError) as e:
        where = (
            "ssl.truststore.certificates" if certificates else f"ssl.truststore.location={location}"
        )
        raise InvalidConfigError(f"{where}: {_why(e)}") from None


def _read_pkcs12(path: str, store_password: str | None, key_password: str | None,
                 key: str) -> tuple[object | None, list]:  # fmt: skip
    """(private key, [its certificate, then the rest]) of a PKCS12 file."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise InvalidConfigError(f"{key}={path}: {e.strerror}") from None
    if data.startswith(JKS_MAGIC):
        raise InvalidConfigError(
            f"{key}={path}: a JKS key store, which kt cannot read; convert it with "
            f"keytool -importkeystore -srckeystore {path} -deststoretype PKCS12 "
            "-destkeystore <file>.p12 and set the type to PKCS12"
        )
    from cryptography.hazmat.primitives.serialization import pkcs12

    last: Exception | None = None
    for password in dict.fromkeys((store_password, key_password)):
        try:
            loaded = pkcs12.load_pkcs12(data, password.encode() if password else None)
        except ValueError as e:
            last = e
            continue
        certs = [c.certificate for c in loaded.additional_certs]
        if loaded.cert is not None:
            certs.insert(0, loaded.cert.certificate)
        return loaded.key, certs
    raise InvalidConfigError(f"{key}={path}: cannot read it as PKCS12: {last}")


def _why(error: BaseException) -> str:
    if isinstance(error, ssl.SSLError):
        return error.reason or str(error)
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error)


def client_tls_for(props: Mapping[str, str]) -> ClientTls | None:
    """A client's TLS from its properties: None unless security.protocol is SSL or
    SASL_SSL."""
    protocol = (props.get("security.protocol") or "PLAINTEXT").strip().upper()
    if protocol not in ("SSL", "SASL_SSL"):
        return None
    return client_context(plain_lookup(props))
