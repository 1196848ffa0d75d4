"""`kt dump-log` output, line by line against DumpLogSegments' formats (Kafka 3.9).

The segment files are written straight into a tmp dir with Kafka's names; batches come
from kafka-python's builders, so expected crc/size/position values are computed from
kafka-python and the raw bytes, never from the code under test.
"""

from __future__ import annotations

import io
import struct
from pathlib import Path

import pytest
from click.testing import CliRunner
from crc32c import crc32c
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from kt.cli import cli
from kt.tools.dump_log import DumpLogOptions, dump_files
from kt.tools.dump_log_parsers import (
    decoder_parser,
    offsets_parser,
    transaction_log_parser,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # kafka-python

T0 = 1_700_000_000_000
SEGMENT = "00000000000000000000"


def kp_batch(base_offset: int, records: list[tuple], codec: int = 0) -> bytes:
    """A magic-2 batch from kafka-python, with the baseOffset a broker would stamp."""
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=0, producer_id=-1,
        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20,
    )  # fmt: skip
    for i, (ts, key, value, headers) in enumerate(records):
        builder.append(i, ts, key, value, headers)
    data = bytearray(builder.build())
    struct.pack_into(">q", data, 0, base_offset)  # outside the CRC, as the broker does
    return bytes(data)


def kp_legacy_wrapper(last_offset: int, records: list[tuple], codec: int) -> bytes:
    builder = LegacyRecordBatchBuilder(magic=1, compression_type=codec, batch_size=1 << 20)
    for i, (ts, key, value) in enumerate(records):
        builder.append(i, ts, key, value)
    data = bytearray(builder.build())
    struct.pack_into(">q", data, 0, last_offset)
    return bytes(data)


BATCH_A = kp_batch(0, [(T0, None, b"one", []), (T0 + 1, None, b"two", [])])
THREE = b"three" * 20  # long enough that kafka-python keeps the gzip codec
BATCH_B = kp_batch(2, [(T0 + 2, b"k", THREE, [("h", b"x"), ("trace", None)])], codec=1)
LEGACY = kp_legacy_wrapper(4, [(T0 + 3, b"a", b"old"), (T0 + 4, None, b"older")], codec=2)


def crc_of(batch: bytes) -> int:
    crc = DefaultRecordBatch(batch).crc
    assert crc == crc32c(batch[21:])  # kafka-python and the spec agree
    return crc


def v2_line(batch: bytes, base: int, last: int, count: int, position: int, max_ts: int,
            codec: str, valid: str = "true") -> str:  # fmt: skip
    return (
        f"baseOffset: {base} lastOffset: {last} count: {count} baseSequence: -1 "
        "lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 0 "
        "isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty "
        f"position: {position} CreateTime: {max_ts} size: {len(batch)} magic: 2 "
        f"compresscodec: {codec} crc: {crc_of(batch)} isvalid: {valid}"
    )


def dump(paths: list[Path], **options: object) -> tuple[list[str], list[str]]:
    out, err = io.StringIO(), io.StringIO()
    dump_files([str(p) for p in paths], DumpLogOptions(**options), out, err)
    return out.getvalue().splitlines(), err.getvalue().splitlines()


@pytest.fixture
def segment(tmp_path: Path) -> Path:
    log = tmp_path / f"{SEGMENT}.log"
    log.write_bytes(BATCH_A + BATCH_B)
    return log


def test_shallow_log_dump(segment: Path) -> None:
    out, err = dump([segment])
    assert out == [
        f"Dumping {segment}",
        "Log starting offset: 0",
        v2_line(BATCH_A, 0, 1, 2, 0, T0 + 1, "none"),
        v2_line(BATCH_B, 2, 2, 1, len(BATCH_A), T0 + 2, "gzip"),
    ]
    assert err == []


def test_deep_iteration_without_data(segment: Path) -> None:
    out, _ = dump([segment], deep_iteration=True)
    assert out[2:] == [
        v2_line(BATCH_A, 0, 1, 2, 0, T0 + 1, "none"),
        f"| offset: 0 CreateTime: {T0} keySize: -1 valueSize: 3 sequence: -1 headerKeys: []",
        f"| offset: 1 CreateTime: {T0 + 1} keySize: -1 valueSize: 3 sequence: -1 headerKeys: []",
        v2_line(BATCH_B, 2, 2, 1, len(BATCH_A), T0 + 2, "gzip"),
        f"| offset: 2 CreateTime: {T0 + 2} keySize: 1 valueSize: 100 sequence: -1 "
        "headerKeys: [h,trace]",
    ]


def test_print_data_log(segment: Path) -> None:
    out, _ = dump([segment], deep_iteration=True, print_data_log=True)
    assert out[3:5] == [
        f"| offset: 0 CreateTime: {T0} keySize: -1 valueSize: 3 sequence: -1 headerKeys: []"
        " payload: one",
        f"| offset: 1 CreateTime: {T0 + 1} keySize: -1 valueSize: 3 sequence: -1 headerKeys: []"
        " payload: two",
    ]
    assert out[6] == (
        f"| offset: 2 CreateTime: {T0 + 2} keySize: 1 valueSize: 100 sequence: -1 "
        f"headerKeys: [h,trace] key: k payload: {THREE.decode()}"
    )


def test_hex_and_json_decoders(tmp_path: Path) -> None:
    log = tmp_path / f"{SEGMENT}.log"
    log.write_bytes(kp_batch(0, [(T0, b"\x01\xff", b'{"a": [1, 2]}', [])]))
    parser = decoder_parser("hex", "json")
    out, _ = dump([log], deep_iteration=True, print_data_log=True, parser=parser)
    assert out[3].endswith(' key: 01ff payload: {"a":[1,2]}')


def test_legacy_wrapper_lines(tmp_path: Path) -> None:
    log = tmp_path / f"{SEGMENT}.log"
    log.write_bytes(BATCH_A + LEGACY)
    out, _ = dump([log], deep_iteration=True, print_data_log=True)
    wrapper_crc = struct.unpack_from(">I", LEGACY, 12)[0]
    inner = [(r.offset, r.timestamp, r.checksum) for r in _kp_legacy_records(LEGACY)]
    assert inner[0][0] == 3 and inner[1][0] == 4  # relative inner offsets, wrapper at 4
    assert out[5:] == [
        f"offset: 4 position: {len(BATCH_A)} CreateTime: 0 size: {len(LEGACY)} magic: 1 "
        f"compresscodec: snappy crc: {wrapper_crc} isvalid: true",
        f"| offset: 3 CreateTime: {T0 + 3} keySize: 1 valueSize: 3 isValid: true "
        f"crc: {inner[0][2]}}} key: a payload: old",
        f"| offset: 4 CreateTime: {T0 + 4} keySize: -1 valueSize: 5 isValid: true "
        f"crc: {inner[1][2]}}} payload: older",
    ]


def _kp_legacy_records(data: bytes) -> list:
    from kafka.record.memory_records import MemoryRecords

    return list(MemoryRecords(data).next_batch())


def test_control_batch_line(tmp_path: Path) -> None:
    # A COMMIT marker for producer 5, epoch 0, coordinator epoch 7, at offset 3; literal bytes.
    record = bytes.fromhex(
        "20"  # length 16
        "00" "00" "00"  # attributes, timestampDelta 0, offsetDelta 0
        "08" "00000001"  # key: version 0, type 1 = COMMIT
        "0c" "000000000007"  # value: version 0, coordinatorEpoch 7
        "00"  # no headers
    )  # fmt: skip
    body = (
        bytes.fromhex("0030")  # attributes: transactional + control
        + struct.pack(">iqqqhii", 0, T0, T0, 5, 0, -1, 1)
        + record
    )
    batch = struct.pack(">qiib", 3, 9 + len(body), 0, 2) + struct.pack(">I", crc32c(body)) + body
    log = tmp_path / f"{SEGMENT}.log"
    log.write_bytes(batch)
    out, _ = dump([log], deep_iteration=True, print_data_log=True)
    assert out[2:] == [
        "baseOffset: 3 lastOffset: 3 count: 1 baseSequence: -1 lastSequence: -1 producerId: 5 "
        "producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: true isControl: true "
        f"deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: {T0} size: {len(batch)} "
        f"magic: 2 compresscodec: none crc: {crc32c(body)} isvalid: true",
        f"| offset: 3 CreateTime: {T0} keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
        "endTxnMarker: COMMIT coordinatorEpoch: 7",
    ]


def test_torn_tail(tmp_path: Path) -> None:
    log = tmp_path / f"{SEGMENT}.log"
    log.write_bytes(BATCH_A + BATCH_B[:40])
    out, _ = dump([log])
    assert out[2:] == [
        v2_line(BATCH_A, 0, 1, 2, 0, T0 + 1, "none"),
        f"Found 40 invalid bytes at the end of {SEGMENT}.log",
    ]


def test_garbage_tail_and_max_bytes(tmp_path: Path) -> None:
    log = tmp_path / f"{SEGMENT}.log"
    log.write_bytes(BATCH_A + b"\x00" * 25)
    out, _ = dump([log])
    assert out[-1] == f"Found 25 invalid bytes at the end of {SEGMENT}.log"
    log.write_bytes(BATCH_A + BATCH_B)
    out, _ = dump([log], max_bytes=len(BATCH_A) + 10)  # no torn-tail line under --max-bytes
    assert out[2:] == [v2_line(BATCH_A, 0, 1, 2, 0, T0 + 1, "none")]


def test_bad_crc_prints_isvalid_false(tmp_path: Path) -> None:
    corrupt = bytearray(BATCH_A)
    corrupt[-2] ^= 0xFF  # inside the last value
    log = tmp_path / f"{SEGMENT}.log"
    log.write_bytes(bytes(corrupt) + BATCH_B)
    out, _ = dump([log])
    assert out[2] == v2_line(BATCH_A, 0, 1, 2, 0, T0 + 1, "none", valid="false")
    assert out[3] == v2_line(BATCH_B, 2, 2, 1, len(BATCH_A), T0 + 2, "gzip")


def _write_indexes(tmp_path: Path) -> tuple[Path, Path]:
    index = tmp_path / f"{SEGMENT}.index"
    # (relative offset, position) per entry, then the zero-filled preallocated tail.
    index.write_bytes(struct.pack(">ii", 1, 0) + struct.pack(">ii", 2, len(BATCH_A)) + bytes(16))
    timeindex = tmp_path / f"{SEGMENT}.timeindex"
    timeindex.write_bytes(struct.pack(">qi", T0 + 1, 1) + struct.pack(">qi", T0 + 2, 2) + bytes(24))
    return index, timeindex


def test_index_and_time_index(segment: Path, tmp_path: Path) -> None:
    index, timeindex = _write_indexes(tmp_path)
    out, err = dump([index, timeindex])
    assert out == [
        f"Dumping {index}",
        "offset: 1 position: 0",
        f"offset: 2 position: {len(BATCH_A)}",
        f"Dumping {timeindex}",
        f"timestamp: {T0 + 1} offset: 1",
        f"timestamp: {T0 + 2} offset: 2",
    ]
    assert err == []


def test_verify_index_only_reports_mismatches(segment: Path, tmp_path: Path) -> None:
    index = tmp_path / f"{SEGMENT}.index"
    index.write_bytes(struct.pack(">ii", 0, 0) + struct.pack(">ii", 5, len(BATCH_A)))
    timeindex = tmp_path / f"{SEGMENT}.timeindex"
    timeindex.write_bytes(struct.pack(">qi", T0 + 9, 1) + struct.pack(">qi", T0 + 2, 2))
    out, err = dump([index, timeindex], verify_index_only=True)
    assert out == [f"Dumping {index}", f"Dumping {timeindex}"]
    assert err == [
        f"Mismatches in :{index}",
        "  Index offset: 5, log offset: 2",  # Kafka lists these newest first
        "  Index offset: 0, log offset: 1",
        f"Found timestamp mismatch in :{timeindex}",
        f"  Index timestamp: {T0 + 9}, log timestamp: {T0 + 1}",
        f"Found out of order timestamp in :{timeindex}",
        f"  Index timestamp: {T0 + 2}, Previously indexed timestamp: {T0 + 9}",
    ]


def test_empty_index_and_sanity_check(segment: Path, tmp_path: Path) -> None:
    index = tmp_path / f"{SEGMENT}.index"
    index.write_bytes(b"")
    assert dump([index])[0] == [f"Dumping {index}", f"{index} is empty."]
    index.write_bytes(struct.pack(">ii", 1, 0) + struct.pack(">ii", 2, len(BATCH_A)))
    out, _ = dump([index], index_sanity_check=True)
    assert out == [f"Dumping {index}", f"{index} passed sanity check."]


def test_txn_index_checkpoint_and_unknown_files(tmp_path: Path) -> None:
    txn = tmp_path / f"{SEGMENT}.txnindex"
    txn.write_bytes(struct.pack(">hqqqq", 0, 1000, 5, 9, 10))
    checkpoint = tmp_path / "leader-epoch-checkpoint"
    checkpoint.write_text("0\n2\n0 0\n3 120\n")
    other = tmp_path / "cleaner-offset-checkpoint"
    out, err = dump([txn, checkpoint, other])
    assert out == [
        f"Dumping {txn}",
        "version: 0 producerId: 1000 firstOffset: 5 lastOffset: 9 lastStableOffset: 10",
        f"Dumping {checkpoint}",
        "0 0",
        "3 120",
        f"Dumping {other}",
    ]
    assert err == [f"Ignoring unknown file {other}"]


def test_producer_snapshot(tmp_path: Path) -> None:
    entry = struct.pack(">qhiqiqiq", 1000, 0, 9, 9, 9, T0, -1, -1)
    # producerId 1000, epoch 0, lastSequence 9, lastOffset 9, offsetDelta 9, timestamp,
    # coordinatorEpoch -1, currentTxnFirstOffset -1 (none)
    body = struct.pack(">i", 1) + entry
    snapshot = tmp_path / f"{10:020d}.snapshot"
    snapshot.write_bytes(struct.pack(">hI", 1, crc32c(body)) + body)
    out, _ = dump([snapshot])
    assert out[1] == (
        "producerId: 1000 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: "
        f"OptionalLong.empty lastTimestamp: {T0} firstSequence: 0 lastSequence: 9 "
        f"lastOffset: 9 offsetDelta: 9 timestamp: {T0}"
    )


def _string(s: str) -> bytes:
    return struct.pack(">h", len(s)) + s.encode()


def test_offsets_decoder(tmp_path: Path) -> None:
    key = struct.pack(">h", 1) + _string("g") + _string("t") + struct.pack(">i", 0)
    value = struct.pack(">hqi", 3, 42, 0) + _string("") + struct.pack(">q", T0)
    group_key = struct.pack(">h", 2) + _string("g")
    log = tmp_path / f"{SEGMENT}.log"
    log.write_bytes(kp_batch(0, [(T0, key, value, []), (T0, group_key, None, [])]))
    out, _ = dump([log], print_data_log=True, deep_iteration=True, parser=offsets_parser)
    assert out[3].endswith(
        ' key: {"type":"1","data":{"group":"g","topic":"t","partition":0}} payload: '
        '{"version":"3","data":{"offset":42,"leaderEpoch":0,"metadata":"",'
        f'"commitTimestamp":{T0}}}}}'
    )
    assert out[4].endswith(' key: {"type":"2","data":{"group":"g"}} payload: <DELETE>')


def test_offsets_decoder_group_metadata_with_consumer_protocol() -> None:
    from kt.storage.record_batch import Record

    subscription = struct.pack(">hi", 0, 1) + _string("t") + struct.pack(">i", -1)
    assignment = struct.pack(">hi", 0, 1) + _string("t") + struct.pack(">ii", 1, 0)
    assignment += struct.pack(">i", -1)
    member = (_string("m-1") + _string("client") + _string("/127.0.0.1")
              + struct.pack(">ii", 300000, 10000)
              + struct.pack(">i", len(subscription)) + subscription
              + struct.pack(">i", len(assignment)) + assignment)  # fmt: skip
    value = (struct.pack(">h", 2) + _string("consumer") + struct.pack(">i", 1) + _string("range")
             + _string("m-1") + struct.pack(">qi", T0, 1) + member)  # fmt: skip
    key = struct.pack(">h", 2) + _string("g")
    _, payload = offsets_parser(Record(0, T0, key, value))
    assert payload == (
        '{"version":"2","data":{"protocolType":"consumer","generation":1,"protocol":"range",'
        f'"leader":"m-1","currentStateTimestamp":{T0},"members":[{{"memberId":"m-1",'
        '"clientId":"client","clientHost":"/127.0.0.1","rebalanceTimeout":300000,'
        '"sessionTimeout":10000,"subscription":{"topics":["t"],"userData":null},'
        '"assignment":{"assignedPartitions":[{"topic":"t","partitions":[0]}],'
        '"userData":null}}]}}'
    )


def test_transaction_log_decoder() -> None:
    from kt.storage.record_batch import Record

    key = struct.pack(">h", 0) + _string("txn-1")
    value = (struct.pack(">hqhib", 0, 1000, 2, 60000, 1) + struct.pack(">i", 1) + _string("t")
             + struct.pack(">iii", 2, 0, 1) + struct.pack(">qq", T0, T0 - 5))  # fmt: skip
    assert transaction_log_parser(Record(0, T0, key, value)) == (
        "transaction_metadata::transactionalId=txn-1",
        f"producerId:1000,producerEpoch:2,state=Ongoing,partitions=[t-0,t-1],"
        f"txnLastUpdateTimestamp={T0},txnTimeoutMs=60000",
    )
    assert transaction_log_parser(Record(1, T0, key, None))[1] == "<DELETE>"


def test_command_missing_file_is_one_line_and_exit_1(tmp_path: Path) -> None:
    missing = tmp_path / f"{SEGMENT}.log"
    result = CliRunner().invoke(cli, ["dump-log", "--files", str(missing)])
    assert result.exit_code == 1
    assert result.stderr == f"Cannot read {missing}: No such file or directory\n"
    assert "Traceback" not in result.output


def test_command_end_to_end(segment: Path) -> None:
    result = CliRunner().invoke(cli, ["dump-log", "--files", str(segment), "--value-decoder-class",
                                      "hex"])  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[3].endswith("headerKeys: [] payload: 6f6e65")  # decoder implies deep + data


def test_a_live_preallocated_index_and_the_sanity_check(tmp_path: Path) -> None:
    """The active segment's indexes of a running broker are preallocated, their unwritten
    tail zeros. Kafka's offset index check (whole entries, the last entry not below the
    base offset) passes that, and so does dump-log's (it once applied the log loader's
    stricter check and called it corrupt); Kafka's time index check fails it (the last
    timestamp, 0, is below the first), with the same message from dump-log."""
    from kt.config import LogConfig
    from kt.storage.log import Log
    from kt.tools.dump_log import DumpLogError

    log = Log(str(tmp_path / "t-0"), LogConfig(index_interval_bytes=1))
    log.append_as_leader(BATCH_A, leader_epoch=0)
    log.append_as_leader(kp_batch(0, [(T0 + 5, None, b"three", [])]), leader_epoch=0)
    log.flush()
    index, time_index = (tmp_path / "t-0" / f"{SEGMENT}.{s}" for s in ("index", "timeindex"))
    assert index.stat().st_size > 1024 and time_index.stat().st_size > 1024  # preallocated
    out, err = dump([index], index_sanity_check=True)
    assert (out, err) == ([f"Dumping {index}", f"{index} passed sanity check."], [])
    with pytest.raises(DumpLogError) as refused:
        dump([time_index], index_sanity_check=True)
    assert str(refused.value) == (
        f"Corrupt time index found, time index file ({time_index}) has non-zero size but "
        f"the last timestamp is 0 which is less than the first timestamp {T0 + 5}"
    )
    log.close()
