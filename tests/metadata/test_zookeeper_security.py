"""The ZooKeeper client's security settings (kt/metadata/zookeeper_security.py), read as
Kafka's are: -D options in KAFKA_OPTS, the JAAS file's login context, and Kafka's ACLs
per znode path (ZkData.defaultAcls)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kt.errors import InvalidConfigError
from kt.metadata.zookeeper_security import (
    default_acls,
    parse_jaas_file,
    require_sasl_for_acls,
    system_properties,
    zookeeper_sasl,
)
from kt.security.sasl import JaasConfig

JAAS = """/* a broker's logins */
KafkaServer {
  org.apache.kafka.common.security.plain.PlainLoginModule required
  username="admin" password="a;b";   // a quoted ';' is part of the password
};
Client {
  org.apache.zookeeper.server.auth.DigestLoginModule required
  username="kafka"
  password="kafka-secret";
};
"""


def opts(path: Path, *extra: str) -> dict[str, str]:
    return {"KAFKA_OPTS": " ".join(("-Xmx1g", f"-Djava.security.auth.login.config={path}",
                                    *extra))}  # fmt: skip


def test_the_client_login_is_read_from_the_file_kafka_opts_names(tmp_path: Path) -> None:
    jaas = tmp_path / "jaas.conf"
    jaas.write_text(JAAS)
    contexts = parse_jaas_file(JAAS, "jaas.conf")
    assert contexts["KafkaServer"][0].options == {"username": "admin", "password": "a;b"}
    with pytest.raises(InvalidConfigError, match="one login module per JAAS configuration"):
        JaasConfig.parse('A required x="1"; B required y="2";', "sasl.jaas.config")
    assert zookeeper_sasl(opts(jaas)) == {
        "mechanism": "DIGEST-MD5", "username": "kafka", "password": "kafka-secret"
    }  # fmt: skip
    assert zookeeper_sasl(opts(jaas, "-Dzookeeper.sasl.clientconfig=Elsewhere")) is None
    assert zookeeper_sasl({}) is None
    assert system_properties({"KAFKA_OPTS": "-Da=1 -Xmx1g '-Db=two words'"}) == {
        "a": "1", "b": "two words"
    }  # fmt: skip


def test_what_kafka_refuses_is_refused(tmp_path: Path) -> None:
    jaas = tmp_path / "jaas.conf"
    jaas.write_text(JAAS)
    with pytest.raises(InvalidConfigError, match="is set to false, which disables SASL"):
        zookeeper_sasl(opts(jaas, "-Dzookeeper.sasl.client=false"))
    with pytest.raises(InvalidConfigError, match="Exception while loading Zookeeper JAAS"):
        zookeeper_sasl(opts(tmp_path / "missing.conf"))
    kerberos = tmp_path / "kerberos.conf"
    kerberos.write_text("Client { com.sun.security.auth.module.Krb5LoginModule required "
                        'useKeyTab=true; };')  # fmt: skip
    with pytest.raises(InvalidConfigError, match="not com.sun.security.auth.module.Krb5Login"):
        zookeeper_sasl(opts(kerberos))
    with pytest.raises(InvalidConfigError, match="^zookeeper.set.acl is true, but"):
        require_sasl_for_acls(True, None, {})
    require_sasl_for_acls(False, None, {})


def test_kafkas_acls_by_path() -> None:
    def named(path: str) -> list[tuple[str, str, int]] | None:
        found = default_acls(path)
        return None if found is None else [(a.id.scheme, a.id.id, a.perms) for a in found]

    public = [("auth", "", 31), ("world", "anyone", 1)]
    assert named("/brokers/topics/t") == public
    assert named("/config/topics/t") == public
    assert named("/config/users") == named("/config/users/alice") == [("auth", "", 31)]
    assert named("/config/brokers/0") == named("/delegation_token") == [("auth", "", 31)]
    assert named("/consumers") is None  # open to all, as Kafka keeps it
