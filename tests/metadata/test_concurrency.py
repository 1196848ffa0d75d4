"""Several threads and sessions on one embedded store: every write is atomic.

The GIL seldom switches threads between a write's check and its change, so these tests
make it switch: a tiny switch interval, and a yield at the tree's race window (between
the checks of a create, set or delete and its change). With the store's lock replaced by
`contextlib.nullcontext()` every test here fails, run after run.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kt.metadata import data_tree
from kt.metadata.embedded import EmbeddedSession, EmbeddedStore
from kt.metadata.store import BadVersionError, NodeExistsError

THREADS = 6


@pytest.fixture(autouse=True)
def switch_threads_often(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(data_tree, "race_window", lambda: time.sleep(0))
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(interval)


def run_threads(target: Callable[[int], None]) -> None:
    start = threading.Barrier(THREADS)
    errors: list[BaseException] = []

    def body(i: int) -> None:
        try:
            start.wait()
            target(i)
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors


def test_compare_and_set_loses_no_increment(store: EmbeddedStore) -> None:
    sessions = [store.session(f"s{i}") for i in range(THREADS)]
    sessions[0].create("/counter", b"0")

    def increment(i: int) -> None:
        s = sessions[i]
        for _ in range(50):
            while True:
                data, stat = s.get("/counter")
                try:
                    s.set("/counter", str(int(data) + 1).encode(), version=stat.version)
                    break
                except BadVersionError:
                    continue

    run_threads(increment)
    data, stat = sessions[0].get("/counter")
    assert int(data) == stat.version == THREADS * 50


def test_sequential_names_are_unique_and_dense(store: EmbeddedStore) -> None:
    s = store.session()
    s.ensure_path("/seq")
    names: list[str] = []

    def create(_i: int) -> None:
        for _ in range(30):
            names.append(s.create("/seq/n-", sequential=True))

    run_threads(create)
    expected = [f"/seq/n-{i:010d}" for i in range(THREADS * 30)]
    assert sorted(names) == expected


def test_exactly_one_session_wins_the_controller_election(store: EmbeddedStore) -> None:
    sessions = [store.session(f"broker-{i}") for i in range(THREADS)]
    winners: list[int] = []

    def elect(i: int) -> None:
        try:
            sessions[i].create("/controller", str(i).encode(), ephemeral=True)
            winners.append(i)
        except NodeExistsError:
            pass

    run_threads(elect)
    assert len(winners) == 1
    assert sessions[0].get("/controller")[0] == str(winners[0]).encode()


def test_watchers_in_other_sessions_see_every_broker_come_and_go(tmp_path: Path) -> None:
    with EmbeddedStore(tmp_path, sync=False) as store:
        controller = store.session("controller")
        controller.ensure_path("/brokers/ids")
        brokers = [store.session(f"broker-{i}") for i in range(THREADS)]
        snapshots: list[list[str]] = []

        def on_change(_event: object) -> None:
            snapshots.append(controller.get_children("/brokers/ids", watch=on_change))

        controller.get_children("/brokers/ids", watch=on_change)

        def register_then_leave(i: int) -> None:
            brokers[i].create(f"/brokers/ids/{i}", b"{}", ephemeral=True)
            brokers[i].close()

        run_threads(register_then_leave)
        assert controller.wait_callbacks()
        # Watches are one-shot, so not every change is seen, but the last read is the truth.
        assert snapshots and snapshots[-1] == []
        assert controller.get_children("/brokers/ids") == []


def test_a_session_per_thread_and_concurrent_closes(store: EmbeddedStore) -> None:
    sessions: list[EmbeddedSession] = [store.session() for _ in range(THREADS)]
    sessions[0].ensure_path("/e")

    def churn(i: int) -> None:
        for j in range(20):
            sessions[i].create(f"/e/{i}-{j}", ephemeral=True)
        sessions[i].close()

    run_threads(churn)
    survivor = store.session()
    assert survivor.get_children("/e") == []
    assert survivor.exists("/e").cversion == THREADS * 20 * 2
