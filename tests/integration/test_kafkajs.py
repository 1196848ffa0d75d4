"""kafkajs (Node.js, from the npm registry: interop/fetch-kafkajs.sh) against kt: produce
and consume in a group over PLAINTEXT, and over SASL_SSL with SCRAM-SHA-512 (a user made
through AlterUserScramCredentials, the broker's certificate made by the test)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from kt.testing.certificates import PASSWORD, issue, make_ca, write_party
from tests._environment import unavailable

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parents[2] / "interop" / "kafkajs" / "produce_consume.js"


def kafkajs_home() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return Path(os.environ.get("KT_KAFKAJS_HOME", cache / "kt" / "kafkajs"))


def run_kafkajs(env: dict[str, str]) -> list[str]:
    modules = kafkajs_home() / "node_modules"
    if shutil.which("node") is None or not (modules / "kafkajs").exists():
        unavailable(f"no Node.js or no {modules / 'kafkajs'}: interop/fetch-kafkajs.sh")
    done = subprocess.run(["node", str(SCRIPT)], env={**os.environ, **env,
                          "NODE_PATH": str(modules)}, capture_output=True, text=True,
                          timeout=180)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


def test_kafkajs_produces_and_consumes(broker) -> None:
    lines = run_kafkajs({"BOOTSTRAP": broker.bootstrap, "TOPIC": "kafkajs", "COUNT": "500"})
    assert lines == ["produced 500", "consumed 500"]


def test_kafkajs_over_sasl_ssl_with_scram_sha_512(broker_factory, tmp_path) -> None:
    ca = make_ca()
    files = write_party(tmp_path, "broker", ca, issue(ca, "broker"))
    broker = broker_factory(**{
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512", "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(files.keystore_p12), "ssl.keystore.password": PASSWORD,
        "auto.create.topics.enable": "true",
    })  # fmt: skip
    sasl = "127.0.0.1:" + re.findall(r"//127\.0\.0\.1:(\d+)", broker.output[-1])[1]
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)
    futures = admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion("carol", info, b"carol-secret")]
    )
    assert futures["carol"].result(30) is None
    lines = run_kafkajs({"BOOTSTRAP": sasl, "TOPIC": "kafkajs-scram", "COUNT": "200",
                         "CA": str(files.ca), "USERNAME": "carol",
                         "PASSWORD": "carol-secret"})  # fmt: skip
    assert lines == ["produced 200", "consumed 200"]
