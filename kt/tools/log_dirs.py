"""The logic of `kt log-dirs` (Kafka's LogDirsCommand): each broker's log dirs with the
size and offset lag of every replica in them, as Kafka's tool prints them (Jackson over
Java HashMaps, so keys and lists come in HashMap order)."""

from __future__ import annotations

import json
from typing import Any

from kt.client.admin import AdminClient
from kt.errors import error_for
from kt.metadata.jvm_order import java_hash_order, java_hash_set_order, topic_partition_hash


class LogDirsError(Exception):
    """TerseException: its message, exit 1."""


def _ordered(values: dict[str, Any]) -> dict[str, Any]:
    return {k: values[k] for k in java_hash_order(values)}


def describe(admin: AdminClient, brokers: set[int], topics: set[str]) -> list[str]:
    admin.client.metadata([])  # the brokers of the cluster (DescribeCluster's nodes)
    cluster = set(admin.client.brokers)
    wanted = (brokers or cluster) & cluster
    unknown = brokers - cluster
    if unknown:
        raise LogDirsError(
            "ERROR: The given brokers do not exist from --broker-list: "
            f"{','.join(map(str, sorted(unknown)))}. Current existent brokers: "
            f"{','.join(map(str, sorted(cluster)))}"
        )
    described = {broker: admin.describe_log_dirs(broker) for broker in sorted(wanted)}
    entries = []
    for broker, dirs in described.items():
        by_dir = {}
        for log_dir, error, replicas in dirs:
            shown = {(t, p): (size, lag, future) for t, p, size, lag, future in replicas
                     if not topics or t in topics}  # fmt: skip
            partitions = [
                _ordered({"partition": f"{t}-{p}", "size": size, "offsetLag": lag,
                          "isFuture": future})
                for (t, p), (size, lag, future) in (
                    (tp, shown[tp])
                    for tp in java_hash_set_order(sorted(shown), topic_partition_hash)
                )
            ]  # fmt: skip
            by_dir[log_dir] = _ordered(
                {
                    "logDir": log_dir,
                    "error": error_for(error).java_exception if error else None,
                    "partitions": partitions,
                }
            )
        dirs_shown = [by_dir[d] for d in java_hash_order(by_dir)]
        entries.append(_ordered({"broker": broker, "logDirs": dirs_shown}))
    document = _ordered({"version": 1, "brokers": entries})
    return [
        "Querying brokers for log directories information",
        "Received log directory information from brokers " + ",".join(map(str, sorted(wanted))),
        json.dumps(document, separators=(",", ":")),
    ]
