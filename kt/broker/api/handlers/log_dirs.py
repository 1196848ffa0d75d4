"""DescribeLogDirs: which log dir holds each partition, and how big it is; and
AlterReplicaLogDirs, which moves replicas between them (kt.broker.replication.log_dir_mover)."""

from __future__ import annotations

import os
import shutil
from typing import TYPE_CHECKING, Any

from kt.broker.replication.partition import TopicPartition
from kt.protocol import messages as m

if TYPE_CHECKING:
    from kt.broker.broker_services import BrokerServices


async def describe_log_dirs(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    wanted = None
    if request.topics is not None:
        wanted = {(t.topic, p) for t in request.topics for p in t.partitions}
    lm = broker.log_manager
    by_dir: dict[str, dict[str, list[Any]]] = {d: {} for d in lm.log_dirs}
    for (topic, partition), log_ in sorted(lm.logs.items()):
        if wanted is not None and (topic, partition) not in wanted:
            continue
        directory = os.path.dirname(log_.dir)
        by_dir.setdefault(directory, {}).setdefault(topic, []).append(
            m.DescribeLogDirsResponse.DescribeLogDirsPartition(
                partition_index=partition,
                partition_size=log_.size,
                offset_lag=max(0, log_.high_watermark - log_.log_end_offset),
                is_future_key=False,
            )
        )
        moving = broker.replica_manager.log_dir_mover.future_lag(TopicPartition(topic, partition))
        if moving is not None:
            future, lag = moving
            by_dir.setdefault(future.destination, {}).setdefault(topic, []).append(
                m.DescribeLogDirsResponse.DescribeLogDirsPartition(
                    partition_index=partition,
                    partition_size=future.log.size,
                    offset_lag=lag,
                    is_future_key=True,
                )  # fmt: skip
            )
    results = []
    for directory, topic_map in by_dir.items():
        usage = shutil.disk_usage(directory)
        results.append(
            m.DescribeLogDirsResponse.DescribeLogDirsResult(
                error_code=0,
                log_dir=directory,
                topics=[
                    m.DescribeLogDirsResponse.DescribeLogDirsTopic(name=t, partitions=ps)
                    for t, ps in sorted(topic_map.items())
                ],
                total_bytes=usage.total,
                usable_bytes=usage.free,
            )
        )
    return m.DescribeLogDirsResponse(error_code=0, results=results, throttle_time_ms=0)


async def alter_replica_log_dirs(
    broker: BrokerServices, header: Any, request: Any, ctx: Any
) -> Any:
    R = m.AlterReplicaLogDirsResponse
    by_topic: dict[str, list[Any]] = {}
    for wanted in request.dirs:
        for topic in wanted.topics:
            for partition in topic.partitions:
                error = broker.replica_manager.log_dir_mover.alter_log_dir(
                    TopicPartition(topic.name, partition), wanted.path
                )
                by_topic.setdefault(topic.name, []).append(
                    R.AlterReplicaLogDirPartitionResult(
                        partition_index=partition, error_code=error.code if error else 0
                    )
                )
    return R(results=[R.AlterReplicaLogDirTopicResult(topic_name=t, partitions=ps)
                      for t, ps in by_topic.items()])  # fmt: skip
