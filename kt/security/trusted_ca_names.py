"""The names of the CAs a broker trusts, sent in its TLS CertificateRequest, as Java's
SSLEngine sends them (the `certificate_authorities` of RFC 8446 4.2.4, the CA list of
TLS 1.2's CertificateRequest).

A client with several certificates picks the one a broker's CAs issued; librdkafka (2.10
and later) sends no certificate at all when none of the names matches its own, so that a
SASL_SSL or `ssl.client.auth=requested` connection goes on without one instead of failing
on a certificate the broker would refuse. Python's `ssl` has no call for the list:
OpenSSL's `SSL_CTX_set_client_CA_list` is called here through ctypes, on the SSL_CTX of
the context (the first field of CPython's PySSLContext object), in the libssl that the
`_ssl` module itself is linked with. Before using the pointer it is checked against the
context (its verify mode and minimum protocol version read through OpenSSL must be the
ones Python set); if anything does not match, no list is sent and the broker says so once.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import ssl
import tempfile
from functools import cache

log = logging.getLogger(__name__)

SSL_CTRL_GET_MIN_PROTO_VERSION = 130  # OpenSSL's ssl.h
# PyObject_HEAD (reference count and type) precedes PySSLContext's `SSL_CTX *ctx`.
SSL_CTX_FIELD_OFFSET = object.__basicsize__


@cache
def _libssl() -> ctypes.CDLL | None:
    """The libssl that `_ssl` uses: already loaded in this process, so dlopen gives back
    the same library (and the same SSL_CTX structures)."""
    import _ssl

    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "libssl.so" in line}
    except OSError:
        paths = set()
    name = next(iter(sorted(paths)), None) or ctypes.util.find_library("ssl")
    if name is None or _ssl.OPENSSL_VERSION_NUMBER < 0x30000000:
        return None
    try:
        lib = ctypes.CDLL(name)
    except OSError:
        return None
    lib.SSL_CTX_get_verify_mode.argtypes = [ctypes.c_void_p]
    lib.SSL_CTX_get_verify_mode.restype = ctypes.c_int
    lib.SSL_CTX_ctrl.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_long, ctypes.c_void_p]
    lib.SSL_CTX_ctrl.restype = ctypes.c_long
    lib.SSL_load_client_CA_file.argtypes = [ctypes.c_char_p]
    lib.SSL_load_client_CA_file.restype = ctypes.c_void_p
    lib.SSL_CTX_set_client_CA_list.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.SSL_CTX_set_client_CA_list.restype = None
    return lib


def _ssl_ctx(lib: ctypes.CDLL, context: ssl.SSLContext) -> int | None:
    """The context's SSL_CTX pointer, when OpenSSL confirms it is this context's."""
    pointer = ctypes.c_void_p.from_address(id(context) + SSL_CTX_FIELD_OFFSET).value
    if not pointer:
        return None
    verify = {ssl.CERT_NONE: 0, ssl.CERT_OPTIONAL: 1, ssl.CERT_REQUIRED: 3}[context.verify_mode]
    minimum = lib.SSL_CTX_ctrl(pointer, SSL_CTRL_GET_MIN_PROTO_VERSION, 0, None)
    expected_minimum = context.minimum_version
    expected = 0 if expected_minimum == ssl.TLSVersion.MINIMUM_SUPPORTED else int(expected_minimum)
    if lib.SSL_CTX_get_verify_mode(pointer) != verify or minimum != expected:
        return None
    return pointer


def announce_trusted_cas(context: ssl.SSLContext) -> bool:
    """Send the subjects of the context's trusted CAs in its CertificateRequests; False
    (and a warning) when this Python's OpenSSL cannot be reached."""
    certs = context.get_ca_certs(binary_form=True)
    if not certs:
        return False
    lib = _libssl()
    pointer = _ssl_ctx(lib, context) if lib is not None else None
    if lib is None or pointer is None:
        _warn_once()
        return False
    with tempfile.TemporaryDirectory(prefix="kt-ca-names-") as directory:
        path = os.path.join(directory, "cas.pem")
        with open(path, "w") as f:
            f.write("".join(ssl.DER_cert_to_PEM_cert(der) for der in certs))
        names = lib.SSL_load_client_CA_file(path.encode())
    if not names:
        _warn_once()
        return False
    lib.SSL_CTX_set_client_CA_list(pointer, names)  # the context owns the list now
    return True


@cache
def _warn_once() -> None:
    log.warning(
        "TLS certificate requests will not name the trusted CAs: this Python's OpenSSL "
        "(%s) could not be reached; clients send whichever certificate they have",
        ssl.OPENSSL_VERSION,
    )
