"""The broker end to end: librdkafka through `kt server-start` beside raw baselines.

  python benchmarks/broker.py [produce] [consume] [startup] [--records 300000] [--repeat 3]

produce  librdkafka (confluent-kafka) producer, acks=1, 100-byte values, no compression,
         into one partition of kt, beside a raw sink run in the same way: a plain
         socket server in its own process that answers ApiVersions and Metadata, appends
         each Produce frame's bytes to a file and answers it with a ProduceResponse
         built with kt.protocol (base offsets from the batches' record counts).
         Target: kt >= 50 % of the sink's records/s.
consume  reading the records back from kt beside os.sendfile of the same segment file
         to a reader over loopback, as segment bytes per second: a consumer's Fetch
         loop (what the broker serves; target >= 50 % of sendfile), and the librdkafka
         consumer through confluent-kafka (end to end: librdkafka's parsing and one
         Python object per record included).
startup  time from spawning `kt server-start` (fresh log dir) to the first answered
         ApiVersions request; median of --repeat * 3 runs. Target: < 0.5 s.

The two sides of a ratio run alternately, `--repeat` times each after one untimed
warm-up of each, on the same machine load; figures are medians.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from kt.protocol import (  # noqa: E402
    SUPPORTED_VERSIONS,
    ApiKey,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from kt.protocol.messages import (  # noqa: E402
    ApiVersionsRequest,
    ApiVersionsResponse,
    FetchRequest,
    MetadataResponse,
    ProduceResponse,
)
from kt.storage.batch_header import iter_headers  # noqa: E402

TOPIC = "bench"
VALUE = b"v" * 100
RECORDS_COUNT_AT = 57  # recordsCount in a v2 batch header
PASSES = 10  # short consume measurements are averaged over this many passes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Extra broker settings to compare, e.g. KT_BENCH_OVERRIDES=socket.send.buffer.bytes=-1
EXTRA_OVERRIDES = [o for o in os.environ.get("KT_BENCH_OVERRIDES", "").split(",") if o]


class KtBroker:
    """`kt server-start` in a child process on a free port and a fresh log dir."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def spawn(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kt", "server-start",
             "--override", f"listeners=PLAINTEXT://127.0.0.1:{self.port}",
             "--override", f"log.dirs={self.log_dir}",
             *[a for o in EXTRA_OVERRIDES for a in ("--override", o)]],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip

    def __enter__(self) -> KtBroker:
        self.spawn()
        assert self.proc is not None and self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if "started" not in line:
            raise RuntimeError(f"kt server-start failed: {line!r}")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.proc is not None
        self.proc.terminate()
        self.proc.wait(30)


# -- the raw produce sink ---------------------------------------------------------------


def sink_main(port_pipe, path: str) -> None:
    """Serve Produce frames: append each to `path`, answer it (runs in its own process)."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    port_pipe.send(port)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    state = {"next_offset": 0}
    lock = threading.Lock()
    while True:
        conn, _ = server.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        args = (conn, fd, port, state, lock)
        threading.Thread(target=sink_connection, args=args, daemon=True).start()


def sink_connection(conn: socket.socket, fd: int, port: int, state: dict, lock) -> None:
    buf = bytearray()
    while True:
        data = conn.recv(1 << 20)
        if not data:
            return
        buf += data
        while len(buf) >= 4:
            (size,) = struct.unpack_from(">i", buf, 0)
            if len(buf) < 4 + size:
                break
            frame = bytes(buf[4 : 4 + size])
            del buf[: 4 + size]
            answer = sink_answer(frame, fd, port, state, lock)
            if answer is not None:
                conn.sendall(answer)


def sink_answer(frame: bytes, fd: int, port: int, state: dict, lock) -> bytes | None:
    header, request = decode_request(frame)
    if header.api_key == ApiKey.PRODUCE:
        os.write(fd, frame)
        partition = request.topic_data[0].partition_data[0]
        records = partition.records
        with lock:
            base_offset = state["next_offset"]
            state["next_offset"] += struct.unpack_from(">i", records, RECORDS_COUNT_AT)[0]
        if request.acks == 0:
            return None
        done = ProduceResponse.PartitionProduceResponse(
            index=partition.index, base_offset=base_offset, log_start_offset=0
        )
        body = ProduceResponse(
            responses=[ProduceResponse.TopicProduceResponse(
                name=request.topic_data[0].name, partition_responses=[done])]
        )  # fmt: skip
        return encode_response(header, body)
    if header.api_key == ApiKey.API_VERSIONS:
        keys = [ApiKey.PRODUCE, ApiKey.METADATA, ApiKey.API_VERSIONS]
        api_keys = [ApiVersionsResponse.ApiVersion(api_key=k, min_version=SUPPORTED_VERSIONS[k][0],
                    max_version=SUPPORTED_VERSIONS[k][1]) for k in keys]  # fmt: skip
        return encode_response(header, ApiVersionsResponse(api_keys=api_keys))
    if header.api_key == ApiKey.METADATA:
        return encode_response(header, sink_metadata(port))
    raise RuntimeError(f"the sink does not serve {ApiKey(header.api_key).name}")


def sink_metadata(port: int) -> MetadataResponse:
    partition = MetadataResponse.MetadataResponsePartition(
        partition_index=0, leader_id=0, leader_epoch=0, replica_nodes=[0], isr_nodes=[0]
    )
    return MetadataResponse(
        brokers=[MetadataResponse.MetadataResponseBroker(node_id=0, host="127.0.0.1", port=port)],
        cluster_id="raw-sink",
        controller_id=0,
        topics=[MetadataResponse.MetadataResponseTopic(name=TOPIC, partitions=[partition])],
    )


# -- produce ------------------------------------------------------------------------------


def librdkafka_produce(bootstrap: str, records: int) -> float:
    """Seconds to produce and get acks=1 for `records` 100-byte values."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 5,
                         "enable.idempotence": False, "compression.type": "none"})  # fmt: skip
    producer.list_topics(TOPIC, timeout=30)  # connect and learn the leader before timing
    start = time.perf_counter()
    for _ in range(records):
        try:
            producer.produce(TOPIC, VALUE)
        except BufferError:
            producer.poll(0.01)
            producer.produce(TOPIC, VALUE)
    if producer.flush(120) != 0:
        raise RuntimeError("records left unsent")
    return time.perf_counter() - start


def create_topic(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(timeout=30)


def bench_produce(records: int, repeat: int, work: Path) -> None:
    parent, child = multiprocessing.Pipe()
    sink = multiprocessing.Process(target=sink_main, args=(child, str(work / "sink.bin")))
    sink.start()
    sink_bootstrap = f"127.0.0.1:{parent.recv()}"
    raw, kt = [], []
    try:
        with KtBroker(work / "produce-logs") as broker:
            create_topic(broker.bootstrap)
            librdkafka_produce(sink_bootstrap, records // 4)  # warm-ups
            librdkafka_produce(broker.bootstrap, records // 4)
            for _ in range(repeat):
                raw.append(librdkafka_produce(sink_bootstrap, records))
                kt.append(librdkafka_produce(broker.bootstrap, records))
    finally:
        sink.terminate()
    report("produce (librdkafka, acks=1, 100 B values)", records, records * len(VALUE), raw, kt,
           "raw sink", 0.5)  # fmt: skip


# -- consume ------------------------------------------------------------------------------


def librdkafka_consume(bootstrap: str, records: int) -> float:
    """Seconds for a librdkafka consumer to read `records` from offset 0, its session
    set-up excluded: timing starts when the first messages arrive (librdkafka spends a
    few hundred ms on its own timers before the first Fetch), and the time is scaled to
    all `records`. A run in which librdkafka's pre-fetch queue passes queued.min.messages
    (100000) also holds its next Fetch for fetch.queue.backoff.ms (1 s): that client
    timer, not the broker, is then most of the time measured."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench",
                         "enable.auto.commit": False})  # fmt: skip
    consumer.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
    first: list = []
    while not first:
        first = consumer.consume(10000, timeout=10)
    start, seen = time.perf_counter(), 0
    while len(first) + seen < records:
        for msg in consumer.consume(10000, timeout=10):
            if msg.error() is not None:
                raise RuntimeError(msg.error())
            seen += 1
    elapsed = time.perf_counter() - start
    consumer.close()
    return elapsed * records / seen


def sendfile_read(path: Path) -> float:
    """Seconds to os.sendfile `path` to a reader on a loopback connection."""
    size = path.stat().st_size
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = server.accept()
        with conn, open(path, "rb") as f:
            offset = 0
            while offset < size:
                offset += os.sendfile(conn.fileno(), f.fileno(), offset, size - offset)

    thread = threading.Thread(target=serve)
    start = time.perf_counter()
    thread.start()
    with socket.create_connection(server.getsockname()) as reader:
        buf = bytearray(1 << 20)
        got = 0
        while got < size:
            n = reader.recv_into(buf)
            if not n:
                raise RuntimeError("sendfile reader: early end")
            got += n
    elapsed = time.perf_counter() - start
    thread.join()
    server.close()
    return elapsed


def fetch_loop(port: int, records: int) -> float:
    """Seconds for a consumer's Fetch loop to read `records` from offset 0.

    Fetch v12 with librdkafka's default sizes (1 MiB per partition, 50 MiB per
    response), one request in flight, each response read whole into one receive buffer
    that is reused (as the raw reader reuses its own) and its batches walked by header
    to find the next offset (no record decoding): what the broker serves, without a
    client library's per-record cost on top.
    """
    receive = ReceiveBuffer()
    with socket.create_connection(("127.0.0.1", port)) as sock:
        offset, start = 0, time.perf_counter()
        while offset < records:
            request = FetchRequest(
                replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=50 << 20,
                session_epoch=-1, topics=[FetchRequest.FetchTopic(topic=TOPIC, partitions=[
                    FetchRequest.FetchPartition(partition=0, fetch_offset=offset,
                                                partition_max_bytes=1 << 20)])],
            )  # fmt: skip
            sock.sendall(encode_request(ApiKey.FETCH, 12, offset, "bench", request))
            _, body = decode_response(ApiKey.FETCH, 12, receive.frame(sock))
            batches = list(iter_headers(body.responses[0].partitions[0].records))
            offset = batches[-1].next_offset
        return time.perf_counter() - start


class ReceiveBuffer:
    """Reads size-prefixed frames into one buffer, grown when a frame is larger."""

    def __init__(self) -> None:
        self.buf = bytearray(1 << 20)

    def frame(self, sock: socket.socket) -> memoryview:
        """The next frame, a view into the buffer that the next call overwrites."""
        size = struct.unpack(">i", self.read(sock, 4))[0]
        return self.read(sock, size)

    def read(self, sock: socket.socket, n: int) -> memoryview:
        if len(self.buf) < n:
            self.buf = bytearray(n)
        view, got = memoryview(self.buf)[:n], 0
        while got < n:
            chunk = sock.recv_into(view[got:])
            if not chunk:
                raise RuntimeError("connection closed")
            got += chunk
        return view


def bench_consume(records: int, repeat: int, work: Path) -> None:
    with KtBroker(work / "consume-logs") as broker:
        create_topic(broker.bootstrap)
        librdkafka_produce(broker.bootstrap, records)
        segments = sorted((work / "consume-logs" / f"{TOPIC}-0").glob("*.log"))
        assert len(segments) == 1, segments
        segment_bytes = segments[0].stat().st_size
        raw, fetch, rdkafka = [], [], []
        sendfile_read(segments[0])  # warm-ups
        fetch_loop(broker.port, records)
        librdkafka_consume(broker.bootstrap, records)
        for _ in range(repeat):
            # A pass of the first two takes tens of ms: average PASSES of them, alternating.
            pairs = [(sendfile_read(segments[0]), fetch_loop(broker.port, records))
                     for _ in range(PASSES)]  # fmt: skip
            raw.append(statistics.fmean(r for r, _ in pairs))
            fetch.append(statistics.fmean(f for _, f in pairs))
            rdkafka.append(librdkafka_consume(broker.bootstrap, records))
    report("consume: Fetch loop (broker bound)", records, segment_bytes, raw, fetch,
           "os.sendfile", 0.5)  # fmt: skip
    report("consume: librdkafka consumer (end to end, a Python object per record; no target)",
           records, segment_bytes, raw, rdkafka, "os.sendfile", None)  # fmt: skip


# -- start-up -----------------------------------------------------------------------------


def api_versions_answered(port: int) -> bool:
    frame = encode_request(ApiKey.API_VERSIONS, 3, 1, "bench", ApiVersionsRequest(
        client_software_name="bench", client_software_version="1"))  # fmt: skip
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(frame)
            data = b""
            while len(data) < 4 or len(data) < 4 + struct.unpack_from(">i", data)[0]:
                chunk = sock.recv(65536)
                if not chunk:
                    return False
                data += chunk
    except ConnectionRefusedError:
        return False
    _, body = decode_response(ApiKey.API_VERSIONS, 3, data[4:])
    return body.error_code == 0


def time_to_ready(work: Path, run: int) -> float:
    broker = KtBroker(work / f"startup-{run}")
    start = time.perf_counter()
    broker.spawn()
    try:
        while not api_versions_answered(broker.port):
            if time.perf_counter() - start > 30:
                raise RuntimeError("kt server-start not ready after 30 s")
            time.sleep(0.002)
        return time.perf_counter() - start
    finally:
        assert broker.proc is not None
        broker.proc.terminate()
        broker.proc.wait(30)


def bench_startup(repeat: int, work: Path) -> None:
    times = [time_to_ready(work, run) for run in range(repeat * 3)]
    median = statistics.median(times)
    print(f"startup: kt server-start -> first ApiVersions answered: median {median * 1000:.0f} ms "
          f"(min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f}, {len(times)} runs); "
          f"target < 500 ms: {'met' if median < 0.5 else 'NOT met'}")  # fmt: skip


def report(title: str, records: int, nbytes: int, raw: list[float], kt: list[float],
           baseline: str, target: float | None) -> None:  # fmt: skip
    """Print both sides' rates and their ratio; `target` None: a ratio shown for scale."""
    raw_s, kt_s = statistics.median(raw), statistics.median(kt)
    ratio = raw_s / kt_s
    print(f"{title}: {records} records, {nbytes / 1e6:.1f} MB")
    for name, seconds in ((baseline, raw_s), ("kt", kt_s)):
        print(
            f"  {name:12s} {records / seconds:12,.0f} records/s {nbytes / seconds / 1e6:8.1f} MB/s"
        )
    verdict = ""
    if target is not None:
        verdict = f" (target >= {target:.0%}: {'met' if ratio >= target else 'NOT met'})"
    print(f"  kt / {baseline} = {ratio:.0%}{verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("which", nargs="*", choices=["produce", "consume", "startup", []])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    which = args.which or ["produce", "consume", "startup"]
    work = Path(tempfile.mkdtemp(prefix="kt-bench-"))
    try:
        if "produce" in which:
            bench_produce(args.records, args.repeat, work)
        if "consume" in which:
            bench_consume(args.records, args.repeat, work)
        if "startup" in which:
            bench_startup(args.repeat, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
