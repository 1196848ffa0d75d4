"""The broker's network layer: accept connections, frame requests, answer in order.

Kafka's SocketServer on the asyncio event loop, driving the loop's selector directly
(add_reader/add_writer on non-blocking sockets) the way Kafka's Processor drives its NIO
selector. Per connection, a KafkaChannel:
- requests are read ahead as they arrive (clients pipeline them), split into frames by
  the sans-io `FrameReader`, and handled one at a time by the channel's task: like
  Kafka's muted channel, the next request starts only after the previous response went
  to the socket, so responses go out in request order; reading pauses while more than
  `MAX_QUEUED_BYTES` of requests wait;
- a response is a list of parts: bytes go out with send, file slices of segments with
  os.sendfile (zero copy), written at once for as long as the socket takes them. Only a
  full socket makes the channel wait, and each writable event continues the response
  in a plain callback: no task switch and no selector change per chunk (asyncio's
  loop.sendfile takes several loop iterations for every chunk, and a Fetch response of
  1 MiB is several chunks through a 100 KiB socket.send.buffer.bytes);
- a malformed frame closes that connection and is logged; nothing else happens;
- a connection with no traffic either way for `connections.max.idle.ms` is closed, as
  Kafka's Selector closes idle connections (a half-sent request does not count as
  traffic once its bytes stop coming); one with a request being handled is not idle;
- with `queued.max.request.bytes` set, the bytes read are held from one MemoryPool per
  listener until their request is answered, and while it is spent no connection starts
  reading a new request (one begun is read to its end).

On an SSL listener the accepted socket is wrapped in the listener's TLS context and the
handshake runs on the same readable/writable callbacks before the first request is read;
a failed handshake closes the connection with Kafka's log line. Reads then drain every
TLS record the socket holds, and a file slice goes out read from the file in chunks and
written through TLS (no sendfile under encryption).

The listener is accepted from in a reader callback that takes every pending connection
until EAGAIN, as Kafka's Acceptor does with the selector's keys: a burst of connects
never waits in the `socket.listen.backlog.size` queue for a loop iteration per
connection. Out of descriptors (EMFILE), accepting pauses a moment and is logged.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from kt.broker.network.connection_limits import ConnectionLimits
from kt.broker.network.kafka_channel import MAX_QUEUED_BYTES, KafkaChannel  # noqa: F401 (re-exported)
from kt.broker.network.listener_sockets import BACKLOG, bind_listeners
from kt.broker.network.memory_pool import MemoryPool
from kt.broker.network.request_log import request_completed, timed
from kt.errors import ProtocolError
from kt.metrics.request_metrics import REMOTE_WAIT, RemoteWait, RequestMetrics

log = logging.getLogger(__name__)

ACCEPT_PAUSE_S = 0.1  # after an accept failed for want of descriptors


@dataclass
class RequestContext:
    """Who sent a request: handlers use it for client ids, hosts and quotas."""

    connection_id: int
    client_host: str
    client_port: int
    listener: str = "PLAINTEXT"
    security_protocol: str = "PLAINTEXT"
    principal: str = "User:ANONYMOUS"
    throttle_ms: int = 0  # set by a handler whose answer is throttled (a quota)
    # The request being handled, as KafkaApis decoded it (for its RequestMetrics).
    api_key: int = -1
    api_version: int = 0
    correlation_id: int = 0
    client_id: str = ""
    from_follower: bool = False  # a Fetch with a replica id (FetchFollower)

    @property
    def connection_key(self) -> str:
        """The connection's name, unique in the broker (listeners count their own)."""
        return f"{self.listener}-{self.connection_id}"

    @property
    def user(self) -> str:
        """The principal's name, as user quotas name it."""
        return self.principal.partition(":")[2]


# A handler takes a frame and the context and returns the response parts, or None when
# the request gets no response (Produce with acks=0).
RequestHandler = Callable[[memoryview, RequestContext], Awaitable["list[object] | None"]]


@dataclass
class SocketServer:
    """Listens on one endpoint and feeds every request frame to `handler`; each request's
    context names the listener it came in on (Metadata answers with that listener's
    endpoints)."""

    host: str
    port: int
    handler: RequestHandler
    listener_name: str = "PLAINTEXT"
    max_request_bytes: int = 104857600
    send_buffer_bytes: int = 102400
    receive_buffer_bytes: int = 102400
    connections_max_idle_ms: int = 600000
    backlog: int = BACKLOG
    memory_pool: MemoryPool = field(default_factory=lambda: MemoryPool(-1))
    security_protocol: str = "PLAINTEXT"
    tls: ssl.SSLContext | None = None  # the listener's context (SSL, SASL_SSL)
    # A SASL listener's: a new SaslServerAuthenticator for each connection.
    authenticator: Callable[[], Any] | None = None
    # ConnectionQuotas.record: how long to hold a new connection from an IP before closing
    # it unserved (0: serve it).
    connection_quota: Callable[[str], int] | None = None
    # The broker's ConnectionLimits (max.connections, .per.ip, the creation rate), shared
    # by its listeners.
    limits: ConnectionLimits | None = None
    # connection.failed.authentication.delay.ms: a connection whose authentication failed
    # is answered and closed this long after the failure (Kafka's delayed close), so that a
    # client with wrong credentials cannot make the broker spin.
    failed_authentication_delay_ms: int = 0
    # sasl.server.max.receive.size: the largest frame a SASL listener reads before the
    # connection is authenticated (SaslServerAuthenticator's bound), against a client
    # that is nobody yet making the broker buffer socket.request.max.bytes.
    sasl_max_receive_bytes: int = 524288
    request_metrics: RequestMetrics | None = None  # when metrics.listeners serves them
    # Called once a connection is closed (Kafka's ConnectionDisconnectListener).
    on_disconnect: Callable[[RequestContext], None] | None = None
    _loop: asyncio.AbstractEventLoop | None = field(default=None, init=False)
    _listeners: list[socket.socket] = field(default_factory=list, init=False)
    _idle_reaper: asyncio.Task | None = field(default=None, init=False)
    _connections: dict[asyncio.Task, KafkaChannel] = field(default_factory=dict, init=False)
    _peer_ips: dict[asyncio.Task, str] = field(default_factory=dict, init=False)
    _next_id: int = field(default=0, init=False)

    async def start(self) -> None:
        self._loop = loop = asyncio.get_running_loop()
        self._listeners = bind_listeners(self.host, self.port, self.backlog)
        for listener in self._listeners:  # accepted sockets inherit these options
            self._tune(listener)
        self.port = self._listeners[0].getsockname()[1]
        for listener in self._listeners:
            loop.add_reader(listener.fileno(), self._accept, listener)
        self._idle_reaper = loop.create_task(self._close_idle_connections())

    @property
    def bound_port(self) -> int:
        return self.port

    @property
    def connection_count(self) -> int:
        return len(self._connections)

    async def stop(self) -> None:
        """Stop accepting, then end every connection (a request being handled is cancelled).
        The connections it ends are not reported (on_disconnect): the broker is going, and
        what it kept for them goes with it."""
        assert self._loop is not None
        self.on_disconnect = None
        for sock in self._listeners:
            self._loop.remove_reader(sock.fileno())
            sock.close()
        if self._idle_reaper is not None:
            self._idle_reaper.cancel()
            await asyncio.gather(self._idle_reaper, return_exceptions=True)
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)

    def _accept(self, listener: socket.socket) -> None:
        """Accept every pending connection (the listener is readable): all of them first,
        which empties the kernel's queue at once, then a channel for each. The broker's
        connection limits may stop the accepting early (max.connections, the creation
        rate): the rest wait in the backlog."""
        loop = self._loop
        assert loop is not None
        accepted = []
        limits = self.limits
        while True:
            if limits is not None and limits.at_max_connections(self.listener_name):
                self._pause_until_a_slot_frees(listener)
                break
            try:
                accepted.append(listener.accept())
            except (BlockingIOError, InterruptedError):
                break
            except OSError as e:
                # Out of descriptors (EMFILE, ENFILE, ENOBUFS), or a connection reset
                # while it was queued: log it, and let the next connections be tried
                # after a pause rather than spin on a listener that stays readable.
                log.warning("accept failed on %s: %s", listener.getsockname(), e)
                if e.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    loop.remove_reader(listener.fileno())
                    loop.call_later(ACCEPT_PAUSE_S, self._resume_accepting, listener)
                    break
                continue
            if limits is not None and (delay := limits.creation_delay_s(self.listener_name)):
                loop.remove_reader(listener.fileno())
                loop.call_later(delay, self._resume_accepting, listener)
                break
        for sock, peer in accepted:
            self._start_channel(sock, peer)

    def _start_channel(self, sock: socket.socket, peer: tuple) -> None:
        loop = self._loop
        assert loop is not None
        ip = str(peer[0])
        if self.connection_quota is not None and (held := self.connection_quota(ip)):
            log.info("Throttling connection from /%s for %d ms (connection_creation_rate)",
                     ip, held)  # fmt: skip
            loop.call_later(held / 1000, sock.close)
            return
        if self.limits is not None and not self.limits.admit(ip, self.listener_name):
            sock.close()
            return
        sock.setblocking(False)
        self._next_id += 1
        ctx = RequestContext(self._next_id, ip, int(peer[1]), self.listener_name,
                             self.security_protocol)  # fmt: skip
        first_frames = self.max_request_bytes  # before authentication, on a SASL listener:
        if self.authenticator is not None:
            first_frames = min(self.sasl_max_receive_bytes, self.max_request_bytes)
        try:
            channel = KafkaChannel(loop, sock, first_frames, self.memory_pool,
                                   self.tls)  # fmt: skip
        except OSError as e:  # the peer went before TLS could start
            log.info("connection from %s:%s closed: %s", ctx.client_host, ctx.client_port, e)
            sock.close()
            if self.limits is not None:
                self.limits.release(ip, self.listener_name)
            return
        task = loop.create_task(self._serve(channel, ctx))
        self._connections[task] = channel
        self._peer_ips[task] = ip
        task.add_done_callback(self._forget)

    def _forget(self, task: asyncio.Task) -> None:
        self._connections.pop(task, None)
        ip = self._peer_ips.pop(task, None)
        if ip is not None and self.limits is not None:
            self.limits.release(ip, self.listener_name)

    def _pause_until_a_slot_frees(self, listener: socket.socket) -> None:
        """max.connections reached: stop reading the listener until a connection closes."""
        assert self._loop is not None and self.limits is not None
        self._loop.remove_reader(listener.fileno())
        limits = self.limits

        def resume() -> None:
            limits.on_slot_freed.remove(resume)
            if self._loop is not None:
                self._loop.call_soon(self._resume_accepting, listener)

        limits.on_slot_freed.append(resume)

    def _resume_accepting(self, listener: socket.socket) -> None:
        if listener.fileno() >= 0 and self._loop is not None:
            self._loop.add_reader(listener.fileno(), self._accept, listener)
            self._accept(listener)

    async def _close_idle_connections(self) -> None:
        """Close the connections without traffic for connections.max.idle.ms (Selector's
        idle expiry), looking a few times per idle period and at least once a second."""
        idle_s = self.connections_max_idle_ms / 1000
        while True:
            await asyncio.sleep(min(max(idle_s / 4, 0.01), 1.0))
            expired_before = time.monotonic() - idle_s
            for task, channel in list(self._connections.items()):
                if channel.last_active < expired_before and not channel.busy:
                    log.debug("closing idle connection %s", channel)
                    task.cancel()

    async def _authenticate(
        self, auth: Any, channel: KafkaChannel, frame: memoryview, ctx: RequestContext
    ) -> bool:
        """One request of a SASL exchange; False when the connection must close."""
        from kt.security.sasl_authenticator import AuthenticationFailed

        try:
            parts = await auth.handle(frame, ctx)
        except AuthenticationFailed as e:
            log.info("Failed authentication with /%s (%s)", ctx.client_host, e)
            # Kafka answers the failure only when its delayed close comes
            # (KafkaChannel.completeCloseOnAuthenticationFailure): the client learns of it
            # connection.failed.authentication.delay.ms later, and retries that much slower.
            await asyncio.sleep(self.failed_authentication_delay_ms / 1000)
            if e.parts and (sent := channel.send(e.parts)) is not None:
                await sent
            return False
        if auth.complete:
            ctx.principal = auth.principal
            channel.frames_up_to(self.max_request_bytes)
        if parts and (sent := channel.send(parts)) is not None:
            await sent
        channel.busy = False
        channel.release(frame)
        return True

    def _tune(self, sock: socket.socket) -> None:
        """TCP_NODELAY and the buffer sizes (set on the listener, before any connection
        asks: the receive buffer decides the window scale offered in the handshake)."""
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.send_buffer_bytes > 0:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.send_buffer_bytes)
        if self.receive_buffer_bytes > 0:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.receive_buffer_bytes)

    async def _serve(self, channel: KafkaChannel, ctx: RequestContext) -> None:
        auth = self.authenticator() if self.authenticator is not None else None
        remote = None
        if timed(self.request_metrics):
            remote = RemoteWait()  # this task's requests are timed, their waits counted
            REMOTE_WAIT.set(remote)
        try:
            while (frame := await channel.next_request()) is not None:
                channel.busy = True
                if channel.peer_principal is not None and auth is None:
                    ctx.principal = channel.peer_principal
                if auth is not None and (not auth.complete or auth.starts_reauthentication(frame)):
                    if not await self._authenticate(auth, channel, frame, ctx):
                        break
                    continue
                if auth is not None and auth.session_expired():
                    log.info("Closing connection from /%s: its SASL session expired "
                             "(connections.max.reauth.ms)", ctx.client_host)  # fmt: skip
                    break
                ctx.throttle_ms = 0
                if remote is None:
                    parts = await self.handler(frame, ctx)
                    if parts and (sent := channel.send(parts)) is not None:
                        await sent
                else:
                    await self._handle_timed(channel, frame, ctx, remote)
                if ctx.throttle_ms > 0:  # muted: the next request waits (Kafka's throttling)
                    await asyncio.sleep(ctx.throttle_ms / 1000)
                channel.busy = False
                channel.release(frame)
        except ProtocolError as e:
            log.warning("closing connection from %s:%s: %s", ctx.client_host, ctx.client_port, e)
        except ssl.SSLError as e:
            log.info("Failed authentication with /%s (SSL handshake failed): %s",
                     ctx.client_host, e.reason or e)  # fmt: skip
            await asyncio.sleep(self.failed_authentication_delay_ms / 1000)
        except (ConnectionError, asyncio.CancelledError):
            pass
        except Exception:
            log.exception("unexpected error on connection from %s", ctx.client_host)
        finally:
            channel.close()
            if self.on_disconnect is not None:
                self.on_disconnect(ctx)

    async def _handle_timed(
        self, channel: KafkaChannel, frame: memoryview, ctx: RequestContext, remote: RemoteWait
    ) -> None:
        """Handle and answer one request, recording its RequestMetrics."""
        remote.seconds = 0.0
        ctx.api_key = -1
        start = time.monotonic()
        parts = await self.handler(frame, ctx)
        handled = time.monotonic()
        if parts and (sent := channel.send(parts)) is not None:
            await sent
        done = time.monotonic()
        if ctx.api_key < 0:
            return  # not decoded (an unsupported version)
        received = channel.received_at
        times = (start - received, handled - start - remote.seconds, remote.seconds,
                 ctx.throttle_ms / 1000, 0.0, done - handled, done - received)  # fmt: skip
        request_completed(self.request_metrics, f"{self.host}:{self.port}", ctx, len(frame),
                          times)  # fmt: skip
