"""Every `kt` subcommand on the README's plain install (`pip install -e .`, no extras).

CI runs this with the Python of a second virtual environment that holds only kt's base
dependencies, so that a tool importing a test or Spark package fails here instead of on
a user's machine. For each subcommand that `kt --help` lists: `--help`, then one real
call against a broker started for the purpose (without pyspark, the Spark commands must
say which extra to install, in one line). A subcommand without a call in `calls` fails
the run, so that a new one cannot be forgotten. Standard library only: the venv has
nothing else to offer.

    .venv-base/bin/python scripts/smoke_base_install.py
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

KT = [str(Path(sys.executable).parent / "kt")]  # the entry point pip installed
TOPIC = "smoke"
# Without the spark extra, the Spark commands must say what to install; with it, they run.
NEEDS_SPARK = "needs the spark extra: pip install 'kt[spark]'"
SPARK_HINT = None if importlib.util.find_spec("pyspark") else NEEDS_SPARK


def run(*args: str, stdin: str | None = None, expect_ok: bool = True) -> str:
    """Run `kt ARGS`; fail the smoke run on a traceback or an unexpected exit status."""
    result = subprocess.run(
        [*KT, *args], input=stdin or "", capture_output=True, text=True, timeout=120
    )
    shown = " ".join(args)
    if "Traceback" in result.stderr or (result.returncode == 0) != expect_ok:
        raise SystemExit(
            f"FAILED: kt {shown} (exit {result.returncode})\n{result.stdout}{result.stderr}"
        )
    return result.stdout + result.stderr


def subcommands() -> list[str]:
    text = run("--help")
    section = text.split("Commands:", 1)[1]
    return [m.group(1) for m in re.finditer(r"^\s{2}([a-z][a-z-]+)", section, re.MULTILINE)]


@dataclass
class Call:
    """One real call: its arguments, what it reads on stdin, and for a call that must fail,
    the one line it must say."""

    args: tuple[str, ...]
    stdin: str | None = None
    says: str | None = None


def calls(bootstrap: str, log_dir: Path, work: Path) -> dict[str, list[Call]]:
    """The real calls, in the order they run (later ones read what earlier ones wrote)."""
    b = ("--bootstrap-server", bootstrap)
    offsets = work / "offsets.json"
    offsets.write_text(json.dumps({"partitions": [{"topic": TOPIC, "partition": 0, "offset": 1}]}))
    move = work / "topics.json"
    move.write_text(json.dumps({"topics": [{"topic": TOPIC}], "version": 1}))
    segment = str(log_dir / f"{TOPIC}-0" / "00000000000000000000.log")
    lines = "".join(f"k{i}\tv{i}\n" for i in range(10))
    share_group = ("--entity-type", "groups", "--entity-name", "smoke-share")
    return {
        "topics": [
            Call((*b, "--create", "--topic", TOPIC, "--partitions", "1")),
            Call((*b, "--list")),
            Call((*b, "--describe", "--topic", TOPIC)),
        ],
        "console-producer": [Call((*b, "--topic", TOPIC, "--property", "parse.key=true"), lines)],
        "console-consumer": [
            Call(
                (
                    *b,
                    "--topic",
                    TOPIC,
                    "--from-beginning",
                    "--max-messages",
                    "10",
                    "--group",
                    "smoke-group",
                )
            ),
        ],  # fmt: skip
        "producer-perf-test": [
            Call(
                (
                    "--topic",
                    TOPIC,
                    "--num-records",
                    "1000",
                    "--record-size",
                    "100",
                    "--throughput",
                    "-1",
                    "--producer-props",
                    f"bootstrap.servers={bootstrap}",
                )
            ),
        ],  # fmt: skip
        "consumer-perf-test": [Call((*b, "--topic", TOPIC, "--messages", "100"))],
        "configs": [
            Call((*b, "--describe", "--entity-type", "topics", "--entity-name", TOPIC)),
            Call((*b, "--alter", *share_group, "--add-config", "share.auto.offset.reset=earliest")),
        ],
        "consumer-groups": [
            Call((*b, "--list")),
            Call((*b, "--describe", "--group", "smoke-group")),
        ],
        "console-share-consumer": [
            Call((*b, "--topic", TOPIC, "--group", "smoke-share", "--max-messages", "10")),
        ],
        "share-groups": [
            Call((*b, "--list")),
            Call((*b, "--describe", "--group", "smoke-share")),
        ],
        "streams-groups": [
            Call((*b, "--list")),
            Call((*b, "--list", "--state")),
        ],
        "acls": [
            Call(
                (*b, "--list"),
                says="Error while executing ACL command: No Authorizer is configured on the broker",
            ),
        ],  # fmt: skip
        "transactions": [
            Call((*b, "list")),
            Call((*b, "describe-producers", "--topic", TOPIC, "--partition", "0")),
            Call((*b, "find-hanging", "--topic", TOPIC)),
        ],
        "features": [Call((*b, "describe"))],
        "get-offsets": [Call((*b, "--topic", TOPIC))],
        "delete-records": [Call((*b, "--offset-json-file", str(offsets)))],
        "dump-log": [Call(("--files", segment, "--print-data-log"))],
        "leader-election": [
            Call((*b, "--election-type", "preferred", "--all-topic-partitions")),
        ],
        "preferred-replica-election": [Call(b)],
        "log-dirs": [Call((*b, "--describe"))],
        "top": [Call((*b, "--once", "--interval", "0.2"))],
        "reassign": [Call((*b, "--list"))],
        "reassign-partitions": [
            Call((*b, "--generate", "--topics-to-move-json-file", str(move), "--broker-list", "0")),
        ],  # fmt: skip
        "spark-export": [
            Call((*b, "--topic", TOPIC, "--output", str(work / "export")), says=SPARK_HINT),
        ],
        "spark-import": [
            Call((*b, "--topic", "copy", "--input", str(work / "export")), says=SPARK_HINT),
        ],
        "server-stop": [Call(("--log-dirs", str(log_dir)))],
        "server-start": [],  # started by main, stopped by server-stop
    }


def start_broker(log_dir: Path) -> tuple[subprocess.Popen, str]:
    broker = subprocess.Popen(
        [*KT, "server-start", "--override", f"log.dirs={log_dir}",
         "--override", "listeners=PLAINTEXT://127.0.0.1:0",
         "--override", "metrics.listeners=http://127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert broker.stdout is not None
    ready = broker.stdout.readline()
    match = re.search(r"PLAINTEXT://([\d.]+:\d+)", ready)
    if match is None:
        broker.kill()
        raise SystemExit(f"FAILED: kt server-start: {ready}{broker.communicate()[1]}")
    return broker, match.group(1)


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="kt-smoke-"))
    log_dir = work / "logs"
    broker, bootstrap = start_broker(log_dir)
    passed = 0
    try:
        table = calls(bootstrap, log_dir, work)
        names = subcommands()
        missing = sorted(set(names) - set(table))
        if missing:
            raise SystemExit(f"FAILED: no smoke call for {', '.join(missing)}")
        for name in names:
            run(name, "--help")
            passed += 1
        for name, steps in table.items():
            for step in steps:
                out = run(name, *step.args, stdin=step.stdin, expect_ok=step.says is None)
                if step.says is not None and step.says not in out:
                    raise SystemExit(f"FAILED: kt {name} did not say {step.says!r}:\n{out}")
                passed += 1
        deadline = time.monotonic() + 30
        while broker.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        if broker.returncode != 0:
            raise SystemExit(f"FAILED: the broker did not stop cleanly ({broker.returncode})")
    finally:
        if broker.poll() is None:
            broker.kill()
        broker.wait()
        shutil.rmtree(work, ignore_errors=True)
    print(f"base-install smoke: every subcommand ran, {passed} calls")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
