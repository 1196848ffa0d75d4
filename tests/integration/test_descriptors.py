"""The broker raises its soft open-files limit to the hard one at start-up, and says how
many descriptors its logs' segments hold of it (three each: the .log file and its two
index maps)."""

from __future__ import annotations

import re
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def soft_limit_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            return int(line.split()[3])
    raise AssertionError("no open files limit")


def test_the_soft_limit_is_raised_and_the_logs_descriptors_reported(tmp_path: Path) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard <= 256:
        pytest.skip(f"the hard open files limit ({hard}) leaves nothing to raise")

    def lowered() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))

    def start() -> tuple[subprocess.Popen, str]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kt", "server-start", "--log-level", "INFO",
             "--override", "listeners=PLAINTEXT://127.0.0.1:0",
             "--override", f"log.dirs={tmp_path / 'logs'}",
             "--override", "num.partitions=4"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=lowered,
        )  # fmt: skip
        assert proc.stdout is not None
        ready = proc.stdout.readline()
        assert "started" in ready, proc.communicate()
        return proc, ready

    def stop(proc: subprocess.Popen) -> str:
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=30)
        return stderr

    proc, ready = start()
    assert soft_limit_of(proc.pid) == hard
    port = re.search(r":(\d+) ", ready).group(1)  # type: ignore[union-attr]
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
    admin.create_topics([NewTopic("fd", 5, 1)])["fd"].result(30)
    stderr = stop(proc)
    assert f"raised the open files limit from 256 to {hard}" in stderr
    assert f"0 segments hold 0 file descriptors, of a limit of {hard}" in stderr

    proc, _ = start()  # five partitions of one segment each
    stderr = stop(proc)
    assert f"5 segments hold 15 file descriptors, of a limit of {hard}" in stderr
