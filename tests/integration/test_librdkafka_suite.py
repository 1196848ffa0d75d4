"""librdkafka's own tests against three kt brokers, as its maintainers run them against
Kafka: 0081 (the admin API: topics, partitions, configs, ACLs with the brokers'
AclAuthorizer, groups, offsets, authorized operations), 0103_transactions (the
transactional API, fencing, aborts, offsets sent to transactions, a controller-less abort
after a leader epoch bump), 0129 (aborted messages that a read_committed consumer must
skip) and 0137 (a consumer's barrier over transactional batches and their markers), in
librdkafka's quick mode (-Q). Their test runner is built from librdkafka's released
sources by `interop/fetch-librdkafka.sh` (`.ci/run` does it); the tests that
need Kafka's scripts or Java (0098) or librdkafka's mock cluster are not among them.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests._environment import unavailable
from tests.integration.test_embedded_cluster import start_cluster

pytestmark = pytest.mark.slow

VERSION = "2.12.1"
TESTS = "0081,0103,0129,0137"
CLUSTER = {
    # 0081 creates and deletes ACLs: the brokers run Kafka's AclAuthorizer, and the
    # unauthenticated PLAINTEXT principal (the tests' and the brokers' own) is a super user.
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "super.users": "User:ANONYMOUS",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "transaction.state.log.num.partitions": "5",
}


def librdkafka_home() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return Path(os.environ.get("KT_LIBRDKAFKA_HOME", cache / "kt" / f"librdkafka-{VERSION}"))


def test_librdkafkas_admin_and_transactional_tests_pass(tmp_path: Path) -> None:
    source = librdkafka_home() / "librdkafka"
    runner = source / "tests" / "test-runner"
    if not runner.exists():
        unavailable(f"no {runner}: interop/fetch-librdkafka.sh builds it")
    proc, endpoints = start_cluster(tmp_path, CLUSTER)
    try:
        conf = tmp_path / "test.conf"
        conf.write_text(f"bootstrap.servers={','.join(endpoints.values())}\n")
        env = {
            **os.environ,
            "RDKAFKA_TEST_CONF": str(conf),
            "LD_LIBRARY_PATH": f"{source / 'src'}:{source / 'src-cpp'}",
            "TEST_KAFKA_VERSION": "3.9.1",
            "TESTS": TESTS,
        }
        # -L: the tests that need a broker only (their local twins run on no broker);
        # -Q: quick mode, fewer iterations of the same checks.
        run = subprocess.run(
            [str(runner), "-L", "-Q"], cwd=tmp_path, env=env, capture_output=True, text=True,
            errors="replace", timeout=600,
        )  # fmt: skip
    finally:
        proc.terminate()
        proc.wait(60)
    summary = [line for line in run.stdout.splitlines() if "PASSED" in line or "FAIL" in line]
    assert run.returncode == 0, "\n".join(summary) + "\n" + run.stdout[-6000:] + run.stderr[-3000:]
    for test in (
        "0081_admin",
        "0103_transactions ",
        "0129_fetch_aborted_msgs",
        "0137_barrier_batch_consume",
    ):
        assert any(test in line and "PASSED" in line for line in summary), test
