"""Reading a coordinator's partition (`__consumer_offsets`, `__transaction_state`,
`__share_group_state`) when this broker becomes its leader: Kafka's CoordinatorLoaderImpl.
The log is read from its start to its end in chunks of the loader's buffer size, each
batch once, yielding to the event loop between chunks so that other requests are served
while a large partition loads; it stops as soon as the caller is no longer loading (the
leadership moved on)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from kt.broker.replication.partition import TopicPartition
from kt.storage.records import iter_batches


async def log_batches(
    replica_manager: Any,
    tp: TopicPartition,
    buffer_size: int,
    still_loading: Callable[[], bool],
) -> AsyncIterator[Any]:
    """The record batches of `tp`'s local log, in offset order; none when the partition
    is not here."""
    partition = replica_manager.partitions.get(tp)
    if partition is None:
        return
    log = partition.log
    position = log.log_start_offset
    while position < log.log_end_offset and still_loading():
        data = log.read(position, buffer_size, min_one_message=True).records
        data = data if isinstance(data, bytes | bytearray) else data.read_bytes()
        if not data:
            break
        for batch in iter_batches(data):
            if batch.next_offset <= position:
                continue
            yield batch
            position = batch.next_offset
        await asyncio.sleep(0)  # other requests in between chunks
