"""Fixtures: an in-memory embedded store, sessions on it, and a watch recorder."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kt.metadata.embedded import EmbeddedSession, EmbeddedStore
from kt.metadata.store import WatchedEvent


@pytest.fixture
def store() -> Iterator[EmbeddedStore]:
    with EmbeddedStore() as s:
        yield s


@pytest.fixture
def session(store: EmbeddedStore) -> EmbeddedSession:
    return store.session("a")


@pytest.fixture
def other(store: EmbeddedStore) -> EmbeddedSession:
    return store.session("b")


class Recorder:
    """A watch callback that remembers every event it was called with."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def __call__(self, event: WatchedEvent) -> None:
        self.events.append((str(event.type), event.path))


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()
