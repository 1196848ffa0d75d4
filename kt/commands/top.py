"""`kt top`: a live view of one cluster from its brokers' /metrics (metrics.listeners)."""

from __future__ import annotations

import os
import select
import sys
import termios
import time
import tty
from typing import Any

import click

from kt.commands.common import KafkaCommand, admin_session, fail, usage_error

AT_RISK_ROWS = 20  # under-replicated partitions listed in a frame, the first by name


@click.command("top", cls=KafkaCommand)
@click.option("--bootstrap-server", help="The server(s) to find the brokers with.")
@click.option("--command-config", type=click.Path(dir_okay=False),
              help="Admin client property file.")  # fmt: skip
@click.option(
    "--metrics-url",
    "metrics_urls",
    multiple=True,
    metavar="URL",
    help="A broker's /metrics URL (repeatable), instead of asking the cluster.",
)
@click.option(
    "--interval",
    type=float,
    default=1.0,
    show_default=True,
    help="Seconds between two frames (and between the two scrapes of --once).",
)
@click.option("--once", is_flag=True, help="Print one frame and exit (for scripts).")
def top(
    bootstrap_server: str | None, command_config: str | None, metrics_urls: tuple[str, ...],
    interval: float, once: bool,
) -> None:  # fmt: skip
    """Per-broker rates and request latencies, per-topic rates, under-replicated and
    offline partitions, the controller and the groups' lag, refreshed every --interval
    seconds from each broker's /metrics; `q` quits."""
    from kt.tools import top as t

    if bootstrap_server is None and not metrics_urls:
        usage_error("Missing required argument: --bootstrap-server or --metrics-url")
    if interval <= 0:
        usage_error("--interval must be above 0")
    if metrics_urls:
        urls = dict(enumerate(metrics_urls))
    else:
        assert bootstrap_server is not None
        with admin_session(bootstrap_server, command_config) as admin:
            urls = t.metrics_urls(admin)
        if not urls:
            fail(f"No broker of {bootstrap_server} serves metrics: set metrics.listeners "
                 "(http://host:port) on the brokers")  # fmt: skip
    from rich.console import Console

    names = {i: url for i, url in urls.items()} if metrics_urls else None
    console = Console(width=None if sys.stdout.isatty() else 132)
    before = t.sample(urls)
    if once:
        time.sleep(interval)
        console.print(render(t.frame(before, t.sample(urls)), names))
        return
    live_view(console, urls, before, interval, names)


def live_view(console: Any, urls: dict[int, str], before: Any, interval: float,
              names: dict[int, str] | None) -> None:  # fmt: skip
    from rich.live import Live

    from kt.tools import top as t

    with _keys() as pressed, Live(console=console, auto_refresh=False, screen=False) as live:
        while True:
            deadline = time.monotonic() + interval
            while time.monotonic() < deadline:
                if pressed(deadline - time.monotonic()) in ("q", "Q"):
                    return
            after = t.sample(urls)
            live.update(render(t.frame(before, after), names), refresh=True)
            before = after


class _keys:
    """Single key presses from a terminal (cbreak mode), restored on exit; nothing when
    stdin is not a terminal."""

    def __enter__(self) -> Any:
        self._fd = sys.stdin.fileno() if sys.stdin.isatty() else None
        if self._fd is not None:
            self._saved = termios.tcgetattr(self._fd)
            tty.setcbreak(self._fd)
        return self.read

    def read(self, timeout_s: float) -> str:
        if self._fd is None:
            time.sleep(max(0.0, timeout_s))
            return ""
        ready, _, _ = select.select([self._fd], [], [], max(0.0, timeout_s))
        return os.read(self._fd, 1).decode(errors="replace") if ready else ""

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            termios.tcsetattr(self._fd, termios.TCSADRAIN, self._saved)


def _bytes(rate: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if rate < 1024 or unit == "GB":
            return f"{rate:,.0f} {unit}/s" if unit == "B" else f"{rate:,.1f} {unit}/s"
        rate /= 1024
    return ""


def render(frame: Any, names: dict[int, str] | None = None) -> Any:
    """The frame as rich renderables: brokers (named by id, or by `names`: their URLs),
    topics, partitions at risk, lag."""
    from rich.console import Group
    from rich.table import Table

    controller = "none" if frame.controller < 0 else str(frame.controller)
    head = (f"controller: {controller}   offline partitions: {frame.offline_partitions}   "
            f"under-replicated partitions: {len(frame.under_replicated)}")  # fmt: skip
    brokers = Table(title="Brokers", title_justify="left")
    for column in ("URL" if names else "Broker", "Msgs in/s", "In/s", "Out/s", "Produce p99 ms",
                   "Fetch p99 ms", "Partitions", "Leaders", "URP", "Idle %"):  # fmt: skip
        brokers.add_column(column, justify="left" if column in ("Broker", "URL") else "right")
    for b in frame.brokers:
        name = (names or {}).get(b.broker_id, str(b.broker_id)) + (" *" if b.controller else "")
        if not b.reachable:
            brokers.add_row(name, f"unreachable: {b.error}", *[""] * 8)
            continue
        brokers.add_row(
            name,
            f"{b.messages_in:,.0f}",
            _bytes(b.bytes_in),
            _bytes(b.bytes_out),
            f"{b.produce_p99_ms:.1f}",
            f"{b.fetch_p99_ms:.1f}",
            str(b.partitions),
            str(b.leaders),
            str(b.under_replicated),
            f"{b.idle * 100:.0f}",
        )
    topics = Table(title="Topics", title_justify="left")
    for column in ("Topic", "Msgs in/s", "Bytes in/s", "Bytes out/s"):
        topics.add_column(column, justify="left" if column == "Topic" else "right")
    for row in frame.topics:
        topics.add_row(row.topic, f"{row.messages_in:,.0f}", _bytes(row.bytes_in),
                       _bytes(row.bytes_out))  # fmt: skip
    parts: list[Any] = [head, brokers, topics]
    if frame.under_replicated:
        at_risk = Table(title="Under-replicated partitions", title_justify="left")
        for column in ("Topic", "Partition", "Leader"):
            at_risk.add_column(column)
        for topic, partition, leader in frame.under_replicated[:AT_RISK_ROWS]:
            at_risk.add_row(topic, str(partition), str(leader))
        parts.append(at_risk)
        if len(frame.under_replicated) > AT_RISK_ROWS:
            parts.append(f"... and {len(frame.under_replicated) - AT_RISK_ROWS} more")
    if frame.lag:
        lag = Table(title="Consumer lag", title_justify="left")
        for column in ("Group", "Topic", "Lag"):
            lag.add_column(column, justify="right" if column == "Lag" else "left")
        for group, topic, value in frame.lag:
            lag.add_row(group, topic, f"{value:,.0f}")
        parts.append(lag)
    return Group(*parts)
