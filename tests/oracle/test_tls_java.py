"""Kafka's Java client and tools against a kt broker with mutual TLS: the broker reads a
PKCS12 key store and trust store made by the test, requires client certificates
(ssl.client.auth=required), and Kafka 3.9's kafka-topics, console producer and consumer
and producer-perf-test connect with a PKCS12 client key store and a PEM trust store, as
an operator's client.properties would say."""

from __future__ import annotations

import re

import pytest

from kt.reference_kafka import run_tool
from kt.testing.certificates import PASSWORD, TlsFiles, issue, make_ca, write_party


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, TlsFiles]:
    directory = tmp_path_factory.mktemp("pki")
    ca = make_ca()
    return {
        "broker": write_party(directory, "broker", ca, issue(ca, "broker")),
        "client": write_party(directory, "client", ca, issue(ca, "java-client")),
    }


def test_kafkas_tools_speak_mutual_tls_to_kt(broker_factory, pki, tmp_path) -> None:
    broker = broker_factory(**{
        "listeners": "SSL://127.0.0.1:0", "security.inter.broker.protocol": "SSL",
        "ssl.client.auth": "required",
        "ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(pki["broker"].keystore_p12),
        "ssl.keystore.password": PASSWORD, "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki["client"].ca),
    })  # fmt: skip
    config = tmp_path / "client.properties"
    config.write_text(
        "security.protocol=SSL\n"
        f"ssl.keystore.type=PKCS12\nssl.keystore.location={pki['client'].keystore_p12}\n"
        f"ssl.keystore.password={PASSWORD}\nssl.key.password={PASSWORD}\n"
        f"ssl.truststore.type=PEM\nssl.truststore.location={pki['broker'].ca}\n"
    )
    b = broker.bootstrap
    created = run_tool("kafka-topics", "--bootstrap-server", b, "--command-config", str(config),
                       "--create", "--topic", "java-tls", "--partitions", "2")  # fmt: skip
    assert created.stdout == "Created topic java-tls.\n", created.stderr
    listed = run_tool("kafka-topics", "--bootstrap-server", b, "--command-config", str(config),
                      "--list")  # fmt: skip
    assert listed.stdout == "java-tls\n", listed.stderr

    lines = [f"line {i}" for i in range(20)]
    produced = run_tool("kafka-console-producer", "--bootstrap-server", b, "--topic", "java-tls",
                        "--producer.config", str(config),
                        input="".join(f"{x}\n" for x in lines))  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    perf = run_tool("kafka-producer-perf-test", "--topic", "java-tls", "--num-records", "20000",
                    "--record-size", "100", "--throughput", "-1", "--producer.config",
                    str(config), "--producer-props", f"bootstrap.servers={b}",
                    "acks=all")  # fmt: skip
    assert re.search(r"^20000 records sent, ", perf.stdout, re.M), perf.stderr
    consumed = run_tool("kafka-console-consumer", "--bootstrap-server", b, "--topic", "java-tls",
                        "--consumer.config", str(config), "--from-beginning",
                        "--max-messages", "20020", "--timeout-ms", "60000")  # fmt: skip
    assert consumed.returncode == 0, consumed.stderr
    got = consumed.stdout.splitlines()
    assert len(got) == 20020 and sorted(x for x in got if x.startswith("line ")) == sorted(lines)
