"""The logic of `kt configs` (ConfigCommand): describe and alter topic and broker configs."""

from __future__ import annotations

import re

from kt.client.admin import BROKER_RESOURCE, TOPIC_RESOURCE, AdminClient, ConfigValue
from kt.errors import error_for

SOURCE_NAMES = {
    0: "UNKNOWN",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
    7: "DYNAMIC_CLIENT_METRICS_CONFIG",
}
DYNAMIC_SOURCES = {1, 2, 3}
ENTITY_TYPES = {"topics": TOPIC_RESOURCE, "brokers": BROKER_RESOURCE}
SET, DELETE = 0, 1


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
        elif entity_type == "brokers":
            lines.append(f"{kind} configs for broker {name} are:")
        else:
            lines.append(f"{kind} configs for topic {name} are:")
        lines += [_describe_line(c) for c in sorted(shown, key=lambda c: c.name)]
    return lines


def alter(
    admin: AdminClient,
    entity_type: str,
    name: str,
    add: dict[str, str],
    delete: list[str],
) -> list[str]:
    if not add and not delete:
        raise ConfigCommandError(
            "At least one of --add-config or --delete-config must be specified with --alter"
        )
    overlap = set(add) & set(delete)
    if overlap:
        raise ConfigCommandError(f"Invalid config(s): {','.join(sorted(overlap))}")
    ops = [(SET, k, v) for k, v in add.items()] + [(DELETE, k, None) for k in delete]
    code, message = admin.incremental_alter_configs(ENTITY_TYPES[entity_type], name, ops)
    if code:
        raise ConfigBrokerError(message or error_for(code).message)
    if entity_type == "brokers" and name == "":
        return ["Completed updating default config for brokers in the cluster."]
    what = "broker" if entity_type == "brokers" else "topic"
    return [f"Completed updating config for {what} {name}."]
