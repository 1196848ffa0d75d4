"""The `kt` executable itself: version, help, lazy subcommands."""

import subprocess
import sys

from click.testing import CliRunner

from kt import __version__
from kt.cli import cli
from kt.commands import COMMANDS


def test_version() -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"kt, version {__version__}"


def test_every_registered_command_imports() -> None:
    for name in COMMANDS:
        result = CliRunner().invoke(cli, [name, "--help"])
        assert result.exit_code == 0, (name, result.output)


def test_python_dash_m_kt() -> None:
    out = subprocess.run([sys.executable, "-m", "kt", "--help"], capture_output=True, text=True)
    assert out.returncode == 0
    assert "Usage: kt" in out.stdout
