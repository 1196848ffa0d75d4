"""A broker's /metrics endpoints (metrics.listeners): started with the broker, each
scrape rendered on the broker's event loop (exposition.render_in_steps) while the
endpoint's thread waits."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

from kt.metrics.exposition import render_in_steps
from kt.metrics.http_server import (
    SCRAPE_TIMEOUT_S,
    MetricsHttpServer,
    ScrapeUnavailable,
    parse_metrics_listeners,
)
from kt.metrics.request_metrics import RequestMetrics

if TYPE_CHECKING:
    from kt.broker.server import KafkaServer

log = logging.getLogger(__name__)


async def start_metrics_servers(server: KafkaServer) -> RequestMetrics | None:
    """/metrics on each metrics.listeners endpoint; the request metrics with them
    (their timing is a cost only a broker that serves them pays)."""
    endpoints = parse_metrics_listeners(server.config["metrics.listeners"])
    for host, port in endpoints:
        try:
            http = await asyncio.to_thread(MetricsHttpServer, host, port, lambda: scrape(server))
        except OSError as e:
            raise OSError(e.errno, f"metrics.listeners: failed to bind to {host}:{port}: "
                          f"{e.strerror}.") from None  # fmt: skip
        server.metrics_servers.append(http)
        log.info("[KafkaServer id=%s] serving metrics on http://%s:%s/metrics",
                 server.broker_id, host, http.port)  # fmt: skip
    if any(port == 0 for _, port in endpoints):  # DescribeConfigs shows the ports bound
        bound = ",".join(
            f"http://{f'[{host}]' if ':' in host else host}:{http.port}"
            for (host, _), http in zip(endpoints, server.metrics_servers, strict=True)
        )
        server.config.originals["metrics.listeners"] = server.config.values[
            "metrics.listeners"] = bound  # fmt: skip
    return RequestMetrics(server.metrics) if endpoints else None


def scrape(server: KafkaServer) -> Iterator[str]:
    """/metrics' text, rendered on the event loop (called on a scrape's thread)."""
    loop = server.loop
    if loop is None or loop.is_closed() or server._stopped.is_set():
        raise ScrapeUnavailable("the broker is not running")
    future = asyncio.run_coroutine_threadsafe(render_in_steps(server.metrics), loop)
    try:
        return future.result(SCRAPE_TIMEOUT_S)
    except TimeoutError:
        future.cancel()
        raise ScrapeUnavailable(f"the broker did not render in {SCRAPE_TIMEOUT_S} s") from None
