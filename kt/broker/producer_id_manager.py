"""Producer ids for idempotent producers (Kafka's ZkProducerIdManager).

Ids are handed out from blocks of 1000 claimed in the metadata store, so that no two
brokers, and no restart of one broker, ever give the same id twice.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any


class ProducerIdManager:
    """Hands out the ids of the current block; claims the next block when it runs out.

    `store_call` runs the claim (a store write) off the event loop; one claim at a time."""

    def __init__(self, broker_id: int, zk: Any, store_call: Callable[..., Awaitable[Any]]) -> None:
        self.broker_id = broker_id
        self.zk = zk
        self.store_call = store_call
        self._next = 0
        self._end = -1
        self._claiming = asyncio.Lock()

    async def generate_producer_id(self) -> int:
        async with self._claiming:
            if self._next > self._end:
                block = await self.store_call(self.zk.claim_producer_id_block, self.broker_id)
                self._next, self._end = block.block_start, block.block_end
        producer_id = self._next
        self._next += 1
        return producer_id
