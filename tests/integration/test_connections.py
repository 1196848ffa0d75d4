"""The broker's connections as Kafka's SocketServer keeps them: idle ones are closed after
connections.max.idle.ms (a half-sent request does not keep one open), a burst of
connects is accepted whole, and running out of file descriptors is logged and survived.
"""

from __future__ import annotations

import resource
import socket
import struct
import time
from collections.abc import Callable

import pytest

from kt.client.connection import BrokerConnection
from kt.protocol import ApiKey, decode_response, encode_request
from kt.protocol.messages import ApiVersionsRequest
from tests.integration.test_malformed_frames import recv_exactly

pytestmark = pytest.mark.slow


def wait_until(condition: Callable[[], bool], what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"{what} within {timeout_s} s"
        time.sleep(0.05)


def closed_by_peer(sock: socket.socket) -> bool:
    """Has the broker closed this connection? (Reads without waiting.)"""
    try:
        return sock.recv(1, socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True


def api_versions(connection: BrokerConnection) -> int:
    return connection.send(ApiKey.API_VERSIONS, ApiVersionsRequest()).error_code


def assert_answers_a_new_connection(broker) -> None:
    connection = BrokerConnection("127.0.0.1", broker.port)
    try:
        assert api_versions(connection) == 0
    finally:
        connection.close()


def test_idle_connections_are_closed(broker_factory) -> None:
    broker = broker_factory(**{"connections.max.idle.ms": "500"})
    silent = [socket.create_connection(("127.0.0.1", broker.port)) for _ in range(10)]
    half_sent = [socket.create_connection(("127.0.0.1", broker.port)) for _ in range(10)]
    for sock in half_sent:
        sock.sendall(struct.pack(">i", 1000) + b"\x00\x12\x00\x03")  # 8 of 1004 bytes
    active = BrokerConnection("127.0.0.1", broker.port)
    try:
        # A connection that keeps talking, every 100 ms, outlives four idle periods.
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            assert api_versions(active) == 0
            time.sleep(0.1)
        wait_until(lambda: all(closed_by_peer(s) for s in silent + half_sent),
                   "every idle connection closed")  # fmt: skip
        assert api_versions(active) == 0
    finally:
        active.close()
        for sock in silent + half_sent:
            sock.close()


def test_a_burst_of_connects_is_accepted_whole(broker_factory) -> None:
    """Four times as many connects at once as the listen backlog holds, each with a
    request pipelined behind it: every one is accepted and answered."""
    broker = broker_factory(**{"socket.listen.backlog.size": "50"})
    socks = [socket.socket() for _ in range(200)]
    try:
        for sock in socks:
            sock.setblocking(False)
            sock.connect_ex(("127.0.0.1", broker.port))
        for i, sock in enumerate(socks):
            sock.settimeout(30)
            sock.sendall(encode_request(ApiKey.API_VERSIONS, 0, i, "burst", ApiVersionsRequest()))
        for i, sock in enumerate(socks):
            (size,) = struct.unpack(">i", recv_exactly(sock, 4))
            correlation_id, body = decode_response(ApiKey.API_VERSIONS, 0, recv_exactly(sock, size))
            assert (correlation_id, body.error_code) == (i, 0)
    finally:
        for sock in socks:
            sock.close()


def test_out_of_file_descriptors_is_logged_and_survived(broker_factory) -> None:
    broker = broker_factory()
    assert broker.proc is not None
    resource.prlimit(broker.proc.pid, resource.RLIMIT_NOFILE, (64, 64))
    socks = [socket.create_connection(("127.0.0.1", broker.port)) for _ in range(100)]
    try:
        wait_until(lambda: "Too many open files" in broker.run_log(), "EMFILE logged")
        assert broker.alive
    finally:
        for sock in socks:
            sock.close()
    # Descriptors free again: the broker accepts and answers.
    assert_answers_a_new_connection(broker)


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def hog(port: int, declared: int, send: int) -> socket.socket:
    """A connection that declares a `declared`-byte request and sends up to `send` bytes of
    it, as much as the broker takes within a short while."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 * 1024)
    sock.settimeout(0.2)
    data = struct.pack(">i", declared) + bytes(send)
    sent = 0
    try:
        while sent < len(data):
            sent += sock.send(data[sent : sent + 65536])
    except TimeoutError:
        pass  # the broker stopped reading: what the pool is for
    return sock


@pytest.mark.parametrize("bounded", [True, False], ids=["pool-2MB", "unbounded"])
def test_queued_max_request_bytes_bounds_what_requests_hold(broker_factory, bounded) -> None:
    """20 connections each send 10 MB of a declared 16 MB request. With a 16 MB pool (no
    smaller than socket.request.max.bytes, as Kafka requires) the first request begun
    takes it all (Kafka's SimpleMemoryPool hands a request its whole size) and no other
    starts while the pool is spent, so the broker holds about one request's bytes;
    unbounded (Kafka's default, -1) it holds every byte sent. Closing them gives the
    memory back: a new connection is answered."""
    pool = str(16 * 1024 * 1024) if bounded else "-1"
    broker = broker_factory(**{"queued.max.request.bytes": pool,
                               "socket.request.max.bytes": str(16 * 1024 * 1024)})  # fmt: skip
    before = rss_bytes(broker.proc.pid)
    hogs = [hog(broker.port, 16 * 1024 * 1024, 10 * 1024 * 1024) for _ in range(20)]
    try:
        time.sleep(0.5)  # let the broker read what it will
        grown = rss_bytes(broker.proc.pid) - before
        if bounded:
            assert grown < 40 * 1024 * 1024, grown
        else:
            assert grown > 100 * 1024 * 1024, grown
    finally:
        for sock in hogs:
            sock.close()
    assert_answers_a_new_connection(broker)


def test_a_small_pool_serves_requests_larger_than_itself(broker_factory) -> None:
    """Every answered request gives its bytes back: 8 MB produced through a 64 KB pool."""
    from confluent_kafka import Producer

    broker = broker_factory(**{"queued.max.request.bytes": "65536",
                               "socket.request.max.bytes": "65536"})  # fmt: skip
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all",
                         "linger.ms": 5, "batch.size": 16384})  # fmt: skip
    for i in range(8 * 1024):
        producer.produce("pooled", value=bytes(1024), key=str(i).encode())
    assert producer.flush(60) == 0
    assert_answers_a_new_connection(broker)


def served(sock: socket.socket, timeout_s: float) -> bool:
    """Send ApiVersions on a raw connection: is it answered within timeout_s?"""
    sock.sendall(encode_request(ApiKey.API_VERSIONS, 0, 7, "limits", ApiVersionsRequest()))
    sock.settimeout(timeout_s)
    try:
        (length,) = struct.unpack(">i", recv_exactly(sock, 4))
    except (TimeoutError, ConnectionError, struct.error, AssertionError):
        return False
    return decode_response(ApiKey.API_VERSIONS, 0, recv_exactly(sock, length))[1].error_code == 0


@pytest.mark.parametrize(
    "limits",
    [{"max.connections.per.ip": "2"},
     {"max.connections.per.ip": "1", "max.connections.per.ip.overrides": "localhost:2"}],
    ids=["max.connections.per.ip", "max.connections.per.ip.overrides"],
)  # fmt: skip
def test_an_address_over_its_connection_limit_is_refused(broker_factory, limits) -> None:
    """The third connection from 127.0.0.1 is closed unserved, logged as Kafka logs it; once
    one of the two closes, a new one is served (an override, by host name, wins over
    max.connections.per.ip)."""
    broker = broker_factory(**limits)
    first, second = (BrokerConnection("127.0.0.1", broker.port) for _ in range(2))
    assert (api_versions(first), api_versions(second)) == (0, 0)
    with socket.create_connection(("127.0.0.1", broker.port)) as third:
        wait_until(lambda: closed_by_peer(third), "the third connection closed")
    assert ("Rejected connection from /127.0.0.1, address already has the configured "
            "maximum of 2 connections.") in broker.run_log()  # fmt: skip
    first.close()
    wait_until(lambda: _admits_one_more(broker), "a connection served once one closed")
    second.close()


def _admits_one_more(broker) -> bool:
    with socket.create_connection(("127.0.0.1", broker.port)) as sock:
        return served(sock, 5.0)


@pytest.mark.parametrize("key", ["max.connections", "listener.name.plaintext.max.connections"])
def test_max_connections_holds_new_connections_until_one_closes(broker_factory, key) -> None:
    """At max.connections (the broker's, or its listener's own) the broker stops
    accepting: a new connection waits unserved (Kafka's acceptor waits for a slot) and is
    served the moment another one closes."""
    broker = broker_factory(**{key: "2"})
    held = [BrokerConnection("127.0.0.1", broker.port) for _ in range(2)]
    assert [api_versions(c) for c in held] == [0, 0]
    with socket.create_connection(("127.0.0.1", broker.port)) as waiting:
        assert not served(waiting, 1.0)  # in the backlog: a broker without the limit answers
        held.pop().close()
        waiting.settimeout(30)
        (length,) = struct.unpack(">i", recv_exactly(waiting, 4))
        answer = decode_response(ApiKey.API_VERSIONS, 0, recv_exactly(waiting, length))[1]
        assert answer.error_code == 0
    held[0].close()


@pytest.mark.parametrize(
    "key", ["max.connection.creation.rate", "listener.name.plaintext.max.connection.creation.rate"]
)
def test_max_connection_creation_rate_spaces_new_connections(broker_factory, key) -> None:
    """max.connection.creation.rate=4 (the broker's, or its listener's own), measured over
    two 1-second samples: twelve connections opened at once are served over seconds (the
    acceptor pauses), not at once; every one is served."""
    broker = broker_factory(**{key: "4", "quota.window.num": "2"})
    start = time.monotonic()
    socks = [socket.create_connection(("127.0.0.1", broker.port)) for _ in range(12)]
    try:
        assert all(served(sock, 30.0) for sock in socks)
    finally:
        for sock in socks:
            sock.close()
    # 12 connections at 4 per second: without the limit they are served in milliseconds.
    assert time.monotonic() - start >= 1.5
