#!/usr/bin/env python3
"""Regenerate man/ from the click tree: `python scripts/gen_man.py [--check]`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kt.cli import cli  # noqa: E402
from kt.tools.manpages import render_all  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Write one man page per kt command into man/ (kt.1, kt-topics.1, ...), "
        "from the commands' own help, and delete pages of commands that are gone."
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if man/ differs from what would be written",
    )
    args = parser.parse_args()
    man = ROOT / "man"
    pages = render_all(cli)
    if args.check:
        current = {p.name: p.read_text() for p in man.glob("*.1")}
        if current != pages:
            print(f"{man} is out of date: run python scripts/gen_man.py", file=sys.stderr)
            sys.exit(1)
        print(f"{len(pages)} man pages in {man} are current")
        return
    man.mkdir(exist_ok=True)
    for stale in man.glob("*.1"):
        if stale.name not in pages:
            stale.unlink()
    for name, text in pages.items():
        (man / name).write_text(text)
    print(f"wrote {len(pages)} man pages to {man}")


if __name__ == "__main__":
    main()
