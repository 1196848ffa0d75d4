"""The broker's network layer: accept connections, frame requests, answer in order.

Kafka's SocketServer in one asyncio event loop. Per connection:
- requests are read ahead as they arrive (clients pipeline them), split into frames by
  the sans-io `FrameReader`, and handled one at a time: like Kafka's muted channel, the
  next request of a connection starts only after the previous response was queued, so
  responses go out in request order;
- a response is a list of parts: bytes are written to the transport, file slices of
  segments go out with sendfile (zero-copy Fetch);
- a malformed frame closes that connection and is logged; nothing else happens.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from kt.errors import ProtocolError
from kt.protocol import FrameReader

log = logging.getLogger(__name__)

READ_CHUNK = 256 * 1024


@dataclass
class RequestContext:
    """Who sent a request: handlers use it for client ids, hosts and quotas."""

    connection_id: int
    client_host: str
    client_port: int
    listener: str = "PLAINTEXT"


# A handler takes a frame and the context and returns the response parts, or None when
# the request gets no response (Produce with acks=0).
RequestHandler = Callable[[memoryview, RequestContext], Awaitable["list[object] | None"]]


@dataclass
class SocketServer:
    """Listens on one endpoint and feeds every request frame to `handler`."""

    host: str
    port: int
    handler: RequestHandler
    max_request_bytes: int = 104857600
    send_buffer_bytes: int = 102400
    receive_buffer_bytes: int = 102400
    _server: asyncio.base_events.Server | None = field(default=None, init=False)
    _connections: set[asyncio.Task] = field(default_factory=set, init=False)
    _next_id: int = field(default=0, init=False)

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._serve, self.host, self.port, reuse_address=True, limit=READ_CHUNK
        )
        self.port = self._server.sockets[0].getsockname()[1]

    @property
    def bound_port(self) -> int:
        return self.port

    async def stop(self) -> None:
        """Stop accepting, let in-flight requests finish, then close every connection."""
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        self._next_id += 1
        peer = writer.get_extra_info("peername") or ("?", 0)
        ctx = RequestContext(self._next_id, str(peer[0]), int(peer[1]))
        sock = writer.get_extra_info("socket")
        if sock is not None:
            self._tune(sock)
        try:
            await self._connection_loop(reader, writer, ctx)
        except ProtocolError as e:
            log.warning("closing connection from %s:%s: %s", ctx.client_host, ctx.client_port, e)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("unexpected error on connection from %s", ctx.client_host)
        finally:
            self._connections.discard(task)
            writer.close()

    def _tune(self, sock: socket.socket) -> None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.send_buffer_bytes > 0:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.send_buffer_bytes)
        if self.receive_buffer_bytes > 0:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.receive_buffer_bytes)

    async def _connection_loop(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, ctx: RequestContext
    ) -> None:
        frames = FrameReader(self.max_request_bytes)
        loop = asyncio.get_running_loop()
        while True:
            data = await reader.read(READ_CHUNK)
            if not data:
                return
            for frame in frames.feed(data):
                parts = await self.handler(frame, ctx)
                if parts:
                    await write_parts(loop, writer, parts)
            frames.raise_pending()


async def write_parts(
    loop: asyncio.AbstractEventLoop, writer: asyncio.StreamWriter, parts: list[object]
) -> None:
    """Write a response: bytes as they are, file slices with sendfile (zero copy)."""
    pending: list[bytes] = []
    for part in parts:
        if isinstance(part, bytes | bytearray | memoryview):
            pending.append(part)  # type: ignore[arg-type]
            continue
        if pending:
            writer.writelines(pending)
            pending = []
        await writer.drain()
        await send_file_slice(loop, writer, part)
    if pending:
        writer.writelines(pending)
    await writer.drain()


async def send_file_slice(
    loop: asyncio.AbstractEventLoop, writer: asyncio.StreamWriter, part: object
) -> None:
    """Send a FileSlice (file, position, size) with os.sendfile through the transport.

    If the segment shrank underneath (a truncation raced the read), pad with zeros so
    the frame keeps its announced size: the client drops the partial batch it sees.
    """
    file = part.file  # type: ignore[attr-defined]
    position = part.position  # type: ignore[attr-defined]
    size = len(part)  # type: ignore[arg-type]
    sent = await loop.sendfile(writer.transport, file, position, size, fallback=True)
    if sent < size:
        writer.write(bytes(size - sent))
