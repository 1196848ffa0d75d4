"""The tools' consumer with nothing assigned (a group member left without partitions when
the group has more members than partitions) waits on poll as a fetch would: returning at
once made the console consumer spin a core until it was stopped."""

from __future__ import annotations

import time

from kt.client.consumer import Consumer


def test_a_poll_with_nothing_assigned_waits_its_timeout() -> None:
    consumer = Consumer(client=None)  # type: ignore[arg-type]  # no fetch is sent
    started = time.monotonic()
    assert consumer.poll(timeout_ms=300) == []
    assert time.monotonic() - started >= 0.3
