"""The root `kt` command group.

Subcommands are registered from kt.commands.COMMANDS and imported lazily: listing
them costs nothing, running one imports only its own module.

Errors end as Kafka's tools end them (CommandLineUtils): exit status 1, a usage error's
message in joptsimple's words followed by the command's help, and never a Python
traceback for bad input.
"""

from __future__ import annotations

import difflib
import importlib
import os
import sys
from typing import Any

import click

from kt import __version__
from kt.commands import COMMANDS
from kt.commands.common import ArgumentConversionError

TRACEBACK_ENV = "KT_TRACEBACK"  # set to 1 to see the traceback of an unexpected error


def usage_message(error: click.UsageError) -> str:
    """joptsimple's message for what click found wrong with a command line."""
    if isinstance(error, click.NoSuchOption):
        return f"{error.option_name.lstrip('-')} is not a recognized option"
    if isinstance(error, click.MissingParameter) and isinstance(error.param, click.Option):
        return f'Missing required argument "[{error.param.opts[0].lstrip("-")}]"'
    if isinstance(error, click.BadOptionUsage) and error.message.endswith("requires an argument."):
        return f"Option {error.option_name.lstrip('-')} requires an argument"
    if isinstance(error, ArgumentConversionError):
        return error.message
    return error.format_message()


class LazyGroup(click.Group):
    """A click group whose subcommands are imported the first time they are needed."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """click's lookup, with the nearest names after an unknown one (kt topic: "Did
        you mean topics?")."""
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as e:
            typed = args[0] if args else ""
            near = difflib.get_close_matches(typed, self.list_commands(ctx), n=2, cutoff=0.75)
            if near and e.message.startswith("No such command"):
                e.message += f" Did you mean {' or '.join(near)}?"
            raise

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        return getattr(importlib.import_module(module_name), attr)

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        """click's main, with Kafka's exits: 1 and the option help for a usage error, 1 and
        one line for any other failure, 130 on Ctrl-C."""
        try:
            result = super().main(*args, standalone_mode=False, **kwargs)
        except click.UsageError as e:
            click.echo(usage_message(e), err=True)
            if e.ctx is not None:
                click.echo(e.ctx.get_help(), err=True)
            code = 1
        except click.ClickException as e:
            e.show()
            code = 1
        except click.Abort:
            code = 130
        except Exception as e:  # the last net: one line, the traceback only on request
            if os.environ.get(TRACEBACK_ENV) == "1":
                raise
            click.echo(f"Error: {type(e).__name__}: {e}", err=True)
            code = 1
        else:
            code = result if isinstance(result, int) else 0
            if not standalone_mode:
                return result
        if not standalone_mode:
            raise SystemExit(code)
        sys.exit(code)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="kt")
def cli() -> None:
    """kt: Apache Kafka rebuilt in Python, with an embedded broker."""


def main() -> None:
    """Console-script entry point."""
    cli.main(prog_name="kt")
