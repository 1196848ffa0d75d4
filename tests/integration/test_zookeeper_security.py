"""kt's sessions on a ZooKeeper that authenticates with SASL, as Kafka's: the JAAS
`Client` login named by -Djava.security.auth.login.config in KAFKA_OPTS, and with
zookeeper.set.acl=true Kafka's ACLs on every znode the brokers create (ZkData.defaultAcls):
all rights to the broker's SASL identity and read to anyone, and nothing to others under
/config/users (SCRAM credentials). A reader without the login may read a topic's znode
but neither change it nor read a credential; a broker with zookeeper.set.acl and no SASL
login, or a wrong password, does not start, with Kafka's message."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka.admin import (
    AdminClient,
    NewTopic,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from kt.testing import KtCluster
from kt.testing.zookeeper import running_zookeeper, zookeeper_installed
from tests._environment import unavailable
from tests.integration.conftest import kt_command, kt_error

pytestmark = pytest.mark.slow

USERS = {"kafka": "kafka-secret", "other": "other-secret"}
ALL, READ = 31, 1


def client_login(tmp_path: Path, user: str, password: str) -> str:
    """KAFKA_OPTS naming a JAAS file with Kafka's ZooKeeper `Client` login."""
    jaas = tmp_path / f"{user}-jaas.conf"
    jaas.write_text(
        "// the broker's login to ZooKeeper\nClient {\n"
        "  org.apache.zookeeper.server.auth.DigestLoginModule required\n"
        f'  username="{user}"\n  password="{password}";\n}};\n'
    )
    return f"-Xmx1g -Djava.security.auth.login.config={jaas}"


@pytest.fixture
def secured_zookeeper(tmp_path: Path):  # type: ignore[no-untyped-def]
    if not zookeeper_installed():
        unavailable("Debian's zookeeper package is not installed")
    with running_zookeeper(tmp_path / "zk", sasl_users=USERS) as server:
        yield server


def login(user: str | None) -> dict[str, str] | None:
    """kazoo's SASL options for one of USERS; None: unauthenticated (world)."""
    if user is None:
        return None
    return {"mechanism": "DIGEST-MD5", "username": user, "password": USERS[user]}


def properties(tmp_path: Path, extra: str) -> Path:
    path = tmp_path / "server.properties"
    path.write_text(f"log.dirs={tmp_path / 'logs'}\nlisteners=PLAINTEXT://127.0.0.1:0\n{extra}")
    return path


def acls(client: KazooClient, path: str) -> list[tuple[str, str, int]]:
    found, _ = client.get_acls(path)
    return sorted((a.id.scheme, a.id.id, a.perms) for a in found)


def test_zookeeper_set_acl_guards_the_znodes_of_a_sasl_broker(
    tmp_path, monkeypatch, secured_zookeeper
) -> None:
    monkeypatch.setenv("KAFKA_OPTS", client_login(tmp_path, "kafka", USERS["kafka"]))
    connect = f"{secured_zookeeper.connect}/kt"
    with KtCluster(1, base_dir=tmp_path / "kt", zookeeper_connect=connect,
                   overrides={"zookeeper.set.acl": "true"}) as cluster:  # fmt: skip
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.create_topics([NewTopic("guarded", 1, 1)])["guarded"].result(30)
        credential = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096)
        upsert = UserScramCredentialUpsertion("alice", credential, b"alice-secret")
        admin.alter_user_scram_credentials([upsert])["alice"].result(30)
        anonymous, owner, other = (
            KazooClient(hosts=secured_zookeeper.connect, sasl_options=login(user))
            for user in (None, "kafka", "other")
        )  # fmt: skip
        for client in (anonymous, owner, other):
            client.start(10)
        try:
            public = [("sasl", "kafka", ALL), ("world", "anyone", READ)]
            assert acls(owner, "/kt") == public  # the chroot, created by the broker
            for path in ("/kt/brokers/topics/guarded", "/kt/brokers/ids/0", "/kt/controller",
                         "/kt/config/topics/guarded", "/kt/brokers/topics"):  # fmt: skip
                assert acls(owner, path) == public, path
            assert anonymous.get("/kt/brokers/topics/guarded")[0].startswith(b"{")
            with pytest.raises(NoAuthError):
                anonymous.set("/kt/brokers/topics/guarded", b"{}")
            with pytest.raises(NoAuthError):
                other.delete("/kt/brokers/topics/guarded/partitions", recursive=True)
            secret = [("sasl", "kafka", ALL)]
            assert acls(owner, "/kt/config/users/alice") == secret
            assert b"SCRAM-SHA-256" in owner.get("/kt/config/users/alice")[0]
            for reader in (anonymous, other):
                with pytest.raises(NoAuthError):
                    reader.get("/kt/config/users/alice")
            assert acls(owner, "/kt/consumers") == [("world", "anyone", ALL)]
        finally:
            for client in (anonymous, owner, other):
                client.stop()
                client.close()


def test_zookeeper_set_acl_without_a_sasl_login_is_refused(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("KAFKA_OPTS", raising=False)
    props = properties(tmp_path, "zookeeper.connect=127.0.0.1:1\nzookeeper.set.acl=true\n")
    assert kt_error("server-start", str(props)) == (
        "cannot start the broker: zookeeper.set.acl is true, but ZooKeeper client TLS "
        "configuration identifying at least zookeeper.ssl.client.enable, "
        "zookeeper.clientCnxnSocket, and zookeeper.ssl.keystore.location was not present "
        "and the verification of the JAAS login file failed "
        "[java.security.auth.login.config=null, zookeeper.sasl.client=default:true, "
        "zookeeper.sasl.clientconfig=default:Client]"
    )


def test_a_wrong_zookeeper_password_stops_the_broker_with_a_clear_error(
    tmp_path, monkeypatch, secured_zookeeper
) -> None:
    props = properties(tmp_path, f"zookeeper.connect={secured_zookeeper.connect}/kt\n"
                                 "zookeeper.connection.timeout.ms=5000\n")  # fmt: skip
    monkeypatch.setenv("KAFKA_OPTS", client_login(tmp_path, "kafka", "not-the-password"))
    result = kt_command("server-start", str(props))
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "cannot start the broker: ZooKeeper refused the SASL login (AuthFailedError): check "
        "the username and password of the JAAS Client login"
    ), result.stderr
