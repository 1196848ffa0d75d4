"""What kt cannot do yet, refused out loud.

A setting that asks for a feature kt does not have must stop the broker or the tool
with one line naming the key, never start it without the feature (a TLS listener that
serves plaintext, an authorizer that allows everything). Each entry goes when its
feature lands; the README's "Not yet" list says the same in prose.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kt.errors import InvalidConfigError


def _set(value: str) -> bool:
    return bool(value.strip())


def _true(value: str) -> bool:
    return value.strip().lower() == "true"


@dataclass(frozen=True)
class NotYet:
    """A key whose value, when `asks(value)`, wants `feature`."""

    key: str
    asks: Callable[[str], bool]
    feature: str
    instead: str = ""  # what to do meanwhile


# The rest of Kafka's broker keys that ask for what kt lacks: kt/config_unread.py.
BROKER_NOT_YET = (
    NotYet(
        "authorizer.class.name",
        lambda v: (
            v.strip()
            not in (
                "",
                "kafka.security.authorizer.AclAuthorizer",
                "kafka.security.auth.SimpleAclAuthorizer",
            )
        ),
        "other authorizers than kafka.security.authorizer.AclAuthorizer",
    ),  # fmt: skip
)

CLIENT_NOT_YET = (NotYet("transactional.id", _set, "transactions in this tool"),)


def _refuse(props: Mapping[str, str], entries: Iterable[NotYet]) -> None:
    for entry in entries:
        value = props.get(entry.key)
        if value is not None and entry.asks(value):
            raise InvalidConfigError(
                f"{entry.key}={value.strip()}: kt does not support {entry.feature} yet"
                + entry.instead
            )


def refuse_broker_features(props: Mapping[str, str], listeners: Any) -> None:
    """Stop a broker whose configuration asks for what kt cannot do: a SASL listener (its
    security protocol from listener.security.protocol.map), or a key of BROKER_NOT_YET."""
    for endpoint in listeners.bound:
        if endpoint.security_protocol not in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"):
            raise InvalidConfigError(
                f"listeners={endpoint}: unknown security protocol {endpoint.security_protocol}"
            )
    _refuse(props, BROKER_NOT_YET)


SPARK_NOT_YET = (
    NotYet("security.protocol", lambda v: v.strip().upper() != "PLAINTEXT", "TLS and SASL"),
)


def refuse_client_features(props: Mapping[str, str], *, spark: bool = False) -> None:
    """Stop a tool whose client configuration asks for transactions (in Spark's source and
    sink, TLS and SASL too)."""
    if spark:
        _refuse(props, SPARK_NOT_YET)
    _refuse(props, CLIENT_NOT_YET)
