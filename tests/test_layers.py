"""The import rules of kt's layers, read from the code with `ast` (every import: at the
top, inside functions, under TYPE_CHECKING).

- Nothing below the broker imports it: kt's config, errors, metrics, storage, protocol,
  metadata and client know no kt.broker.
- The broker's parts do not reach into KafkaServer: only the server and its runner import
  it (the request layer works with kt.broker.broker_services).
- Only the request layer (kt/broker/api/) imports a handler.
"""

from __future__ import annotations

import ast
from pathlib import Path

KT = Path(__file__).resolve().parent.parent / "kt"

BELOW_THE_BROKER = (
    "config.py", "config_def.py", "config_unread.py", "log_config.py", "errors.py",
    "inter_broker_protocol.py", "endpoints.py", "properties.py", "metrics", "storage",
    "protocol", "metadata", "client",
)  # fmt: skip
SERVER_AND_ITS_RUNNER = ("broker/server.py", "broker/runner.py")
REQUEST_LAYER = "broker/api/"


def imports(path: Path) -> set[str]:
    """The modules `path` imports (for `from a.b import c`: a.b and a.b.c)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def modules(*under: str) -> dict[str, set[str]]:
    """Each module of kt under these files or folders (relative to kt/) -> its imports."""
    found = {}
    for name in under:
        paths = [KT / name] if name.endswith(".py") else sorted((KT / name).rglob("*.py"))
        for path in paths:
            if path.exists():
                found[str(path.relative_to(KT))] = imports(path)
    return found


def test_nothing_below_the_broker_imports_it() -> None:
    offenders = {
        module: sorted(i for i in found if i == "kt.broker" or i.startswith("kt.broker."))
        for module, found in modules(*BELOW_THE_BROKER).items()
    }
    assert {m: i for m, i in offenders.items() if i} == {}


def test_only_the_server_and_its_runner_import_it() -> None:
    importing = {
        module for module, found in modules("broker").items()
        if "kt.broker.server.KafkaServer" in found and module not in SERVER_AND_ITS_RUNNER
    }  # fmt: skip
    assert importing == set()


def test_only_the_request_layer_imports_handlers() -> None:
    importing = {
        module for module, found in modules("").items()
        if any(i.startswith("kt.broker.api.handlers") for i in found)
        and not module.startswith(REQUEST_LAYER)
    }  # fmt: skip
    assert importing == set()
