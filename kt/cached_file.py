"""A small file of ours kept in a cache shared by processes (a log4j configuration that
a JVM reads): written whole under a name of its own, then renamed over the old one, so
that processes writing it at the same time never show a reader a partial file."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def cached_file(path: Path, text: str) -> Path:
    """`path`, holding `text`; written only when it does not already."""
    try:
        if path.read_text() == text:
            return path
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return path
