"""KafkaClient: bootstrap, cluster metadata, and a connection per broker.

The small client under kt's tools and inter-broker links. It bootstraps from a
comma-separated `host:port` list, learns brokers, controller and partition leaders from
Metadata, and keeps one BrokerConnection per broker id. Requests that must go to a
partition's leader or to the controller are routed here; callers handle error codes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from kt.client.connection import BrokerConnection
from kt.errors import KafkaError
from kt.protocol import ApiKey
from kt.protocol import messages as m

if TYPE_CHECKING:
    from kt.security.sasl_client import ClientSasl
    from kt.security.ssl_factory import ClientTls

CREATING = 5  # LEADER_NOT_AVAILABLE: the answer for a topic the broker is creating
NOT_CONTROLLER = 41
API_TIMEOUT_S = 60.0  # the admin client's default.api.timeout.ms
RETRY_BACKOFF_S = 0.1  # retry.backoff.ms
T = TypeVar("T")


def parse_bootstrap(servers: str) -> list[tuple[str, int]]:
    """`host:port[,host:port]` -> [(host, port)], with a clear error for a bad entry."""
    out = []
    for item in filter(None, (s.strip() for s in servers.split(","))):
        host, sep, port = item.rpartition(":")
        if not sep or not port.isdigit() or not host:
            raise KafkaError(
                "INVALID_REQUEST", f"Invalid bootstrap server '{item}': need host:port"
            )
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise KafkaError("INVALID_REQUEST", "No bootstrap servers given")
    return out


@dataclass
class PartitionInfo:
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    offline_replicas: list[int]
    error_code: int = 0


@dataclass
class TopicInfo:
    name: str
    topic_id: Any
    is_internal: bool
    partitions: dict[int, PartitionInfo] = field(default_factory=dict)
    error_code: int = 0


class KafkaClient:
    """Routes requests to the right broker of a cluster found through bootstrap servers."""

    def __init__(
        self, bootstrap_servers: str, *, client_id: str = "kt", timeout_s: float = 30.0,
        tls: ClientTls | None = None, sasl: ClientSasl | None = None,
    ) -> None:  # fmt: skip
        self.client_id = client_id
        self.timeout_s = timeout_s
        self.tls = tls  # security.protocol=SSL or SASL_SSL: every connection starts TLS
        self.sasl = sasl  # SASL_PLAINTEXT or SASL_SSL: every connection authenticates
        self.brokers: dict[int, tuple[str, int, str | None]] = {}
        self.controller_id = -1
        self.cluster_id: str | None = None
        self._connections: dict[int, BrokerConnection] = {}
        self._bootstrap_servers = parse_bootstrap(bootstrap_servers)
        self._bootstrap = self._connect_bootstrap(self._bootstrap_servers)

    def _connect_bootstrap(self, servers: list[tuple[str, int]]) -> BrokerConnection:
        errors = []
        for host, port in servers:
            try:
                return self.open_connection(host, port)
            except KafkaError as e:
                errors.append(str(e))
        raise KafkaError("NETWORK_EXCEPTION", "; ".join(errors))

    # -- metadata ------------------------------------------------------------------------

    def metadata(
        self, topics: list[str] | None = None, allow_auto_create: bool = False
    ) -> dict[str, TopicInfo]:
        """Refresh brokers and controller; return the topics asked for (None = all)."""
        conn = self.any_connection()
        version = conn.version_for(ApiKey.METADATA)
        request_topics = None
        if topics is not None:
            request_topics = [m.MetadataRequest.MetadataRequestTopic(name=t) for t in topics]
        elif version == 0:
            request_topics = []
        response = conn.send(
            ApiKey.METADATA,
            m.MetadataRequest(topics=request_topics, allow_auto_topic_creation=allow_auto_create),
        )
        self.brokers = {b.node_id: (b.host, b.port, b.rack) for b in response.brokers}
        self.controller_id = response.controller_id
        self.cluster_id = response.cluster_id
        out: dict[str, TopicInfo] = {}
        for t in response.topics:
            info = TopicInfo(
                t.name, getattr(t, "topic_id", None), t.is_internal, error_code=t.error_code
            )
            for p in t.partitions:
                info.partitions[p.partition_index] = PartitionInfo(
                    t.name, p.partition_index, p.leader_id, p.leader_epoch,
                    list(p.replica_nodes), list(p.isr_nodes), list(p.offline_replicas),
                    p.error_code,
                )  # fmt: skip
            out[t.name] = info
        return out

    def create_missing_topics(self, topics: list[str], timeout_s: float = 10.0) -> None:
        """Ask for `topics` with allow_auto_topic_creation, as the Java consumer does with
        allow.auto.create.topics (on by default), and wait until each has a leader for
        every partition; a broker that does not create topics answers at once."""
        deadline = time.monotonic() + timeout_s
        while True:
            found = self.metadata(topics, allow_auto_create=True)
            pending = [
                t for t in topics
                if (info := found.get(t)) is None
                or info.error_code == CREATING
                or any(p.leader < 0 for p in info.partitions.values())
            ]  # fmt: skip
            if not pending or time.monotonic() > deadline:
                return
            time.sleep(0.05)

    # -- connections ---------------------------------------------------------------------

    def find_coordinator(self, key: str, key_type: int) -> tuple[int, int, str, int]:
        """One FindCoordinator for a group (key type 0) or a transactional id (1): (error
        code, broker id, host, port), the broker learned when found."""
        response = self.any_connection().send(ApiKey.FIND_COORDINATOR, m.FindCoordinatorRequest(
            key=key, key_type=key_type, coordinator_keys=[key]
        ))  # fmt: skip
        if response.coordinators:  # v4+
            c = response.coordinators[0]
            code, node, host, port = c.error_code, c.node_id, c.host, c.port
        else:
            code, node, host, port = (response.error_code, response.node_id, response.host,
                                      response.port)  # fmt: skip
        if code == 0:
            self.brokers.setdefault(node, (host, port, None))
        return code, node, host, port

    def any_connection(self) -> BrokerConnection:
        """A live connection to some broker: the bootstrap one, or, once its broker went
        away, a new one to any broker known (then the bootstrap servers again)."""
        if self._bootstrap.closed:
            known = [(host, port) for host, port, _ in self.brokers.values()]
            self._bootstrap = self._connect_bootstrap(known + self._bootstrap_servers)
        return self._bootstrap

    def connection(self, broker_id: int) -> BrokerConnection:
        conn = self._connections.get(broker_id)
        if conn is not None and conn.closed:  # its broker went away: connect again
            del self._connections[broker_id]
            conn = None
        if conn is None:
            if broker_id not in self.brokers:
                self.metadata([])
            if broker_id not in self.brokers:
                raise KafkaError("BROKER_NOT_AVAILABLE", f"Broker {broker_id} is not available")
            host, port, _ = self.brokers[broker_id]
            conn = self.open_connection(host, port)
            self._connections[broker_id] = conn
        return conn

    def open_connection(self, host: str, port: int) -> BrokerConnection:
        """A new connection of this client's (its id, timeout and TLS) to one broker."""
        return BrokerConnection(host, port, client_id=self.client_id, timeout_s=self.timeout_s,
                                tls=self.tls, sasl=self.sasl)  # fmt: skip

    def retrying(self, call: Callable[[], T], timeout_s: float = API_TIMEOUT_S) -> T:
        """`call()`, again after each retriable KafkaError (no broker answered, a moved
        controller or leader), with what it knew of the cluster refreshed, until
        `timeout_s` (Kafka's admin client retries so until default.api.timeout.ms): a
        tool asked while the controller fails over waits for the new one."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                return call()
            except KafkaError as e:
                if not e.retriable or time.monotonic() + RETRY_BACKOFF_S > deadline:
                    raise
            time.sleep(RETRY_BACKOFF_S)
            self.controller_id = -1
            try:
                self.metadata([])
            except KafkaError as e:
                if not e.retriable:
                    raise

    def send_to_controller(self, api_key: ApiKey, request: Any) -> Any:
        """A request only the controller answers, through a controller fail-over: a
        refused connection or NOT_CONTROLLER (the whole request's) asks the new one."""

        def send() -> Any:
            response = self.controller().send(api_key, request)
            if getattr(response, "error_code", 0) == NOT_CONTROLLER:
                raise KafkaError(NOT_CONTROLLER, "the controller moved")
            return response

        return self.retrying(send)

    def controller(self) -> BrokerConnection:
        if self.controller_id < 0:
            self.metadata([])
        if self.controller_id < 0:
            raise KafkaError("NOT_CONTROLLER", "The cluster has no controller")
        return self.connection(self.controller_id)

    def close(self) -> None:
        for conn in self._connections.values():
            conn.close()
        self._bootstrap.close()

    def __enter__(self) -> KafkaClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
