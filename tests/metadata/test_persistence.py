"""The embedded store survives close/reopen and crashes: snapshot + journal + torn tails."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import pytest

from kt.metadata.embedded import EmbeddedStore, metadata_dir
from kt.metadata.journal import (
    JOURNAL_FILE,
    SNAPSHOT_FILE,
    MetadataDirLockedError,
    encode_record,
    read_records,
)


def crash(store: EmbeddedStore) -> None:
    """Drop a store as a killed process would: no session close, no final snapshot."""
    assert store._log is not None
    store._log.close()


def test_the_store_lives_in_the_first_log_dir(tmp_path: Path) -> None:
    with EmbeddedStore.in_log_dir(tmp_path, sync=False) as store:
        store.session().create("/a", b"1")
    assert metadata_dir(tmp_path) == tmp_path / "__kt_metadata"
    assert (tmp_path / "__kt_metadata" / SNAPSHOT_FILE).exists()


def test_reopen_keeps_persistent_nodes_and_drops_ephemerals(tmp_path: Path) -> None:
    with EmbeddedStore(tmp_path) as store:
        s = store.session()
        s.ensure_path("/brokers/ids")
        s.create("/brokers/ids/0", b"{}", ephemeral=True)
        s.create("/cluster/id", b'{"version":"1","id":"x"}', make_parents=True)
        s.set("/cluster/id", b'{"version":"1","id":"y"}')
        s.create("/bin", bytes(range(256)))
        stat = s.exists("/cluster/id")
    with EmbeddedStore(tmp_path) as store:
        s = store.session()
        assert s.get_children("/brokers/ids") == []
        data, reopened = s.get("/cluster/id")
        assert data == b'{"version":"1","id":"y"}'
        assert reopened == stat
        assert s.get("/bin")[0] == bytes(range(256))


def test_sequence_counters_survive_including_ephemeral_children(tmp_path: Path) -> None:
    with EmbeddedStore(tmp_path, sync=False) as store:
        s = store.session()
        s.ensure_path("/config/changes")
        s.create("/config/changes/config_change_", sequential=True)
        s.create("/config/changes/lock-", sequential=True, ephemeral=True)
        cversion = s.exists("/config/changes").cversion
    with EmbeddedStore(tmp_path, sync=False) as store:
        s = store.session()
        # The ephemeral came (counter 1) and went at close (counter 2).
        assert s.exists("/config/changes").cversion == cversion + 1 == 3
        assert s.create("/config/changes/config_change_", sequential=True).endswith("0000000003")


def test_a_crash_replays_the_journal(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path)
    s = store.session()
    s.create("/a", b"1")
    with s.transaction() as txn:
        txn.create("/a/b", b"2")
        txn.set_data("/a", b"3")
    s.delete("/a/b")
    s.create("/e", ephemeral=True)
    zxid = store._tree.zxid
    crash(store)
    assert (tmp_path / JOURNAL_FILE).stat().st_size > 0
    with EmbeddedStore(tmp_path) as store:
        s = store.session()
        data, stat = s.get("/a")
        assert (data, stat.version, stat.cversion) == (b"3", 1, 2)
        assert s.get_children("/") == ["a"]
        assert store._tree.zxid == zxid


def test_a_torn_journal_tail_is_ignored_and_cut(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path)
    s = store.session()
    s.create("/a", b"kept")
    s.create("/b", b"torn")
    crash(store)
    journal = tmp_path / JOURNAL_FILE
    whole = journal.read_bytes()
    journal.write_bytes(whole[:-3])  # the last record lost its end
    with EmbeddedStore(tmp_path) as store:
        s = store.session()
        assert s.get("/a")[0] == b"kept"
        assert s.exists("/b") is None
        s.create("/c", b"after")
    with EmbeddedStore(tmp_path) as store:
        assert store.session().get_children("/") == ["a", "c"]


def test_a_corrupt_record_stops_replay(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path, sync=False)
    s = store.session()
    s.create("/a")
    s.create("/b")
    crash(store)
    journal = tmp_path / JOURNAL_FILE
    data = bytearray(journal.read_bytes())
    data[-2] ^= 0xFF  # flip a bit in the last record's payload: its CRC no longer matches
    journal.write_bytes(bytes(data))
    with EmbeddedStore(tmp_path, sync=False) as store:
        assert store.session().get_children("/") == ["a"]


def test_records_older_than_the_snapshot_are_skipped(tmp_path: Path) -> None:
    """A crash between renaming a snapshot and emptying the journal leaves old records."""
    store = EmbeddedStore(tmp_path, sync=False)
    s = store.session()
    s.create("/a", b"1")
    journal_before = (tmp_path / JOURNAL_FILE).read_bytes()
    s.set("/a", b"2")
    store.close()  # snapshot holds /a = 2, version 1
    (tmp_path / JOURNAL_FILE).write_bytes(journal_before)
    with EmbeddedStore(tmp_path, sync=False) as store:
        data, stat = store.session().get("/a")
        assert (data, stat.version) == (b"2", 1)


def test_compaction_writes_a_snapshot_and_empties_the_journal(tmp_path: Path) -> None:
    with EmbeddedStore(tmp_path, sync=False, compact_bytes=2000) as store:
        s = store.session()
        for i in range(40):
            s.create(f"/n{i:02d}", b"x" * 50)
        assert (tmp_path / JOURNAL_FILE).stat().st_size < 2000
    with EmbeddedStore(tmp_path, sync=False) as store:
        assert len(store.session().get_children("/")) == 40


def test_snapshot_format_is_readable_json(tmp_path: Path) -> None:
    with EmbeddedStore(tmp_path, sync=False) as store:
        store.session().create("/controller_epoch", b"1")
    doc = json.loads((tmp_path / SNAPSHOT_FILE).read_bytes())
    assert doc["format"] == 1
    paths = {node[0]: node for node in doc["nodes"]}
    assert paths["/"][0] == "/"
    assert paths["/controller_epoch"][-1] == "1"


def test_journal_record_layout() -> None:
    record = encode_record(7, 1000, [("create", "/a", b"x"), ("delete", "/b")])
    payload = b'{"zxid":7,"time":1000,"ops":[["create","/a","x"],["delete","/b"]]}'
    assert record == struct.pack(">II", len(payload), zlib.crc32(payload)) + payload
    [(end, decoded)] = list(read_records(record + b"\x00\x00"))
    assert end == len(record)
    assert decoded["ops"] == [["create", "/a", b"x"], ["delete", "/b"]]


def test_one_store_per_directory(tmp_path: Path) -> None:
    with EmbeddedStore(tmp_path, sync=False), pytest.raises(MetadataDirLockedError):
        EmbeddedStore(tmp_path, sync=False)
    EmbeddedStore(tmp_path, sync=False).close()  # free again once closed
