"""Client quotas in the metadata store (ZkAdminManager.describeClientQuotas and
alterClientQuotas): entity configs at /config/users/<user>,
/config/users/<user>/clients/<client-id>, /config/clients/<client-id> and /config/ips/<ip>,
names sanitized as Kafka's Sanitizer does (URL-encoded) and the default entity spelled
`<default>`; every change leaves a /config/changes notification, as for topic and broker
configs. The functions read and write the store: run them on the broker's store threads.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from typing import Any

from kt.errors import KafkaError
from kt.metadata.kafka_zk_client import KafkaZkClient
from kt.metadata.znodes import desanitize, sanitize

USER, CLIENT_ID, IP = "user", "client-id", "ip"
EXACT, DEFAULT, ANY = 0, 1, 2  # DescribeClientQuotasRequest's match types
# The quota keys (DynamicConfig.User/Client/Ip) and their types: "long" and "int" values
# must be whole numbers, and are stored without a fraction.
USER_CLIENT_KEYS = {
    "producer_byte_rate": "long",
    "consumer_byte_rate": "long",
    "request_percentage": "double",
    "controller_mutation_rate": "double",
}
IP_KEYS = {"connection_creation_rate": "int"}

Entity = tuple[tuple[str, str | None], ...]  # ((entity type, name or None = default), ...)


def describe(zk: KafkaZkClient, components: Iterable[Any], strict: bool) -> dict[Entity, dict]:
    """The quotas of the entities the filter matches, by entity (store reads)."""
    by_type: dict[str, Any] = {}
    for component in components:
        kind = component.entity_type
        if kind not in (USER, CLIENT_ID, IP):
            if not kind:
                raise KafkaError("INVALID_REQUEST", "Unexpected empty filter component entity type")
            raise KafkaError("UNSUPPORTED_VERSION", f"Custom entity type '{kind}' not supported")
        if kind in by_type:
            word = "client" if kind == CLIENT_ID else kind
            raise KafkaError("INVALID_REQUEST", f"Duplicate {word} filter component entity type")
        by_type[kind] = component
    if IP in by_type and (USER in by_type or CLIENT_ID in by_type):
        raise KafkaError(
            "INVALID_REQUEST",
            "Invalid entity filter component combination, IP filter component should not be "
            "used with user or clientId filter component.",
        )
    stored: list[tuple[Entity, dict[str, str]]] = []
    if IP not in by_type:
        for name in zk.entity_names("users"):
            stored.append((((USER, desanitize(name)),), zk.get_entity_config("users", name)))
        for name in zk.entity_names("clients"):
            entity = ((CLIENT_ID, desanitize(name)),)
            stored.append((entity, zk.get_entity_config("clients", name)))
        for path in zk.child_entity_names("users", "clients"):
            user, _, client = path.split("/")
            entity = ((USER, desanitize(user)), (CLIENT_ID, desanitize(client)))
            stored.append((entity, zk.get_entity_config("users", path)))
    if USER not in by_type and CLIENT_ID not in by_type:
        for name in zk.entity_names("ips"):
            stored.append((((IP, desanitize(name)),), zk.get_entity_config("ips", name)))
    found: dict[Entity, dict] = {}
    for entity, config in stored:
        keys = IP_KEYS if entity[0][0] == IP else USER_CLIENT_KEYS
        values = {k: float(v) for k, v in config.items() if k in keys}
        if values and _matches(entity, by_type, strict):
            found[entity] = values
    return found


def _matches(entity: Entity, by_type: dict[str, Any], strict: bool) -> bool:
    names = dict(entity)
    for kind in (USER, CLIENT_ID, IP):
        component = by_type.get(kind)
        if component is None:
            if kind in names and strict:
                return False
            continue
        if kind not in names:
            return False
        name = names[kind]
        if component.match_type == EXACT and name != component.match:
            return False
        if component.match_type == DEFAULT and name is not None:
            return False
    return True


def alter(
    zk: KafkaZkClient, entity: list[tuple[str, str | None]], ops: Iterable[Any],
    validate_only: bool,
) -> None:  # fmt: skip
    """ZkAdminManager.alterClientQuotas for one entity (a store read and write)."""
    entity_type, path, keys = _entity_path(entity)
    config = zk.get_entity_config(entity_type, path)
    for op in ops:
        if op.remove:
            config.pop(op.key, None)
            continue
        kind = keys.get(op.key)
        if kind is None:
            raise KafkaError("INVALID_REQUEST", f"Invalid configuration key {op.key}")
        if kind == "double":
            config[op.key] = repr(float(op.value))
            continue
        whole = int(op.value + 1e-6)
        if abs(whole - op.value) > 1e-6:
            raise KafkaError(
                "INVALID_REQUEST", f"Configuration {op.key} must be a {kind.upper()} value"
            )
        config[op.key] = str(whole)
    if not validate_only:
        zk.change_entity_config(entity_type, path, config)


def _entity_path(entity: list[tuple[str, str | None]]) -> tuple[str, str, dict[str, str]]:
    """(config type, path under it, the keys it takes) of a quota entity."""
    if not entity:
        raise KafkaError("INVALID_REQUEST", "Invalid empty client quota entity")
    names: dict[str, str | None] = {}
    for kind, name in entity:
        if kind not in (USER, CLIENT_ID, IP):
            raise KafkaError("INVALID_REQUEST", f"Unhandled client quota entity type: {kind}")
        if name == "":
            raise KafkaError("INVALID_REQUEST", f"Empty {kind} not supported")
        names[kind] = name
    if IP in names:
        if len(names) > 1:
            raise KafkaError(
                "INVALID_REQUEST",
                "Invalid quota entity combination, IP entity should not be used with "
                "user/client ID entity.",
            )
        ip = names[IP]
        if ip is not None and not _valid_ip(ip):
            raise KafkaError("INVALID_REQUEST", f"{ip} is not a valid IP or resolvable host.")
        return "ips", sanitize(ip), IP_KEYS
    if USER in names and CLIENT_ID in names:
        path = f"{sanitize(names[USER])}/clients/{sanitize(names[CLIENT_ID])}"
        return "users", path, USER_CLIENT_KEYS
    if USER in names:
        return "users", sanitize(names[USER]), USER_CLIENT_KEYS
    return "clients", sanitize(names[CLIENT_ID]), USER_CLIENT_KEYS


def _valid_ip(name: str) -> bool:
    """DynamicConfig.Ip.isValidIpEntity: an address, or a host name that resolves."""
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        pass
    try:
        socket.getaddrinfo(name, None)
        return True
    except OSError:
        return False


class ClientQuotaAdmin:
    """The client quotas of one cluster's store, as the request handlers ask for them
    (on the broker's store threads)."""

    def __init__(self, zk: KafkaZkClient) -> None:
        self.zk = zk

    def describe(self, components: Iterable[Any], strict: bool) -> dict[Entity, dict]:
        return describe(self.zk, components, strict)

    def alter(
        self, entity: list[tuple[str, str | None]], ops: Iterable[Any], validate_only: bool
    ) -> None:
        alter(self.zk, entity, ops, validate_only)
