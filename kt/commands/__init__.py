"""Thin click commands: parse options, call kt.tools or kt.broker, render.

Each subcommand lives in its own module and is imported only when it runs, so that
`kt server-start` pays for nothing it does not use. COMMANDS maps the name a user
types to "module:attribute"; kt/cli.py builds the root group from it.
"""

COMMANDS: dict[str, str] = {
    "dump-log": "kt.commands.dump_log:dump_log",
}
