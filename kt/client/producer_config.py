"""The producer configs checked as the Java producer's ProducerConfig checks them.

Apart from kt.client.producer so that what only checks a configuration (the Spark sink's
planning, which runs in a Python process of its own for every write) does not import the
protocol and the client with it.
"""

from __future__ import annotations

from collections.abc import Mapping

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
# The producer configs whose value is one of a list (ConfigDef.ValidString), in Java's order.
CHOICES = {"acks": ("all", "-1", "0", "1"), "compression.type": tuple(CODECS)}


def checked_choice(key: str, value: str) -> str:
    """The trimmed value of a CHOICES config; ValueError with the Java producer's
    ConfigException message when it is not one of them."""
    if value.strip() not in CHOICES[key]:
        raise ValueError(
            f"Invalid value {value} for configuration {key}: String must be one of: "
            + ", ".join(CHOICES[key])
        )
    return value.strip()


def acks_number(value: str) -> int:
    """The acks config as a Produce request carries it (all is -1)."""
    checked = checked_choice("acks", value)
    return -1 if checked == "all" else int(checked)


def idempotence(props: Mapping[str, str]) -> bool:
    """ProducerConfig.postProcessAndValidateIdempotenceConfigs: idempotence is on unless
    enable.idempotence=false; left at its default, it is quietly off with retries=0,
    acks other than all, or more than 5 requests in flight, and set to true with any of
    those it is an error (ValueError with the Java producer's ConfigException message)."""
    asked = props.get("enable.idempotence")
    if asked is not None and asked.strip().lower() not in ("true", "false"):
        raise ValueError(
            f"Invalid value {asked} for configuration enable.idempotence: Expected value to "
            "be either true or false"
        )
    if asked is not None and asked.strip().lower() == "false":
        return False
    explicit = asked is not None
    conflicts = [
        (int(props.get("retries", "2147483647")) == 0,
         "Must set retries to non-zero when using the idempotent producer."),
        (acks_number(props.get("acks", "all")) != -1,
         "Must set acks to all in order to use the idempotent producer. Otherwise we cannot "
         "guarantee idempotence."),
        (int(props.get("max.in.flight.requests.per.connection", "5")) > 5,
         "Must set max.in.flight.requests.per.connection to at most 5 to use the idempotent "
         "producer."),
    ]  # fmt: skip
    for conflict, message in conflicts:
        if conflict:
            if explicit:
                raise ValueError(message)
            return False
    return True
