"""`kt log-dirs --describe` (kafka-log-dirs.sh) on a broker with two log dirs: every
replica once, in the dir that holds its files, with its size and offset lag. (The line
format is checked against Kafka's own tool in tests/oracle/test_tools.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.conftest import kt_command, kt_ok

pytestmark = pytest.mark.slow


def test_describe_on_two_log_dirs(broker_factory, tmp_path: Path) -> None:
    dirs = [tmp_path / "disk-a", tmp_path / "disk-b"]
    broker = broker_factory(**{"log.dirs": ",".join(map(str, dirs))})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic("left", 2, 1), NewTopic("right", 2, 1)]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(400):
        producer.produce(("left", "right")[i % 2], value=bytes(100 + i), partition=i // 2 % 2)
    assert producer.flush(30) == 0
    out = kt_ok("log-dirs", "--bootstrap-server", broker.bootstrap, "--describe",
                "--topic-list", "left,right")  # fmt: skip
    assert out[:2] == ["Querying brokers for log directories information",
                       "Received log directory information from brokers 0"]  # fmt: skip
    document = json.loads(out[2])
    assert document["version"] == 1
    (only,) = document["brokers"]
    assert only["broker"] == 0
    assert sorted(d["logDir"] for d in only["logDirs"]) == sorted(map(str, dirs))
    seen = []
    for log_dir in only["logDirs"]:
        assert log_dir["error"] is None
        for replica in log_dir["partitions"]:
            files = Path(log_dir["logDir"]) / replica["partition"]
            assert files.is_dir(), replica  # the replica lives in the dir it is listed under
            assert replica["size"] == sum(f.stat().st_size for f in files.glob("*.log")) > 0
            assert (replica["offsetLag"], replica["isFuture"]) == (0, False)
            seen.append(replica["partition"])
    assert sorted(seen) == ["left-0", "left-1", "right-0", "right-1"]
    # Kafka spreads new logs over the dirs: both hold some.
    assert all(d["partitions"] for d in only["logDirs"])
    missing = kt_command("log-dirs", "--bootstrap-server", broker.bootstrap, "--describe",
                         "--broker-list", "0,9")  # fmt: skip
    assert (missing.returncode, missing.stderr) == (
        1, "ERROR: The given brokers do not exist from --broker-list: 9. Current existent "
        "brokers: 0\n")  # fmt: skip
