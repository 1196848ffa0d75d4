"""Kafka's znode layout (ZooKeeper mode, Kafka 3.x ZkData.scala): paths and JSON codecs.

E = ephemeral, P = persistent, PS = persistent sequential (10-digit counter suffix).

  /cluster/id                              P  {"version":"1","id":"<22-char Uuid>"}
  /controller                              E  {"version":2,"brokerid":0,
                                               "timestamp":"1595381947195",
                                               "kraftControllerEpoch":-1}
  /controller_epoch                        P  1                  (plain integer text)
  /brokers/ids/<id>                        E  v5 registration, see BrokerRegistration
  /brokers/seqid                           P  (empty; its version numbers broker ids)
  /brokers/topics/<t>                      P  {"partitions":{"0":[2,1]},"topic_id":"..",
                                               "adding_replicas":{},
                                               "removing_replicas":{},"version":3}
  /brokers/topics/<t>/partitions/<p>/state P  {"controller_epoch":1,"leader":2,
                                               "version":1,"leader_epoch":0,"isr":[2,1]}
  /config/<type>/<name>                    P  {"version":1,"config":{"k":"v"}}
                                              type: topics clients users brokers ips;
                                              /config/brokers/<default> for defaults
  /config/changes/config_change_<seq>      PS {"version":2,"entity_path":"topics/t"}
  /admin/delete_topics/<t>                 P  (empty)
  /admin/reassign_partitions               P  {"version":1,"partitions":[{"topic":"t",
                                               "partition":0,"replicas":[1,2]}]}
  /admin/preferred_replica_election        P  {"version":1,"partitions":[{"topic":"t",
                                               "partition":0}]}
  /isr_change_notification/isr_change_<seq>       PS  {"version":1,"partitions":[..]}
  /log_dir_event_notification/log_dir_event_<seq> PS  {"version":1,"broker":1,"event":1}
  /latest_producer_id_block                P  {"version":1,"broker":0,
                                               "block_start":"0","block_end":"999"}
  /feature                                 P  {"features":{},"version":2,"status":1}
  /consumers/<g>/offsets/<t>/<p>           P  plain integer text (pre-0.9 consumers)

Encoders write compact JSON in the key order Kafka's JVM maps produce (see
kt.metadata.jvm_order), so the bytes match a Kafka broker's; decoders accept any key
order and the older versions Kafka itself still reads.
"""

from __future__ import annotations

import base64
import json
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

from kt.metadata.jvm_order import (
    java_properties_order,
    scala_immutable_map_order,
    scala_mutable_hashmap_order,
)

# -- paths -------------------------------------------------------------------------------

CLUSTER = "/cluster"
CLUSTER_ID = "/cluster/id"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
BROKERS = "/brokers"
BROKER_IDS = "/brokers/ids"
BROKER_SEQID = "/brokers/seqid"
TOPICS = "/brokers/topics"
CONFIG = "/config"
CONFIG_CHANGES = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"
ADMIN = "/admin"
DELETE_TOPICS = "/admin/delete_topics"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
ISR_CHANGE_PREFIX = "isr_change_"
LOG_DIR_EVENT_NOTIFICATION = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX = "log_dir_event_"
LATEST_PRODUCER_ID_BLOCK = "/latest_producer_id_block"
FEATURE = "/feature"
CONSUMERS = "/consumers"

# ConfigType.ALL, in Kafka's order; "<default>" names the cluster-wide default entity.
CONFIG_TYPES = ("topics", "clients", "users", "brokers", "ips")
DEFAULT_ENTITY = "<default>"


def sanitize(name: str | None) -> str:
    """An entity's name in its znode's (Sanitizer.sanitize: URL-encoded), None being the
    default entity."""
    return DEFAULT_ENTITY if name is None else quote(name, safe="")


def desanitize(name: str) -> str | None:
    return None if name == DEFAULT_ENTITY else unquote(name)


# ZkData.PersistentZkPaths: created (with parents) by every broker at start-up.
PERSISTENT_PATHS = (
    CONSUMERS,
    BROKER_IDS,
    TOPICS,
    CONFIG_CHANGES,
    DELETE_TOPICS,
    BROKER_SEQID,
    ISR_CHANGE_NOTIFICATION,
    LATEST_PRODUCER_ID_BLOCK,
    LOG_DIR_EVENT_NOTIFICATION,
) + tuple(f"{CONFIG}/{t}" for t in CONFIG_TYPES)


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS}/{topic}"


def topic_partitions_path(topic: str) -> str:
    return f"{TOPICS}/{topic}/partitions"


def partition_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{partition}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{partition}/state"


def config_entity_path(entity_type: str, entity_name: str) -> str:
    return f"{CONFIG}/{entity_type}/{entity_name}"


def config_change_create_path() -> str:
    """Create this path sequentially; ZooKeeper appends the counter."""
    return f"{CONFIG_CHANGES}/{CONFIG_CHANGE_PREFIX}"


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS}/{topic}"


def consumer_offset_path(group: str, topic: str, partition: int) -> str:
    return f"{CONSUMERS}/{group}/offsets/{topic}/{partition}"


def sequence_number(name: str, prefix: str) -> int:
    """The counter of a sequential node's name: "config_change_0000000007" -> 7."""
    return int(name[name.rindex(prefix) + len(prefix) :])


# -- Kafka Uuid: 16 bytes, printed as unpadded URL-safe base64 (22 chars) -----------------

ZERO_UUID = uuid.UUID(int=0)
METADATA_TOPIC_ID = uuid.UUID(int=1)


def uuid_to_str(value: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def uuid_from_str(text: str) -> uuid.UUID:
    if len(text) != 22:
        raise ValueError(f"a Kafka Uuid has 22 base64 characters: {text!r}")
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


def random_uuid() -> uuid.UUID:
    """Uuid.randomUuid: a random (version 4) UUID never reserved and never printed with a
    leading '-', which command lines would take for an option."""
    while True:
        value = uuid.uuid4()
        if value not in (ZERO_UUID, METADATA_TOPIC_ID) and not uuid_to_str(value).startswith("-"):
            return value


# -- JSON helpers ------------------------------------------------------------------------


def _dumps(obj: Any) -> bytes:
    """Jackson's compact output: no spaces, non-ASCII written as UTF-8."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _ordered(values: Mapping[str, Any], order: Sequence[str]) -> dict[str, Any]:
    return {k: values[k] for k in order if k in values}


def _loads(data: bytes, what: str) -> dict[str, Any]:
    try:
        doc = json.loads(data)
    except ValueError as e:
        raise ValueError(f"malformed {what} znode: {data!r}") from e
    if not isinstance(doc, dict):
        raise ValueError(f"malformed {what} znode: {data!r}")
    return doc


# -- /cluster/id, /controller, /controller_epoch --------------------------------------------


def encode_cluster_id(cluster_id: str) -> bytes:
    return _dumps({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes) -> str:
    return str(_loads(data, "cluster id")["id"])


@dataclass(frozen=True)
class ControllerRegistration:
    """/controller: who is controller (and, for migration, the KRaft controller epoch)."""

    broker_id: int
    timestamp_ms: int
    kraft_controller_epoch: int = -1

    def encode(self) -> bytes:
        return _dumps({
            "version": 2, "brokerid": self.broker_id, "timestamp": str(self.timestamp_ms),
            "kraftControllerEpoch": self.kraft_controller_epoch,
        })  # fmt: skip

    @classmethod
    def decode(cls, data: bytes) -> ControllerRegistration:
        doc = _loads(data, "controller")
        return cls(int(doc["brokerid"]), int(doc.get("timestamp", 0)),
                   int(doc.get("kraftControllerEpoch", -1)))  # fmt: skip


def encode_controller_epoch(epoch: int) -> bytes:
    return str(epoch).encode("ascii")


def decode_controller_epoch(data: bytes) -> int:
    return int(data.decode("ascii"))


# -- /brokers/ids/<id> -----------------------------------------------------------------------

_BROKER_KEYS = scala_mutable_hashmap_order(
    ["version", "host", "port", "endpoints", "jmx_port", "timestamp", "rack",
     "listener_security_protocol_map", "features"],
    initial_elements=6,
)  # fmt: skip
_ENDPOINT = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$")


@dataclass(frozen=True)
class BrokerEndPoint:
    """One advertised listener: `PLAINTEXT://host:9092` plus its security protocol."""

    listener_name: str
    host: str | None
    port: int
    security_protocol: str = "PLAINTEXT"

    def connection_string(self) -> str:
        if self.host is None:
            return f"{self.listener_name}://:{self.port}"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener_name}://{host}:{self.port}"

    @classmethod
    def parse(cls, text: str, protocols: Mapping[str, str] | None = None) -> BrokerEndPoint:
        match = _ENDPOINT.match(text)
        if match is None:
            raise ValueError(f"unable to parse {text!r} to a broker endpoint")
        name, host, port = match.group(1), match.group(2), int(match.group(3))
        protocol = (protocols or {}).get(name, name)
        return cls(name, host or None, port, protocol)


@dataclass(frozen=True)
class BrokerRegistration:
    """/brokers/ids/<id> (BrokerIdZNode v5): a live broker's endpoints and rack.

    `host`/`port` in the JSON are the first PLAINTEXT endpoint's (null/-1 without one),
    for clients older than endpoints; `rack` is written only when set. `epoch` is not in
    the JSON: it is the znode's czxid, Kafka's broker epoch (-1 when not read from one).
    """

    broker_id: int
    endpoints: tuple[BrokerEndPoint, ...]
    rack: str | None = None
    timestamp_ms: int = 0
    jmx_port: int = -1
    features: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    version: int = 5
    epoch: int = -1

    @property
    def host(self) -> str | None:
        return self._plaintext().host

    @property
    def port(self) -> int:
        return self._plaintext().port

    def _plaintext(self) -> BrokerEndPoint:
        for endpoint in self.endpoints:
            if endpoint.security_protocol == "PLAINTEXT":
                return endpoint
        return BrokerEndPoint("", None, -1)

    def endpoint(self, listener_name: str) -> BrokerEndPoint | None:
        return next((e for e in self.endpoints if e.listener_name == listener_name), None)

    def encode(self) -> bytes:
        values: dict[str, Any] = {
            "version": self.version, "host": self.host, "port": self.port,
            "endpoints": [e.connection_string() for e in self.endpoints],
            "jmx_port": self.jmx_port, "timestamp": str(self.timestamp_ms),
            "listener_security_protocol_map":
                {e.listener_name: e.security_protocol for e in self.endpoints},
            "features": {k: dict(v) for k, v in self.features.items()},
        }  # fmt: skip
        if self.rack is not None:
            values["rack"] = self.rack
        return _dumps(_ordered(values, _BROKER_KEYS))

    @classmethod
    def decode(cls, broker_id: int, data: bytes) -> BrokerRegistration:
        doc = _loads(data, f"broker {broker_id}")
        version = int(doc["version"])
        if version < 1:
            raise ValueError(f"unsupported broker registration version {version}")
        if version == 1:
            endpoints = (BrokerEndPoint("PLAINTEXT", doc["host"], int(doc["port"])),)
        else:
            protocols = doc.get("listener_security_protocol_map")
            endpoints = tuple(BrokerEndPoint.parse(e, protocols) for e in doc["endpoints"])
        return cls(
            broker_id, endpoints, doc.get("rack"), int(doc.get("timestamp", 0)),
            int(doc.get("jmx_port", -1)), doc.get("features") or {}, version,
        )  # fmt: skip


# -- /brokers/topics/<t> ---------------------------------------------------------------------

_TOPIC_KEYS = scala_mutable_hashmap_order(
    ["version", "partitions", "adding_replicas", "removing_replicas", "topic_id"],
    initial_elements=4,
)


@dataclass(frozen=True)
class TopicAssignment:
    """/brokers/topics/<t> (TopicZNode v3): replicas per partition, reassignment in flight.

    During a reassignment `partitions[p]` is target ++ original replicas, and
    `adding_replicas`/`removing_replicas` hold only the partitions being moved.
    """

    topic: str
    partitions: Mapping[int, Sequence[int]]
    topic_id: uuid.UUID | None = None
    adding_replicas: Mapping[int, Sequence[int]] = field(default_factory=dict)
    removing_replicas: Mapping[int, Sequence[int]] = field(default_factory=dict)

    def encode(self) -> bytes:
        values: dict[str, Any] = {
            "version": 3,
            "partitions": _partition_map(self.partitions),
            "adding_replicas": _partition_map(self.adding_replicas),
            "removing_replicas": _partition_map(self.removing_replicas),
        }
        if self.topic_id is not None:
            values["topic_id"] = uuid_to_str(self.topic_id)
        return _dumps(_ordered(values, _TOPIC_KEYS))

    @classmethod
    def decode(cls, topic: str, data: bytes) -> TopicAssignment:
        doc = _loads(data, f"topic {topic}")
        topic_id = doc.get("topic_id")

        def partition_map(key: str) -> dict[int, list[int]]:
            return {int(p): list(r) for p, r in (doc.get(key) or {}).items()}

        return cls(
            topic,
            dict(sorted(partition_map("partitions").items())),
            uuid_from_str(topic_id) if topic_id else None,
            partition_map("adding_replicas"),
            partition_map("removing_replicas"),
        )


def _partition_map(replicas: Mapping[int, Sequence[int]]) -> dict[str, list[int]]:
    """A `mutable.Map[String, List[Int]]()` filled partition by partition."""
    keys = scala_mutable_hashmap_order([str(p) for p in replicas])
    by_key = {str(p): list(r) for p, r in replicas.items()}
    return {k: by_key[k] for k in keys}


# -- /brokers/topics/<t>/partitions/<p>/state ---------------------------------------------------

RECOVERED = 0
RECOVERING = 1
_STATE_KEYS_5 = scala_immutable_map_order(
    ["version", "leader", "leader_epoch", "controller_epoch", "isr"]
)
_STATE_KEYS_6 = scala_immutable_map_order(
    ["version", "leader", "leader_epoch", "controller_epoch", "isr", "leader_recovery_state"]
)


@dataclass(frozen=True)
class LeaderAndIsr:
    """A partition's state znode (LeaderIsrAndControllerEpoch): leader, ISR, epochs.

    `zk_version` is the znode's data version when read (not in the JSON): the controller
    writes the next state conditionally on it. `leader_recovery_state` is written only
    when RECOVERING (after an unclean election).
    """

    leader: int
    leader_epoch: int
    isr: Sequence[int]
    controller_epoch: int
    leader_recovery_state: int = RECOVERED
    zk_version: int = -1

    def encode(self) -> bytes:
        values: dict[str, Any] = {
            "version": 1, "leader": self.leader, "leader_epoch": self.leader_epoch,
            "controller_epoch": self.controller_epoch, "isr": list(self.isr),
        }  # fmt: skip
        if self.leader_recovery_state != RECOVERED:
            values["leader_recovery_state"] = self.leader_recovery_state
            return _dumps(_ordered(values, _STATE_KEYS_6))
        return _dumps(_ordered(values, _STATE_KEYS_5))

    @classmethod
    def decode(cls, data: bytes, zk_version: int = -1) -> LeaderAndIsr:
        doc = _loads(data, "partition state")
        return cls(
            int(doc["leader"]), int(doc["leader_epoch"]), list(doc["isr"]),
            int(doc["controller_epoch"]), int(doc.get("leader_recovery_state", RECOVERED)),
            zk_version,
        )  # fmt: skip


# -- /config/<type>/<name>, /config/changes ------------------------------------------------


def encode_entity_config(config: Mapping[str, str]) -> bytes:
    """ConfigEntityZNode: {"version":1,"config":{...}}, the map in java.util.Properties
    order (entries set in the mapping's order)."""
    props = {k: str(config[k]) for k in java_properties_order(config)}
    return _dumps({"version": 1, "config": props})


def decode_entity_config(data: bytes | None) -> dict[str, str]:
    if not data:
        return {}
    config = _loads(data, "config").get("config")
    return {k: str(v) for k, v in config.items()} if isinstance(config, dict) else {}


def encode_config_change(entity_path: str) -> bytes:
    """A change notification; `entity_path` is "topics/t", "brokers/1", "brokers/<default>"."""
    return _dumps({"version": 2, "entity_path": entity_path})


def decode_config_change(data: bytes) -> str:
    """The changed entity's path; version 1 notifications name type and name apart."""
    doc = _loads(data, "config change")
    if int(doc["version"]) == 1:
        return f"{doc['entity_type']}/{doc['entity_name']}"
    return str(doc["entity_path"])


# -- /admin, notifications ---------------------------------------------------------------


def encode_reassignment(reassignment: Mapping[tuple[str, int], Sequence[int]]) -> bytes:
    """/admin/reassign_partitions (the legacy `--zookeeper` reassignment request)."""
    partitions = [{"topic": t, "partition": p, "replicas": list(r)}
                  for (t, p), r in reassignment.items()]  # fmt: skip
    return _dumps({"version": 1, "partitions": partitions})


def decode_reassignment(data: bytes) -> dict[tuple[str, int], list[int]]:
    doc = _loads(data, "reassignment")
    return {(e["topic"], int(e["partition"])): list(e["replicas"]) for e in doc["partitions"]}


def encode_partitions(partitions: Iterable[tuple[str, int]]) -> bytes:
    """{"version":1,"partitions":[{"topic":..,"partition":..}]}: the shape of
    /admin/preferred_replica_election and /isr_change_notification/isr_change_<seq>."""
    entries = [{"topic": t, "partition": p} for t, p in partitions]
    return _dumps({"version": 1, "partitions": entries})


def decode_partitions(data: bytes) -> list[tuple[str, int]]:
    doc = _loads(data, "partitions")
    return [(e["topic"], int(e["partition"])) for e in doc["partitions"]]


LOG_DIR_FAILURE_EVENT = 1


def encode_log_dir_event(broker_id: int) -> bytes:
    return _dumps({"version": 1, "broker": broker_id, "event": LOG_DIR_FAILURE_EVENT})


def decode_log_dir_event(data: bytes) -> int:
    """The broker whose log dir failed."""
    return int(_loads(data, "log dir event")["broker"])


# -- /latest_producer_id_block, /feature, /consumers ------------------------------------------

PRODUCER_ID_BLOCK_SIZE = 1000


@dataclass(frozen=True)
class ProducerIdBlock:
    """The last block of producer ids handed out: [block_start, block_end], inclusive."""

    broker_id: int
    block_start: int
    block_end: int

    def encode(self) -> bytes:
        start, end = str(self.block_start), str(self.block_end)
        return _dumps(
            {"version": 1, "broker": self.broker_id, "block_start": start, "block_end": end}
        )

    @classmethod
    def decode(cls, data: bytes) -> ProducerIdBlock:
        doc = _loads(data, "producer id block")
        return cls(int(doc["broker"]), int(doc["block_start"]), int(doc["block_end"]))

    def next(self, broker_id: int, size: int = PRODUCER_ID_BLOCK_SIZE) -> ProducerIdBlock:
        return ProducerIdBlock(broker_id, self.block_end + 1, self.block_end + size)


FEATURE_ENABLED = 1
FEATURE_DISABLED = 0
_FEATURE_KEYS = scala_mutable_hashmap_order(["version", "status", "features"], initial_elements=3)


@dataclass(frozen=True)
class FeatureZNode:
    """/feature: finalized feature levels; v2 drops v1's min_version_level."""

    features: Mapping[str, int] = field(default_factory=dict)
    status: int = FEATURE_ENABLED
    version: int = 2

    def encode(self) -> bytes:
        if self.version == 1:
            features = {f: {"max_version_level": v, "min_version_level": v}
                        for f, v in self.features.items()}  # fmt: skip
        else:
            features = {f: {"max_version_level": v} for f, v in self.features.items()}
        values = {"version": self.version, "status": self.status, "features": features}
        return _dumps(_ordered(values, _FEATURE_KEYS))

    @classmethod
    def decode(cls, data: bytes) -> FeatureZNode:
        doc = _loads(data, "feature")
        version = int(doc["version"])
        if version not in (1, 2):
            raise ValueError(f"unsupported feature znode version {version}")
        features = {f: int(v["max_version_level"]) for f, v in doc["features"].items()}
        return cls(features, int(doc["status"]), version)


def encode_offset(offset: int) -> bytes:
    """/consumers/<g>/offsets/<t>/<p> and similar plain-number znodes."""
    return str(offset).encode("ascii")


def decode_offset(data: bytes) -> int:
    return int(data.decode("ascii"))
