"""`/metrics` over HTTP on each `metrics.listeners` endpoint (`http://host:port`), in a
thread of its own: the HTTP exchange never runs on the event loop, and the text is
rendered there a few rows at a time (exposition.render_in_steps) while this thread
waits, so the loop never waits for the GIL behind a scrape.

The process's own series (process_cpu_seconds_total, process_resident_memory_bytes,
process_open_fds, ...) come from prometheus-client's ProcessCollector, the ones the
JMX exporter's Java agent gives a Kafka broker under the same names.
"""

from __future__ import annotations

import functools
import logging
import socket
import threading
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from kt.errors import InvalidConfigError

log = logging.getLogger(__name__)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
SCRAPE_TIMEOUT_S = 30.0


class ScrapeUnavailable(Exception):
    """The broker cannot render its metrics now (stopping, or too busy): HTTP 503."""


def parse_metrics_listeners(value: str) -> list[tuple[str, int]]:
    """`http://127.0.0.1:9404,http://[::1]:9405` -> [(host, port)]; empty: none."""
    endpoints = []
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        url = urlsplit(item)
        try:
            port = url.port
        except ValueError:
            port = None
        if url.scheme != "http" or port is None or url.path not in ("", "/"):
            raise InvalidConfigError(
                f"metrics.listeners: {item!r} is not an http://host:port endpoint"
            )
        endpoints.append((url.hostname or "0.0.0.0", port))
    return endpoints


class _ThreadingHTTPServerV6(ThreadingHTTPServer):
    address_family = socket.AF_INET6


@functools.cache
def _process_series() -> Callable[[], bytes]:
    """prometheus-client's process collector, imported only by a broker serving metrics."""
    from prometheus_client import CollectorRegistry, ProcessCollector, generate_latest

    registry = CollectorRegistry(auto_describe=False)
    ProcessCollector(registry=registry)
    return lambda: generate_latest(registry)


class MetricsHttpServer:
    """One endpoint: GET /metrics (and /) answers `render()` and the process's series."""

    def __init__(self, host: str, port: int, render: Callable[[], Iterable[str]]) -> None:
        process_series = _process_series()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                if urlsplit(self.path).path not in ("/", "/metrics"):
                    self.send_error(404)
                    return
                try:
                    parts = render()
                except ScrapeUnavailable as e:
                    self.send_error(503, str(e))
                    return
                body = "".join(parts).encode() + process_series()
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                log.debug("metrics: " + format, *args)

        server_class = _ThreadingHTTPServerV6 if ":" in host else ThreadingHTTPServer
        self._server = server_class((host, port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.1},
            name=f"metrics-http-{self.port}", daemon=True,
        )  # fmt: skip
        self._thread.start()

    def close(self) -> None:
        """Stop serving (blocks up to a poll interval: call it off the event loop)."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
