"""The reference-Kafka helper's own parts that need no Java."""

from __future__ import annotations

import uuid

import pytest

from kt import reference_kafka
from kt.metadata import znodes


def test_cluster_id_never_starts_with_a_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    # kafka-storage's argument parser takes "-t -Xyz..." for two options; one draw in 64
    # prints a leading '-', which once failed CI's Kafka start.
    dashed = uuid.UUID(bytes=b"\xf8" + bytes(15))
    plain = uuid.UUID(bytes=b"\x10" + bytes(15))
    assert znodes.uuid_to_str(dashed).startswith("-")
    draws = iter([dashed, plain])
    monkeypatch.setattr(znodes.uuid, "uuid4", lambda: next(draws))
    assert reference_kafka._kafka_uuid() == znodes.uuid_to_str(plain)


def test_kafka_jvm_performance_opts_replace_the_scripts_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # as kafka-run-class.sh: the variable, when set, instead of its default options
    monkeypatch.setattr(reference_kafka, "unavailable_reason", lambda version=None: None)
    monkeypatch.setenv("KAFKA_JVM_PERFORMANCE_OPTS", " -XX:+UseSerialGC  -Dx=1 ")
    command = reference_kafka.java_command("Main", ["-Xmx1m"], reference_kafka.Path("l4j"))
    assert command[:4] == ["java", "-Xmx1m", "-XX:+UseSerialGC", "-Dx=1"]
    assert "-XX:+UseG1GC" not in command
    monkeypatch.setenv("KAFKA_JVM_PERFORMANCE_OPTS", " ")
    assert reference_kafka.jvm_options() == reference_kafka.JVM_OPTIONS
    monkeypatch.delenv("KAFKA_JVM_PERFORMANCE_OPTS")
    assert reference_kafka.jvm_options()[:2] == ["-server", "-XX:+UseG1GC"]


def test_kafka_4_runs_from_its_own_jars_with_log4j2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reference_kafka, "unavailable_reason", lambda version=None: None)
    path = reference_kafka.Path("cfg")
    kafka3 = reference_kafka.java_command("Main", [], path)
    kafka4 = reference_kafka.java_command("Main", [], path, version=reference_kafka.KAFKA4_VERSION)
    assert "-Dlog4j.configuration=file:cfg" in kafka3
    assert "-Dlog4j2.configurationFile=cfg" in kafka4
    home4 = reference_kafka.kafka_home(reference_kafka.KAFKA4_VERSION)
    assert kafka4[-2:] == [str(home4 / "libs" / "*"), "Main"]
    assert home4.name == "kafka-4.4.0" and home4 != reference_kafka.kafka_home()
