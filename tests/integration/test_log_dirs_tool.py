"""`kt log-dirs --describe` (kafka-log-dirs.sh) on a broker with two log dirs: every
replica once, in the dir that holds its files, with its size and offset lag. (The line
format is checked against Kafka's own tool in tests/oracle/test_tools.py.)"""

from __future__ import annotations

import json
import time
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


def log_dirs_json(broker) -> dict:  # type: ignore[no-untyped-def]
    return json.loads(kt_ok("log-dirs", "--bootstrap-server", broker.bootstrap, "--describe",
                            "--topic-list", "mover")[2])  # fmt: skip


def replicas_by_dir(document: dict) -> dict[str, list[tuple[str, bool]]]:
    return {d["logDir"]: [(p["partition"], p["isFuture"]) for p in d["partitions"]]
            for d in document["brokers"][0]["logDirs"]}  # fmt: skip


def test_a_replica_moves_between_log_dirs(broker_factory, tmp_path: Path) -> None:
    """AlterReplicaLogDirs through `kt reassign` with log_dirs: the future replica copies at
    the log-dir throttle while the current one serves; then it takes its place."""
    from tests.integration.test_reassign_tool import BackgroundProducer
    from tests.integration.test_replication import read_partition

    dirs = [tmp_path / "disk-a", tmp_path / "disk-b"]
    broker = broker_factory(**{"log.dirs": ",".join(map(str, dirs))})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("mover", 1, 1)])["mover"].result(30)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "batch.size": 16384})
    for i in range(2000):
        producer.produce("mover", value=b"%08d" % i + bytes(1000), partition=0)
    assert producer.flush(30) == 0
    (source,) = [d for d in dirs if (d / "mover-0").is_dir()]
    (target,) = [d for d in dirs if d != source]
    plan = tmp_path / "plan.json"
    entry = {"topic": "mover", "partition": 0, "replicas": [0], "log_dirs": [str(target)]}
    plan.write_text(json.dumps({"version": 1, "partitions": [entry]}))
    tool = ["reassign", "--bootstrap-server", broker.bootstrap]
    background = BackgroundProducer(broker.bootstrap, "mover", 1, rate=100)
    try:
        out = kt_ok(*tool, "--execute", "--reassignment-json-file", str(plan),
                    "--replica-alter-log-dirs-throttle", "500000")  # fmt: skip
        assert out[-3:] == [
            "The replica-alter-dir throttle limit was set to 500000 B/s",
            "Successfully started partition reassignment for mover-0",
            f"Successfully started moving log directory to {target} for replica mover-0 with "
            "broker 0 ",
        ]
        configs = kt_ok("configs", "--bootstrap-server", broker.bootstrap, "--describe",
                        "--broker", "0")  # fmt: skip
        assert configs[1].startswith("  replica.alter.log.dirs.io.max.bytes.per.second=500000 ")
        moving = replicas_by_dir(log_dirs_json(broker))
        assert moving == {str(source): [("mover-0", False)], str(target): [("mover-0", True)]}
        status = kt_ok(*tool, "--verify", "--reassignment-json-file", str(plan))
        assert status[-1] == "Reassignment of replica mover-0-0 is still in progress."

        def done() -> bool:
            lines = kt_ok(*tool, "--verify", "--reassignment-json-file", str(plan))
            return "Reassignment of replica mover-0-0 completed successfully." in lines

        deadline = time.monotonic() + 60
        while not done():
            assert time.monotonic() < deadline, "the move did not complete"
            time.sleep(0.5)
    finally:
        background.stop()
    assert replicas_by_dir(log_dirs_json(broker)) == {
        str(source): [], str(target): [("mover-0", False)]}  # fmt: skip
    assert not (source / "mover-0").exists() and (target / "mover-0").is_dir()
    expected = [*range(2000), *background.acked]
    assert [int(v[:8]) for v in read_partition(broker.bootstrap, "mover", 0)] == expected
    broker.restart()
    assert [int(v[:8]) for v in read_partition(broker.bootstrap, "mover", 0)] == expected
