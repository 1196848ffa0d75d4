"""The security of kt's ZooKeeper sessions, as Kafka's ZooKeeper client has it.

SASL: Kafka's brokers and tools authenticate to ZooKeeper with the JAAS login context
`Client` (or `-Dzookeeper.sasl.clientconfig`) of the file named by the JVM system
property `java.security.auth.login.config`, which operators pass in KAFKA_OPTS. kt reads
the same `-D` options from KAFKA_OPTS and the same file; its context must be Kafka's
DigestLoginModule (`username`, `password`), which kazoo speaks as DIGEST-MD5.

ACLs: with `zookeeper.set.acl=true` every znode created gets Kafka's ACLs
(ZkData.defaultAcls): all rights to the session's authenticated identity (CREATOR_ALL)
and read to anyone, except under the sensitive roots (/config/users, /config/brokers,
/delegation_token: no read for others) and /consumers (open, as the old consumers need).
Kafka refuses zookeeper.set.acl without SASL to ZooKeeper (KafkaZkClient.createZkClient);
so does kt, with Kafka's message.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kt.errors import InvalidConfigError
from kt.security.sasl import JaasConfig

JAVA_LOGIN_CONFIG = "java.security.auth.login.config"
ZK_SASL_CLIENT = "zookeeper.sasl.client"
ZK_LOGIN_CONTEXT = "zookeeper.sasl.clientconfig"
DIGEST_LOGIN_MODULE = "org.apache.zookeeper.server.auth.DigestLoginModule"
SENSITIVE_ROOT_PATHS = ("/config/users", "/config/brokers", "/delegation_token")
CONSUMERS = "/consumers"
_SECTION = re.compile(r"([A-Za-z0-9_.\-]+)\s*\{(.*?)\}\s*;", re.DOTALL)
_ENTRY_END = re.compile(r'(?:[^;"]|"(?:[^"\\]|\\.)*")*;')


def system_properties(env: Mapping[str, str]) -> dict[str, str]:
    """The `-Dkey=value` options of KAFKA_OPTS."""
    found: dict[str, str] = {}
    for word in shlex.split(env.get("KAFKA_OPTS", "")):
        if word.startswith("-D") and "=" in word:
            key, _, value = word[2:].partition("=")
            found[key] = value
    return found


def security_string(props: Mapping[str, str]) -> str:
    """Kafka's JaasUtils.zkSecuritySysConfigString, for its messages."""
    return (f"[{JAVA_LOGIN_CONFIG}={props.get(JAVA_LOGIN_CONFIG, 'null')}, "
            f"{ZK_SASL_CLIENT}={props.get(ZK_SASL_CLIENT, 'default:true')}, "
            f"{ZK_LOGIN_CONTEXT}={props.get(ZK_LOGIN_CONTEXT, 'default:Client')}]")  # fmt: skip


def parse_jaas_file(text: str, source: str) -> dict[str, list[JaasConfig]]:
    """A JAAS login configuration file: its contexts and each one's login modules."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.DOTALL)
    text = "\n".join(line.split("//", 1)[0] for line in text.splitlines())
    contexts: dict[str, list[JaasConfig]] = {}
    for name, body in _SECTION.findall(text):
        contexts[name] = [
            JaasConfig.parse(entry.group(0), f"{source} ({name})")
            for entry in _ENTRY_END.finditer(body)
            if entry.group(0).strip(" \t\r\n;")
        ]
    return contexts


def zookeeper_sasl(env: Mapping[str, str] = os.environ) -> dict[str, Any] | None:
    """kazoo's `sasl_options` from the JAAS login context Kafka's ZooKeeper client would
    use, or None when there is none (JaasUtils.isZkSaslEnabled is false)."""
    props = system_properties(env)
    path = props.get(JAVA_LOGIN_CONFIG)
    if not path:
        return None
    context = props.get(ZK_LOGIN_CONTEXT, "Client")
    try:
        contexts = parse_jaas_file(Path(path).read_text(), path)
    except (OSError, InvalidConfigError) as e:
        raise InvalidConfigError(
            f"Exception while loading Zookeeper JAAS login context {security_string(props)}: {e}"
        ) from None
    entries = contexts.get(context)
    if not entries:
        return None
    if props.get(ZK_SASL_CLIENT, "true").strip().lower() != "true":
        raise InvalidConfigError(
            "Exception while determining if ZooKeeper is secure "
            f"{security_string(props)}: JAAS configuration is present, but {ZK_SASL_CLIENT} "
            "is set to false, which disables SASL in the ZooKeeper client"
        )
    entry = entries[0]
    if entry.login_module != DIGEST_LOGIN_MODULE or not {"username", "password"} <= set(
        entry.options
    ):
        raise InvalidConfigError(
            f"{path} ({context}): kt authenticates to ZooKeeper with {DIGEST_LOGIN_MODULE} "
            f'required username="..." password="..."; (DIGEST-MD5), not {entry.login_module}'
        )
    return {
        "mechanism": "DIGEST-MD5",
        "username": entry.options["username"],
        "password": entry.options["password"],
    }


def require_sasl_for_acls(
    set_acl: bool, sasl: dict[str, Any] | None, env: Mapping[str, str]
) -> None:
    """Kafka's check at KafkaZkClient.createZkClient."""
    if set_acl and sasl is None:
        raise InvalidConfigError(
            "zookeeper.set.acl is true, but ZooKeeper client TLS configuration identifying at "
            "least zookeeper.ssl.client.enable, zookeeper.clientCnxnSocket, and "
            "zookeeper.ssl.keystore.location was not present and the verification of the "
            f"JAAS login file failed {security_string(system_properties(env))}"
        )


def default_acls(path: str) -> list[Any] | None:
    """Kafka's ACLs of a znode it creates at `path` (chroot-relative) with
    zookeeper.set.acl=true; None for kazoo's default (open to all)."""
    if path == CONSUMERS:
        return None
    from kazoo.security import CREATOR_ALL_ACL, READ_ACL_UNSAFE

    if any(path.startswith(root) for root in SENSITIVE_ROOT_PATHS):
        return list(CREATOR_ALL_ACL)
    return [*CREATOR_ALL_ACL, *READ_ACL_UNSAFE]
