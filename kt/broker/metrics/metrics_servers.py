"""A broker's /metrics endpoints (metrics.listeners): started with the broker, each
scrape rendered on the broker's event loop (exposition.render_in_steps) while the
endpoint's thread waits."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
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
    from kt.config import KafkaConfig
    from kt.metrics.registry import MetricsRegistry

log = logging.getLogger(__name__)


async def start_metrics_servers(
    servers: list[MetricsHttpServer], config: KafkaConfig, broker_id: int,
    metrics: MetricsRegistry, loop: asyncio.AbstractEventLoop, running: Callable[[], bool],
) -> RequestMetrics | None:  # fmt: skip
    """/metrics on each metrics.listeners endpoint, added to `servers` as each starts (the
    broker closes them); the request metrics with them (their timing is a cost only a
    broker that serves them pays). Scrapes render `metrics` on `loop` while `running`."""
    endpoints = parse_metrics_listeners(config["metrics.listeners"])
    for host, port in endpoints:
        try:
            http = await asyncio.to_thread(
                MetricsHttpServer, host, port, lambda: scrape(metrics, loop, running)
            )
        except OSError as e:
            raise OSError(e.errno, f"metrics.listeners: failed to bind to {host}:{port}: "
                          f"{e.strerror}.") from None  # fmt: skip
        servers.append(http)
        log.info("[KafkaServer id=%s] serving metrics on http://%s:%s/metrics",
                 broker_id, host, http.port)  # fmt: skip
    if any(port == 0 for _, port in endpoints):  # DescribeConfigs shows the ports bound
        bound = ",".join(
            f"http://{f'[{host}]' if ':' in host else host}:{http.port}"
            for (host, _), http in zip(endpoints, servers, strict=True)
        )
        config.originals["metrics.listeners"] = config.values["metrics.listeners"] = bound
    return RequestMetrics(metrics) if endpoints else None


def scrape(
    metrics: MetricsRegistry, loop: asyncio.AbstractEventLoop, running: Callable[[], bool]
) -> Iterator[str]:
    """/metrics' text, rendered on the event loop (called on a scrape's thread)."""
    if loop.is_closed() or not running():
        raise ScrapeUnavailable("the broker is not running")
    future = asyncio.run_coroutine_threadsafe(render_in_steps(metrics), loop)
    try:
        return future.result(SCRAPE_TIMEOUT_S)
    except TimeoutError:
        future.cancel()
        raise ScrapeUnavailable(f"the broker did not render in {SCRAPE_TIMEOUT_S} s") from None
