"""kt runs on the README's plain install (`pip install -e .`): outside the Spark modules,
which say what to install before they import pyspark, kt imports only the standard
library and the base dependencies of pyproject.toml. A tool that imported a test extra's
package (producer-perf-test once imported `crc32c`) crashed for every user; CI's
base-install smoke (scripts/smoke_base_install.py) runs each command too."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

KT = Path(__file__).resolve().parent.parent / "kt"
# pyproject.toml's [project] dependencies, by the name they are imported under.
BASE = {
    "click",
    "rich",
    "crc32c_rs",
    "lz4",
    "zstandard",
    "snappy",
    "kazoo",
    "cryptography",
    "prometheus_client",
    "kt",
}
# Modules that run only with an extra installed (the Spark ones check for it first; the
# pytest fixtures of kt.testing run under pytest).
EXTRA_ONLY = ("spark/", "tools/spark_export.py", "tools/spark_import.py", "testing/")


def imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_kt_imports_only_the_base_install() -> None:
    outside = {}
    for path in sorted(KT.rglob("*.py")):
        relative = path.relative_to(KT).as_posix()
        if relative.startswith(EXTRA_ONLY):
            continue
        extra = imported_packages(path) - BASE - set(sys.stdlib_module_names)
        if extra:
            outside[relative] = sorted(extra)
    assert outside == {}


def test_the_check_sees_a_test_extra_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import os\n\ndef f():\n    from crc32c import crc32c\n")
    assert imported_packages(module) - BASE - set(sys.stdlib_module_names) == {"crc32c"}
