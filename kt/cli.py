"""The root `kt` command group.

Subcommands are registered from kt.commands.COMMANDS and imported lazily: listing
them costs nothing, running one imports only its own module.
"""

from __future__ import annotations

import importlib
import sys

import click

from kt import __version__
from kt.commands import COMMANDS


class LazyGroup(click.Group):
    """A click group whose subcommands are imported the first time they are needed."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        return getattr(importlib.import_module(module_name), attr)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="kt")
def cli() -> None:
    """kt: Apache Kafka rebuilt in Python, with an embedded broker."""


def main() -> None:
    """Console-script entry point."""
    try:
        cli.main(prog_name="kt")
    except KeyboardInterrupt:
        sys.exit(130)
