"""On-disk state of the embedded metadata store: one snapshot plus an append-only journal.

Directory (`<first log dir>/__kt_metadata/`):

  .lock            flock'ed while a store has the directory open (one process at a time)
  snapshot.json    the persistent tree at zxid N, replaced atomically:
                   written to snapshot.json.tmp, fsync'ed, renamed, directory fsync'ed.
                   {"format":1,"zxid":N,"nodes":[
                     [path, czxid, mzxid, ctime, mtime, version, cversion, pzxid, data],
                     ...]}                       (parents before children, "/" first)
  journal.log      the writes after the snapshot, one record per multi:
                   Record => length: uint32 BE   (bytes of payload)
                             crc:    uint32 BE   (zlib CRC-32 of payload)
                             payload: UTF-8 JSON {"zxid":N,"time":ms,"ops":[primitive...]}
                   primitives as DataTree documents them: ["create",path,data],
                   ["set",path,data], ["delete",path], ["cversion",path,n]

`data` is a JSON string when the bytes are UTF-8 (all of Kafka's znodes), otherwise
{"base64": "..."}.

Recovery: load the snapshot, replay journal records whose zxid is above the snapshot's
(a crash between renaming a snapshot and truncating the journal leaves older records
behind), stop at the first record that is short or fails its CRC (a torn tail), cut the
file there, then compact: write a fresh snapshot and empty the journal. Ephemeral nodes
are never written, so a reopened store has none.

An I/O error (a full disk) while appending cuts the journal back to its last whole
record and leaves the log failed: every later write is refused, and no snapshot is
written, so the files keep exactly the writes that returned.
"""

from __future__ import annotations

import base64
import fcntl
import json
import logging
import os
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from kt.metadata.data_tree import DataNode, DataTree, Primitive
from kt.metadata.store import MetadataStoreError

log = logging.getLogger(__name__)

SNAPSHOT_FILE = "snapshot.json"
JOURNAL_FILE = "journal.log"
LOCK_FILE = ".lock"
SNAPSHOT_FORMAT = 1
RECORD_HEADER = struct.Struct(">II")


class MetadataDirLockedError(MetadataStoreError):
    """Another store (in this or another process) has the metadata directory open."""


def encode_data(data: bytes) -> Any:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def decode_data(value: Any) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    return base64.b64decode(value["base64"])


def encode_record(zxid: int, time_ms: int, primitives: list[Primitive]) -> bytes:
    ops = [[p[0], p[1], encode_data(p[2])] if p[0] in ("create", "set") else list(p)
           for p in primitives]  # fmt: skip
    payload = json.dumps(
        {"zxid": zxid, "time": time_ms, "ops": ops}, separators=(",", ":"), ensure_ascii=False
    ).encode("utf-8")
    return RECORD_HEADER.pack(len(payload), zlib.crc32(payload)) + payload


def read_records(data: bytes) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (end offset, record) for each whole, intact record; stop at a torn tail."""
    pos = 0
    while pos + RECORD_HEADER.size <= len(data):
        length, crc = RECORD_HEADER.unpack_from(data, pos)
        start, end = pos + RECORD_HEADER.size, pos + RECORD_HEADER.size + length
        if end > len(data) or zlib.crc32(data[start:end]) != crc:
            return
        try:
            record = json.loads(data[start:end])
        except ValueError:
            return
        for op in record["ops"]:
            if op[0] in ("create", "set"):
                op[2] = decode_data(op[2])
        yield end, record
        pos = end


class MetadataLog:
    """The snapshot and journal of one metadata directory.

    Invariants: while open, this object holds the directory's lock; the snapshot plus the
    journal records above its zxid always reproduce the persistent tree as of the last
    `append` that returned.
    """

    def __init__(self, directory: Path, sync: bool = True) -> None:
        self.directory = Path(directory)
        self.sync = sync
        self.directory.mkdir(parents=True, exist_ok=True)
        self._lock_file = open(self.directory / LOCK_FILE, "a+b")  # noqa: SIM115
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock_file.close()
            raise MetadataDirLockedError(f"{self.directory} is in use by another store") from None
        self._journal: BinaryIO | None = None
        self.journal_bytes = 0
        self.failure: OSError | None = None  # the I/O error that took the log offline

    def recover(self) -> DataTree:
        """Load snapshot + journal into a new tree, then compact to a fresh snapshot."""
        tree = DataTree()
        snapshot = self.directory / SNAPSHOT_FILE
        if snapshot.exists():
            self._load_snapshot(tree, json.loads(snapshot.read_bytes()))
        journal = self.directory / JOURNAL_FILE
        data = journal.read_bytes() if journal.exists() else b""
        good = 0
        for end, record in read_records(data):
            if record["zxid"] > tree.zxid:
                tree.replay(record["zxid"], record["time"], [tuple(op) for op in record["ops"]])
            good = end
        if good < len(data):
            log.warning(
                "metadata journal %s: ignoring a torn tail of %d bytes at offset %d",
                journal, len(data) - good, good,
            )  # fmt: skip
        self.write_snapshot(tree)
        return tree

    def _load_snapshot(self, tree: DataTree, doc: dict[str, Any]) -> None:
        if doc.get("format") != SNAPSHOT_FORMAT:
            raise MetadataStoreError(f"unknown metadata snapshot format {doc.get('format')!r}")
        for path, czxid, mzxid, ctime, mtime, version, cversion, pzxid, data in doc["nodes"]:
            node = DataNode(decode_data(data), czxid, ctime)
            node.mzxid, node.mtime, node.version = mzxid, mtime, version
            node.cversion, node.pzxid = cversion, pzxid
            tree.restore(path, node)
        tree.zxid = doc["zxid"]

    def _check_not_failed(self) -> None:
        if self.failure is not None:
            raise MetadataStoreError(
                f"the metadata log in {self.directory} is offline after an I/O error: "
                f"{self.failure}"
            )

    def write_snapshot(self, tree: DataTree) -> None:
        """Atomically replace the snapshot with `tree`'s persistent nodes; empty the journal.
        Raises OSError if the snapshot cannot be written; the journal is then untouched."""
        self._check_not_failed()
        nodes = [
            [path, n.czxid, n.mzxid, n.ctime, n.mtime, n.version, n.cversion, n.pzxid,
             encode_data(n.data)]
            for path, n in tree.persistent_nodes()
        ]  # fmt: skip
        doc = {"format": SNAPSHOT_FORMAT, "zxid": tree.zxid, "nodes": nodes}
        tmp = self.directory / (SNAPSHOT_FILE + ".tmp")
        try:
            with open(tmp, "wb") as f:
                f.write(json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode())
                f.flush()
                if self.sync:
                    os.fsync(f.fileno())
        except OSError:
            tmp.unlink(missing_ok=True)
            raise
        os.replace(tmp, self.directory / SNAPSHOT_FILE)
        if self.sync:
            _fsync_dir(self.directory)
        if self._journal is not None:
            self._journal.close()
        # Unbuffered: `append` knows what reached the file, and cuts off a torn record.
        self._journal = open(self.directory / JOURNAL_FILE, "wb", buffering=0)  # noqa: SIM115
        if self.sync:
            os.fsync(self._journal.fileno())
        self.journal_bytes = 0

    def append(self, zxid: int, time_ms: int, primitives: list[Primitive]) -> None:
        """Make one multi's persistent effects durable (fsync'ed when `sync`)."""
        if not primitives:
            return
        self._check_not_failed()
        assert self._journal is not None, "recover() first"
        record = memoryview(encode_record(zxid, time_ms, primitives))
        try:
            written = 0
            while written < len(record):
                written += self._journal.write(record[written:]) or 0
            if self.sync:
                os.fsync(self._journal.fileno())
        except OSError as e:
            self.failure = e
            log.error("metadata journal %s failed, the store is offline: %s", self.directory, e)
            try:
                os.ftruncate(self._journal.fileno(), self.journal_bytes)
            except OSError as cut:  # recovery cuts the torn tail at the next start
                log.error("could not cut the metadata journal back: %s", cut)
            raise
        self.journal_bytes += len(record)

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = None
        fcntl.flock(self._lock_file, fcntl.LOCK_UN)
        self._lock_file.close()


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
