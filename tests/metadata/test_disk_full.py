"""The embedded store on a full disk: the write that fails is refused and never comes
back, the store goes offline instead of serving a tree its files do not hold, and a
reopened store has exactly the writes that returned.

Each test fills a tmpfs of its own (tests/_tmpfs.py; skipped where it cannot be mounted).
"""

from __future__ import annotations

import pytest

from kt.metadata.embedded import EmbeddedStore
from kt.metadata.journal import JOURNAL_FILE
from kt.metadata.store import ConnectionClosedError, MetadataStoreError

NODE_DATA = b"x" * 4000


def test_a_journal_write_that_fails_is_refused_and_the_store_goes_offline(small_fs) -> None:
    fs = small_fs(256 << 10)
    store = EmbeddedStore(fs.path / "meta")
    failures: list[str] = []
    store.on_failure = failures.append
    session = store.session("broker-0")
    session.create("/brokers/ids/0", b"{}", ephemeral=True, make_parents=True)
    created: list[str] = []
    with pytest.raises(MetadataStoreError, match="the metadata store is offline"):
        for i in range(100):  # 256 KiB holds about 60 of these
            session.create(f"/n{i}", NODE_DATA)
            created.append(f"/n{i}")
    assert 10 < len(created) < 100
    journal = fs.path / "meta" / JOURNAL_FILE
    journal_size = journal.stat().st_size
    assert len(failures) == 1 and "No space left on device" in failures[0]

    with pytest.raises(ConnectionClosedError, match="the metadata store is offline"):
        session.get("/n0")
    with pytest.raises(ConnectionClosedError, match="the metadata store is offline"):
        session.set("/n0", b"y")
    fs.grow(1 << 20)  # room again, while the store is still up
    store.close()  # writes no snapshot of a tree that is ahead of its journal
    assert journal.stat().st_size == journal_size
    with EmbeddedStore(fs.path / "meta") as reopened:
        s = reopened.session()
        assert sorted(c for c in s.get_children("/") if c.startswith("n")) == sorted(
            p[1:] for p in created
        )
        assert s.get(created[-1])[0] == NODE_DATA
        assert s.exists(f"/n{len(created)}") is None  # the refused write
