"""Helpers every command shares: one-line failures, key=value options."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import click


class ArgumentConversionError(click.BadParameter):
    """An option value of the wrong type, in joptsimple's words."""


class JoptInt(click.ParamType):
    """An integer option that fails as joptsimple does: "Cannot parse argument 'abc' of
    option partitions"."""

    name = "integer"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        try:
            return int(value)
        except ValueError:
            option = param.opts[0].lstrip("-") if param is not None else "?"
            raise ArgumentConversionError(
                f"Cannot parse argument '{value}' of option {option}", ctx, param
            ) from None


INT = JoptInt()


class KafkaCommand(click.Command):
    """A kt subcommand: every usage error carries the command's context, so that kt.cli
    prints the command's help after the message, as printUsageAndExit does."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as e:
            if e.ctx is None:
                e.ctx = ctx
            raise


def fail(message: str, code: int = 1, *, err: bool = True) -> NoReturn:
    """Print the message (one line; on stdout where Kafka's tool prints it there) and exit:
    kt never shows a traceback for bad input."""
    click.echo(message, err=err)
    raise SystemExit(code)


def usage_error(message: str) -> NoReturn:
    """CommandLineUtils.printUsageAndExit: the message, then the help, exit 1 (kt.cli
    prints both)."""
    raise click.UsageError(message, click.get_current_context(silent=True))


def given_options(ctx: click.Context) -> set[str]:
    """The options written on the command line, by their Kafka names ("replication-factor")."""
    from click.core import ParameterSource

    return {
        param.opts[0].lstrip("-")
        for param in ctx.command.params
        if param.name is not None
        and ctx.get_parameter_source(param.name) == ParameterSource.COMMANDLINE
    }


def check_invalid_args(given: set[str], used: str, invalid: list[str]) -> None:
    """CommandLineUtils.checkInvalidArgs: `used`, when given, refuses each of `invalid`."""
    if used in given:
        for other in invalid:
            if other in given:
                usage_error(f'Option "[{used}]" can\'t be used with option "[{other}]"')


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
    security = client_security(props)
    try:
        client = KafkaClient(bootstrap_server, client_id=props.get("client.id", "kt-admin"),
                             **security)  # fmt: skip
    except KafkaError as e:
        fail(f"Error connecting to {bootstrap_server}: {e}")
    try:
        yield AdminClient(client)
    except KafkaError as e:
        fail(f"Error: {e}")
    finally:
        client.close()


def load_client_config(path: str | None) -> dict[str, str]:
    """A client properties file (--command-config, --producer.config ...), or {}. Read as
    ISO-8859-1, as Java's Properties.load reads a file; a setting that asks for what kt
    cannot do yet (TLS, SASL, transactions) ends the command."""
    if path is None:
        return {}
    from kt.config import parse_properties

    try:
        with open(path, encoding="latin-1") as f:
            return checked_client_props(parse_properties(f.read()))
    except OSError as e:
        fail(f"Cannot read {path}: {e.strerror}")


def client_security(props: dict[str, str]) -> dict[str, Any]:
    """KafkaClient's `tls` and `sasl` for a tool's properties (security.protocol, ssl.*,
    sasl.*); a key store that cannot be read or a JAAS line that cannot be parsed ends
    the command in one line."""
    from kt.errors import InvalidConfigError
    from kt.security.sasl_client import client_security as security_of

    try:
        return security_of(props)
    except InvalidConfigError as e:
        fail(str(e))


def checked_client_props(props: dict[str, str]) -> dict[str, str]:
    """The client settings of a tool, once checked for what kt cannot do yet: a one-line
    error names the key, rather than connecting without the security asked for."""
    from kt.errors import InvalidConfigError
    from kt.unsupported import refuse_client_features

    try:
        refuse_client_features(props)
    except InvalidConfigError as e:
        fail(str(e))
    return props


def run_group_command(tool: Any, o: dict, action: str, scenario: tuple[str, object] | None,
                      kind: str, command_error: type[Exception]) -> None:  # fmt: skip
    """A share or streams group command's action, exit 1 unless it fully succeeded:
    `command_error` a one-line failure, ValueError a usage error."""
    try:
        ok = run_group_tool(tool, o, action, scenario, kind)
    except command_error as e:
        fail(str(e))
    except ValueError as e:
        usage_error(str(e))
    if not ok:
        raise SystemExit(1)


def run_group_tool(tool: Any, o: dict, action: str, scenario: tuple[str, object] | None,
                   kind: str) -> bool:  # fmt: skip
    """Run a share or streams group tool's action (`tool.run`) over a client of
    --bootstrap-server: the reset scenario read (a --from-file plan's text), the errors
    printed as Kafka's tool prints them ("Executing <kind> group command failed due to")."""
    import sys

    from kt.client.client import KafkaClient
    from kt.client.groups import GroupAdmin
    from kt.errors import KafkaError
    from kt.tools import consumer_groups as cg

    reset = None
    if scenario is not None:
        name, value = scenario
        if name == "file":
            try:
                with open(str(value)) as f:
                    value = f.read()
            except OSError as e:
                fail(f"Cannot read {o['from_file']}: {e.strerror}")
        reset = cg.ResetScenario(name, value)  # type: ignore[arg-type]
    props = load_client_config(o["command_config"])
    try:
        client = KafkaClient(o["bootstrap_server"], client_id=props.get("client.id", "kt-admin"),
                             **client_security(props))  # fmt: skip
    except KafkaError as e:
        fail(f"Error connecting to {o['bootstrap_server']}: {e}")
    failed = f"Executing {kind} group command failed due to"
    try:
        return bool(tool.run(GroupAdmin(client, o["timeout_ms"]), action, o, reset))
    except KafkaError as e:
        tool.print_error(sys.stdout, f"{failed} {tool.java_text(e)}")
        return False
    except cg.ConsumerGroupCommandError as e:
        tool.print_error(sys.stdout, f"{failed} {e}")
        return False
    finally:
        client.close()
