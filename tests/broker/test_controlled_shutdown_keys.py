"""controlled.shutdown.enable, .max.retries and .retry.backoff.ms on a stopping broker
(tests/test_config_keys.py's entries for these keys point here)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kt.broker.server import KafkaServer
from kt.testing import KtCluster


@pytest.mark.slow
@pytest.mark.parametrize("enabled", [True, False])
def test_controlled_shutdown_keys(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    enabled: bool,
) -> None:
    """controlled.shutdown.enable, .max.retries and .retry.backoff.ms: a stopping broker
    asks the controller max.retries times, retry.backoff.ms apart (here the controller cannot be
    reached, so every attempt fails), then stops anyway; disabled, it does not ask."""
    from kt.errors import KafkaError

    overrides = {"controlled.shutdown.enable": str(enabled).lower(),
                 "controlled.shutdown.max.retries": "2",
                 "controlled.shutdown.retry.backoff.ms": "300"}  # fmt: skip
    attempts: list[float] = []

    async def unreachable(self: KafkaServer, controller_id: int) -> None:
        attempts.append(time.monotonic())
        raise KafkaError("NETWORK_EXCEPTION", "the controller does not answer")

    monkeypatch.setattr(KafkaServer, "_ask_controller_to_shut_down", unreachable)
    with KtCluster(2, base_dir=tmp_path, overrides=overrides) as cluster:
        cluster.stop_broker(1)
        if not enabled:
            assert attempts == []
            return
        # Kafka's defaults are 3 attempts, 5 s apart: neither can pass for the values set.
        assert len(attempts) == 2
        assert 0.3 <= attempts[1] - attempts[0] < 5.0
        assert "all the controlled shutdown attempts failed" in caplog.text
