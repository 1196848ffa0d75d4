"""How a share partition's leader reaches the share coordinator (Kafka's
DefaultStatePersister): kt's own share coordinator, on this broker.

`__share_group_state` is created the first time a share partition needs it; the
persister then waits, within a deadline, for this broker to lead and load the key's
partition (a one-broker cluster's case). A key whose partition another broker leads
answers COORDINATOR_NOT_AVAILABLE: the internal RPCs that reach it there
(Initialize/Read/WriteShareGroupState) are not served yet.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from kt.broker.share.share_coordinator import ShareStateError, WriteRequest
from kt.broker.share.share_coordinator_service import ShareCoordinatorService
from kt.broker.share.share_state import ShareGroupOffset, SharePartitionKey

T = TypeVar("T")
_WAIT_FOR = frozenset(("NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS",
                       "COORDINATOR_NOT_AVAILABLE"))  # fmt: skip


class LocalPersister:
    def __init__(
        self,
        service: ShareCoordinatorService,
        coordinator_leader: Callable[[SharePartitionKey], int | None],
        broker_id: int,
        create_topic: Callable[[], Awaitable[None]],
        wait_s: float = 10.0,
    ) -> None:
        self.service = service
        # The broker leading the key's __share_group_state partition; None without the topic.
        self.coordinator_leader = coordinator_leader
        self.broker_id = broker_id
        self.create_topic = create_topic
        self.wait_s = wait_s

    async def initialize(self, key: SharePartitionKey, state_epoch: int, start: int) -> None:
        await self._call(key, lambda: self.service.initialize(key, state_epoch, start))

    async def read(self, key: SharePartitionKey, leader_epoch: int) -> ShareGroupOffset:
        return await self._call(key, lambda: self.service.read(key, leader_epoch))

    async def write(self, request: WriteRequest) -> None:
        await self._call(request.key, lambda: self.service.write(request))

    async def _call(self, key: SharePartitionKey, operation: Callable[[], Awaitable[T]]) -> T:
        deadline = time.monotonic() + self.wait_s
        created = False
        while True:
            try:
                return await operation()
            except ShareStateError as e:
                if e.error not in _WAIT_FOR:
                    raise
                leader = self.coordinator_leader(key)
                elsewhere = leader is not None and leader >= 0 and leader != self.broker_id
                if elsewhere or time.monotonic() > deadline:
                    raise ShareStateError("COORDINATOR_NOT_AVAILABLE") from e
                if leader is None and not created:
                    await self.create_topic()
                    created = True
            await asyncio.sleep(0.02)
