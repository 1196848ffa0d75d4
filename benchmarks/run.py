"""Every benchmark scenario of kt, in one run and one table.

  python benchmarks/run.py [scenario ...] [--records 1000000] [--repeat 3] [--quick]

Each kt figure stands beside a baseline measured in the same run, and against the target
that issue 18 sets for this 2-core machine (100-byte records):

  produce      librdkafka producer processes, acks=1 and acks=all, one partition, beside a
               raw sink (a socket server that appends each Produce frame to a file and
               answers it); then spread over 1,000 partitions, beside one partition.
  replication  acks=all with replication factor 3 on a 3-broker cluster, beside RF 1 on
               the same brokers: embedded (one process), and three processes on Debian's
               ZooKeeper where it is installed.
  consume      the Fetch loop, and `kt consumer-perf-test`, beside os.sendfile of the same
               segment to a reader over loopback.
  latency      end to end at 10,000 records/s: `kt producer-perf-test` stamps each record
               as it sends it (in whole ms), a librdkafka consumer subtracts that from its
               clock as it receives the record.
  connections  produce p99 (Produce requests of one 10-record batch, one after another on
               one connection, each timed) and the broker's RSS, without and with 10,000
               idle connections; 1,000 connections producing a batch each at once, beside
               the same 1,000 batches on one connection.
  scale        CreateTopics of 1,000 topics in one request; 10,000 partitions: Metadata
               for all of them, RSS, and start-up after a clean shutdown beside start-up
               with no logs.
  recovery     start-up with a 1 GiB active segment and no clean-shutdown marker, beside
               reading the same file and computing its CRC-32C.

Benchmarks stay out of the test suite's pass/fail: the table says "met" or "NOT met".
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import selectors
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from confluent_kafka import Consumer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from benchmarks import broker as b  # noqa: E402
from benchmarks import replication  # noqa: E402
from benchmarks.storage_append import make_batch, restamp  # noqa: E402
from benchmarks.storage_recovery import raw_whole  # noqa: E402
from kt.protocol import ApiKey, decode_response, encode_request  # noqa: E402
from kt.protocol import messages as m  # noqa: E402

RSS_LINE = re.compile(rb"VmRSS:\s+(\d+) kB")
# The brokers' `ulimit -n`, as Kafka's docs ask an operator to set it for many partitions
# (a segment holds up to three descriptors: its log, and the maps of its two indexes).
OPEN_FILES = 100_000


@dataclass
class Row:
    scenario: str
    kt: float
    unit: str
    baseline_name: str = ""
    baseline: float | None = None
    target: str = ""
    met: bool | None = None

    @property
    def ratio(self) -> str:
        if self.baseline is None or not self.baseline:
            return ""
        return f"{self.kt / self.baseline:.0%}"


def rss_mb(pid: int) -> float:
    match = RSS_LINE.search(Path(f"/proc/{pid}/status").read_bytes())
    return int(match.group(1)) / 1024 if match else float("nan")


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return ""
    if unit == "rec/s":
        return f"{value / 1e6:.2f} M rec/s"
    if unit == "MB/s":
        return f"{value:.0f} MB/s"
    if unit == "ms":
        return f"{value:.2f} ms" if value < 10 else f"{value:.0f} ms"
    if unit == "MB":
        return f"{value:.0f} MB"
    return f"{value:g} {unit}"


# -- produce --------------------------------------------------------------------------


def produce(args: argparse.Namespace, work: Path) -> list[Row]:
    import multiprocessing

    records = args.records - args.records % 2
    parent, child = multiprocessing.Pipe()
    sink = multiprocessing.Process(target=b.sink_main, args=(child, str(work / "sink.bin")))
    sink.start()
    sink_bootstrap = f"127.0.0.1:{parent.recv()}"
    rates: dict[str, list[float]] = {k: [] for k in ("sink", "acks1", "acksall", "wide")}
    try:
        with b.KtBroker(work / "produce") as kt:
            assert kt.proc is not None
            admin = AdminClient({"bootstrap.servers": kt.bootstrap})
            topics = [NewTopic(b.TOPIC, 1, 1), NewTopic("wide", 1000, 1)]
            for future in admin.create_topics(topics).values():
                future.result(60)
            runs: dict[str, tuple[str, int, str, str]] = {
                "sink": (sink_bootstrap, sink.pid, "1", b.TOPIC),
                "acks1": (kt.bootstrap, kt.proc.pid, "1", b.TOPIC),
                "acksall": (kt.bootstrap, kt.proc.pid, "all", b.TOPIC),
                "wide": (kt.bootstrap, kt.proc.pid, "1", "wide"),
            }
            for bootstrap, pid, acks, topic in runs.values():  # warm-ups
                b.parallel_produce(bootstrap, records // 4, 2, pid, acks, topic)
            for _ in range(args.repeat):
                for name, (bootstrap, pid, acks, topic) in runs.items():
                    seconds, _ = b.parallel_produce(bootstrap, records, 2, pid, acks, topic)
                    rates[name].append(records / seconds)
    finally:
        sink.terminate()
    sink_rate, acks1, acksall, wide = (statistics.median(rates[k]) for k in rates)
    return [
        Row("produce acks=1, 1 partition", acks1, "rec/s", "raw sink", sink_rate,
            ">= 1.5 M rec/s", acks1 >= 1.5e6),
        Row("produce acks=all, 1 partition", acksall, "rec/s", "raw sink", sink_rate),
        Row("produce acks=1, 1,000 partitions", wide, "rec/s", "1 partition", acks1,
            ">= 70 % of 1 partition", wide >= 0.7 * acks1),
    ]  # fmt: skip


# -- replication ----------------------------------------------------------------------


def replicated(args: argparse.Namespace, work: Path) -> list[Row]:
    from kt.testing.zookeeper import zookeeper_installed

    rows = []
    stores = ["embedded"] + (["zookeeper"] if zookeeper_installed() else [])
    for store in stores:
        rf1, rf3 = replication.throughput(store, args.records // 2, args.repeat)
        target = ">= 50 % of RF 1" if store == "embedded" else ""
        met = rf3 >= 0.5 * rf1 if store == "embedded" else None
        rows.append(Row(f"produce acks=all RF 3, 3 brokers ({store})", rf3, "rec/s",
                        "RF 1", rf1, target, met))  # fmt: skip
    return rows


# -- consume --------------------------------------------------------------------------


PERF_FINAL = re.compile(r".*, (\d+), [\d.]+, (\d+), (-?\d+), ([\d.]+), ([\d.]+)")


def consume(args: argparse.Namespace, work: Path) -> list[Row]:
    records = args.records
    with b.KtBroker(work / "consume") as kt:
        b.create_topic(kt.bootstrap)
        b.librdkafka_produce(kt.bootstrap, records)
        (segment,) = sorted((work / "consume" / f"{b.TOPIC}-0").glob("*.log"))
        size_mb = segment.stat().st_size / 1e6
        b.sendfile_read(segment, 1), b.fetch_loop(kt.port, records), consumer_perf(kt, records)
        raw, fetch, perf = [], [], []
        for _ in range(args.repeat):
            raw.append(size_mb / b.sendfile_read(segment, 1))
            fetch.append(size_mb / b.fetch_loop(kt.port, records))
            perf.append(consumer_perf(kt, records))
    sendfile = statistics.median(raw)
    perf_records = statistics.median(r for r, _ in perf)
    perf_mb = statistics.median(s for _, s in perf)
    return [
        Row("consume: Fetch loop (segment bytes)", statistics.median(fetch), "MB/s",
            "os.sendfile", sendfile, ">= 50 % of sendfile",
            statistics.median(fetch) >= 0.5 * sendfile),
        Row("consume: kt consumer-perf-test", perf_records, "rec/s", "", None,
            ">= 2 M rec/s", perf_records >= 2e6),
        Row("consume: kt consumer-perf-test (segment bytes)", perf_mb, "MB/s", "os.sendfile",
            sendfile),
    ]  # fmt: skip


def consumer_perf(kt: b.KtBroker, records: int) -> tuple[float, float]:
    """(records/s, segment MB/s) over the tool's fetch time, from its final line."""
    out = subprocess.run(
        [sys.executable, "-m", "kt", "consumer-perf-test", "--bootstrap-server", kt.bootstrap,
         "--topic", b.TOPIC, "--messages", str(records), "--hide-header"],
        capture_output=True, text=True, check=True, timeout=300,
    ).stdout.splitlines()  # fmt: skip
    match = PERF_FINAL.fullmatch(out[-1])
    assert match, out
    consumed, fetch_ms = int(match.group(1)), int(match.group(3))
    segment = next((kt.log_dir / f"{b.TOPIC}-0").glob("*.log")).stat().st_size
    return consumed / (fetch_ms / 1000), segment / 1e6 / (fetch_ms / 1000)


# -- latency and connections ----------------------------------------------------------


def latency(args: argparse.Namespace, work: Path) -> list[Row]:
    """End to end: producer-perf-test's CreateTime to a librdkafka consumer's clock."""
    seconds = 5 if args.quick else 20
    with b.KtBroker(work / "latency") as kt:
        b.create_topic(kt.bootstrap)
        consumer = Consumer({"bootstrap.servers": kt.bootstrap, "group.id": "latency",
                             "auto.offset.reset": "latest", "fetch.wait.max.ms": 100,
                             "fetch.error.backoff.ms": 10})  # fmt: skip
        consumer.assign([TopicPartition(b.TOPIC, 0, -1)])  # from the end
        consumer.poll(1)
        producer = subprocess.Popen(
            [sys.executable, "-m", "kt", "producer-perf-test", "--topic", b.TOPIC,
             "--num-records", str(10_000 * seconds), "--record-size", "100", "--throughput",
             "10000", "--producer-props", f"bootstrap.servers={kt.bootstrap}", "acks=1",
             "linger.ms=0"],
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        delays: list[float] = []
        deadline = time.time() + seconds + 30
        while len(delays) < 10_000 * seconds and time.time() < deadline:
            msg = consumer.poll(0.1)  # one at a time: consume(n) would wait for n
            if msg is not None and msg.error() is None:
                delays.append(time.time() * 1000 - msg.timestamp()[1])
        producer.wait(60)
        consumer.close()
    delays.sort()
    p50, p99, p999 = (delays[int(q * (len(delays) - 1))] for q in (0.5, 0.99, 0.999))
    return [
        Row("end-to-end latency p50 at 10,000 rec/s", p50, "ms"),
        Row("end-to-end latency p99", p99, "ms", target="<= 5 ms", met=p99 <= 5),
        Row("end-to-end latency p99.9", p999, "ms", target="<= 20 ms", met=p999 <= 20),
    ]


def connections(args: argparse.Namespace, work: Path) -> list[Row]:
    idle = 2000 if args.quick else 10_000
    requests = 2000 if args.quick else 10_000
    with b.KtBroker(work / "connections") as kt:
        assert kt.proc is not None
        b.create_topic(kt.bootstrap)
        produce_round_trips(kt.port, 1000)  # warm-up
        rss_before = rss_mb(kt.proc.pid)
        p99_before = produce_round_trips(kt.port, requests)
        sockets = open_idle(kt.port, idle)
        try:
            rss_idle = rss_mb(kt.proc.pid)
            p99_idle = produce_round_trips(kt.port, requests)
        finally:
            for sock in sockets:
                sock.close()
        burst_ms, one_ms, rss_burst = produce_burst(kt, 1000)
    return [
        Row(f"produce p99 with {idle:,} idle connections", p99_idle, "ms", "without them",
            p99_before, "within 2x", p99_idle <= 2 * p99_before),
        Row(f"broker RSS with {idle:,} idle connections", rss_idle, "MB", "without them",
            rss_before),
        Row("1,000 connections, a 100-record batch each at once", burst_ms, "ms",
            "1 connection, 1,000 batches", one_ms),
        Row("broker RSS after 1,000 producing connections", rss_burst, "MB", "at start",
            rss_before),
    ]  # fmt: skip


def produce_round_trips(port: int, requests: int) -> float:
    """p99 ms of one-batch Produce requests (10 records, acks=1) sent one after another
    on one connection, each timed from send to answer."""
    frame = produce_frame(1, make_batch(10 * 110, 100))
    times, receive = [], b.ReceiveBuffer()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(requests):
            start = time.perf_counter()
            sock.sendall(frame)
            receive.frame(sock)
            times.append(time.perf_counter() - start)
    times.sort()
    return times[int(0.99 * (len(times) - 1))] * 1000


def open_idle(port: int, count: int) -> list[socket.socket]:
    """`count` connections that send nothing, each accepted by the broker (raising this
    process's open files limit to its hard limit first)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    sockets = []
    for _ in range(count):
        sockets.append(socket.create_connection(("127.0.0.1", port), timeout=30))
    # One request on the last one: answered only when the broker has accepted them all.
    assert b.api_versions_answered(port)
    return sockets


def produce_frame(correlation_id: int, batch: bytes) -> bytes:
    R = m.ProduceRequest
    data = R.TopicProduceData(
        name=b.TOPIC, partition_data=[R.PartitionProduceData(index=0, records=batch)]
    )
    request = R(acks=1, timeout_ms=30000, topic_data=[data])
    return encode_request(ApiKey.PRODUCE, 7, correlation_id, "bench", request)


def produce_burst(kt: b.KtBroker, count: int) -> tuple[float, float, float]:
    """(ms for `count` connections each to send one Produce at once and all be answered,
    ms for the same requests pipelined on one connection, broker RSS MB after)."""
    assert kt.proc is not None
    batch = make_batch(100 * 110, 100)
    frames = [produce_frame(i + 1, batch) for i in range(count)]
    sockets = [socket.create_connection(("127.0.0.1", kt.port), timeout=30) for _ in frames]
    try:
        start = time.perf_counter()
        for sock, frame in zip(sockets, frames, strict=True):
            sock.sendall(frame)
        read_answers(sockets, 1)
        burst = time.perf_counter() - start
    finally:
        for sock in sockets:
            sock.close()
    with socket.create_connection(("127.0.0.1", kt.port), timeout=30) as sock:
        start = time.perf_counter()
        sock.sendall(b"".join(frames))
        read_answers([sock], count)
        one = time.perf_counter() - start
    return burst * 1000, one * 1000, rss_mb(kt.proc.pid)


def read_answers(sockets: list[socket.socket], each: int) -> None:
    """Read `each` Produce answers from every socket, checking each one's error code."""
    selector = selectors.DefaultSelector()
    pending = {}
    for sock in sockets:
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
        pending[sock] = [bytearray(), each]
    while pending:
        for key, _ in selector.select(30):
            sock = key.fileobj
            state = pending[sock]
            state[0] += sock.recv(1 << 20)
            while len(state[0]) >= 4:
                size = struct.unpack_from(">i", state[0])[0]
                if len(state[0]) < 4 + size:
                    break
                _, body = decode_response(ApiKey.PRODUCE, 7, bytes(state[0][4 : 4 + size]))
                assert body.responses[0].partition_responses[0].error_code == 0
                del state[0][: 4 + size]
                state[1] -= 1
            if state[1] == 0:
                selector.unregister(sock)
                del pending[sock]


# -- scale ----------------------------------------------------------------------------


def scale(args: argparse.Namespace, work: Path) -> list[Row]:
    partitions = 2000 if args.quick else 10_000
    overrides = {"num.partitions": "1"}
    with b.KtBroker(work / "scale", overrides=overrides, open_files=OPEN_FILES) as kt:
        assert kt.proc is not None
        create_ms = create_topics(kt.port, [f"t{i}" for i in range(1000)], 1)
        create_topics(kt.port, [f"wide{i}" for i in range(partitions // 1000)], 1000)
        metadata_ms, count = metadata_time(kt.port)
        assert count == partitions + 1000, count
        rss = rss_mb(kt.proc.pid)
    started_full = time_to_ready(work / "scale", overrides)
    started_empty = time_to_ready(work / "empty", overrides)
    total = partitions + 1000
    return [
        Row("CreateTopics of 1,000 topics (one request)", create_ms, "ms"),
        Row(f"Metadata for all {total:,} partitions", metadata_ms, "ms", target="< 50 ms",
            met=metadata_ms < 50),
        Row(f"broker RSS with {total:,} partitions", rss, "MB", target="< 300 MB", met=rss < 300),
        Row(f"ready after a clean shutdown, {total:,} partitions", started_full * 1000, "ms",
            "no logs", started_empty * 1000, "< 3 s", started_full < 3),
    ]  # fmt: skip


def create_topics(port: int, names: list[str], partitions: int) -> float:
    R = m.CreateTopicsRequest
    request = R(timeout_ms=120_000, validate_only=False, topics=[
        R.CreatableTopic(name=name, num_partitions=partitions, replication_factor=1,
                         assignments=[], configs=[]) for name in names])  # fmt: skip
    with socket.create_connection(("127.0.0.1", port), timeout=300) as sock:
        start = time.perf_counter()
        sock.sendall(encode_request(ApiKey.CREATE_TOPICS, 5, 1, "bench", request))
        _, body = decode_response(ApiKey.CREATE_TOPICS, 5, b.ReceiveBuffer().frame(sock))
        elapsed = time.perf_counter() - start
    errors = {t.name: t.error_message for t in body.topics if t.error_code}
    assert not errors, list(errors.items())[:3]
    return elapsed * 1000


def metadata_time(port: int) -> tuple[float, int]:
    """(median ms of 20 Metadata requests for every topic, partitions in the answer)."""
    frame = encode_request(ApiKey.METADATA, 9, 1, "bench", m.MetadataRequest(topics=None))
    times, receive = [], b.ReceiveBuffer()
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        for _ in range(21):
            start = time.perf_counter()
            sock.sendall(frame)
            payload = bytes(receive.frame(sock))
            times.append(time.perf_counter() - start)
    _, body = decode_response(ApiKey.METADATA, 9, payload)
    return statistics.median(times[1:]) * 1000, sum(len(t.partitions) for t in body.topics)


def time_to_ready(log_dir: Path, overrides: dict[str, str]) -> float:
    """Seconds from spawning `kt server-start` on `log_dir` to its first ApiVersions
    answer (the logs are loaded before the listener opens), then a clean shutdown."""
    kt = b.KtBroker(log_dir, overrides=overrides, open_files=OPEN_FILES)
    start = time.perf_counter()
    kt.spawn()
    assert kt.proc is not None
    try:
        while not b.api_versions_answered(kt.port):
            if kt.proc.poll() is not None or time.perf_counter() - start > 120:
                raise RuntimeError("kt server-start did not get ready")
            time.sleep(0.005)
        return time.perf_counter() - start
    finally:
        kt.proc.terminate()
        kt.proc.wait(120)


# -- recovery -------------------------------------------------------------------------


def recovery(args: argparse.Namespace, work: Path) -> list[Row]:
    """A 1 GiB active segment written through kt.storage as the broker writes it, with
    the clean-shutdown marker gone: the next start recovers (size and CRC of) every batch."""
    from kt.config import LogConfig
    from kt.storage.log import Log
    from kt.storage.names import CLEAN_SHUTDOWN_FILE_NAME

    size = (256 if args.quick else 1024) << 20
    overrides = {"log.segment.bytes": str(2**31 - 1)}  # the largest: one segment
    log_dir = work / "recovery"
    with b.KtBroker(log_dir, overrides=overrides) as kt:
        b.create_topic(kt.bootstrap)
    directory = log_dir / f"{b.TOPIC}-0"
    log = Log(str(directory), LogConfig(segment_bytes=2**31 - 1))
    data = memoryview(bytearray(make_batch(16 * 1024, 100)))
    timestamp = int(time.time() * 1000)
    while log.size < size:
        timestamp = restamp(data, timestamp)
        log.append_as_leader(data, leader_epoch=0)
    log.close_handlers()  # as a crash leaves it
    (log_dir / CLEAN_SHUTDOWN_FILE_NAME).unlink(missing_ok=True)
    (segment,) = directory.glob("*.log")
    raw_whole(str(segment))  # the file in the page cache for both sides
    raw = raw_whole(str(segment))
    ready = time_to_ready(log_dir, overrides)
    gib = segment.stat().st_size / (1 << 30)
    return [
        Row(f"ready after a crash, {gib:.2f} GiB active segment", ready * 1000, "ms",
            "read + CRC-32C of it", raw * 1000, "< 5 s", ready < 5),
    ]  # fmt: skip


SCENARIOS: dict[str, Callable[[argparse.Namespace, Path], list[Row]]] = {
    "produce": produce,
    "replication": replicated,
    "consume": consume,
    "latency": latency,
    "connections": connections,
    "scale": scale,
    "recovery": recovery,
}


def machine() -> str:
    cpus = os.cpu_count()
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / (1 << 30)
    model = next((line.split(":", 1)[1].strip() for line in
                  Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), "?")  # fmt: skip
    return f"{cpus} cores ({model}), {memory:.0f} GiB, Python {sys.version.split()[0]}"


def print_table(rows: list[Row]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"kt benchmarks: {machine()}")
    for column in ("scenario", "kt", "baseline", "kt/baseline", "target", ""):
        table.add_column(column)
    for row in rows:
        baseline = (
            f"{row.baseline_name}: {fmt(row.baseline, row.unit)}" if row.baseline_name else ""
        )
        verdict = "" if row.met is None else ("met" if row.met else "NOT met")
        table.add_row(row.scenario, fmt(row.kt, row.unit), baseline, row.ratio, row.target,
                      verdict)  # fmt: skip
    Console(width=160).print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", help=f"some of: {', '.join(SCENARIOS)}")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="smaller scales, for a try")
    args = parser.parse_args()
    unknown = set(args.scenarios) - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenarios: {', '.join(sorted(unknown))}")
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        for name in args.scenarios or SCENARIOS:
            print(f"running {name} ...", file=sys.stderr, flush=True)
            work = Path(tmp) / name
            work.mkdir()
            rows += SCENARIOS[name](args, work)
            shutil.rmtree(work, ignore_errors=True)
    print_table(rows)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    main()
