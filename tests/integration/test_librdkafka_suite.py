"""librdkafka's own tests against three kt brokers, as its maintainers run them against
Kafka: 0081 (the admin API: topics, partitions, configs, ACLs with the brokers'
AclAuthorizer, groups, offsets, authorized operations), 0103_transactions (the
transactional API, fencing, aborts, offsets sent to transactions, a controller-less abort
after a leader epoch bump), 0129 (aborted messages that a read_committed consumer must
skip) and 0137 (a consumer's barrier over transactional batches and their markers), in
librdkafka's quick mode (-Q). Their test runner is built from librdkafka's released
sources by `interop/fetch-librdkafka.sh` (`.ci/run` does it); the tests that
need Kafka's scripts or Java (0098) or librdkafka's mock cluster are not among them.

Its SASL tests run as its maintainers run them on a trivup cluster with SASL: 0135 (wrong
credentials refused, then the right ones set on the live client) and 0142 (producers,
consumers and transactional producers on SASL_SSL with SCRAM-SHA-512 re-authenticate
every connections.max.reauth.ms, KIP-368, and lose nothing).

Its certificate verification test, 0097, is in test_librdkafka_ssl.py.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from kt.testing.certificates import PASSWORD, issue, make_ca, write_party
from tests._environment import unavailable
from tests.integration.test_embedded_cluster import start_cluster, start_cluster_listeners

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


def librdkafka_runner() -> tuple[Path, Path]:
    """librdkafka's source tree and its built test runner."""
    source = librdkafka_home() / "librdkafka"
    runner = source / "tests" / "test-runner"
    if not runner.exists():
        unavailable(f"no {runner}: interop/fetch-librdkafka.sh builds it")
    return source, runner


def run_tests(
    tmp_path: Path, tests: str, conf: dict[str, str], quick: bool = True,
    env: dict[str, str] | None = None, race: str | None = None, cpus: set[int] | None = None,
) -> list[str]:  # fmt: skip
    """Run librdkafka's `tests` with `conf` as their test.conf (and `env` in their
    environment); their summary lines. `quick`: librdkafka's quick mode (-Q), which skips
    the sub-tests not marked quick. `race`: the failure of a race of librdkafka's own, after
    which the run is tried again (five tries in all); any other failure fails at once.
    `cpus`: the runner's CPU affinity."""
    source, runner = librdkafka_runner()
    conf_file = tmp_path / f"test-{tests.replace(',', '-')}.conf"
    conf_file.write_text("".join(f"{key}={value}\n" for key, value in conf.items()))
    env = {
        **os.environ,
        **(env or {}),
        "RDKAFKA_TEST_CONF": str(conf_file),
        "LD_LIBRARY_PATH": f"{source / 'src'}:{source / 'src-cpp'}",
        # Kafka 4.0's admin behaviour where kt has it: group configs (0081 expects them
        # from 4.0 on, and a group's DESCRIBE_CONFIGS/ALTER_CONFIGS operations).
        "TEST_KAFKA_VERSION": "4.0.0",
        "TESTS": tests,
    }
    for attempt in range(1, 6 if race else 2):
        # -L: the tests that need a broker only (their local twins run on no broker);
        # -Q: quick mode, fewer iterations of the same checks.
        run = subprocess.run(
            [str(runner), "-L", *(["-Q"] if quick else [])], cwd=tmp_path, env=env,
            capture_output=True, text=True, errors="replace", timeout=600,
            preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None,
        )  # fmt: skip
        output = tmp_path / f"runner-{tests.replace(',', '-')}-{attempt}.out"  # all of it
        output.write_text(run.stdout + run.stderr)
        # (a test's failure, the race's line among them, is printed on stderr)
        if run.returncode == 0 or race is None or race not in run.stdout + run.stderr:
            break
    summary = [line for line in run.stdout.splitlines()
               if any(word in line for word in ("PASSED", "FAIL", "SKIP"))]  # fmt: skip
    assert run.returncode == 0, (
        "\n".join(summary) + f"\n(all of it in {output})\n" + run.stdout[-6000:]
        + run.stderr[-3000:]
    )  # fmt: skip
    return summary


def assert_passed(summary: list[str], *tests: str) -> None:
    for test in tests:
        assert any(test in line and "PASSED" in line for line in summary), test


# librdkafka's four suites take 200-220 s here; pytest's 300 s cut one short on a slow CI
# run (its own runner's limit is 600 s)
@pytest.mark.timeout(600)
def test_librdkafkas_admin_and_transactional_tests_pass(tmp_path: Path) -> None:
    librdkafka_runner()
    proc, endpoints = start_cluster(tmp_path, CLUSTER)
    try:
        summary = run_tests(tmp_path, TESTS, {"bootstrap.servers": ",".join(endpoints.values())})
    finally:
        proc.terminate()
        proc.wait(60)
    assert_passed(
        summary, "0081_admin", "0103_transactions ", "0129_fetch_aborted_msgs",
        "0137_barrier_batch_consume",
    )  # fmt: skip


def test_librdkafkas_sasl_reauthentication_test_passes(tmp_path: Path) -> None:
    librdkafka_runner()
    ca = make_ca()
    broker = write_party(tmp_path / "broker", "broker", ca, issue(ca, "broker"))
    proc, listeners = start_cluster_listeners(tmp_path, {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(broker.keystore_pem),
        "ssl.key.password": PASSWORD, "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(broker.ca),
        # for SSL listeners only: SASL_SSL clients give no certificate (KIP-684)
        "ssl.client.auth": "required",
        # librdkafka's maintainers run 0142 with 10 s (tests/interactive_broker_version.py's
        # default): its clients re-authenticate at 90% of it without waiting for the
        # requests already sent, and a broker slowed by the full suite's load that reads one
        # of those after the session's end closes the connection, as Kafka does
        "sasl.enabled.mechanisms": "SCRAM-SHA-512", "connections.max.reauth.ms": "10000",
        "transaction.state.log.replication.factor": "3",
        "transaction.state.log.min.isr": "2", "transaction.state.log.num.partitions": "5",
    })  # fmt: skip
    try:
        add_scram_user(",".join(named["PLAINTEXT"] for named in listeners.values()))
        summary = run_tests(tmp_path, "0135,0142", {
            "bootstrap.servers": ",".join(named["SASL_SSL"] for named in listeners.values()),
            "security.protocol": "SASL_SSL", "ssl.ca.location": str(broker.ca),
            "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "tester",
            "sasl.password": "tester-secret",
        }, quick=False)  # fmt: skip
    finally:
        proc.terminate()
        proc.wait(60)
    assert_passed(summary, "0135_sasl_credentials", "0142_reauthentication")
    assert not any("SKIPPED" in line for line in summary), summary


def add_scram_user(bootstrap: str) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap})
    upsert = UserScramCredentialUpsertion(
        "tester", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"tester-secret"
    )
    for future in admin.alter_user_scram_credentials([upsert]).values():
        assert future.result(30) is None
