"""SCRAM users made by Kafka's kafka-configs.sh and by `kt configs` on a kt broker: both
tools print the same credential lines for them (and the same errors for bad ones), the
credentials either made work for both tools' clients, and Kafka 3.9's Java producer and
consumer (console tools) authenticate with SCRAM-SHA-512 over SASL_SSL."""

from __future__ import annotations

import re
import subprocess
import sys

from confluent_kafka import Producer

from kt.reference_kafka import run_tool
from kt.testing.certificates import PASSWORD, issue, make_ca, write_party


def configs(tool: str, bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    if tool == "kafka":
        return run_tool("kafka-configs", "--bootstrap-server", bootstrap, *args)
    command = [sys.executable, "-m", "kt", "configs", "--bootstrap-server", bootstrap, *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def test_scram_users_from_either_tool_and_the_java_client(broker_factory, tmp_path) -> None:
    ca = make_ca()
    files = write_party(tmp_path / "pki", "broker", ca, issue(ca, "broker"))
    broker = broker_factory(**{
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
        "ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(files.keystore_p12),
        "ssl.keystore.password": PASSWORD,
    })  # fmt: skip
    plain = broker.bootstrap
    sasl = "127.0.0.1:" + re.findall(r"//127\.0\.0\.1:(\d+)", broker.output[-1])[1]
    users = {"kafka": "alice", "kt": "bob"}
    for tool, user in users.items():
        done = configs(tool, plain, "--alter", "--add-config",
                       f"SCRAM-SHA-256=[iterations=8192,password={user}-secret],"
                       f"SCRAM-SHA-512=[password={user}-secret]",
                       "--entity-type", "users", "--entity-name", user)  # fmt: skip
        assert (done.returncode, done.stdout) == (
            0, f"Completed updating config for user {user}.\n"
        ), done.stderr  # fmt: skip
    for args in (["--entity-type", "users"], ["--entity-type", "users", "--entity-name", "bob"]):
        kafka, kt = (configs(tool, plain, "--describe", *args) for tool in ("kafka", "kt"))
        assert kafka.stdout == kt.stdout and kafka.returncode == kt.returncode == 0, kt.stderr
    shown = "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096"
    assert kafka.stdout == f"SCRAM credential configs for user-principal 'bob' are {shown}\n"
    for tool in ("kafka", "kt"):
        refused = configs(tool, plain, "--alter", "--add-config",
                          "SCRAM-SHA-256=[iterations=1000,password=x]", "--entity-type",
                          "users", "--entity-name", "carol")  # fmt: skip
        assert refused.returncode == 1
        said = refused.stderr + refused.stdout
        assert "Iterations 1000 is less than the minimum 4096 required for" in said

    for tool, user in users.items():  # each tool's credentials work for librdkafka
        producer = Producer({"bootstrap.servers": sasl, "security.protocol": "SASL_SSL",
                             "ssl.ca.location": str(files.ca), "sasl.mechanism": "SCRAM-SHA-512",
                             "sasl.username": user, "sasl.password": f"{user}-secret"})  # fmt: skip
        producer.produce("scram", f"from {tool}'s {user}".encode())
        assert producer.flush(30) == 0, tool

    client = tmp_path / "client.properties"
    client.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="bob" password="bob-secret";\n'
        f"ssl.truststore.type=PEM\nssl.truststore.location={files.ca}\n"
    )
    produced = run_tool("kafka-console-producer", "--bootstrap-server", sasl, "--topic", "scram",
                        "--producer.config", str(client), input="from java\n")  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    consumed = run_tool("kafka-console-consumer", "--bootstrap-server", sasl, "--topic", "scram",
                        "--consumer.config", str(client), "--from-beginning", "--max-messages",
                        "3", "--timeout-ms", "60000")  # fmt: skip
    assert sorted(consumed.stdout.splitlines()) == [
        "from java", "from kafka's alice", "from kt's bob"
    ], consumed.stderr  # fmt: skip
