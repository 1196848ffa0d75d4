"""The broker keys kt knows and does not read (kt.config_unread): each Accepted key is read
nowhere in kt, each NotYet key is taken at Kafka's default and refused at another value
naming the key, docs/config-keys.md is generated from the tables, and design.md's "What kt
refuses" says what the code refuses."""

from __future__ import annotations

import re

import pytest

from kt.config import BROKER_KEYS, KafkaConfig
from kt.config_unread import UNREAD, Accepted, NotYet, unread_key
from kt.errors import InvalidConfigError
from tests.test_config_keys import ROOT, _kt_sources

ACCEPTED = sorted(k for k, what in UNREAD.items() if isinstance(what, Accepted))
NOT_YET = sorted(k for k, what in UNREAD.items() if isinstance(what, NotYet))


@pytest.mark.parametrize("key", ACCEPTED)
def test_a_key_without_effect_is_read_nowhere(key: str) -> None:
    assert UNREAD[key].reason
    assert f'"{key}"' not in _kt_sources(), f"{key} is read: say what it does"


def _another_value(key: str) -> str:
    """A value of the key's type other than Kafka's default, which Kafka would take."""
    kind, default = BROKER_KEYS.get(key) or unread_key(key)  # type: ignore[misc]
    if kind == "bool":
        return "false" if default else "true"
    if kind == "double":
        return str(default / 2)
    if kind in ("int", "long", "short"):
        return str(int(default) + 1 if default is not None else 1)
    if key == "group.coordinator.rebalance.protocols":
        return "classic,consumer"
    return "org.example.Other"


@pytest.mark.parametrize("key", NOT_YET)
def test_a_key_kt_cannot_honour_is_refused_unless_at_its_default(key: str) -> None:
    kind, default = BROKER_KEYS.get(key) or unread_key(key)  # type: ignore[misc]
    if default is not None:
        KafkaConfig({key: _kafka_text(default)})  # Kafka's default is always taken
    value = _another_value(key)
    with pytest.raises(InvalidConfigError) as refused:
        KafkaConfig({key: value})
    assert str(refused.value).startswith(f"{key}={value}: kt does not support ")


def _kafka_text(value: object) -> str:
    """A default as Kafka's ConfigDef prints it (Java's Boolean and Double toString)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return repr(value).replace("e+", "E")
    return str(value)


def test_the_docs_table_of_unread_keys_is_generated_from_the_code() -> None:
    from kt.config_unread import render_markdown

    assert (ROOT / "docs" / "config-keys.md").read_text() == render_markdown(), (
        "docs/config-keys.md is out of date: run python scripts/gen_config_docs.py"
    )


def _refused_keys_in_code() -> set[str]:
    """Every key whose value kt may refuse because it cannot do what it asks."""
    from kt.unsupported import BROKER_NOT_YET, CLIENT_NOT_YET, SPARK_NOT_YET

    tables = (BROKER_NOT_YET, CLIENT_NOT_YET, SPARK_NOT_YET)
    keys = {entry.key for table in tables for entry in table} | set(NOT_YET)
    for path in ("kt/security/ssl_factory.py", "kt/security/sasl.py",
                 "kt/security/sasl_client.py"):  # fmt: skip
        keys |= set(re.findall(r'f"([a-z.]+)=\{[^}]*\}: kt does not',
                               (ROOT / path).read_text()))  # fmt: skip
    return keys


def test_what_kt_refuses_says_what_the_code_refuses() -> None:
    """design.md's "What kt refuses" names only keys the code refuses, and the code refuses
    no key that it or docs/config-keys.md leaves out."""
    design = (ROOT / "docs" / "design.md").read_text()
    section = design.split("## What kt refuses\n", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`([a-z]+(?:\.[a-z]+)+)`", section)) - {"docs/config-keys.md"}
    refused_table = (ROOT / "docs" / "config-keys.md").read_text().split("## Accepted", 1)[0]
    documented = set(re.findall(r"\| `([a-z.A-Z]+)`(?: \(4\.x\))? \|", refused_table))
    refused = _refused_keys_in_code()
    assert sorted(named - refused) == []  # said refused, yet the code takes it
    assert sorted(refused - named - documented) == []  # refused, yet the docs are silent
