#!/usr/bin/env python3
"""Regenerate docs/config-keys.md from kt/config_unread.py: `python scripts/gen_config_docs.py`."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kt.config_unread import render_markdown  # noqa: E402

if __name__ == "__main__":
    (ROOT / "docs" / "config-keys.md").write_text(render_markdown())
