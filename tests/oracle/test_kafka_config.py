"""Kafka's KafkaConfig judges the broker configs kt refuses: every value of
tests/test_kafka_config.py's KAFKA_REFUSES is refused by Kafka 3.9 with the same message
(interop/KafkaConfigCheck.java runs KafkaConfig.fromProps on each), and what kt refuses
only because it cannot do it yet (KT_REFUSES) is a config Kafka accepts."""

from __future__ import annotations

import subprocess
from pathlib import Path

from kt.reference_kafka import TOOL_HEAP, _tool_log4j, java_command
from tests.test_kafka_config import KAFKA_REFUSES, KT_REFUSES

CHECK = Path(__file__).resolve().parents[2] / "interop" / "KafkaConfigCheck.java"


def kafka_verdicts(cases: list[dict[str, str]], tmp_path: Path) -> list[str]:
    files = []
    for i, props in enumerate(cases):
        path = tmp_path / f"case-{i}.properties"
        # Kafka's ZooKeeper mode, as kt's (KRaft needs settings kt does not read).
        lines = ["zookeeper.connect=127.0.0.1:2181"] + [f"{k}={v}" for k, v in props.items()]
        path.write_text("\n".join(lines) + "\n", encoding="latin-1")
        files.append(str(path))
    result = subprocess.run([*java_command(str(CHECK), TOOL_HEAP, _tool_log4j()), *files],
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return [line.split("\t", 1)[1] for line in result.stdout.splitlines()
            if line.startswith("RESULT\t")]  # fmt: skip


def test_kafka_refuses_what_kt_refuses_in_the_same_words(kafka_available, tmp_path) -> None:
    verdicts = kafka_verdicts([props for props, _ in KAFKA_REFUSES], tmp_path)
    assert verdicts == [message for _, message in KAFKA_REFUSES]


def test_kafka_accepts_what_kt_cannot_do_yet(kafka_available, tmp_path) -> None:
    # process.roles asks for KRaft, whose other settings a ZooKeeper config lacks.
    cases = [props for props, _ in KT_REFUSES if "process.roles" not in props]
    assert kafka_verdicts(cases, tmp_path) == ["OK"] * len(cases)
