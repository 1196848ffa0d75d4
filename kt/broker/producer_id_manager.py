"""Producer ids for idempotent producers (Kafka's ZkProducerIdManager).

Ids are handed out from blocks of 1000 claimed in the metadata store, so that no two
brokers, and no restart of one broker, ever give the same id twice.
"""

from __future__ import annotations

from typing import Any


class ProducerIdManager:
    """Hands out the ids of the current block; claims the next block when it runs out."""

    def __init__(self, broker_id: int, zk: Any) -> None:
        self.broker_id = broker_id
        self.zk = zk
        self._next = 0
        self._end = -1

    def generate_producer_id(self) -> int:
        if self._next > self._end:
            block = self.zk.claim_producer_id_block(self.broker_id)
            self._next, self._end = block.block_start, block.block_end
        producer_id = self._next
        self._next += 1
        return producer_id
