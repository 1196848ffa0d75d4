"""The principal of a connection, as Kafka's DefaultKafkaPrincipalBuilder names it."""

from __future__ import annotations


def ssl_principal(certificate: dict | None) -> str:
    """DefaultKafkaPrincipalBuilder on an SSL channel (ssl.principal.mapping.rules=DEFAULT):
    `User:` and the client certificate's subject as X500Principal.getName() writes it
    (RFC 2253: most specific attribute first, no spaces), or User:ANONYMOUS without one."""
    if not certificate or not certificate.get("subject"):
        return "User:ANONYMOUS"
    names = {"commonName": "CN", "organizationName": "O", "organizationalUnitName": "OU",
             "countryName": "C", "stateOrProvinceName": "ST", "localityName": "L",
             "streetAddress": "STREET", "domainComponent": "DC", "userId": "UID"}  # fmt: skip
    rdns = []
    for rdn in reversed(certificate["subject"]):
        parts = []
        for key, value in rdn:
            escaped = "".join("\\" + c if c in ',+"\\<>;' else c for c in value)
            parts.append(f"{names.get(key, key)}={escaped}")
        rdns.append("+".join(parts))
    return "User:" + ",".join(rdns)
