"""The committed man pages match the click tree; regenerate with scripts/gen_man.py."""

from pathlib import Path

from kt.cli import cli
from kt.tools.manpages import render_all

MAN = Path(__file__).resolve().parent.parent / "man"


def test_man_pages_are_current() -> None:
    expected = render_all(cli)
    committed = {p.name: p.read_text() for p in MAN.glob("*.1")}
    stale = sorted(n for n in expected if committed.get(n) != expected[n])
    extra = sorted(set(committed) - set(expected))
    assert not stale and not extra, (
        f"man pages out of date (stale: {stale}, extra: {extra}); run python scripts/gen_man.py"
    )


def test_root_page_names_the_version() -> None:
    page = render_all(cli)["kt.1"]
    assert page.startswith('.TH "KT" "1"')
    assert ".SH SYNOPSIS" in page


def test_gen_man_help_helps_and_check_writes_nothing() -> None:
    """`gen_man.py --help` prints its usage (it once rewrote the pages instead), and
    `--check` compares without writing."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parent.parent / "scripts" / "gen_man.py"
    man = script.parent.parent / "man"
    before = {p.name: p.stat().st_mtime_ns for p in man.glob("*.1")}
    helped = subprocess.run([sys.executable, str(script), "--help"], capture_output=True,
                            text=True, check=True)  # fmt: skip
    assert helped.stdout.startswith("usage: gen_man.py [-h] [--check]")
    checked = subprocess.run([sys.executable, str(script), "--check"], capture_output=True,
                             text=True)  # fmt: skip
    assert checked.returncode == 0, checked.stderr
    assert {p.name: p.stat().st_mtime_ns for p in man.glob("*.1")} == before


def test_name_lines_read_as_man_pages_write_them() -> None:
    """NAME is `kt-topics - create, delete, ...`: lower case, no final period, and the
    program's name once (kt.1 said `kt - kt: ...`)."""
    from pathlib import Path

    man = Path(__file__).resolve().parent.parent / "man"

    def name_line(page: str) -> str:
        lines = (man / page).read_text().splitlines()
        return lines[lines.index(".SH NAME") + 1]

    assert name_line("kt-topics.1") == r"kt\-topics \- create, delete, describe, or change a topic"
    assert name_line("kt.1") == r"kt \- Apache Kafka rebuilt in Python, with an embedded broker"


def test_every_page_has_examples_and_exit_status() -> None:
    pages = render_all(cli)
    for name, page in pages.items():
        assert ".SH EXAMPLES" in page and ".SH EXIT STATUS" in page, name
