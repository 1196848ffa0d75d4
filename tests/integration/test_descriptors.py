"""The broker raises its soft open-files limit to the hard one at start-up, and says how
many descriptors its logs' segments hold of it (three each: the .log file and its two
index maps).

Each test starts the broker under limits of its own (a soft limit, and a hard limit that
a process may always lower), so it runs wherever the machine's hard limit is at least
the test's, or unlimited: as root (CI) always.
"""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests._environment import unavailable

pytestmark = pytest.mark.slow


class LimitedBroker:
    """`kt server-start` under RLIMIT_NOFILE (soft, hard), its log in `base/broker.log`."""

    def __init__(self, base: Path, soft: int, hard: int) -> None:
        _, machine_hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if os.geteuid() != 0 and machine_hard != resource.RLIM_INFINITY and machine_hard < hard:
            unavailable(f"the hard open files limit here ({machine_hard}) is below the test's"
                        f" {hard}, and only root may raise it")  # fmt: skip
        self.base, self.soft, self.hard = base, soft, hard
        self.log = base / "broker.log"

    def start(self, *overrides: str) -> tuple[subprocess.Popen, str]:
        """Start it; return the process and its bootstrap address."""
        args = [sys.executable, "-m", "kt", "server-start", "--log-level", "INFO",
                "--override", "listeners=PLAINTEXT://127.0.0.1:0",
                "--override", f"log.dirs={self.base / 'logs'}"]  # fmt: skip
        for override in overrides:
            args += ["--override", override]

        def limited() -> None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (self.soft, self.hard))

        with open(self.log, "a") as log:  # a file: a pipe nobody reads would stop the broker
            proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, text=True,
                                    preexec_fn=limited)  # fmt: skip
        assert proc.stdout is not None
        ready = proc.stdout.readline()
        assert "started" in ready, self.log.read_text()[-3000:]
        return proc, re.search(r"PLAINTEXT://([\d.]+:\d+)", ready).group(1)  # type: ignore[union-attr]

    @staticmethod
    def stop(proc: subprocess.Popen) -> None:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0


def soft_limit_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            return int(line.split()[3])
    raise AssertionError("no open files limit")


def test_the_soft_limit_is_raised_and_the_logs_descriptors_reported(tmp_path: Path) -> None:
    broker = LimitedBroker(tmp_path, soft=256, hard=4096)
    proc, bootstrap = broker.start("num.partitions=4")
    try:
        assert soft_limit_of(proc.pid) == 4096
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("fd", 5, 1)])["fd"].result(30)
    finally:
        broker.stop(proc)
    log = broker.log.read_text()
    assert "raised the open files limit from 256 to 4096" in log
    assert "0 segments hold 0 file descriptors, of a limit of 4096" in log

    broker.stop(broker.start()[0])  # five partitions of one segment each
    assert "5 segments hold 15 file descriptors, of a limit of 4096" in broker.log.read_text()


def test_a_thousand_topics_of_four_partitions_under_a_soft_limit_of_1024(
    tmp_path: Path,
) -> None:
    """Issue 16's case: 500 topics of 4 partitions once left CreateTopics unanswered and
    the broker unable to restart under `ulimit -n` 1024. Started with a soft limit of 1024,
    the broker raises it, creates 1,000 x 4 partitions, and restarts on them."""
    broker = LimitedBroker(tmp_path, soft=1024, hard=16384)
    proc, bootstrap = broker.start()
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for first in range(0, 1000, 100):
            batch = [NewTopic(f"t{i}", 4, 1) for i in range(first, first + 100)]
            for future in admin.create_topics(batch, request_timeout=120).values():
                future.result(120)
        assert len(admin.list_topics(timeout=60).topics) == 1000
    finally:
        broker.stop(proc)
    proc, bootstrap = broker.start()
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        topics = admin.list_topics(timeout=60).topics
        assert sorted(len(t.partitions) for t in topics.values()) == [4] * 1000
    finally:
        broker.stop(proc)
    assert "4000 segments hold 12000 file descriptors" in broker.log.read_text()


def test_create_topics_beyond_the_limit_answers_an_error(tmp_path: Path) -> None:
    """Under a hard limit of 256, a topic whose logs would leave fewer than 64 descriptors
    for connections is refused with KAFKA_STORAGE_ERROR and its reason (once, such a
    request was never answered); nothing is created, and a topic that fits still is."""
    from confluent_kafka import KafkaException

    broker = LimitedBroker(tmp_path, soft=256, hard=256)
    proc, bootstrap = broker.start()
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        future = admin.create_topics([NewTopic("too-big", 100, 1)], request_timeout=60)
        with pytest.raises(KafkaException) as refused:
            future["too-big"].result(60)
        error = refused.value.args[0]
        assert error.name() == "KAFKA_STORAGE_ERROR"
        assert re.fullmatch(
            r"Too many open files: 100 new logs need 300 file descriptors, and \d+ of the "
            r"limit of 256 are free \(raise ulimit -n\)", error.str()
        ), error.str()  # fmt: skip
        admin.create_topics([NewTopic("fits", 4, 1)], request_timeout=60)["fits"].result(60)
        assert set(admin.list_topics(timeout=30).topics) == {"fits"}
    finally:
        broker.stop(proc)
