#!/usr/bin/env python3
"""Regenerate man/ from the click tree: `python scripts/gen_man.py`."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kt.cli import cli  # noqa: E402
from kt.tools.manpages import render_all  # noqa: E402


def main() -> None:
    man = ROOT / "man"
    man.mkdir(exist_ok=True)
    pages = render_all(cli)
    for stale in man.glob("*.1"):
        if stale.name not in pages:
            stale.unlink()
    for name, text in pages.items():
        (man / name).write_text(text)
    print(f"wrote {len(pages)} man pages to {man}")


if __name__ == "__main__":
    main()
