"""Generate kt/protocol/schemas_generated.py from Kafka's JSON message definitions.

    python scripts/gen_protocol_schemas.py <dir with Kafka's *Request.json/*Response.json>

The directory is Apache Kafka's clients/src/main/resources/common/message/ (a revision
that still has the ZooKeeper-era inter-broker APIs and old versions: 3.9 or trunk of
late 2024). Only the APIs kt speaks (PROTOCOL.md section 1) are kept, each with its
full valid version range. The output holds facts only (names, types, version ranges,
defaults, tags) in kt's table format, kt/protocol/schema.py.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

# API keys listed in PROTOCOL.md section 1.
KT_API_KEYS = frozenset(
    list(range(0, 30)) + [32, 33, 35, 36, 37, 42, 43, 44, 45, 46, 47, 56, 60, 61]
)
PRIMITIVES = {
    "int8", "int16", "int32", "int64", "uint16", "uint32", "float64", "bool", "uuid",
    "string", "bytes", "records",
}  # fmt: skip
OUTPUT = Path(__file__).resolve().parent.parent / "kt" / "protocol" / "schemas_generated.py"


def snake_case(name: str) -> str:
    """Kafka's field names as Python attributes: TopicData -> topic_data."""
    name = name.replace("KRaft", "Kraft")
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def parse_versions(text: str | None) -> tuple[int, int | None] | None:
    if text is None or text.strip() == "none":
        return None
    text = text.strip()
    if text.endswith("+"):
        return (int(text[:-1]), None)
    if "-" in text:
        lo, hi = text.split("-")
        return (int(lo), int(hi))
    return (int(text), int(text))


def load_json(path: Path) -> dict:
    """Kafka's message files are JSON with whole-line // comments."""
    lines = [line for line in path.read_text().splitlines() if not line.lstrip().startswith("//")]
    return json.loads("\n".join(lines))


def parse_default(field: dict, ftype: str) -> object:
    raw = field.get("default")
    if isinstance(raw, str):
        raw = raw.strip()
    if ftype.startswith("[]") or ftype not in PRIMITIVES:
        return None if raw == "null" else ()
    if raw == "null":
        return None
    if ftype == "bool":
        return raw in (True, "true")
    if ftype in ("string",):
        return "" if raw is None else str(raw)
    if ftype == "bytes":
        return b""
    if ftype in ("records", "uuid"):
        return None  # records: null; uuid: the zero UUID, which the codec builds
    if ftype == "float64":
        return float(raw) if raw is not None else 0.0
    if raw is None or raw == "":
        return 0
    return int(raw, 0) if isinstance(raw, str) else int(raw)


def convert_fields(
    fields: list[dict], structs: dict[str, list], common: dict[str, dict]
) -> list[str]:
    out = []
    for field in fields:
        ftype = field["type"]
        element = ftype[2:] if ftype.startswith("[]") else ftype
        if element not in PRIMITIVES and element not in structs:
            body = field.get("fields")
            if body is None:
                body = common[element]["fields"]
            structs[element] = []  # reserve the name before recursing
            structs[element] = convert_fields(body, structs, common)
        args = [repr(snake_case(field["name"])), repr(field["name"]), repr(ftype)]
        args.append(repr(parse_versions(field["versions"])))
        nullable = parse_versions(field.get("nullableVersions"))
        default = parse_default(field, ftype)
        extra = []
        if nullable is not None:
            extra.append(f"nullable={nullable!r}")
        if default is not None:
            extra.append(f"default={default!r}")
        if "tag" in field:
            extra.append(f"tag={field['tag']!r}")
            extra.append(f"tagged={parse_versions(field['taggedVersions'])!r}")
        out.append(f"F({', '.join(args + extra)})")
    return out


def convert_message(doc: dict) -> str:
    common = {s["name"]: s for s in doc.get("commonStructs", [])}
    structs: dict[str, list] = {}
    fields = convert_fields(doc["fields"], structs, common)
    valid = parse_versions(doc["validVersions"])
    flexible = parse_versions(doc.get("flexibleVersions"))
    lines = [f"    M({doc['name']!r}, {doc['apiKey']}, {doc['type']!r}, {valid!r}, {flexible!r},"]
    lines.append("      fields=(")
    lines += [f"        {f}," for f in fields]
    lines.append("      ),")
    lines.append("      structs={")
    for name, body in structs.items():
        lines.append(f"        {name!r}: (")
        lines += [f"          {f}," for f in body]
        lines.append("        ),")
    lines.append("      }),")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    source = Path(argv[1])
    docs = []
    for path in sorted(source.glob("*.json")):
        if not path.name.endswith(("Request.json", "Response.json")):
            continue
        doc = load_json(path)
        if doc.get("type") in ("request", "response") and doc.get("apiKey") in KT_API_KEYS:
            docs.append(doc)
    docs.sort(key=lambda d: (d["apiKey"], d["type"] != "request"))
    found = {d["apiKey"] for d in docs}
    missing = sorted(KT_API_KEYS - found)
    if missing:
        print(f"missing API keys in {source}: {missing}", file=sys.stderr)
        return 1
    text = [
        '"""Kafka message schemas in kt\'s table format (kt/protocol/schema.py).',
        "",
        "Generated by scripts/gen_protocol_schemas.py from Apache Kafka's JSON message",
        "definitions; do not edit by hand.",
        '"""',
        "",
        "from kt.protocol.schema import Field as F",
        "from kt.protocol.schema import MessageSchema as M",
        "",
        "SCHEMAS = (",
    ]
    text += [convert_message(d) for d in docs]
    text.append(")")
    OUTPUT.write_text("\n".join(text) + "\n")
    print(f"wrote {OUTPUT} ({len(docs)} messages)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
