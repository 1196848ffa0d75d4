"""Kafka 4.4's own classes as the oracle of kt's ports: a single-file Java program of
interop/ that reads one case a line on standard input and prints one answer a line."""

from __future__ import annotations

import subprocess
from pathlib import Path

from kt.reference_kafka import KAFKA4_VERSION, _tool_log4j, java_command, unavailable_reason
from tests._environment import unavailable

INTEROP = Path(__file__).resolve().parents[2] / "interop"


def kafka4_answers(program: str, cases: list[str]) -> list[str]:
    """interop/`program` on Kafka 4.4's classes: its answer to each case, in order."""
    reason = unavailable_reason(KAFKA4_VERSION)
    if reason is not None:
        unavailable(reason)
    command = java_command(str(INTEROP / program), ["-Xmx256m"], _tool_log4j(KAFKA4_VERSION),
                           version=KAFKA4_VERSION)  # fmt: skip
    java = subprocess.run(command, input="".join(c + "\n" for c in cases),
                          capture_output=True, text=True, timeout=240)  # fmt: skip
    assert java.returncode == 0, java.stderr[-3000:]
    answers = java.stdout.splitlines()
    assert len(answers) == len(cases), java.stdout[-3000:]
    return answers
