"""Client quotas enforced on a running broker: a producer_byte_rate set with `kt configs`
on a client id throttles that client's producer (its answers carry throttle_time_ms, as
librdkafka's throttle callback reports, and its connection waits), while a producer with
another client id on the same broker is not throttled; consumer_byte_rate does the same
to a consumer's fetches, and request_percentage to a client's requests of any kind.
The bound checked on the bytes is an upper one only (a slow machine moves fewer bytes,
never more); the rates themselves are measured by the benchmark."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kt.protocol import ApiKey, encode_request
from kt.protocol import messages as m
from tests.integration.conftest import kt_ok

pytestmark = pytest.mark.slow

QUOTA = 200_000  # bytes a second
SECONDS = 6


def set_quota(bootstrap: str, key: str, client: str) -> None:
    kt_ok("configs", "--bootstrap-server", bootstrap, "--alter", "--add-config",
          f"{key}={QUOTA}", "--entity-type", "clients", "--entity-name", client)  # fmt: skip


def produce_for(bootstrap: str, client: str, seconds: float, out: dict) -> None:
    throttles: list[int] = []
    acked = [0]

    def delivered(error, message) -> None:  # type: ignore[no-untyped-def]
        if error is None:
            acked[0] += len(message.value())

    producer = Producer({"bootstrap.servers": bootstrap, "client.id": client, "acks": 1,
                         "linger.ms": 5, "queue.buffering.max.kbytes": 512,
                         "throttle_cb": lambda e: throttles.append(
                             e.throttle_time)})  # fmt: skip
    began = time.monotonic()
    deadline = began + seconds
    while time.monotonic() < deadline:
        try:
            producer.produce("quota", b"v" * 1000, on_delivery=delivered)
        except BufferError:
            producer.poll(0.05)
        producer.poll(0)
    producer.flush(60)
    out[client] = (acked[0], throttles, time.monotonic() - began)


def produce_side_by_side(bootstrap: str, clients: tuple[str, ...], seconds: float) -> dict:
    """A producer per client id, all at once for `seconds`: produce_for's results."""
    results: dict = {}
    threads = [threading.Thread(target=produce_for, args=(bootstrap, c, seconds, results))
               for c in clients]  # fmt: skip
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return results


def test_producer_and_consumer_byte_rates_throttle_only_their_client(broker) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("quota", 1, 1)])["quota"].result(30)
    set_quota(broker.bootstrap, "producer_byte_rate", "limited")
    results = produce_side_by_side(broker.bootstrap, ("limited", "free"), SECONDS)
    limited_bytes, limited_throttles, elapsed = results["limited"]
    free_bytes, free_throttles, _ = results["free"]
    assert any(t > 0 for t in limited_throttles)  # seconds; a last 0 says it ended
    assert not any(t > 0 for t in free_throttles)
    # The rate is measured over at least ten windows of a second: the limited client may
    # send ten seconds' worth at once, then the quota's pace, plus one request (librdkafka's
    # batches are up to a megabyte) that a throttle answers.
    assert limited_bytes < QUOTA * (10 + elapsed) * 1.25 + 1_000_000, (limited_bytes, elapsed)
    assert free_bytes > limited_bytes  # the other client was not held back with it

    set_quota(broker.bootstrap, "consumer_byte_rate", "slow-reader")
    throttled: list[int] = []
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "q",
                         "client.id": "slow-reader", "auto.offset.reset": "earliest",
                         "throttle_cb": lambda e: throttled.append(e.throttle_time)})  # fmt: skip
    consumer.subscribe(["quota"])
    deadline = time.monotonic() + 30
    while not throttled:
        assert time.monotonic() < deadline, "no fetch was throttled"
        consumer.poll(0.2)
    consumer.close()


def test_a_request_percentage_throttles_only_its_client(broker) -> None:
    """request_percentage=0.01: the client's requests may take 0.01 % of a thread's time
    (Kafka's request quota, KIP-124), which a producer's first requests exceed; its
    answers carry throttle_time_ms, at most one quota window (1 s) each, while a client
    without the quota is never throttled."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("quota", 1, 1)])["quota"].result(30)
    kt_ok("configs", "--bootstrap-server", broker.bootstrap, "--alter", "--add-config",
          "request_percentage=0.01", "--entity-type", "clients",
          "--entity-name", "busy")  # fmt: skip
    results = produce_side_by_side(broker.bootstrap, ("busy", "idle"), 4)
    busy_bytes, busy_throttles, _ = results["busy"]
    idle_bytes, idle_throttles, _ = results["idle"]
    assert any(t > 0 for t in busy_throttles), busy_throttles
    assert max(busy_throttles) <= 1.0  # seconds: one window at most
    assert not any(t > 0 for t in idle_throttles)
    assert busy_bytes > 0 and idle_bytes > busy_bytes


def test_an_ips_connection_creation_rate_closes_the_excess_unserved(broker) -> None:
    kt_ok("configs", "--bootstrap-server", broker.bootstrap, "--alter", "--add-config",
          "connection_creation_rate=1", "--entity-type", "ips",
          "--entity-name", "127.0.0.1")  # fmt: skip
    request = encode_request(ApiKey.API_VERSIONS, 0, 1, "rate", m.ApiVersionsRequest())
    answered = 0
    deadline = time.monotonic() + 60
    while True:  # the rate is measured over ten seconds at least: ten get through first
        assert time.monotonic() < deadline, f"{answered} connections, none refused"
        with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as sock:
            sock.sendall(request)
            try:
                answer = sock.recv(4)
            except ConnectionResetError:
                answer = b""
        if len(answer) < 4:
            break  # held, then closed unserved
        answered += 1
    assert answered >= 1
    assert "Throttling connection from /127.0.0.1" in broker.run_log()
