"""The README's "Using it" commands print what they claim: run against a broker (its
address and log dir in place of the README's), the consumer prints the keyed record and
dump-log finds it in the partition the README names."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

README = Path(__file__).resolve().parents[2] / "README.md"


def using_it_commands() -> list[str]:
    text = README.read_text()
    block = re.search(r"## Using it\s+```sh\n(.*?)```", text, re.S)
    assert block, "README has no 'Using it' block"
    joined = block.group(1).replace("\\\n", " ")
    return [line for line in joined.splitlines() if line.strip()]


def test_the_readme_examples_print_what_they_claim(broker) -> None:
    outputs = {}
    env_bin = Path(subprocess.check_output(["which", "kt"], text=True).strip()).parent
    for command in using_it_commands():
        if command.startswith("kt server-"):  # the broker is the fixture's
            continue
        command = command.replace("127.0.0.1:9092", broker.bootstrap)
        command = command.replace("/tmp/kt-logs", str(broker.log_dir))
        result = subprocess.run(["bash", "-c", command], capture_output=True, text=True,
                                timeout=60, env={"PATH": f"{env_bin}:/usr/bin:/bin"})  # fmt: skip
        assert result.returncode == 0, (command, result.stderr)
        outputs[command.split()[1]] = result.stdout
    assert outputs["topics"] == "Created topic orders.\n"
    assert outputs["console-consumer"] == "k1\thello\n"
    assert "key: k1 payload: hello" in outputs["dump-log"]
