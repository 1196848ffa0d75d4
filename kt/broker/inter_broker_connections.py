"""This broker's connections to other brokers for one purpose (as one of Kafka's
inter-broker send threads keeps its NetworkClient): one per broker, opened on first use
to where that broker listens for brokers, with the inter-broker listener's security, and
named by the purpose in the client id the other broker logs."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from kt.client.async_connection import AsyncBrokerConnection
from kt.errors import KafkaError
from kt.protocol import ApiKey


class InterBrokerConnections:
    """Invariant: `connections` holds at most one connection per broker id; a closed one
    is replaced on the next use. `endpoint(broker_id)` says where a broker listens (None:
    not known, which fails with `unknown`, a Kafka error name)."""

    def __init__(
        self, client_id: str, endpoint: Callable[[int], tuple[str, int] | None],
        security: Mapping[str, Any], *, connect_timeout_s: float = 10.0,
        unknown: str = "BROKER_NOT_AVAILABLE",
    ) -> None:  # fmt: skip
        self.client_id, self.endpoint, self.security = client_id, endpoint, security
        self.connect_timeout_s, self.unknown = connect_timeout_s, unknown
        self.connections: dict[int, AsyncBrokerConnection] = {}

    async def connection(self, broker_id: int) -> AsyncBrokerConnection:
        connection = self.connections.get(broker_id)
        if connection is not None and not connection.closed:
            return connection
        endpoint = self.endpoint(broker_id)
        if endpoint is None:
            raise KafkaError(self.unknown, f"broker {broker_id} is not known")
        connection = self.connections[broker_id] = await AsyncBrokerConnection.connect(
            *endpoint, client_id=self.client_id, timeout_s=self.connect_timeout_s,
            **self.security,
        )  # fmt: skip
        return connection

    async def send(
        self, broker_id: int, api: ApiKey, request: Any, timeout_s: float,
        version: int | None = None,
    ) -> Any:  # fmt: skip
        """The broker's answer (at `version`, else the highest both speak);
        REQUEST_TIMED_OUT (the connection closed, the next send opens another) when none
        comes within `timeout_s`."""
        connection = await self.connection(broker_id)
        try:
            async with asyncio.timeout(timeout_s):  # not wait_for: Python 3.11
                return await connection.send(api, request, version)
        except TimeoutError:
            connection.close()
            raise KafkaError("REQUEST_TIMED_OUT", f"broker {broker_id} did not answer") from None

    def close(self, broker_id: int | None = None) -> None:
        """Close the connection to one broker, or all of them."""
        ids = list(self.connections) if broker_id is None else [broker_id]
        for connection in filter(None, (self.connections.pop(i, None) for i in ids)):
            connection.close()
