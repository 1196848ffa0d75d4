"""A broker serves clients only once it knows itself and a controller (Kafka enables
request processing at the end of its start-up): a client that connects the moment the
port opens gets answers, never a Metadata naming no broker and no controller, after which
librdkafka's admin client waited for a controller it never asked about again."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kt.reference_kafka import free_port

pytestmark = pytest.mark.slow


def port_open(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
    except OSError:
        return False
    return True


def create_topic_as_the_port_opens(log_dir: Path) -> None:
    port = free_port()
    broker = subprocess.Popen(
        [sys.executable, "-m", "kt", "server-start", "--override", f"log.dirs={log_dir}",
         "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not port_open(port):
            assert broker.poll() is None, "the broker exited"
            assert time.monotonic() < deadline, "the port did not open within 30 s"
            time.sleep(0.002)
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
        assert admin.create_topics([NewTopic("first", 1, 1)])["first"].result(30) is None
    finally:
        broker.send_signal(signal.SIGTERM)
        broker.wait(30)


def test_twenty_fresh_brokers_each_answer_a_create_topics_sent_as_the_port_opens(
    tmp_path: Path,
) -> None:
    for run in range(20):
        create_topic_as_the_port_opens(tmp_path / f"run-{run}")
