"""Random and mutated frames on the broker's port leave it serving everyone else.

Each case opens its own connection, sends one frame (a valid request from kt.protocol
with bytes flipped, cut, extended, or its sizes and counts replaced by extreme values;
or plain random bytes), half-closes, and reads until the broker answers or closes.
The cases come from a seeded generator, so a failure names a reproducible case. A
kafka-python producer connected before the storm must still work after it, as must a
new consumer, and the broker process must still be alive.
"""

from __future__ import annotations

import random
import socket
import struct
import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from kt.protocol import ApiKey, decode_response, encode_request
from kt.protocol.messages import (
    ApiVersionsRequest,
    DescribeConfigsRequest,
    FetchRequest,
    InitProducerIdRequest,
    ListOffsetsRequest,
    MetadataRequest,
    ProduceRequest,
)
from kt.storage.record_batch import Record, build_batch

pytestmark = pytest.mark.slow

TOPIC = "fuzzed"
CASES_PER_STRATEGY = 200
EXTREME_INT32 = [0x7FFFFFFF, -1, -2, -0x80000000, 0x10000, 0x7FFFFFFE]


def seed_frames() -> list[bytes]:
    """Valid request frames (size prefix included) of the APIs a client uses first."""
    batch = build_batch([Record(None, 1_700_000_000_000 + i, b"k", b"v" * i) for i in range(3)])
    partition_data = ProduceRequest.PartitionProduceData(index=0, records=batch)
    produce = ProduceRequest(
        acks=1,
        timeout_ms=1000,
        topic_data=[ProduceRequest.TopicProduceData(name=TOPIC, partition_data=[partition_data])],
    )
    fetch_partition = FetchRequest.FetchPartition(
        partition=0, fetch_offset=0, partition_max_bytes=1 << 20
    )
    fetch = FetchRequest(
        replica_id=-1,
        max_wait_ms=100,
        min_bytes=1,
        max_bytes=1 << 20,
        session_epoch=-1,
        topics=[FetchRequest.FetchTopic(topic=TOPIC, partitions=[fetch_partition])],
    )
    offsets_partition = ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)
    list_offsets = ListOffsetsRequest(
        replica_id=-1,
        topics=[ListOffsetsRequest.ListOffsetsTopic(name=TOPIC, partitions=[offsets_partition])],
    )
    metadata = MetadataRequest(
        topics=[MetadataRequest.MetadataRequestTopic(name=TOPIC)], allow_auto_topic_creation=False
    )
    resource = DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=2, resource_name=TOPIC, configuration_keys=None
    )
    init_pid = InitProducerIdRequest(
        transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1
    )
    hello = ApiVersionsRequest(client_software_name="fuzz", client_software_version="1")
    requests = [
        (ApiKey.API_VERSIONS, 3, hello),
        (ApiKey.API_VERSIONS, 0, ApiVersionsRequest()),
        (ApiKey.METADATA, 9, metadata),
        (ApiKey.METADATA, 1, metadata),
        (ApiKey.PRODUCE, 9, produce),
        (ApiKey.PRODUCE, 3, produce),
        (ApiKey.FETCH, 12, fetch),
        (ApiKey.FETCH, 4, fetch),
        (ApiKey.LIST_OFFSETS, 7, list_offsets),
        (ApiKey.DESCRIBE_CONFIGS, 4, DescribeConfigsRequest(resources=[resource])),
        (ApiKey.INIT_PRODUCER_ID, 4, init_pid),
    ]
    return [encode_request(key, version, 7, "fuzz", body) for key, version, body in requests]


def with_size(body: bytes | bytearray) -> bytes:
    return struct.pack(">i", len(body)) + bytes(body)


def flip(rng: random.Random, frame: bytes) -> bytes:
    body = bytearray(frame[4:])
    for _ in range(rng.randint(1, 4)):
        body[rng.randrange(len(body))] = rng.randrange(256)
    return with_size(body)


def cut(rng: random.Random, frame: bytes) -> bytes:
    return with_size(frame[4 : 4 + rng.randrange(len(frame) - 4)])


def extend(rng: random.Random, frame: bytes) -> bytes:
    return with_size(frame[4:] + rng.randbytes(rng.randint(1, 64)))


def extreme(rng: random.Random, frame: bytes) -> bytes:
    """An int32 somewhere in the body (an array count, a bytes length...) made extreme."""
    body = bytearray(frame[4:])
    position = rng.randrange(len(body) - 3)
    struct.pack_into(">i", body, position, rng.choice(EXTREME_INT32))
    return with_size(body)


def header(rng: random.Random, frame: bytes) -> bytes:
    """Any API key and version, with the rest of a real request behind them."""
    body = bytearray(frame[4:])
    struct.pack_into(">hh", body, 0, rng.randint(-3, 80), rng.randint(-3, 20))
    return with_size(body)


def noise(rng: random.Random, frame: bytes) -> bytes:
    if rng.random() < 0.5:
        return with_size(rng.randbytes(rng.randint(0, 200)))
    return rng.randbytes(rng.randint(1, 200))  # no size prefix at all


def bad_size(rng: random.Random, frame: bytes) -> bytes:
    size = rng.choice([-1, -0x80000000, 0x7FFFFFFF, 200 * 1024 * 1024, len(frame) + 50])
    return struct.pack(">i", size) + frame[4:]


STRATEGIES = [flip, cut, extend, extreme, header, noise, bad_size]


def fuzz_cases(seed: int = 20240605) -> list[tuple[str, bytes]]:
    rng = random.Random(seed)
    seeds = seed_frames()
    return [
        (f"{strategy.__name__}#{i}", strategy(rng, rng.choice(seeds)))
        for strategy in STRATEGIES
        for i in range(CASES_PER_STRATEGY)
    ]


def send_case(port: int, data: bytes, wait_s: float = 0.5, case_s: float = 5.0) -> None:
    """Send one case on a fresh connection; read until the broker answers or closes.

    Each read waits at most `wait_s` and the case at most `case_s`: how the broker treats
    one bad frame (an answer, a close, or silence until the client gives up) is its own
    business; only a broker that dies or stops answering others fails the test.
    """
    deadline = time.monotonic() + case_s
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
            sock.settimeout(wait_s)
            while sock.recv(65536) and time.monotonic() < deadline:
                pass
        except (TimeoutError, ConnectionError):
            pass


def api_versions_round_trip(port: int) -> None:
    """A raw ApiVersions v3 request is answered with error 0 and kt's API list."""
    frame = encode_request(ApiKey.API_VERSIONS, 3, 42, "check", ApiVersionsRequest(
        client_software_name="check", client_software_version="1"))  # fmt: skip
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(frame)
        (size,) = struct.unpack(">i", recv_exactly(sock, 4))
        correlation_id, body = decode_response(ApiKey.API_VERSIONS, 3, recv_exactly(sock, size))
    assert correlation_id == 42
    assert body.error_code == 0
    assert {k.api_key for k in body.api_keys} >= {0, 1, 3, 18}


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        assert chunk, "connection closed early"
        data += chunk
    return data


def test_fuzzed_frames_leave_the_broker_serving(broker) -> None:
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", linger_ms=0)
    producer.send(TOPIC, key=b"before", value=b"0").get(timeout=30)

    for i, (name, data) in enumerate(fuzz_cases()):
        send_case(broker.port, data)
        assert broker.alive, f"broker died on case {name}: {broker.logs()}"
        if i % 25 == 24:  # still answering others (a socket timeout bounds the wait)
            api_versions_round_trip(broker.port)

    assert broker.alive
    api_versions_round_trip(broker.port)
    # The producer connected before the storm still works, and a new consumer reads.
    producer.send(TOPIC, key=b"after", value=b"1").get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None,
                             enable_auto_commit=False)  # fmt: skip
    consumer.assign([TopicPartition(TOPIC, 0)])
    consumer.seek_to_beginning()
    keys: list[bytes] = []
    read_until = time.monotonic() + 30
    while b"after" not in keys and time.monotonic() < read_until:
        for messages in consumer.poll(timeout_ms=1000).values():
            keys += [m.key for m in messages]
    consumer.close()
    assert keys[0] == b"before" and keys[-1] == b"after"
    assert b"closing connection from" in broker.run_log().encode()


def test_requests_before_a_malformed_frame_are_answered(broker) -> None:
    """Kafka reads one frame at a time and answers it before reading the next size, so a
    whole request that arrives in the same segment as a bad size prefix is answered
    first; then the connection closes."""
    good = seed_frames()[0]
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as sock:
        sock.sendall(good + struct.pack(">i", -1))
        (size,) = struct.unpack(">i", recv_exactly(sock, 4))
        assert decode_response(ApiKey.API_VERSIONS, 3, recv_exactly(sock, size))[0] == 7
        assert sock.recv(1) == b""
    assert broker.alive
