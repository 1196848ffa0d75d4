"""Certificates made on the spot for tests and benchmarks of TLS (nothing checked in): a
CA, broker and client certificates it signs, written as the key stores Kafka reads (PEM
with an encrypted PKCS#8 key, PKCS12) and as the files librdkafka and Python's ssl read.
Needs `cryptography`."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

PASSWORD = "kt-secret"


@dataclass(frozen=True)
class Issued:
    """A key and its certificate, and the chain up to (not including) the root."""

    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "kt tests"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])  # fmt: skip


def make_ca(common_name: str = "kt test CA") -> Issued:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                     content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False,
                                     encipher_only=False, decipher_only=False), critical=True)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    return Issued(key, cert)


def issue(
    ca: Issued, common_name: str, hosts: tuple[str, ...] = ("127.0.0.1", "localhost")
) -> Issued:
    """A certificate for a broker or a client, valid for `hosts` (IP addresses or names)."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(ca.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                              ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
    )  # fmt: skip
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return Issued(key, builder.sign(ca.key, hashes.SHA256()))


def cert_pem(*certs: x509.Certificate) -> str:
    return "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in certs)


def key_pem(issued: Issued, password: str | None = None) -> str:
    """The key as PKCS#8 PEM, encrypted with `password` when given."""
    encryption = (serialization.BestAvailableEncryption(password.encode()) if password
                  else serialization.NoEncryption())  # fmt: skip
    return issued.key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
    ).decode()


@dataclass(frozen=True)
class TlsFiles:
    """The files of one party: `keystore_pem` (encrypted key then certificate, Kafka's PEM
    key store, unlocked by PASSWORD), `keystore_p12` (PKCS12, PASSWORD), `cert` and `key`
    (plain PEM, for librdkafka and Python) and `ca` (the CA certificate, PEM)."""

    keystore_pem: Path
    keystore_p12: Path
    cert: Path
    key: Path
    ca: Path


def write_party(directory: Path, name: str, ca: Issued, issued: Issued) -> TlsFiles:
    directory.mkdir(parents=True, exist_ok=True)
    files = TlsFiles(
        directory / f"{name}.keystore.pem", directory / f"{name}.keystore.p12",
        directory / f"{name}.crt", directory / f"{name}.key", directory / f"{name}-ca.crt",
    )  # fmt: skip
    files.keystore_pem.write_text(key_pem(issued, PASSWORD) + cert_pem(issued.cert, ca.cert))
    files.keystore_p12.write_bytes(pkcs12.serialize_key_and_certificates(
        name.encode(), issued.key, issued.cert, [ca.cert],
        serialization.BestAvailableEncryption(PASSWORD.encode()),
    ))  # fmt: skip
    files.cert.write_text(cert_pem(issued.cert))
    files.key.write_text(key_pem(issued))
    files.ca.write_text(cert_pem(ca.cert))
    return files
