"""`kt dump-log` on a segment that confluent-kafka's records went into.

The test reads the segment's batch headers itself (the 61-byte v2 header, unpacked
with its own struct) and expects kafka-dump-log.sh's lines for exactly those batches,
and, with --print-data-log, one `| offset: ...` line per record it sent.
"""

from __future__ import annotations

import struct

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.conftest import kt_ok

pytestmark = pytest.mark.slow

# baseOffset batchLength partitionLeaderEpoch magic crc attributes lastOffsetDelta
# baseTimestamp maxTimestamp producerId producerEpoch baseSequence recordsCount
BATCH_HEADER = struct.Struct(">qiibIhiqqqhii")
CODEC_NAMES = ["none", "gzip", "snappy", "lz4", "zstd"]
T0 = 1_700_000_000_000


def batch_lines(segment: bytes) -> list[tuple[int, int, str]]:
    """(base offset, last offset, dump-log line) for each batch of the segment."""
    out = []
    position = 0
    while position < len(segment):
        (base, length, epoch, magic, crc, attributes, last_delta, _, max_ts, pid, pepoch,
         base_seq, count) = BATCH_HEADER.unpack_from(segment, position)  # fmt: skip
        size = length + 12
        last_seq = base_seq + last_delta if base_seq >= 0 else -1
        line = (
            f"baseOffset: {base} lastOffset: {base + last_delta} count: {count} "
            f"baseSequence: {base_seq} lastSequence: {last_seq} producerId: {pid} "
            f"producerEpoch: {pepoch} partitionLeaderEpoch: {epoch} isTransactional: false "
            f"isControl: false deleteHorizonMs: OptionalLong.empty position: {position} "
            f"CreateTime: {max_ts} size: {size} magic: {magic} "
            f"compresscodec: {CODEC_NAMES[attributes & 7]} crc: {crc} isvalid: true"
        )
        out.append((base, base + last_delta, line))
        position += size
    assert position == len(segment)
    return out


def test_dump_log_of_a_confluent_kafka_segment(module_broker) -> None:
    admin = AdminClient({"bootstrap.servers": module_broker.bootstrap})
    admin.create_topics([NewTopic("dumped", 1, 1)])["dumped"].result(timeout=30)
    producer = Producer(
        {
            "bootstrap.servers": module_broker.bootstrap,
            "enable.idempotence": True,
            "compression.type": "gzip",
            "linger.ms": 50,
        }
    )
    # Twenty alike records compress well (one gzip batch); a lone short record does not,
    # and librdkafka then sends it uncompressed.
    for i in range(20):
        producer.produce("dumped", key=f"k{i}", value=f"value-{i:02d}" * 4,
                         headers=[("trace", b"1"), ("src", b"x")], timestamp=T0 + i)  # fmt: skip
    assert producer.flush(30) == 0
    producer.produce("dumped", value=b"solo", timestamp=T0 + 99)
    assert producer.flush(30) == 0

    segment = module_broker.log_dir / "dumped-0" / "00000000000000000000.log"
    batches = batch_lines(segment.read_bytes())
    assert [(first, last) for first, last, _ in batches] == [(0, 19), (20, 20)]
    assert "compresscodec: gzip" in batches[0][2]
    assert "baseSequence: 0 lastSequence: 19" in batches[0][2]
    assert "baseSequence: 20 lastSequence: 20" in batches[1][2]

    records = [
        f"| offset: {i} CreateTime: {T0 + i} keySize: {len(f'k{i}')} valueSize: 32 "
        f"sequence: {i} headerKeys: [trace,src] key: k{i} payload: {f'value-{i:02d}' * 4}"
        for i in range(20)
    ] + [
        f"| offset: 20 CreateTime: {T0 + 99} keySize: -1 valueSize: 4 sequence: 20 "
        "headerKeys: [] payload: solo"
    ]
    assert kt_ok("dump-log", "--files", str(segment), "--print-data-log") == [
        f"Dumping {segment}",
        "Log starting offset: 0",
        batches[0][2],
        *records[:20],
        batches[1][2],
        records[20],
    ]
    # Without --print-data-log: the batch lines only.
    assert kt_ok("dump-log", "--files", str(segment)) == [
        f"Dumping {segment}",
        "Log starting offset: 0",
        batches[0][2],
        batches[1][2],
    ]


def test_a_topic_codec_rewrites_what_the_producer_sent(module_broker) -> None:
    """compression.type=zstd on the topic: confluent-kafka's uncompressed batches are
    written as zstd (as Kafka's broker recompresses), sequences kept, and every record
    reads back as sent."""
    from confluent_kafka import Consumer, TopicPartition

    admin = AdminClient({"bootstrap.servers": module_broker.bootstrap})
    topic = NewTopic("recompressed", 1, 1, config={"compression.type": "zstd",
                                                   "compression.zstd.level": "10"})  # fmt: skip
    admin.create_topics([topic])["recompressed"].result(timeout=30)
    producer = Producer({"bootstrap.servers": module_broker.bootstrap,
                         "enable.idempotence": True, "linger.ms": 50})  # fmt: skip
    for i in range(20):
        producer.produce("recompressed", value=f"value-{i:02d}" * 4, timestamp=T0 + i)
    assert producer.flush(30) == 0
    segment = module_broker.log_dir / "recompressed-0" / "00000000000000000000.log"
    [(first, last, line)] = batch_lines(segment.read_bytes())
    assert (first, last) == (0, 19)
    assert "compresscodec: zstd" in line and "baseSequence: 0 lastSequence: 19" in line
    consumer = Consumer({"bootstrap.servers": module_broker.bootstrap, "group.id": "zstd"})
    consumer.assign([TopicPartition("recompressed", 0, 0)])
    read = []
    while len(read) < 20:
        for msg in consumer.consume(20, timeout=10):
            assert msg.error() is None, msg.error()
            read.append(msg.value().decode())
    consumer.close()
    assert read == [f"value-{i:02d}" * 4 for i in range(20)]
