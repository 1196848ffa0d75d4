"""The example scripts run as a user would run them, against `kt server-start`.

Each example creates its topic (or finds it there), produces 100 records and reads them
back in a consumer group; run twice, the second run takes the "topic exists" path.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import BrokerProcess, new_broker

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def examples_broker(tmp_path_factory: pytest.TempPathFactory):
    # No first-join delay: the examples' consumer groups form at once.
    broker = new_broker(
        tmp_path_factory.mktemp("kt"), "kt-logs", {"group.initial.rebalance.delay.ms": "0"}
    )
    yield broker
    broker.stop()


@pytest.mark.parametrize("client", ["confluent", "kafka_python", "aiokafka"])
def test_example_produces_and_consumes(examples_broker: BrokerProcess, client: str) -> None:
    script = EXAMPLES / f"produce_consume_{client}.py"
    for run in range(2):
        result = subprocess.run(
            [sys.executable, str(script), examples_broker.bootstrap],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr[-2000:]
        lines = result.stdout.splitlines()
        assert lines[0].startswith("created topic ") == (run == 0)
        assert "produced 100 records" in result.stdout
        consumed = [line for line in lines if line.startswith("consumed ")]
        assert consumed and consumed[0].startswith("consumed 100 records: partition 0: ")
