"""KafkaServer: one broker's life cycle, from start-up to a clean shutdown.

Start-up order (KafkaServer.startup): lock and recover the log dirs, join the metadata
store (register /brokers/ids/<id>), start the replica manager and request handlers,
elect a controller, open the listener, then say "ready". Shutdown runs it backwards:
stop accepting, let in-flight requests finish, resign, flush, write the checkpoints and
the clean-shutdown marker, close the store session.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kt.broker.admin.admin_manager import AdminManager
from kt.broker.admin.client_quotas import ClientQuotaAdmin
from kt.broker.admin.configs import ConfigAdmin
from kt.broker.admin.scram_credentials import ScramCredentialAdmin
from kt.broker.api.kafka_apis import KafkaApis
from kt.broker.background_task import BackgroundTask, broker_tasks
from kt.broker.broker_services import BrokerServices
from kt.broker.broker_to_controller import BrokerToControllerChannel
from kt.broker.config_repository import ConfigRepository
from kt.broker.controlled_shutdown import ControlledShutdown
from kt.broker.controller.channel_manager import (
    ControllerChannel,
    LocalBroker,
)
from kt.broker.controller.kafka_controller import KafkaController
from kt.broker.coordinators import (
    create_consumer_group_coordinator,
    create_group_coordinator,
    create_group_coordinator_service,
    create_share_group_parts,
    create_streams_group_coordinator,
    create_transaction_coordinator,
)
from kt.broker.dynamic_config import DynamicConfigManager
from kt.broker.group.classic_protocol_members import ClassicProtocolMembers
from kt.broker.meta_properties import check_meta_properties
from kt.broker.metadata_cache import MetadataCache
from kt.broker.metrics.broker_metrics import register_broker_metrics, register_controller_metrics
from kt.broker.metrics.kafka_exporter import KafkaExporterSeries
from kt.broker.metrics.kafka_exporter import rows as kafka_exporter_rows
from kt.broker.metrics.metrics_servers import start_metrics_servers
from kt.broker.network.connection_limits import ConnectionLimits
from kt.broker.network.memory_pool import MemoryPool
from kt.broker.network.socket_server import SocketServer
from kt.broker.producer_id_manager import ProducerIdManager
from kt.broker.quota_manager import FETCH, PRODUCE, REQUEST, ClientQuotaManager, ConnectionQuotas
from kt.broker.replication.alter_partition_manager import AlterPartitionManager
from kt.broker.replication.controller_requests import ControllerRequests
from kt.broker.replication.replica_fetcher import FetcherConfig
from kt.broker.replication.replica_manager import ReplicaManager
from kt.broker.server_security import ServerSecurity
from kt.broker.store_executor import StoreExecutor
from kt.broker.store_session import StoreSession
from kt.config import KafkaConfig, LogConfig
from kt.metadata.kafka_zk_client import KafkaZkClient
from kt.metrics.broker_topic_stats import BrokerTopicStats
from kt.metrics.http_server import MetricsHttpServer
from kt.metrics.registry import MetricsRegistry
from kt.protocol import ApiKey
from kt.storage.log_dir_failure_channel import LogDirFailureChannel
from kt.storage.log_manager import LogManager

log = logging.getLogger(__name__)


@dataclass
class KafkaServer(ServerSecurity, ControlledShutdown, StoreSession):
    """One broker. `store` is a kt.metadata store shared by the brokers of one process."""

    config: KafkaConfig
    store: Any
    started_at: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.broker_id = self.config.broker_id
        self.log_manager: LogManager | None = None
        self.replica_manager: ReplicaManager | None = None
        self.zk: KafkaZkClient | None = None
        self.metadata_cache = MetadataCache(self.broker_id)
        self.socket_servers: list[SocketServer] = []  # one per listener, in config order
        self.controller: KafkaController | None = None
        self.apis: KafkaApis | None = None
        self.alter_partition_channel: BrokerToControllerChannel | None = None
        self.services: BrokerServices | None = None  # once every part is built
        self.kafka_exporter_series: KafkaExporterSeries | None = None
        self.authorizer: Any = None  # AclAuthorizer when authorizer.class.name says so
        window_ms = self.config["quota.window.size.seconds"] * 1000
        samples = self.config["quota.window.num"]
        self.produce_quota = ClientQuotaManager(PRODUCE, window_ms, samples)
        self.fetch_quota = ClientQuotaManager(FETCH, window_ms, samples)
        self.request_quota = ClientQuotaManager(REQUEST, window_ms, samples, window_ms)
        self.connection_quotas = ConnectionQuotas(window_ms, samples)
        self.metrics = MetricsRegistry()
        self.topic_stats = BrokerTopicStats(self.metrics)
        self.metrics_servers: list[MetricsHttpServer] = []
        self._tasks: list[BackgroundTask] = []
        self._stopped = asyncio.Event()
        # Set once the broker's metadata names itself and a controller: clients' requests
        # wait for it (the controller's and other brokers' do not).
        self.serving = asyncio.Event()
        self.failure_channel = LogDirFailureChannel()
        # Why the broker stopped itself (every log dir failed); None while it runs.
        self.halt_reason: str | None = None
        self._halt_task: asyncio.Task | None = None
        self._shutting_down = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self._init_store_session()
        self.controller_requests: ControllerRequests | None = None
        self.local_broker: LocalBroker | None = None  # as its process's controllers reach it
        # The broker's metadata store calls (ZooKeeper reads and writes for admin requests,
        # configs, registration) run there, never on the event loop that serves clients.
        self.store_executor = StoreExecutor(self.broker_id)
        self.store_call = self.store_executor.call

    @property
    def controller_epoch_seen(self) -> int:
        """The newest controller epoch this broker has heard from."""
        return self.controller_requests.controller_epoch_seen if self.controller_requests else -1

    @property
    def broker_epoch(self) -> int:
        """The czxid of this broker's registration; -1 before it registers."""
        return self.controller_requests.broker_epoch if self.controller_requests else -1

    def topic_config(self, topic: str) -> LogConfig:
        """A topic's config as this broker knows it: read when the topic's first replica
        came here, and kept current by the config change notifications."""
        assert self.log_manager is not None
        return self.log_manager.config_for(topic)

    @property
    def socket_server(self) -> SocketServer:
        """The first listener's server."""
        return self.socket_servers[0]

    @property
    def port(self) -> int:
        """The port of the first listener (the one bound, when configured as 0)."""
        return self.socket_server.port

    @property
    def inter_broker_listener(self) -> str:
        return self.config.listener_config.inter_broker

    def _open_store(self) -> tuple[str, dict[str, LogConfig]]:
        """The store session, its top-level paths, the cluster id, every topic's config."""
        session = self.store.session(f"broker-{self.broker_id}")
        if hasattr(session, "request_latency"):  # ZooKeeper's (not the embedded store's)
            session.request_latency = self.metrics.histogram(
                "kafka.server", "ZooKeeperClientMetrics", "ZooKeeperRequestLatencyMs"
            )
        self.zk = KafkaZkClient(session)
        self.configs = ConfigRepository(
            self.zk, LogConfig.from_props(self.config.topic_defaults()), self.store_call
        )
        self.zk.create_top_level_paths()
        cluster_id = self.zk.get_or_create_cluster_id()
        read = self.configs.read_topic_config
        return cluster_id, {t: read(t) for t in self.zk.get_all_topics()}

    async def _create_share_state_topic(self) -> None:
        """__share_group_state, on the store threads (the share coordinator's first use)."""
        from kt.broker.internal_topics import create_internal_topic
        from kt.broker.share.share_coordinator_service import SHARE_GROUP_STATE_TOPIC

        await self.store_call(create_internal_topic, self.services, SHARE_GROUP_STATE_TOPIC)

    async def startup(self) -> None:
        """Build the broker's parts in dependency order, open the listeners, register in
        the store and take part in the controller's election; return once the broker
        serves clients."""
        cfg = self.config
        self.loop = asyncio.get_running_loop()
        cluster_id, topic_configs = await self.store_call(self._open_store)
        self.broker_id = check_meta_properties(cfg.log_dirs, self.broker_id, cluster_id)
        self.metadata_cache = MetadataCache(self.broker_id, cluster_id)
        # what the broker's own links to other brokers connect with (built before them)
        self.inter_broker_security = cfg.client_security(self.inter_broker_listener)
        self._build_replication(topic_configs)
        self.admin_manager = AdminManager(
            self.broker_id, cfg, self.zk, self.metadata_cache, self.configs.topic_defaults
        )
        self.group_coordinator = create_group_coordinator(
            cfg, self.metadata_cache, self.replica_manager
        )
        self.consumer_groups = create_consumer_group_coordinator(
            cfg, self.metadata_cache, self.group_coordinator
        )
        self.classic_members = ClassicProtocolMembers(self.consumer_groups)
        self.share = create_share_group_parts(
            cfg, self.broker_id, self.metadata_cache, self.replica_manager,
            self.group_coordinator.manager, self._create_share_state_topic,
            self._broker_endpoint, self.inter_broker_security, self.consumer_groups.group_configs,
        )  # fmt: skip
        self.streams_groups = create_streams_group_coordinator(
            cfg, self.metadata_cache, self.group_coordinator.manager,
            self.consumer_groups.group_configs,
        )  # fmt: skip
        self.group_service = create_group_coordinator_service(
            self.replica_manager, self.group_coordinator, self.consumer_groups, self.share.groups,
            self.streams_groups,
        )  # fmt: skip
        self.producer_id_manager = ProducerIdManager(self.broker_id, self.zk, self.store_call)
        self.txn_coordinator = create_transaction_coordinator(
            cfg, self.broker_id, self.metadata_cache, self.replica_manager,
            self.group_coordinator.manager, self.producer_id_manager, self._broker_endpoint,
            self.inter_broker_security,
        )  # fmt: skip
        self.authorizer = await self._start_authorizer()
        await self.reload_quotas()
        self.controller = self._build_controller()
        self.services = self._services()
        self.apis = KafkaApis(self.services)
        self._register_metrics()
        self.dynamic_config = DynamicConfigManager(
            self.broker_id, cfg, self.zk, self.store_executor, self.configs, self.log_manager,
            self.replica_manager, self.reload_quotas, self.consumer_groups.group_configs,
        )  # fmt: skip
        await self.dynamic_config.startup()
        self.replica_manager.reconfigure_throttles(
            *await self.store_call(self.configs.read_dynamic_broker_config, self.broker_id), cfg
        )
        await self._open_listeners()
        # Reached directly by its process's controller from now on, before the store names
        # it: a request queued for it over the wire meanwhile could arrive after a later,
        # direct one and undo it (a restarted broker kept a partition's old leader).
        ControllerChannel.register(self.local_broker)
        registration = await self.store_call(functools.partial(
            self.zk.register_broker, self.broker_id, self.advertised_endpoints, cfg["broker.rack"],
            wait_s=cfg["zookeeper.session.timeout.ms"] / 1000 + 2 if cfg["zookeeper.connect"]
            else 0.0,
        ))  # fmt: skip
        self.controller_requests.broker_epoch = registration.epoch
        self.local_broker.controller = self.controller
        await self.controller.startup()
        loop = asyncio.get_running_loop()
        self.zk.session.add_listener(
            lambda state: self._on_session_state(state, loop)  # on the store's thread
        )
        self._start_background_tasks()
        await self._wait_for_cluster_metadata()
        log.info("[KafkaServer id=%s] started", self.broker_id)

    def _build_replication(self, topic_configs: dict[str, LogConfig]) -> None:
        """The logs, the replica manager and its parts, and what the controller's requests
        do to them."""
        cfg = self.config
        self.alter_partition_channel = BrokerToControllerChannel(
            "alter-partition", self.broker_id, self.store, self.metadata_cache,
            self._broker_endpoint, self.inter_broker_security,
        )  # fmt: skip
        self.log_manager = LogManager(
            cfg.log_dirs, self.configs.topic_defaults, topic_configs,
            failure_channel=self.failure_channel,
        )  # fmt: skip
        self.replica_manager = ReplicaManager(
            self.broker_id,
            self.log_manager,
            self.topic_config,
            fetcher_config=FetcherConfig.from_broker_config(self.broker_id, cfg),
            broker_endpoint=self._broker_endpoint,
            alter_partition_manager=AlterPartitionManager(
                self.broker_id, lambda: self.broker_epoch, self._known_topic_id,
                self._send_to_controller,
            ),
            replica_lag_time_max_ms=cfg["replica.lag.time.max.ms"],
            topic_stats=self.topic_stats,
        )  # fmt: skip
        self.failure_channel.listeners += [
            self.replica_manager.handle_log_dir_failure,
            self._halt_if_no_log_dir_left,
        ]
        known_topics = self.log_manager.topic_configs
        self.controller_requests = ControllerRequests(
            self.metadata_cache, self.replica_manager,
            functools.partial(self.configs.load_topic_configs, known=known_topics),
        )  # fmt: skip

    def _build_controller(self) -> KafkaController:
        """This broker's controller (started once the broker is registered), with the
        channel that reaches the brokers, and this broker as its process's controllers
        reach it."""
        cfg = self.config
        self.controller_security = cfg.client_security(cfg.listener_config.controller_listener)
        self.local_broker = LocalBroker(
            self.broker_id, self.store, self.loop, self.controller_requests
        )
        channel = ControllerChannel(self.local_broker, self.zk, cfg, self.controller_security)
        controller = KafkaController(
            self.broker_id, self.zk, channel,
            auto_leader_rebalance=cfg["auto.leader.rebalance.enable"],
            imbalance_percentage=cfg["leader.imbalance.per.broker.percentage"],
            imbalance_check_interval_s=cfg["leader.imbalance.check.interval.seconds"],
        )  # fmt: skip
        register_controller_metrics(controller, self.metrics)
        return controller

    def _register_metrics(self) -> None:
        register_broker_metrics(
            self.metrics, self.services, self.socket_servers, lambda: self.broker_state
        )
        self.kafka_exporter_series = KafkaExporterSeries(
            self.services, self._broker_endpoint, self.inter_broker_security
        )
        self.metrics.named_gauges.append(lambda: kafka_exporter_rows(self.kafka_exporter_series))
        self.metrics.before_scrape.append(self.kafka_exporter_series.refresh)

    def _services(self) -> BrokerServices:
        return BrokerServices(
            config=self.config,
            broker_id=self.broker_id,
            metadata_cache=self.metadata_cache,
            log_manager=self.log_manager,
            replica_manager=self.replica_manager,
            controller_requests=self.controller_requests,
            controller=self.controller,
            group_coordinator=self.group_coordinator,
            consumer_groups=self.consumer_groups,
            classic_members=self.classic_members,
            share_groups=self.share.groups,
            share_partitions=self.share.partitions,
            share_sessions=self.share.sessions,
            share_coordinator=self.share.coordinator,
            share_offsets=self.share.offsets,
            streams_groups=self.streams_groups,
            txn_coordinator=self.txn_coordinator,
            producer_id_manager=self.producer_id_manager,
            admin_manager=self.admin_manager,
            config_admin=ConfigAdmin(
                self.broker_id, self.config, self.zk, self.metadata_cache, self.configs
            ),
            authorizer=self.authorizer,
            produce_quota=self.produce_quota,
            fetch_quota=self.fetch_quota,
            request_quota=self.request_quota,
            topic_stats=self.topic_stats,
            client_quotas=ClientQuotaAdmin(self.zk),
            scram_credentials=ScramCredentialAdmin(self.zk),
            store=self.store_executor,
            serving=self.serving,
        )

    async def _open_listeners(self) -> None:
        """One SocketServer per listener, in config order. Every TLS context is built
        before any listener binds: a bad key store stops the start."""
        cfg = self.config
        pool = MemoryPool(cfg["queued.max.request.bytes"])
        request_metrics = await start_metrics_servers(
            self.metrics_servers, cfg, self.broker_id, self.metrics, self.loop,
            lambda: not self._stopped.is_set(),
        )  # fmt: skip
        contexts = [cfg.server_tls(listener.listener_name) for listener in cfg.listeners]
        connection_limits = ConnectionLimits.from_config(cfg)
        for listener, tls in zip(cfg.listeners, contexts, strict=True):  # each with its name
            server = SocketServer(
                listener.host or "0.0.0.0",
                listener.port,
                self.apis.handle,
                listener_name=listener.listener_name,
                max_request_bytes=cfg["socket.request.max.bytes"],
                send_buffer_bytes=cfg["socket.send.buffer.bytes"],
                receive_buffer_bytes=cfg["socket.receive.buffer.bytes"],
                connections_max_idle_ms=cfg["connections.max.idle.ms"],
                backlog=cfg["socket.listen.backlog.size"],
                memory_pool=pool,
                security_protocol=listener.security_protocol,
                tls=tls,
                authenticator=self._sasl_authenticator(listener.listener_name),
                connection_quota=self.connection_quotas.record,
                limits=connection_limits,
                failed_authentication_delay_ms=cfg["connection.failed.authentication.delay.ms"],
                sasl_max_receive_bytes=cfg["sasl.server.max.receive.size"],
                request_metrics=request_metrics,
                on_disconnect=self.apis.connection_closed,
            )
            try:
                await server.start()
            except OSError as e:  # SocketServer's words, with the address
                raise OSError(e.errno, f"Socket server failed to bind to {listener.host}:"
                              f"{listener.port}: {e.strerror}.") from None  # fmt: skip
            self.socket_servers.append(server)

    @property
    def controller_started(self) -> bool:
        """Whether this broker's controller takes part in elections (it is built before
        the listeners open, and started once the broker is registered)."""
        return self.controller is not None and self.controller.started

    @property
    def broker_state(self) -> int:
        """Kafka's BrokerState: RUNNING (3), or SHUTTING_DOWN (7) once stopping."""
        return 7 if self._shutting_down else 3

    async def _wait_for_cluster_metadata(self, timeout_s: float = 10.0) -> None:
        """Serve clients and say "started" once the controller's UpdateMetadata names this
        broker, and a controller is known: before it, a Metadata answer names no broker
        and no controller, and a client that bootstraps from this broker (librdkafka's
        admin client) may wait minutes for its next look."""
        deadline = time.monotonic() + timeout_s
        cache = self.metadata_cache
        while self.broker_id not in cache.brokers or cache.controller_id < 0:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                log.warning("[KafkaServer id=%s] no word from a controller after %.0f s; "
                            "serving without it", self.broker_id, timeout_s)  # fmt: skip
                break
            await cache.wait_changed(remaining)
        self.serving.set()

    def _known_topic_id(self, topic: str) -> Any:
        """The topic's id, or None while this broker has not heard it."""
        topic_id = self.metadata_cache.topic_ids.get(topic)
        return None if topic_id is None or topic_id.int == 0 else topic_id

    async def _send_to_controller(self, build: Callable[[int], Any], version: int) -> Any:
        """AlterPartition to the controller this broker knows (the metadata cache's), built
        for the highest version both speak up to `version`; KafkaError when there is none
        to take it."""
        channel = self.alter_partition_channel
        controller_id = channel.controller_id()
        local = channel.local_controller(controller_id)
        if local is not None:
            return await local.alter_partition(build(version), version)
        return await channel.send(controller_id, ApiKey.ALTER_PARTITION, build, version)

    def _broker_endpoint(self, broker_id: int) -> tuple[str, int] | None:
        """Where a live broker listens for other brokers (inter.broker.listener.name): the
        metadata cache, or the last LeaderAndIsr that named it a leader."""
        broker = self.metadata_cache.alive_broker(broker_id)
        endpoint = broker.endpoint(self.inter_broker_listener) if broker is not None else None
        if endpoint is None:
            return self.controller_requests.leader_endpoints.get(broker_id)
        return endpoint.host, endpoint.port

    @property
    def advertised_endpoints(self) -> list[Any]:
        """The advertised listeners, port 0 replaced by the port its listener bound."""
        bound = {s.listener_name: s.port for s in self.socket_servers}
        return [
            e if e.port else dataclasses.replace(e, port=bound.get(e.listener_name, 0))
            for e in self.config.advertised_listeners
        ]

    def _start_background_tasks(self) -> None:
        self._tasks = broker_tasks(
            self.config, self.log_manager, self.replica_manager, self.group_service,
            self.txn_coordinator,
        )  # fmt: skip
        for task in self._tasks:
            task.start()

    def _halt_if_no_log_dir_left(self, failed_dir: str) -> None:
        """Every log dir failed: the broker stops (Kafka halts with exit status 1). It runs
        after the request that met the error has its answer, KAFKA_STORAGE_ERROR."""
        assert self.log_manager is not None
        if self.log_manager.live_log_dirs or self.halt_reason is not None:
            return
        self.halt_reason = (
            f"Shutdown broker because all log dirs in {', '.join(self.log_manager.log_dirs)} "
            "have failed"
        )
        log.critical("[KafkaServer id=%s] %s", self.broker_id, self.halt_reason)
        self._halt_task = asyncio.get_running_loop().create_task(self.shutdown(), name="halt")

    async def shutdown(self) -> None:
        if self._shutting_down:
            await self._stopped.wait()
            return
        self._shutting_down = True
        log.info("[KafkaServer id=%s] shutting down", self.broker_id)
        if self.halt_reason is None and not self.store_reachable:
            log.warning("[KafkaServer id=%s] the metadata store is unreachable: no controlled "
                        "shutdown (no controller can move leadership without it)",
                        self.broker_id)  # fmt: skip
        elif self.halt_reason is None:
            await self._unless_the_store_goes(self._controlled_shutdown(), "controlled shutdown")
        await self._stop(clean=True)
        log.info("[KafkaServer id=%s] shut down completed", self.broker_id)

    async def _stop(self, clean: bool) -> None:
        """Stop serving, then let go of the controller, the logs and the store session:
        `clean` resigns and flushes, checkpoints and marks the log dirs; otherwise (a
        crash) nothing more is written."""
        if self.local_broker is not None:
            ControllerChannel.forget(self.local_broker)
        for task in self._tasks:
            if task.task is not None:
                task.task.cancel()
        if self.replica_manager is not None and self.replica_manager.fetcher_manager:
            await self.replica_manager.fetcher_manager.shutdown()
        if self.replica_manager is not None and self.replica_manager.alter_partition_manager:
            self.replica_manager.alter_partition_manager.close()
        if self.alter_partition_channel is not None:
            self.alter_partition_channel.close()
        if self.replica_manager is not None and self.replica_manager.log_dir_mover:
            await self.replica_manager.log_dir_mover.shutdown()
        await self._stop_listeners()
        for metrics_server in self.metrics_servers:
            await asyncio.to_thread(metrics_server.close)
        self.metrics_servers = []
        if self.kafka_exporter_series is not None:
            self.kafka_exporter_series.close()
        if self.apis is not None:
            self.group_service.shutdown()
            self.share.partitions.shutdown()
            self.share.coordinator.shutdown()
            self.txn_coordinator.shutdown()
        store_away = self.zk is not None and not self.store_reachable
        if store_away:  # closing the session first fails the calls blocked on it at once
            await self._store_step(asyncio.to_thread(self.zk.close), "closing the store session")
        if self.controller is not None:
            await self._store_step(
                self.controller.shutdown() if clean and not store_away
                else self.controller.abandon(),
                "stopping the controller",
            )  # fmt: skip
        if self.log_manager is not None:
            if clean:
                self.log_manager.shutdown()
            else:
                self.log_manager.abandon()
        if self.zk is not None and not store_away:
            await self._store_step(asyncio.to_thread(self.zk.close), "closing the store session")
        self.store_executor.shutdown()
        self._stopped.set()

    async def _stop_listeners(self) -> None:
        for server in self.socket_servers:
            await server.stop()

    async def crash(self) -> None:
        """Stop as a broker killed with SIGKILL stops, for tests of a cluster in one
        process: connections drop, the store session ends (its ephemeral znodes go, so
        the controller sees the broker leave), and no log is flushed or checkpointed."""
        self._shutting_down = True
        log.info("[KafkaServer id=%s] crashing (test)", self.broker_id)
        await self._stop(clean=False)

    async def wait_stopped(self) -> None:
        await self._stopped.wait()
