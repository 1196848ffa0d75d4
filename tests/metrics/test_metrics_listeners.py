"""metrics.listeners: the endpoints /metrics is served on, checked before anything binds."""

from __future__ import annotations

import pytest

from kt.errors import InvalidConfigError
from kt.metrics.http_server import parse_metrics_listeners


def test_endpoints_are_http_host_port() -> None:
    assert parse_metrics_listeners("") == []
    assert parse_metrics_listeners("http://127.0.0.1:9404, http://[::1]:0") == [
        ("127.0.0.1", 9404), ("::1", 0)]  # fmt: skip
    assert parse_metrics_listeners("http://:9404") == [("0.0.0.0", 9404)]


@pytest.mark.parametrize("value", ["https://127.0.0.1:9404", "127.0.0.1:9404",
                                   "http://127.0.0.1", "http://127.0.0.1:9404/metrics",
                                   "http://127.0.0.1:99999"])  # fmt: skip
def test_anything_else_is_refused_by_name(value: str) -> None:
    with pytest.raises(InvalidConfigError) as refused:
        parse_metrics_listeners(value)
    assert str(refused.value) == (
        f"metrics.listeners: {value!r} is not an http://host:port endpoint"
    )
