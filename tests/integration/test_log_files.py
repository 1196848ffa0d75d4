"""`kt server-start` with LOG_DIR writes Kafka's log files (kt/log4j.py), and with
kafka.request.logger at DEBUG in the log4j.properties KAFKA_LOG4J_OPTS names, one line
per request as Kafka's request logger does."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Producer

pytestmark = pytest.mark.slow

LINE = re.compile(
    r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] (TRACE|DEBUG|INFO|WARN|ERROR) .* \(\S+\)"
)


def test_kafkas_log_files_and_the_request_log(tmp_path: Path) -> None:
    config = tmp_path / "log4j.properties"
    config.write_text("log4j.rootLogger=INFO, stdout, kafkaAppender\n"
                      "log4j.logger.kafka.request.logger=DEBUG, requestAppender\n")  # fmt: skip
    logs = tmp_path / "logs"
    env = {**os.environ, "LOG_DIR": str(logs), "PYTHONUNBUFFERED": "1",
           "KAFKA_LOG4J_OPTS": f"-Dlog4j.configuration=file:{config}"}  # fmt: skip
    broker = subprocess.Popen(
        [sys.executable, "-m", "kt", "server-start", "--override",
         f"log.dirs={tmp_path / 'data'}", "--override", "listeners=PLAINTEXT://127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        ready = broker.stdout.readline()  # type: ignore[union-attr]
        port = re.search(r"127\.0\.0\.1:(\d+)", ready)
        assert port is not None, broker.stderr.read()  # type: ignore[union-attr]
        producer = Producer({"bootstrap.servers": f"127.0.0.1:{port.group(1)}",
                             "client.id": "logged-client"})  # fmt: skip
        producer.produce("logged", b"v")
        assert producer.flush(30) == 0
    finally:
        broker.send_signal(signal.SIGTERM)
        assert broker.wait(60) == 0

    files = {p.name: p.read_text() for p in logs.iterdir()}
    assert sorted(files) == ["controller.log", "kafka-authorizer.log", "kafka-request.log",
                             "log-cleaner.log", "server.log", "state-change.log"]  # fmt: skip
    for name, text in files.items():
        assert all(LINE.fullmatch(line) for line in text.splitlines()), name
    assert ready.strip() in files["server.log"]
    assert " is controller, epoch " in files["controller.log"]
    assert " is controller, epoch " not in files["server.log"]  # additivity=false
    assert "Sending LeaderAndIsr request to broker 0 with 1 become-leader" in files[
        "state-change.log"]  # fmt: skip
    assert "[Broker id=0] Handling LeaderAndIsr request from controller 0" in files[
        "state-change.log"]  # fmt: skip
    entries = [json.loads(line.split("Completed request:", 1)[1].rsplit(" (", 1)[0])
               for line in files["kafka-request.log"].splitlines()]  # fmt: skip
    produce = [e for e in entries if e["requestHeader"]["requestApiKeyName"] == "PRODUCE"]
    assert produce, entries
    entry = produce[0]
    assert entry["requestHeader"]["clientId"] == "logged-client"
    assert (entry["securityProtocol"], entry["principal"], entry["listener"]) == (
        "PLAINTEXT", "User:ANONYMOUS", "PLAINTEXT")  # fmt: skip
    assert entry["totalTimeMs"] >= entry["localTimeMs"] >= 0
    assert entry["connection"].startswith("0.0.0.0:") or entry["connection"].startswith("127.")
