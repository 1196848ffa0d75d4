"""Helpers every command shares: one-line failures, key=value options."""

from __future__ import annotations

from typing import NoReturn

import click


def fail(message: str, code: int = 1) -> NoReturn:
    """Print one line on stderr and exit: kt never shows a traceback for bad input."""
    click.echo(message, err=True)
    raise SystemExit(code)


def parse_key_values(items: tuple[str, ...] | list[str], option: str) -> dict[str, str]:
    """`k=v` strings into a dict; a malformed item is a one-line error naming the option."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            fail(f"Invalid {option} '{item}': expected key=value")
        out[key.strip()] = value.strip()
    return out
