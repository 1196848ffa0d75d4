"""A broker's requests to its controller (Kafka's BrokerToControllerChannelManager, and the
connection of KafkaServer.controlledShutdown): AlterPartition and ControlledShutdown go
to the controller the metadata cache names, directly when it runs in this process, else
over one connection kept to it, opened with the inter-broker listener's security."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kt.broker.controller.channel_manager import CONTROLLER_REQUEST_TIMEOUT_S, ControllerChannel
from kt.broker.inter_broker_connections import InterBrokerConnections
from kt.errors import KafkaError
from kt.protocol import ApiKey

if TYPE_CHECKING:
    from kt.broker.controller.kafka_controller import KafkaController
    from kt.broker.metadata_cache import MetadataCache


class BrokerToControllerChannel:
    """Invariant: at most one connection open, to the controller last asked (a new
    controller's replaces the old one's)."""

    def __init__(
        self, purpose: str, broker_id: int, store: Any, metadata_cache: MetadataCache,
        broker_endpoint: Callable[[int], tuple[str, int] | None], security: dict[str, Any],
    ) -> None:  # fmt: skip
        self.store = store  # the cluster's store: its brokers of this process are reached directly
        self.metadata_cache = metadata_cache
        self.connections = InterBrokerConnections(
            f"broker-{broker_id}-{purpose}", broker_endpoint, security, unknown="NOT_CONTROLLER"
        )

    def controller_id(self) -> int:
        """The controller the metadata cache names; NOT_CONTROLLER while there is none."""
        controller_id = self.metadata_cache.controller_id
        if controller_id < 0:
            raise KafkaError("NOT_CONTROLLER", "no controller known yet")
        return controller_id

    def local_controller(self, controller_id: int) -> KafkaController | None:
        """The controller `controller_id` if its broker runs in this process (and has one)."""
        local = ControllerChannel.local_broker(self.store, controller_id)
        return None if local is None else local.controller

    async def send(
        self, controller_id: int, api: ApiKey, build: Callable[[int], Any],
        version: int | None = None,
    ) -> Any:  # fmt: skip
        """`build(v)` sent to the controller at the highest version v both speak (up to
        `version`); its answer, or REQUEST_TIMED_OUT after controller.socket.timeout.ms."""
        for other in [b for b in self.connections.connections if b != controller_id]:
            self.connections.close(other)
        connection = await self.connections.connection(controller_id)
        highest = connection.version_for(api)
        version = highest if version is None else min(version, highest)
        return await self.connections.send(
            controller_id, api, build(version), CONTROLLER_REQUEST_TIMEOUT_S, version
        )

    def close(self) -> None:
        self.connections.close()
