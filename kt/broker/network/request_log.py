"""A request answered: its RequestMetrics, and its line of Kafka's request log at DEBUG
(what Kafka's RequestChannel does in updateRequestMetrics, with its requestLogger)."""

from __future__ import annotations

import functools
import json
import logging
from typing import TYPE_CHECKING

from kt.metrics.request_metrics import RequestMetrics, request_name
from kt.protocol import ApiKey

if TYPE_CHECKING:
    from kt.broker.network.socket_server import RequestContext

REQUEST_LOG = logging.getLogger("kafka.request.logger")  # Kafka's, off below DEBUG


def timed(metrics: RequestMetrics | None) -> bool:
    """Whether requests are timed: a broker serving metrics, or logging requests."""
    return metrics is not None or REQUEST_LOG.isEnabledFor(logging.DEBUG)


def request_completed(
    metrics: RequestMetrics | None, local: str, ctx: RequestContext, size: int,
    times: tuple[float, ...],
) -> None:  # fmt: skip
    """`times` in seconds, in RequestMetrics' TIMES order; `local` is host:port."""
    if metrics is not None:
        metrics.record(metric_names(ctx.api_key, ctx.from_follower), ctx.api_version, size, times)
    if REQUEST_LOG.isEnabledFor(logging.DEBUG):
        REQUEST_LOG.debug("Completed request:%s", log_entry(local, ctx, times))


def log_entry(local: str, ctx: RequestContext, times: tuple[float, ...]) -> str:
    """What Kafka's kafka.request.logger writes at DEBUG (RequestConvertToJson's
    requestDescMetrics), without the request's own fields."""
    queue, local_ms, remote, throttle, response_queue, send, total = (t * 1000 for t in times)
    api = ApiKey(ctx.api_key)
    return json.dumps({
        "isForwarded": False,
        "requestHeader": {"requestApiKey": int(api), "requestApiVersion": ctx.api_version,
                          "correlationId": ctx.correlation_id, "clientId": ctx.client_id,
                          "requestApiKeyName": api.name},
        "connection": f"{local}-{ctx.client_host}:{ctx.client_port}-{ctx.connection_id}",
        "totalTimeMs": round(total, 3), "requestQueueTimeMs": round(queue, 3),
        "localTimeMs": round(local_ms, 3), "remoteTimeMs": round(remote, 3),
        "throttleTimeMs": round(throttle), "responseQueueTimeMs": round(response_queue, 3),
        "sendTimeMs": round(send, 3), "securityProtocol": ctx.security_protocol,
        "principal": ctx.principal, "listener": ctx.listener,
    }, separators=(",", ":"))  # fmt: skip


@functools.cache
def metric_names(api_key: int, from_follower: bool) -> tuple[str, ...]:
    """The RequestMetrics a request counts in: Kafka's API name, and for a Fetch the
    FetchFollower or FetchConsumer metrics besides."""
    if api_key == ApiKey.FETCH:
        return ("FetchFollower" if from_follower else "FetchConsumer", "Fetch")
    return (request_name(api_key),)
