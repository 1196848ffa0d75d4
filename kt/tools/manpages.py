"""Man pages for `kt` and every subcommand, rendered from the click tree.

`scripts/gen_man.py` writes them under man/; tests/test_manpages.py fails when the
committed pages differ from what the click tree renders now.
"""

from __future__ import annotations

import click

from kt import __version__

SECTION = "1"


def _escape(text: str) -> str:
    """Escape text for roff: backslashes, and a leading dot or quote on a line."""
    out = []
    for line in text.replace("\\", "\\e").splitlines():
        if line.startswith((".", "'")):
            line = "\\&" + line
        out.append(line.replace("-", "\\-"))
    return "\n".join(out)


def _option_lines(command: click.Command, ctx: click.Context) -> list[str]:
    lines: list[str] = []
    # Options only: arguments are in the synopsis (click 8.5 gives them help records, 8.4
    # does not, and the pages must not change with the installed click).
    options = [p for p in command.get_params(ctx) if isinstance(p, click.Option)]
    for option in options:
        record = option.get_help_record(ctx)
        if record is None:  # a hidden option
            continue
        names, help_text = record
        lines += [".TP", f"\\fB{_escape(names)}\\fR", _escape(help_text) or "(no description)"]
    return lines


PROPER_NOUNS = {"Apache", "Kafka", "Kafka's", "Spark", "ZooKeeper"}


def _name_summary(help_text: str, name: str) -> str:
    """The NAME line's part after the dash, as man pages write it: lower case, no final
    period, no repeated program name ("kt-topics - create, delete, ... a topic")."""
    summary = help_text.splitlines()[0].strip() if help_text else ""
    prefix = f"{name}:"
    if summary.startswith(prefix):
        summary = summary[len(prefix) :].strip()
    first = summary.split(" ", 1)[0]
    if first and first not in PROPER_NOUNS and first[1:] == first[1:].lower():
        summary = summary[0].lower() + summary[1:]
    return summary.rstrip(".")


def render_page(name: str, command: click.Command, ctx: click.Context) -> str:
    """One man page in roff for `command`, whose full name is `name` ("kt topics")."""
    title = name.replace(" ", "-").upper()
    help_text = (command.help or command.short_help or "").strip()
    summary = _name_summary(help_text, name)
    usage = " ".join(command.collect_usage_pieces(ctx))
    lines = [
        f'.TH "{title}" "{SECTION}" "" "kt {__version__}" "kt manual"',
        ".SH NAME",
        f"{_escape(name.replace(' ', '-'))} \\- {_escape(summary)}",
        ".SH SYNOPSIS",
        f"\\fB{_escape(name)}\\fR {_escape(usage)}",
        ".SH DESCRIPTION",
        _escape(help_text),
    ]
    options = _option_lines(command, ctx)
    if options:
        lines += [".SH OPTIONS", *options]
    if isinstance(command, click.Group):
        subs = command.list_commands(ctx)
        if subs:
            lines.append(".SH COMMANDS")
            for sub in subs:
                sub_cmd = command.get_command(ctx, sub)
                short = sub_cmd.get_short_help_str(limit=200) if sub_cmd else ""
                lines += [".TP", f"\\fB{_escape(sub)}\\fR", _escape(short)]
                lines.append(f"See \\fB{_escape(name.replace(' ', '-'))}-{_escape(sub)}\\fR(1).")
    return "\n".join(lines) + "\n"


def render_all(root: click.Group, prog: str = "kt") -> dict[str, str]:
    """File name -> page text for the root group and each subcommand, recursively."""
    pages: dict[str, str] = {}

    def walk(name: str, command: click.Command, parent: click.Context | None) -> None:
        ctx = click.Context(
            command, info_name=name.split(" ")[-1], parent=parent, **command.context_settings
        )
        pages[f"{name.replace(' ', '-')}.{SECTION}"] = render_page(name, command, ctx)
        if isinstance(command, click.Group):
            for sub in command.list_commands(ctx):
                sub_cmd = command.get_command(ctx, sub)
                if sub_cmd is not None:
                    walk(f"{name} {sub}", sub_cmd, ctx)

    walk(prog, root, None)
    return pages
