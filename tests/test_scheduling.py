"""tests/_scheduling.py: an `alone` test runs with no other beside it and is never starved,
and the groups named to run first are still the suite's."""

from __future__ import annotations

import threading
from pathlib import Path

from tests._scheduling import LAST, LONGEST_FIRST, _turn

TESTS = Path(__file__).parent


class Holder(threading.Thread):
    """A test on another worker: takes its turn, then holds it until told to finish."""

    def __init__(self, shared: Path, exclusive: bool) -> None:
        super().__init__(daemon=True)
        self.shared, self.exclusive = shared, exclusive
        self.running, self.finish = threading.Event(), threading.Event()

    def run(self) -> None:
        with _turn(self.shared, self.exclusive):
            self.running.set()
            assert self.finish.wait(30)


def started(shared: Path, exclusive: bool = False) -> Holder:
    holder = Holder(shared, exclusive)
    holder.start()
    return holder


def test_tests_run_side_by_side(tmp_path: Path) -> None:
    first, second = started(tmp_path), started(tmp_path)
    assert first.running.wait(10) and second.running.wait(10)
    first.finish.set(), second.finish.set()
    first.join(10), second.join(10)


def test_an_alone_test_waits_for_the_running_ones_and_keeps_new_ones_out(tmp_path) -> None:
    running = started(tmp_path)
    assert running.running.wait(10)
    alone = started(tmp_path, exclusive=True)
    assert not alone.running.wait(0.5)  # the running test is not done
    later = started(tmp_path)
    assert not later.running.wait(0.5)  # not let in before the waiting alone test
    running.finish.set()
    assert alone.running.wait(10)
    assert not later.running.wait(0.5)  # nothing beside the alone test
    alone.finish.set()
    assert later.running.wait(10)
    later.finish.set()
    for holder in (running, alone, later):
        holder.join(10)


def test_the_groups_run_first_are_the_suites() -> None:
    named = LONGEST_FIRST + LAST
    assert len(set(named)) == len(named)
    assert [m for m in named if not (TESTS.parent / m).exists()] == []
