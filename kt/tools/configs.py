"""The logic of `kt configs` (ConfigCommand): describe and alter topic and broker configs."""

from __future__ import annotations

import re

from kt.client.admin import (
    BROKER_RESOURCE,
    DELETE,
    SET,
    TOPIC_RESOURCE,
    AdminClient,
    ConfigValue,
)
from kt.errors import KafkaError, error_for

SOURCE_NAMES = {
    0: "UNKNOWN",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
    7: "DYNAMIC_CLIENT_METRICS_CONFIG",
    8: "DYNAMIC_GROUP_CONFIG",
}
DYNAMIC_SOURCES = {1, 2, 3, 8}
GROUP_RESOURCE = 32  # ConfigResource.Type.GROUP (Kafka 4's group configs)
ENTITY_TYPES = {"topics": TOPIC_RESOURCE, "brokers": BROKER_RESOURCE, "groups": GROUP_RESOURCE}
ENTITY_WORDS = {"topics": "topic", "brokers": "broker", "groups": "group"}


class ConfigCommandError(Exception):
    """Bad options or input: its message on stderr, exit 1."""


class ConfigBrokerError(ConfigCommandError):
    """The broker refused: ConfigCommand names the command's arguments first."""


def parse_add_config(text: str) -> dict[str, str]:
    """`k1=v1,k2=[a,b]`: commas inside brackets belong to the value."""
    out: dict[str, str] = {}
    for item in re.findall(r"[^,\[]+(?:\[[^\]]*\])?[^,]*", text):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigCommandError(
                'Invalid entity config: all configs to be added must be in the format "key=val".'
            )
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            value = value[1:-1]
        out[key.strip()] = value
    return out


def _describe_line(c: ConfigValue) -> str:
    value = "null" if c.is_sensitive else c.value
    synonyms = ", ".join(
        f"{SOURCE_NAMES.get(s, 'UNKNOWN')}:{n}={'null' if c.is_sensitive else v}"
        for n, v, s in c.synonyms
    )
    sensitive = "true" if c.is_sensitive else "false"
    return f"  {c.name}={value} sensitive={sensitive} synonyms={{{synonyms}}}"


def describe(admin: AdminClient, entity_type: str, names: list[str], show_all: bool) -> list[str]:
    resource = ENTITY_TYPES[entity_type]
    lines = []
    for name in names:
        code, message, configs = admin.describe_configs(resource, name)
        if code:
            raise ConfigBrokerError(message or error_for(code).message)
        shown = configs if show_all else [c for c in configs if c.source in DYNAMIC_SOURCES]
        kind = "All" if show_all else "Dynamic"
        if entity_type == "brokers" and name == "":
            lines.append("Default configs for brokers in the cluster are:")
        else:
            lines.append(f"{kind} configs for {ENTITY_WORDS[entity_type]} {name} are:")
        lines += [_describe_line(c) for c in sorted(shown, key=lambda c: c.name)]
    return lines


def _require_changes(add: dict[str, str], delete: list[str]) -> None:
    if not add and not delete:
        raise ConfigCommandError(
            "At least one of --add-config or --delete-config must be specified with --alter"
        )


def alter(
    admin: AdminClient,
    entity_type: str,
    name: str,
    add: dict[str, str],
    delete: list[str],
) -> list[str]:
    _require_changes(add, delete)
    overlap = set(add) & set(delete)
    if overlap:
        raise ConfigCommandError(f"Invalid config(s): {','.join(sorted(overlap))}")
    ops = [(SET, k, v) for k, v in add.items()] + [(DELETE, k, None) for k in delete]
    code, message = admin.incremental_alter_configs(ENTITY_TYPES[entity_type], name, ops)
    if code:
        raise ConfigBrokerError(message or error_for(code).message)
    if entity_type == "brokers" and name == "":
        return ["Completed updating default config for brokers in the cluster."]
    return [f"Completed updating config for {ENTITY_WORDS[entity_type]} {name}."]


# -- client quotas (users, clients, ips) ---------------------------------------------------

QUOTA_ENTITY_TYPES = {"users": "user", "clients": "client-id", "ips": "ip"}
QUOTA_TYPE_WORDS = {"user": "user-principal", "client-id": "client-id", "ip": "ip"}
IP_QUOTA_KEYS = ("connection_creation_rate",)
USER_CLIENT_QUOTA_KEYS = (
    "producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate",
)  # fmt: skip
SCRAM_KEYS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
DEFAULT_SCRAM_ITERATIONS = 4096


def _java_double(value: float) -> str:
    """Double.toString for a quota: 1024.0, 0.5, 1.0E7."""
    if value != 0 and (abs(value) >= 1e7 or abs(value) < 1e-3):
        mantissa, exponent = f"{value:.16E}".split("E")
        mantissa = mantissa.rstrip("0")
        mantissa += "0" if mantissa.endswith(".") else ""
        return f"{mantissa}E{int(exponent)}"
    return repr(float(value))


def quota_components(
    entities: list[tuple[str, str | None]],
) -> list[tuple[str, str | None]]:
    """(entity type as the API names it, name: "" for the default, None for any)."""
    return [(QUOTA_ENTITY_TYPES[kind], name) for kind, name in entities]


def describe_quotas(admin: AdminClient, entities: list[tuple[str, str | None]]) -> list[str]:
    """ConfigCommand.describeQuotaConfigs: one line per entity the filter holds to."""
    found = admin.describe_client_quotas(quota_components(entities), strict=True)
    lines = _quota_lines(found)
    # ConfigCommand.describeClientQuotaAndUserScramCredentialConfigs: users' credentials
    # too, unless clients or a default entity are asked for.
    kinds = [kind for kind, _ in entities]
    names = [name for _, name in entities]
    if "users" in kinds and "clients" not in kinds and "" not in names:
        wanted = [name for name in names if name]
        for user, infos in admin.describe_user_scram_credentials(wanted).items():
            shown = ", ".join(f"{mechanism}=iterations={n}" for mechanism, n in infos)
            lines.append(f"SCRAM credential configs for user-principal '{user}' are {shown}")
    return lines


def _quota_lines(found: dict) -> list[str]:
    lines = []
    for entity, values in found.items():
        names = dict(entity)
        parts = []
        for kind in ("user", "client-id", "ip"):
            if kind in names:
                word = QUOTA_TYPE_WORDS[kind]
                name = names[kind]
                parts.append(f"{word} '{name}'" if name is not None else f"the default {word}")
        shown = ", ".join(f"{k}={_java_double(v)}" for k, v in values.items())
        lines.append(f"Quota configs for {', '.join(parts)} are {shown}")
    return lines


def alter_quotas(
    admin: AdminClient,
    entities: list[tuple[str, str | None]],
    add: dict[str, str],
    delete: list[str],
) -> list[str]:
    """ConfigCommand.alterQuotaConfigs: every name given (or "" for the default)."""
    _require_changes(add, delete)
    if any(name is None for _, name in entities):
        raise ConfigCommandError("Exactly one entity name must be specified for every entity type")
    if entities[0][0] == "ips":
        unknown = [k for k in [*add, *delete] if k not in IP_QUOTA_KEYS]
        if unknown:
            raise ConfigCommandError(
                "Only connection quota configs can be added for 'ips' using --bootstrap-server. "
                f"Unexpected config names: {','.join(unknown)}"
            )
    kinds = [kind for kind, _ in entities]
    if kinds != ["ips"]:
        _check_user_client_keys("clients" if "clients" in kinds else "users", add, delete)
    if any(k in SCRAM_KEYS for k in [*add, *delete]):
        return alter_scram(admin, entities, add, delete)
    components = quota_components(entities)
    current = admin.describe_client_quotas(components, strict=True)
    old = next(iter(current.values()), {})
    missing = [k for k in delete if k not in old]
    if missing:
        raise ConfigBrokerError(f"Invalid config(s): {','.join(missing)}")
    ops: list[tuple[str, float | None]] = []
    for key, value in add.items():
        try:
            ops.append((key, float(value)))
        except ValueError:
            raise ConfigCommandError(
                f"Cannot parse quota configuration value for {key}: {value}"
            ) from None
    ops += [(key, None) for key in delete]
    try:
        admin.alter_client_quotas([(t, n or None) for t, n in components], ops)
    except KafkaError as e:
        raise ConfigBrokerError(str(e)) from None
    kind, name = entities[0]
    if name:
        return [f"Completed updating config for {kind[:-1]} {name}."]
    return [f"Completed updating default config for {kind} in the cluster."]


def alter_scram(
    admin: AdminClient, entities: list[tuple[str, str | None]], add: dict[str, str],
    delete: list[str],
) -> list[str]:  # fmt: skip
    """ConfigCommand.alterUserScramCredentialConfigs: `SCRAM-SHA-256=[iterations=8192,
    password=...]` sets a credential, `--delete-config SCRAM-SHA-256` removes one."""
    user = entities[0][1]
    if user == "":
        raise ConfigCommandError(
            "The use of --entity-default or --user-defaults is not allowed with User SCRAM "
            "Credentials using --bootstrap-server."
        )
    if any(k in USER_CLIENT_QUOTA_KEYS for k in [*add, *delete]):
        raise ConfigCommandError(
            "Cannot alter both quota and SCRAM credential configs simultaneously for 'users' "
            "using --bootstrap-server."
        )
    upsert = {}
    for mechanism, text in add.items():
        match = re.fullmatch(r"(?:iterations=(-?[0-9]*),)?password=(.*)", text)
        if match is None:
            raise ConfigCommandError(f"Invalid credential property {mechanism}={text}")
        iterations = int(match.group(1)) if match.group(1) not in (None, "-1") else (
            DEFAULT_SCRAM_ITERATIONS)  # fmt: skip
        if iterations < DEFAULT_SCRAM_ITERATIONS:
            raise ConfigCommandError(
                f"Iterations {iterations} is less than the minimum {DEFAULT_SCRAM_ITERATIONS} "
                f"required for {mechanism}"
            )
        upsert[mechanism] = (iterations, match.group(2))
    try:
        admin.alter_user_scram_credentials(str(user), upsert, delete)
    except KafkaError as e:
        raise ConfigBrokerError(str(e)) from None
    return [f"Completed updating config for user {user}."]


def _check_user_client_keys(kind: str, add: dict[str, str], delete: list[str]) -> None:
    """ConfigCommand's own check of the keys given for users and clients: quota keys for
    both, SCRAM credentials for users."""
    which = "quota configs" if kind == "clients" else "quota and SCRAM credential configs"
    allowed = USER_CLIENT_QUOTA_KEYS if kind == "clients" else (*USER_CLIENT_QUOTA_KEYS,
                                                                 *SCRAM_KEYS)  # fmt: skip
    for verb, keys, shown in (("added", list(add), "Set"), ("deleted", delete, "List")):
        unknown = [k for k in keys if k not in allowed]
        if unknown:
            raise ConfigCommandError(
                f"Only {which} can be {verb} for '{kind}' using --bootstrap-server. Unexpected "
                f"config names: {shown}({', '.join(unknown)})"
            )
