"""The network layer over real loopback sockets: frames in, response parts out, in order.

The handler here is the network layer's own interface (frame -> response parts); the
file parts are real segment-style FileSlices over a real file, sent with sendfile.
"""

from __future__ import annotations

import asyncio
import os
import socket
import struct
from pathlib import Path

from kt.broker.network.socket_server import MAX_QUEUED_BYTES, RequestContext, SocketServer
from kt.storage.file_records import FileSlice

SIZE = struct.Struct(">i")
DEADLINE_S = 30  # a read that hangs fails the test here, not at the suite's timeout


def frame(payload: bytes) -> bytes:
    return SIZE.pack(len(payload)) + payload


async def read_frame(reader: asyncio.StreamReader) -> bytes:
    (size,) = SIZE.unpack(await asyncio.wait_for(reader.readexactly(4), DEADLINE_S))
    return await asyncio.wait_for(reader.readexactly(size), DEADLINE_S)


async def read_to_end(reader: asyncio.StreamReader) -> bytes:
    return await asyncio.wait_for(reader.read(), DEADLINE_S)


async def start(handler, **settings) -> SocketServer:  # type: ignore[no-untyped-def]
    server = SocketServer("127.0.0.1", 0, handler, **settings)
    await server.start()
    return server


async def connect(port: int, receive_buffer: int = 0):  # type: ignore[no-untyped-def]
    sock = socket.socket()
    if receive_buffer:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    return await asyncio.open_connection(sock=sock)


def test_pipelined_requests_are_answered_in_request_order() -> None:
    async def handler(frame_: memoryview, ctx: RequestContext) -> list[object]:
        n = int(bytes(frame_))
        for _ in range(n % 3):  # some requests take a few loop turns
            await asyncio.sleep(0)
        return [frame(b"answer %d" % n)]

    async def scenario() -> list[bytes]:
        server = await start(handler)
        reader, writer = await connect(server.port)
        writer.write(b"".join(frame(b"%d" % n) for n in range(200)))
        answers = [await read_frame(reader) for _ in range(200)]
        writer.close()
        await server.stop()
        return answers

    assert asyncio.run(scenario()) == [b"answer %d" % n for n in range(200)]


def test_requests_without_a_response_are_skipped_in_order() -> None:
    async def handler(frame_: memoryview, ctx: RequestContext) -> list[object] | None:
        return None if bytes(frame_).startswith(b"acks=0") else [frame(bytes(frame_))]

    async def scenario() -> list[bytes]:
        server = await start(handler)
        reader, writer = await connect(server.port)
        writer.write(frame(b"acks=0 a") + frame(b"one") + frame(b"acks=0 b") + frame(b"two"))
        answers = [await read_frame(reader), await read_frame(reader)]
        writer.close()
        await server.stop()
        return answers

    assert asyncio.run(scenario()) == [b"one", b"two"]


def test_a_file_slice_larger_than_the_socket_buffers_arrives_whole(tmp_path: Path) -> None:
    """A 4 MiB slice through a 4 KiB send buffer to a reader with a 4 KiB receive buffer:
    the socket fills many times, and each writable event continues the same response."""
    data = os.urandom(5 << 20)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    position, size = 12345, 4 << 20

    async def scenario() -> tuple[bytes, bytes]:
        with open(path, "rb", buffering=0) as file:

            async def handler(frame_: memoryview, ctx: RequestContext) -> list[object]:
                if bytes(frame_) == b"fetch":
                    head = b"head"
                    return [SIZE.pack(len(head) + size + 4) + head, FileSlice(file, position, size),
                            b"tail"]  # fmt: skip
                return [frame(b"next")]

            server = await start(handler, send_buffer_bytes=4096)
            reader, writer = await connect(server.port, receive_buffer=4096)
            writer.write(frame(b"fetch") + frame(b"after"))
            first = await read_frame(reader)
            second = await read_frame(reader)
            writer.close()
            await server.stop()
        return first, second

    first, second = asyncio.run(scenario())
    assert first == b"head" + data[position : position + size] + b"tail"
    assert second == b"next"


def test_a_slice_past_the_end_of_a_shrunk_file_is_padded_with_zeros(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"x" * 1000)

    async def scenario() -> bytes:
        with open(path, "rb", buffering=0) as file:

            async def handler(frame_: memoryview, ctx: RequestContext) -> list[object]:
                # the segment was truncated to 1000 bytes after the read chose 3000
                return [SIZE.pack(3000), FileSlice(file, 0, 3000)]

            server = await start(handler)
            reader, writer = await connect(server.port)
            writer.write(frame(b"fetch"))
            answer = await read_frame(reader)
            writer.close()
            await server.stop()
        return answer

    assert asyncio.run(scenario()) == b"x" * 1000 + bytes(2000)


def test_reading_ahead_pauses_under_a_backlog_and_loses_nothing() -> None:
    """More pipelined bytes than MAX_QUEUED_BYTES while the handler is held up."""
    release = asyncio.Event()
    count = 3 * MAX_QUEUED_BYTES // 10_000

    async def handler(frame_: memoryview, ctx: RequestContext) -> list[object]:
        await release.wait()
        return [frame(bytes(frame_[:8]))]

    async def scenario() -> list[bytes]:
        server = await start(handler)
        reader, writer = await connect(server.port)
        writer.write(b"".join(frame(b"%08d" % n + bytes(10_000 - 8)) for n in range(count)))
        drained = asyncio.create_task(writer.drain())
        for _ in range(50):
            await asyncio.sleep(0)
        release.set()
        answers = [await read_frame(reader) for _ in range(count)]
        await drained
        writer.close()
        await server.stop()
        return answers

    assert asyncio.run(scenario()) == [b"%08d" % n for n in range(count)]


def test_a_malformed_frame_closes_that_connection_after_earlier_frames() -> None:
    async def handler(frame_: memoryview, ctx: RequestContext) -> list[object]:
        return [frame(bytes(frame_))]

    async def scenario() -> tuple[bytes, bytes, bytes]:
        server = await start(handler, max_request_bytes=1000)
        reader, writer = await connect(server.port)
        other_reader, other_writer = await connect(server.port)
        writer.write(frame(b"fine") + SIZE.pack(-5) + b"junk")
        answered = await read_frame(reader)
        rest = await read_to_end(reader)  # EOF: the broker closed this connection
        other_writer.write(frame(b"still served"))
        other = await read_frame(other_reader)
        writer.close()
        other_writer.close()
        await server.stop()
        return answered, rest, other

    assert asyncio.run(scenario()) == (b"fine", b"", b"still served")


def test_stop_ends_connections_and_listening() -> None:
    async def handler(frame_: memoryview, ctx: RequestContext) -> list[object]:
        return [frame(b"ok")]

    async def scenario() -> tuple[bytes, bytes, bool]:
        server = await start(handler)
        reader, writer = await connect(server.port)
        writer.write(frame(b"hello"))
        answered = await read_frame(reader)
        await server.stop()
        rest = await read_to_end(reader)
        writer.close()
        try:
            await connect(server.port)
        except ConnectionRefusedError:
            refused = True
        else:
            refused = False
        return answered, rest, refused

    assert asyncio.run(scenario()) == (b"ok", b"", True)


def test_the_context_names_the_client() -> None:
    seen: list[RequestContext] = []

    async def handler(frame_: memoryview, ctx: RequestContext) -> list[object]:
        seen.append(ctx)
        return [frame(b"ok")]

    async def scenario() -> int:
        server = await start(handler)
        reader, writer = await connect(server.port)
        writer.write(frame(b"a"))
        await read_frame(reader)
        port = writer.get_extra_info("sockname")[1]
        writer.close()
        await server.stop()
        return port

    port = asyncio.run(scenario())
    assert [(c.client_host, c.client_port) for c in seen] == [("127.0.0.1", port)]
