"""Reading partitions straight from segment files: ranges, transactions, timestamps, and
never a write to the files read."""

from __future__ import annotations

import os

import pytest

from kt.spark.log_dirs import LogDirsCatalog
from kt.spark.planning import DataLossError, OffsetRange
from kt.spark.schema import arrow_schema
from kt.spark.segment_reader import OFFSET_ENTRY, PartitionLog, SparseIndex
from kt.storage import compression
from kt.storage.legacy_records import build_legacy_batch
from kt.storage.producer_state import ORIGIN_CLIENT, ORIGIN_COORDINATOR
from kt.storage.record_batch import Record, build_batch
from tests.spark import _topics as topics

SCHEMA = arrow_schema(include_headers=True)


def rows(catalog: LogDirsCatalog, topic: str, partition: int, start: int, end: int) -> list[dict]:
    batches = catalog.read(OffsetRange(topic, partition, start, end), SCHEMA, True)
    return [row for batch in batches for row in batch.to_pylist()]


def expected_row(partition: int, i: int) -> dict:
    row_headers = [{"key": k, "value": v} for k, v in topics.headers(partition, i)]
    return {
        "key": topics.key(partition, i),
        "value": topics.value(partition, i),
        "offset": i,
        "partition": partition,
        "timestamp_ms": topics.timestamp(partition, i),
        "timestampType": 0,
        "headers": row_headers or None,
    }


def comparable(row: dict) -> dict:
    out = {k: v for k, v in row.items() if k not in ("timestamp", "topic")}
    out["timestamp_ms"] = int(row["timestamp"].timestamp() * 1000)
    return out


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory) -> str:
    """Topic `t`: partition 0 has 1000 records over several segments, partition 1 none."""
    directory = str(tmp_path_factory.mktemp("logs"))
    topics.write_topic(directory, "t", [1000, 0])
    return directory


def test_the_partition_spans_several_segments(log_dir):
    log = PartitionLog(os.path.join(log_dir, "t-0"))
    assert len(log.bases) >= 3
    assert (log.earliest_offset(), log.end_offsets()) == (0, (1000, 1000))
    empty = PartitionLog(os.path.join(log_dir, "t-1"))
    assert (empty.earliest_offset(), empty.end_offsets()) == (0, (0, 0))


@pytest.mark.parametrize(
    ("start", "end"), [(0, 1000), (0, 1), (137, 862), (699, 701), (999, 1000), (500, 500)]
)
def test_a_range_yields_each_of_its_records_once(log_dir, start, end):
    """Every start is found through the sparse index, whatever segment or batch it is in."""
    catalog = LogDirsCatalog([log_dir])
    got = [comparable(r) for r in rows(catalog, "t", 0, start, end)]
    assert got == [expected_row(0, i) for i in range(start, end)]


def test_rows_hold_exactly_the_spark_kafka_schema(log_dir):
    batch = next(LogDirsCatalog([log_dir]).read(OffsetRange("t", 0, 0, 3), SCHEMA, True))
    assert batch.schema.equals(SCHEMA)
    assert batch.column("topic").to_pylist() == ["t", "t", "t"]
    assert str(batch.schema.field("timestamp").type) == "timestamp[us, tz=UTC]"
    without = next(LogDirsCatalog([log_dir]).read(OffsetRange("t", 0, 0, 3),
                                                 arrow_schema(False), True))  # fmt: skip
    assert without.schema.names == [
        "key", "value", "topic", "partition", "offset", "timestamp", "timestampType",
    ]  # fmt: skip


def _record(i: int) -> Record:
    return Record(None, topics.TS + i, f"k{i}".encode(), f"v{i}".encode())


def _txn_batch(pid: int, first: int, count: int, seq: int = 0) -> bytes:
    return build_batch([_record(i) for i in range(first, first + count)], producer_id=pid,
                       producer_epoch=0, base_sequence=seq, is_transactional=True)  # fmt: skip


def _marker(pid: int, commit: bool) -> tuple[bytes, str]:
    return topics.marker_batch(pid, commit), ORIGIN_COORDINATOR


def test_control_records_never_appear_nor_aborted_transactions_at_read_committed(tmp_path):
    log = topics.open_log(str(tmp_path), "tx", 0)
    plain = build_batch([_record(i) for i in range(100, 105)])
    for data in (
        plain,                    # 0-4
        _txn_batch(7, 200, 3),    # 5-7    committed below
        _txn_batch(8, 300, 3),    # 8-10   aborted below
        _marker(7, commit=True),  # 11
        plain,                    # 12-16
        _marker(8, commit=False), # 17
        _txn_batch(8, 400, 2, 3), # 18-19  a new transaction of pid 8, committed
        _marker(8, commit=True),  # 20
        _txn_batch(9, 500, 2),    # 21-22  still open: the last stable offset is 21
        plain,                    # 23-27
    ):  # fmt: skip
        data, origin = data if isinstance(data, tuple) else (data, ORIGIN_CLIENT)
        log.append_as_leader(data, 0, origin=origin)
    log.close()
    catalog = LogDirsCatalog([str(tmp_path)], read_committed=True)
    assert catalog.latest([("tx", 0)]) == {("tx", 0): 21}
    assert PartitionLog(str(tmp_path / "tx-0")).end_offsets() == (28, 21)
    offsets = [r["offset"] for r in rows(catalog, "tx", 0, 0, 21)]
    assert offsets == [0, 1, 2, 3, 4, 5, 6, 7, 12, 13, 14, 15, 16, 18, 19]
    # A range that ends before the markers still knows how its transactions ended.
    assert [r["offset"] for r in rows(catalog, "tx", 0, 6, 11)] == [6, 7]
    assert [r["value"] for r in rows(catalog, "tx", 0, 18, 19)] == [b"v400"]
    # read_uncommitted (the Kafka consumer's default): every data record to the log end.
    uncommitted = LogDirsCatalog([str(tmp_path)])
    assert uncommitted.latest([("tx", 0)]) == {("tx", 0): 28}
    offsets = [r["offset"] for r in rows(uncommitted, "tx", 0, 0, 28)]
    assert offsets == [*range(0, 11), *range(12, 17), *range(18, 20), *range(21, 28)]


def test_offset_for_timestamp_is_the_first_record_at_or_after_it(log_dir):
    log = PartitionLog(os.path.join(log_dir, "t-0"))
    assert log.offset_for_timestamp(0) == 0
    assert log.offset_for_timestamp(topics.timestamp(0, 777)) == 777
    assert log.offset_for_timestamp(topics.timestamp(0, 999)) == 999
    assert log.offset_for_timestamp(topics.timestamp(0, 1000)) is None


def test_sparse_index_ignores_its_unwritten_preallocated_tail(tmp_path):
    path = tmp_path / "00000000000000000100.index"
    # (relative offset 9, position 0), (19, 4096), (29, 8192), then unwritten space.
    path.write_bytes(
        b"\x00\x00\x00\x09\x00\x00\x00\x00" b"\x00\x00\x00\x13\x00\x00\x10\x00"
        b"\x00\x00\x00\x1d\x00\x00\x20\x00" + bytes(8 * 5)
    )  # fmt: skip
    index = SparseIndex(str(path), OFFSET_ENTRY)
    assert index.entries == 3 and index.last() == (29, 8192)
    assert index.floor(8, 0) is None
    assert index.floor(19, 0) == (19, 4096)
    assert index.floor(1000, 0) == (29, 8192)


def _files(directory: str) -> dict[str, tuple[int, int]]:
    out = {}
    for root, _, files in os.walk(directory):
        for name in files:
            st = os.stat(os.path.join(root, name))
            out[os.path.join(root, name)] = (st.st_size, st.st_mtime_ns)
    return out


def test_reading_writes_nothing_and_a_torn_tail_ends_the_log(tmp_path):
    topics.write_topic(str(tmp_path), "w", [300])
    last = max(p for p in os.listdir(tmp_path / "w-0") if p.endswith(".log"))
    whole = build_batch([_record(1)], base_offset=300)
    with open(tmp_path / "w-0" / last, "ab") as f:
        f.write(whole[: len(whole) // 2])  # a write in progress
    before = _files(str(tmp_path))
    catalog = LogDirsCatalog([str(tmp_path)])
    assert catalog.latest([("w", 0)]) == {("w", 0): 300}
    assert len(rows(catalog, "w", 0, 0, 300)) == 300
    assert PartitionLog(str(tmp_path / "w-0")).offset_for_timestamp(topics.TS) == 0
    assert _files(str(tmp_path)) == before


def test_the_log_start_checkpoint_moves_earliest_and_older_offsets_are_data_loss(tmp_path):
    topics.write_topic(str(tmp_path), "c", [200])
    (tmp_path / "log-start-offset-checkpoint").write_text("0\n1\nc 0 150\n")
    catalog = LogDirsCatalog([str(tmp_path)])
    assert catalog.earliest([("c", 0)]) == {("c", 0): 150}
    with pytest.raises(DataLossError, match="offsets 100 to 150 of c-0 were deleted"):
        rows(catalog, "c", 0, 100, 200)
    lenient = catalog.read(OffsetRange("c", 0, 100, 200), SCHEMA, False)
    assert [r["offset"] for b in lenient for r in b.to_pylist()] == list(range(150, 200))


def test_legacy_message_sets_are_read_too(tmp_path):
    directory = tmp_path / "old-0"
    directory.mkdir()
    v0 = build_legacy_batch([Record(0, -1, b"a", b"x"), Record(1, -1, None, b"y")], magic=0)
    records = [Record(2, topics.TS, b"c", b"z"), Record(3, topics.TS + 1, b"d", None)]
    v1 = build_legacy_batch(records, magic=1, base_offset=2, compression_type=compression.GZIP)
    (directory / "00000000000000000000.log").write_bytes(v0 + v1)
    got = rows(LogDirsCatalog([str(tmp_path)]), "old", 0, 1, 4)
    assert [(r["offset"], r["key"], r["value"], r["timestampType"]) for r in got] == [
        (1, None, b"y", -1),
        (2, b"c", b"z", 0),
        (3, b"d", None, 0),
    ]
