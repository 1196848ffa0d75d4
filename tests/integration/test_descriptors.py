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


def test_a_thousand_topics_of_four_partitions_under_a_soft_limit_of_1024(
    tmp_path: Path,
) -> None:
    """Issue 16's case: 500 topics of 4 partitions once left CreateTopics unanswered and
    the broker unable to restart under `ulimit -n` 1024. Started with a soft limit of 1024,
    the broker raises it, creates 1,000 x 4 partitions, and restarts on them."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 13_000:
        pytest.skip(f"the hard open files limit ({hard}) cannot hold 4,000 segments")
    from confluent_kafka.admin import AdminClient, NewTopic

    def lowered() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))

    def start() -> tuple[subprocess.Popen, str]:
        with open(tmp_path / "broker.log", "a") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "kt", "server-start", "--log-level", "INFO",
                 "--override", "listeners=PLAINTEXT://127.0.0.1:0",
                 "--override", f"log.dirs={tmp_path / 'logs'}"],
                stdout=subprocess.PIPE, stderr=log, text=True, preexec_fn=lowered,
            )  # fmt: skip
        assert proc.stdout is not None
        ready = proc.stdout.readline()
        assert "started" in ready, (tmp_path / "broker.log").read_text()[-3000:]
        return proc, re.search(r"PLAINTEXT://([\d.]+:\d+)", ready).group(1)  # type: ignore[union-attr]

    proc, bootstrap = start()
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for first in range(0, 1000, 100):
            batch = [NewTopic(f"t{i}", 4, 1) for i in range(first, first + 100)]
            for future in admin.create_topics(batch, request_timeout=120).values():
                future.result(120)
        assert len(admin.list_topics(timeout=60).topics) == 1000
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
    proc, bootstrap = start()
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        topics = admin.list_topics(timeout=60).topics
        assert sorted(len(t.partitions) for t in topics.values()) == [4] * 1000
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
    assert "4000 segments hold 12000 file descriptors" in (tmp_path / "broker.log").read_text()
