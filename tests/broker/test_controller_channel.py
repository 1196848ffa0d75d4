"""The controller's request sender (ControllerChannel's per-broker sender) against a
broker it reaches over the wire: whatever fails is tried again, and the requests queued
behind it are delivered in order."""

from __future__ import annotations

import asyncio
import struct
from types import SimpleNamespace
from typing import Any

from kt.broker.controller.channel_manager import _RequestSender
from kt.inter_broker_protocol import InterBrokerProtocol
from kt.metadata.znodes import BrokerEndPoint
from kt.protocol import ApiKey, decode_request, encode_response
from kt.protocol import messages as m


class OneBroker:
    """A broker that answers ApiVersions and UpdateMetadata, and records what came."""

    def __init__(self) -> None:
        self.received: list[int] = []  # UpdateMetadata's controller epochs, in order

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                header, request = decode_request(await reader.readexactly(size))
            except asyncio.IncompleteReadError:
                return
            if header.api_key == ApiKey.API_VERSIONS:
                keys = [m.ApiVersionsResponse.ApiVersion(api_key=int(k), min_version=0,
                                                         max_version=8)
                        for k in (ApiKey.API_VERSIONS, ApiKey.UPDATE_METADATA)]  # fmt: skip
                body: Any = m.ApiVersionsResponse(error_code=0, api_keys=keys)
            else:
                self.received.append(request.controller_epoch)
                body = m.UpdateMetadataResponse(error_code=0)
            writer.write(encode_response(header, body))
            await writer.drain()


def test_a_sender_survives_what_is_not_a_kafka_error_and_delivers_in_order() -> None:
    async def scenario() -> list[int]:
        broker = OneBroker()
        server = await asyncio.start_server(broker.serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        lookups = iter([RuntimeError("the store is unreachable")])

        def listener_endpoint(broker_id: int, listener: str) -> BrokerEndPoint:
            failure = next(lookups, None)
            if failure is not None:
                raise failure
            return BrokerEndPoint("PLAINTEXT", "127.0.0.1", port)

        config = SimpleNamespace(
            listener_config=SimpleNamespace(controller_listener="PLAINTEXT"),
            inter_broker_protocol=InterBrokerProtocol("3.9"),
        )
        channel = SimpleNamespace(
            config=config, broker_id=0, security={}, listener_endpoint=listener_endpoint
        )
        sender = _RequestSender(channel, 1)  # type: ignore[arg-type]
        for epoch in (1, 2, 3):
            sender.enqueue(ApiKey.UPDATE_METADATA, m.UpdateMetadataRequest(controller_epoch=epoch))
        async with asyncio.timeout(30):
            while len(broker.received) < 3:
                await asyncio.sleep(0.05)
        sender.stop()
        server.close()
        return broker.received

    assert asyncio.run(scenario()) == [1, 2, 3]
