"""Helpers every command shares: one-line failures, key=value options."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import click


def fail(message: str, code: int = 1, *, err: bool = True) -> NoReturn:
    """Print the message (one line; on stdout where Kafka's tool prints it there) and exit:
    kt never shows a traceback for bad input."""
    click.echo(message, err=err)
    raise SystemExit(code)


def parse_key_values(items: tuple[str, ...] | list[str], option: str) -> dict[str, str]:
    """`k=v` strings into a dict, split at the first `=` and kept as given (separators
    such as `key.separator= | ` may be spaces); a malformed item is a one-line error."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            fail(f"Invalid {option} '{item}': expected key=value")
        out[key] = value
    return out


@contextmanager
def admin_session(bootstrap_server: str, command_config: str | None = None) -> Iterator:
    """An AdminClient for a command; connection failures become one line and exit 1."""
    from kt.client.admin import AdminClient
    from kt.client.client import KafkaClient
    from kt.errors import KafkaError

    props = load_client_config(command_config)
    try:
        client = KafkaClient(bootstrap_server, client_id=props.get("client.id", "kt-admin"))
    except KafkaError as e:
        fail(f"Error connecting to {bootstrap_server}: {e}")
    try:
        yield AdminClient(client)
    except KafkaError as e:
        fail(f"Error: {e}")
    finally:
        client.close()


def load_client_config(path: str | None) -> dict[str, str]:
    """A client properties file (--command-config, --producer.config ...), or {}."""
    if path is None:
        return {}
    from kt.config import parse_properties

    try:
        with open(path) as f:
            return parse_properties(f.read())
    except OSError as e:
        fail(f"Cannot read {path}: {e.strerror}")
