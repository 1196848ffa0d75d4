"""The broker end to end: librdkafka through `kt server-start` beside raw baselines.

  python benchmarks/broker.py [produce] [consume] [startup] [--records 300000] [--repeat 3]

produce  librdkafka (confluent-kafka) producers in --producers processes (enough to keep
         the server busy: one client alone is the bottleneck), acks=1, 100-byte values,
         no compression, into one partition of kt, beside a raw sink run in the same
         way: a plain socket server in its own process that answers ApiVersions and
         Metadata, appends each Produce frame's bytes to a file and answers it with a
         ProduceResponse built with kt.protocol (base offsets from the batches' record
         counts). Also the server processes' CPU seconds per million records, read
         from /proc. Target: kt >= 50 % of the sink's records/s. --slow-produce-ms
         sleeps in kt's Produce handler, to show that the ratio falls when kt is slow.
consume  reading the records back from kt beside os.sendfile of the same segment file
         to a reader over loopback, as segment bytes per second: a consumer's Fetch
         loop (what the broker serves; target >= 50 % of sendfile), in at least 5
         alternating pairs of passes of >= 1 s of work each, connected before the clock
         starts (median and spread of the pairs' ratios), and the librdkafka consumer
         through confluent-kafka (end to end: librdkafka's parsing and one Python
         object per record included).
startup  time from spawning `kt server-start` (fresh log dir) to the first answered
         ApiVersions request; median of --repeat * 3 runs. Target: < 0.5 s.

The two sides of a ratio run alternately, `--repeat` times each after one untimed
warm-up of each, on the same machine load; figures are medians.
"""

from __future__ import annotations

import argparse
import math
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Extra broker settings to compare, e.g. KT_BENCH_OVERRIDES=socket.send.buffer.bytes=-1
EXTRA_OVERRIDES = [o for o in os.environ.get("KT_BENCH_OVERRIDES", "").split(",") if o]


# `kt` with its Produce handler slowed by a sleep, to show that the benchmark can lose.
SLOW_PRODUCE = """
import time
from kt.broker.api import kafka_apis
from kt.cli import main
from kt.protocol import ApiKey
produce = kafka_apis.HANDLERS[ApiKey.PRODUCE]
async def slowed(*args):
    time.sleep({seconds})
    return await produce(*args)
kafka_apis.HANDLERS[ApiKey.PRODUCE] = slowed
main()
"""
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` so far (/proc/<pid>/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


class KtBroker:
    """`kt server-start` in a child process on a free port and a fresh log dir."""

    def __init__(
        self, log_dir: Path, slow_produce_ms: float = 0.0, overrides: dict[str, str] | None = None,
        open_files: int | None = None,
    ) -> None:  # fmt: skip
        self.open_files = open_files  # ulimit -n for the broker, as an operator sets it
        self.log_dir = log_dir
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        self.slow_produce_ms = slow_produce_ms
        self.overrides = [f"{k}={v}" for k, v in (overrides or {}).items()] + EXTRA_OVERRIDES

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def spawn(self) -> None:
        entry = ["-m", "kt"]
        if self.slow_produce_ms:  # a benchmark that can lose: a sleep in the handler
            entry = ["-c", SLOW_PRODUCE.format(seconds=self.slow_produce_ms / 1000)]
        self.proc = subprocess.Popen(
            [sys.executable, *entry, "server-start",
             "--override", f"listeners=PLAINTEXT://127.0.0.1:{self.port}",
             "--override", f"log.dirs={self.log_dir}",
             *[a for o in self.overrides for a in ("--override", o)]],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            preexec_fn=self._limits if self.open_files else None,
        )  # fmt: skip

    def _limits(self) -> None:
        import resource

        try:  # raising the hard limit needs root (CAP_SYS_RESOURCE); else keep it
            resource.setrlimit(resource.RLIMIT_NOFILE, (self.open_files, self.open_files))
        except (ValueError, OSError):
            pass

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


def librdkafka_produce(
    bootstrap: str, records: int, acks: str = "1", config: dict | None = None
) -> float:
    """Seconds to produce and get `acks` for `records` 100-byte values (`config`: more
    client settings, security.protocol and the like)."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5,
                         "enable.idempotence": False, "compression.type": "none",
                         **(config or {})})  # fmt: skip
    producer.list_topics(TOPIC, timeout=30)  # connect and learn the leader before timing
    start = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(TOPIC, VALUE)
                break
            except BufferError:  # the local queue is full: serve delivery reports
                producer.poll(0.01)
    if producer.flush(120) != 0:
        raise RuntimeError("records left unsent")
    return time.perf_counter() - start


def create_topic(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(timeout=30)


def _producer_process(bootstrap: str, records: int, acks: str, start, out, topic: str) -> None:
    """One producer process: connect, wait for the others, produce; report its clock."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5,
                         "enable.idempotence": False, "compression.type": "none"})  # fmt: skip
    producer.list_topics(topic, timeout=30)
    start.wait()
    began = time.perf_counter()  # CLOCK_MONOTONIC: the same clock in every process
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, VALUE)
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(120) != 0:
        raise RuntimeError("records left unsent")
    out.put((began, time.perf_counter()))


def parallel_produce(bootstrap: str, records: int, producers: int, pid: int,
                     acks: str = "1", topic: str = TOPIC) -> tuple[float, float]:  # fmt: skip
    """(wall seconds, server CPU seconds) for `producers` processes producing `records`
    between them into the server whose process is `pid`."""
    ctx = multiprocessing.get_context("spawn")  # no librdkafka threads forked
    start, out = ctx.Barrier(producers + 1), ctx.Queue()
    share = records // producers
    args = (bootstrap, share, acks, start, out, topic)
    children = [ctx.Process(target=_producer_process, args=args) for _ in range(producers)]
    for child in children:
        child.start()
    start.wait(60)
    cpu = cpu_seconds(pid)
    spans = [out.get(timeout=300) for _ in children]
    cpu = cpu_seconds(pid) - cpu
    for child in children:
        child.join(30)
    return max(e for _, e in spans) - min(b for b, _ in spans), cpu


def bench_produce(records: int, repeat: int, work: Path, producers: int,
                  slow_produce_ms: float) -> None:  # fmt: skip
    parent, child = multiprocessing.Pipe()
    sink = multiprocessing.Process(target=sink_main, args=(child, str(work / "sink.bin")))
    sink.start()
    sink_bootstrap = f"127.0.0.1:{parent.recv()}"
    raw, kt, raw_cpu, kt_cpu = [], [], [], []
    records -= records % producers
    try:
        with KtBroker(work / "produce-logs", slow_produce_ms) as broker:
            assert broker.proc is not None
            create_topic(broker.bootstrap)
            sides = ((sink_bootstrap, sink.pid, raw, raw_cpu),
                     (broker.bootstrap, broker.proc.pid, kt, kt_cpu))  # fmt: skip
            for bootstrap, pid, _, _ in sides:  # warm-ups
                parallel_produce(bootstrap, records // 4, producers, pid)
            for _ in range(repeat):
                for bootstrap, pid, times, cpus in sides:
                    seconds, cpu = parallel_produce(bootstrap, records, producers, pid)
                    times.append(seconds)
                    cpus.append(cpu)
    finally:
        sink.terminate()
    slowed = f", Produce handler slowed by {slow_produce_ms:g} ms" if slow_produce_ms else ""
    report(f"produce (librdkafka x{producers} processes, acks=1, 100 B values{slowed})",
           records, records * len(VALUE), raw, kt, "raw sink", 0.5)  # fmt: skip
    sink_per_m, kt_per_m = (statistics.median(c) / records * 1e6 for c in (raw_cpu, kt_cpu))
    busy = statistics.median(kt_cpu) / statistics.median(kt)
    print(f"  server CPU per million records: raw sink {sink_per_m:.2f} s, kt {kt_per_m:.2f} s "
          f"(kt busy {busy:.0%} of one core)")  # fmt: skip


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


def sendfile_read(path: Path, passes: int) -> float:
    """Seconds to os.sendfile `path`, `passes` times over, to a reader on loopback; both
    ends are connected before the clock starts."""
    size = path.stat().st_size
    server = socket.create_server(("127.0.0.1", 0))
    ready = threading.Barrier(2)

    def serve() -> None:
        conn, _ = server.accept()
        with conn, open(path, "rb") as f:
            ready.wait()
            for _ in range(passes):
                offset = 0
                while offset < size:
                    offset += os.sendfile(conn.fileno(), f.fileno(), offset, size - offset)

    thread = threading.Thread(target=serve)
    thread.start()
    with socket.create_connection(server.getsockname()) as reader:
        buf = bytearray(1 << 20)
        got, total = 0, size * passes
        ready.wait()
        start = time.perf_counter()
        while got < total:
            n = reader.recv_into(buf)
            if not n:
                raise RuntimeError("sendfile reader: early end")
            got += n
        elapsed = time.perf_counter() - start
    thread.join()
    server.close()
    return elapsed


def fetch_loop(port: int, records: int, passes: int = 1) -> float:
    """Seconds for a consumer's Fetch loop to read `records` from offset 0, `passes`
    times over on one connection, connected before the clock starts.

    Fetch v12 with librdkafka's default sizes (1 MiB per partition, 50 MiB per
    response), one request in flight, each response read whole into one receive buffer
    that is reused (as the raw reader reuses its own) and its batches walked by header
    to find the next offset (no record decoding): what the broker serves, without a
    client library's per-record cost on top.
    """
    receive = ReceiveBuffer()
    with socket.create_connection(("127.0.0.1", port)) as sock:
        start = time.perf_counter()
        for _ in range(passes):
            _fetch_all(sock, receive, records)
        return time.perf_counter() - start


def _fetch_all(sock: socket.socket, receive: ReceiveBuffer, records: int) -> None:
    offset = 0
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
    """Pairs of (os.sendfile, Fetch loop) passes of at least 1 s of work each, alternating;
    the ratio of each pair, then their median and spread."""
    with KtBroker(work / "consume-logs") as broker:
        create_topic(broker.bootstrap)
        librdkafka_produce(broker.bootstrap, records)
        segments = sorted((work / "consume-logs" / f"{TOPIC}-0").glob("*.log"))
        assert len(segments) == 1, segments
        segment_bytes = segments[0].stat().st_size
        # Warm-ups, which also size the passes: each side reads the data often enough
        # to work for at least a second.
        raw_passes = max(1, math.ceil(1.0 / sendfile_read(segments[0], 1)))
        fetch_passes = max(1, math.ceil(1.0 / fetch_loop(broker.port, records)))
        librdkafka_consume(broker.bootstrap, records)
        raw, fetch, rdkafka = [], [], []
        for _ in range(max(repeat, 5)):
            raw.append(sendfile_read(segments[0], raw_passes) / raw_passes)
            fetch.append(fetch_loop(broker.port, records, fetch_passes) / fetch_passes)
        for _ in range(repeat):
            rdkafka.append(librdkafka_consume(broker.bootstrap, records))
    report("consume: Fetch loop (broker bound)", records, segment_bytes, raw, fetch,
           "os.sendfile", 0.5)  # fmt: skip
    ratios = sorted(r / f for r, f in zip(raw, fetch, strict=True))
    print(f"  kt / os.sendfile per pair ({len(ratios)} pairs of >= 1 s each, "
          f"{raw_passes} and {fetch_passes} passes): median {statistics.median(ratios):.0%}, "
          f"spread {ratios[0]:.0%}..{ratios[-1]:.0%}")  # fmt: skip
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
    for name, seconds, runs in ((baseline, raw_s, raw), ("kt", kt_s, kt)):
        spread = f"{records / max(runs):,.0f}..{records / min(runs):,.0f}"
        rate, mb = records / seconds, nbytes / seconds / 1e6
        print(f"  {name:12s} {rate:12,.0f} records/s {mb:8.1f} MB/s"
              f"  (spread {spread} over {len(runs)} runs)")  # fmt: skip
    verdict = ""
    if target is not None:
        verdict = f" (target >= {target:.0%}: {'met' if ratio >= target else 'NOT met'})"
    print(f"  kt / {baseline} = {ratio:.0%}{verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("which", nargs="*", choices=["produce", "consume", "startup", []])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--producers", type=int, default=3, help="producer processes loading the broker (produce)"
    )
    parser.add_argument(
        "--slow-produce-ms",
        type=float,
        default=0.0,
        help="sleep this long in kt's Produce handler: the ratio must fall",
    )
    args = parser.parse_args()
    which = args.which or ["produce", "consume", "startup"]
    work = Path(tempfile.mkdtemp(prefix="kt-bench-"))
    try:
        if "produce" in which:
            bench_produce(args.records, args.repeat, work, args.producers, args.slow_produce_ms)
        if "consume" in which:
            bench_consume(args.records, args.repeat, work)
        if "startup" in which:
            bench_startup(args.repeat, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
