"""KafkaChannel: one client connection of the broker's network layer (Kafka's KafkaChannel
and its transport): non-blocking reads framed into requests, a bounded read-ahead, answers
written in order (file slices with os.sendfile, or read and written through TLS), the TLS
handshake and the peer's certificate principal. The SocketServer
(kt/broker/network/socket_server.py) makes one per accepted connection."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import ssl
import time
from collections import deque
from typing import Any

from kt.broker.network.memory_pool import MemoryPool
from kt.errors import ProtocolError
from kt.protocol import FrameReader
from kt.security.principal_builder import ssl_principal

log = logging.getLogger(__name__)

READ_CHUNK = 256 * 1024
MAX_QUEUED_BYTES = 2 * READ_CHUNK  # read-ahead of requests not handled yet
TLS_FILE_CHUNK = 256 * 1024  # a file slice read for TLS at a time
_BYTES_LIKE = (bytes, bytearray, memoryview)
_WOULD_BLOCK = (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError)


class _FileRange:
    """What is left to send of a file slice."""

    __slots__ = ("fd", "position", "size", "chunk")

    def __init__(self, part: Any) -> None:
        self.fd: int = part.file.fileno()
        self.position: int = part.position
        self.size: int = len(part)
        self.chunk: memoryview | None = None  # read for TLS, not yet written


class KafkaChannel:
    """One client connection on the event loop's selector.

    Invariants: the socket is registered for reading unless reading ended or is paused
    (more than MAX_QUEUED_BYTES of requests wait); it is registered for writing only
    while a response is partly sent, and then `_sent` is the future of that response.
    """

    def __init__(
        self, loop: asyncio.AbstractEventLoop, sock: socket.socket, max_bytes: int,
        pool: MemoryPool | None = None, tls: ssl.SSLContext | None = None,
    ) -> None:  # fmt: skip
        self._loop = loop
        self._tls = tls is not None
        self._handshaking = self._tls
        self.peer_principal: str | None = None  # User:<certificate subject>, after TLS
        if tls is not None:
            sock = tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        self._pool = pool if pool is not None and pool.bounded else None
        self._held = 0  # bytes read and not yet released to the pool
        self._waiting_for_memory = False
        self._sock = sock
        self._fd = sock.fileno()
        self._frames = FrameReader(max_bytes)
        self._requests: deque[memoryview] = deque()
        self._received: deque[float] = deque()  # when each of _requests was read whole
        self.received_at = 0.0  # when the request next_request returned was read whole
        self._queued_bytes = 0
        self._reading = True
        self._end: BaseException | None = None  # why reading ended, once it has
        self._waiter: asyncio.Future[None] | None = None
        self._out: deque[memoryview | _FileRange] = deque()
        self._sent: asyncio.Future[None] | None = None
        self._closed = False
        self.last_active = time.monotonic()  # the last bytes in or out
        self.busy = False  # a request is being handled
        loop.add_reader(self._fd, self._on_readable)

    def frames_up_to(self, max_bytes: int) -> None:
        """Read frames of up to `max_bytes` from now on (authenticated: the listener's
        socket.request.max.bytes)."""
        self._frames.max_bytes = max_bytes

    # -- TLS --------------------------------------------------------------------------

    def _handshake(self) -> None:
        """Advance the TLS handshake; once done, read what already came."""
        sock = self._sock
        assert isinstance(sock, ssl.SSLSocket)
        try:
            sock.do_handshake()
        except ssl.SSLWantReadError:
            self._loop.remove_writer(self._fd)
            return
        except ssl.SSLWantWriteError:
            self._loop.add_writer(self._fd, self._handshake)
            return
        except (ssl.SSLError, OSError) as e:
            self._loop.remove_writer(self._fd)
            return self._stop_reading(e if isinstance(e, ssl.SSLError) else ConnectionError(e))
        self._handshaking = False
        self._loop.remove_writer(self._fd)
        self.peer_principal = ssl_principal(sock.getpeercert())
        self._on_readable()

    def _recv_tls(self) -> bytes:
        """Every decrypted byte the socket holds now, up to READ_CHUNK: TLS records are
        read one at a time, so one read would leave the rest buffered unseen."""
        chunks = []
        total = 0
        while total < READ_CHUNK:
            try:
                data = self._sock.recv(READ_CHUNK - total)
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                break
            if not data:
                if chunks:
                    break  # the end is seen again on the next readable event
                return b""
            chunks.append(data)
            total += len(data)
        if not chunks:
            raise BlockingIOError
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    # -- requests ---------------------------------------------------------------------

    async def next_request(self) -> memoryview | None:
        """The next request frame; None once the client closed its side. Raises the
        ProtocolError of a malformed frame after the frames that came before it."""
        while not self._requests:
            if self._end is not None:
                if isinstance(self._end, EOFError):
                    return None
                raise self._end
            self._waiter = self._loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        frame = self._requests.popleft()
        self.received_at = self._received.popleft()
        self._queued_bytes -= len(frame)
        if not self._reading and self._end is None and self._queued_bytes <= READ_CHUNK:
            self._reading = True
            if not self._waiting_for_memory:
                self._loop.add_reader(self._fd, self._on_readable)
        return frame

    def _on_readable(self) -> None:
        pool = self._pool
        # Between requests only: a request once begun is read to its end, as Kafka
        # allocates a request's whole size when it reads the size prefix.
        at_boundary = self._frames.buffered < 4
        if pool is not None and at_boundary and (self._waiting_for_memory or pool.spent):
            self._loop.remove_reader(self._fd)  # muted until requests in flight finish
            if not self._waiting_for_memory:
                self._waiting_for_memory = True
                pool.wait(self._resume_after_memory)
            return
        if self._handshaking:
            return self._handshake()
        try:
            data = self._recv_tls() if self._tls else self._sock.recv(READ_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:  # ssl.SSLError too
            return self._stop_reading(e)
        if not data:
            return self._stop_reading(EOFError())
        if pool is not None:
            pool.take(len(data))
            self._held += len(data)
        self.last_active = time.monotonic()
        try:
            frames = self._frames.feed(data)
        except ProtocolError as e:
            return self._stop_reading(e)
        for frame in frames:
            self._requests.append(frame)
            self._received.append(self.last_active)
            self._queued_bytes += len(frame)
        try:
            self._frames.raise_pending()
        except ProtocolError as e:
            return self._stop_reading(e)
        if self._queued_bytes > MAX_QUEUED_BYTES:
            self._reading = False
            self._loop.remove_reader(self._fd)
        self._wake()

    def _resume_after_memory(self) -> None:
        self._waiting_for_memory = False
        if self._reading and self._end is None and not self._closed:
            self._loop.add_reader(self._fd, self._on_readable)

    def release(self, frame: memoryview) -> None:
        """The request in `frame` is answered: its bytes (and its size prefix) go back to
        the memory pool."""
        if self._pool is not None:
            size = min(len(frame) + 4, self._held)
            self._held -= size
            self._pool.release(size)

    def _stop_reading(self, end: BaseException) -> None:
        self._end = end
        if self._reading:
            self._reading = False
            self._loop.remove_reader(self._fd)
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    # -- responses --------------------------------------------------------------------

    def send(self, parts: list[object]) -> asyncio.Future[None] | None:
        """Start writing a response; None when it all went out at once, else a future
        that completes when the rest has."""
        out = self._out
        for part in parts:
            if not len(part):  # type: ignore[arg-type]
                continue
            out.append(memoryview(part) if isinstance(part, _BYTES_LIKE) else _FileRange(part))
        if self._write_some():
            return None
        self._sent = self._loop.create_future()
        self._loop.add_writer(self._fd, self._on_writable)
        return self._sent

    def _write_some(self) -> bool:
        """Write what the socket takes; True when nothing is left."""
        out = self._out
        self.last_active = time.monotonic()
        try:
            while out:
                part = out[0]
                if isinstance(part, memoryview):
                    n = self._sock.send(part)
                    if n < len(part):
                        out[0] = part[n:]
                        continue
                elif self._tls:
                    if part.chunk is None:
                        part.chunk = memoryview(os.pread(
                            part.fd, min(part.size, TLS_FILE_CHUNK), part.position
                        ))  # fmt: skip
                        if not part.chunk:  # the segment shrank underneath: pad
                            part.chunk = memoryview(bytes(min(part.size, TLS_FILE_CHUNK)))
                    n = self._sock.send(part.chunk)
                    part.chunk = part.chunk[n:] if n < len(part.chunk) else None
                    part.position += n
                    part.size -= n
                    if part.size:
                        continue
                else:
                    n = os.sendfile(self._fd, part.fd, part.position, part.size)
                    if n == 0:  # the segment shrank underneath (a truncation raced the
                        # read): pad so the frame keeps its announced size; the client
                        # drops the partial batch it sees
                        out[0] = memoryview(bytes(part.size))
                        continue
                    part.position += n
                    part.size -= n
                    if part.size:
                        continue
                out.popleft()
        except _WOULD_BLOCK:
            return False
        return True

    def _on_writable(self) -> None:
        sent = self._sent
        try:
            done = self._write_some()
        except OSError as e:
            done = True
            if sent is not None and not sent.done():
                sent.set_exception(e)
        if done:
            self._loop.remove_writer(self._fd)
            self._sent = None
            if sent is not None and not sent.done():
                sent.set_result(None)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._loop.remove_reader(self._fd)
        self._loop.remove_writer(self._fd)
        for future in (self._waiter, self._sent):
            if future is not None and not future.done():
                future.cancel()
        self._out.clear()
        self._sock.close()
        if self._pool is not None:
            if self._waiting_for_memory:
                self._pool.forget(self._resume_after_memory)
            held, self._held = self._held, 0
            self._pool.release(held)
