"""A leader's ISR changes go to the controller as AlterPartition (KIP-497).

Kafka's DefaultAlterPartitionManager: the partitions this broker leads propose a new ISR
(a follower caught up, or fell behind); the proposals are sent to the controller in one
AlterPartition request at a time, batched, and each proposal's future completes with the
controller's answer for its partition: the state the controller wrote (leader, leader
epoch, ISR, partition epoch = the state znode's version) or a KafkaError. The controller,
not the leader, writes /brokers/topics/<t>/partitions/<p>/state.

Invariants:
- at most one proposal per partition is queued or in flight (a second is refused with
  OPERATION_NOT_ATTEMPTED, as Kafka's manager refuses it);
- one request in flight; a request the controller did not take (it moved, it is away, it
  answered a top-level error) is sent again, to the controller of the moment, after a
  backoff, as is a partition the answer left out; a proposal is never dropped unanswered
  (Kafka retries AlterPartition without a timeout).

The request: v3 (ISR members with broker epochs, topics by id) when every topic's id is
known and the controller speaks it, else v1 (topics by name), as Kafka's
AlterPartitionRequest.Builder picks.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from kt.broker.replication.partition import TopicPartition
from kt.errors import KafkaError
from kt.protocol import messages as m

log = logging.getLogger(__name__)

RETRY_BACKOFF_S = 0.05  # growing to 1 s between attempts on a request not taken
TOPIC_ID_VERSION = 2  # the first version that names topics by id
LATEST_VERSION = 3


@dataclass(frozen=True)
class CommittedIsr:
    """The controller's answer for one partition: the state it wrote."""

    leader_id: int
    leader_epoch: int
    isr: list[int]
    partition_epoch: int


@dataclass
class AlterPartitionItem:
    tp: TopicPartition
    leader_epoch: int
    new_isr: list[int]
    partition_epoch: int
    future: asyncio.Future[CommittedIsr] = field(repr=False)


# Sends a request (built for the version given) to the current controller and returns
# its answer, or raises KafkaError when no controller took it. Arguments: the request
# builder, the highest version the caller wants.
ControllerSend = Callable[[Callable[[int], Any], int], Awaitable[Any]]


class AlterPartitionManager:
    """Queues ISR proposals and sends them to the controller, one request at a time."""

    def __init__(
        self,
        broker_id: int,
        broker_epoch: Callable[[], int],
        topic_id: Callable[[str], Any],
        send: ControllerSend,
    ) -> None:
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch
        self.topic_id = topic_id
        self.send = send
        self._unsent: dict[TopicPartition, AlterPartitionItem] = {}
        self._in_flight: dict[TopicPartition, AlterPartitionItem] = {}
        self._sender: asyncio.Task | None = None

    def submit(
        self, tp: TopicPartition, leader_epoch: int, new_isr: list[int], partition_epoch: int
    ) -> asyncio.Future[CommittedIsr]:
        """Propose `new_isr` for a partition this broker leads at `leader_epoch`, whose
        state znode has version `partition_epoch`."""
        future: asyncio.Future[CommittedIsr] = asyncio.get_running_loop().create_future()
        if tp in self._unsent or tp in self._in_flight:
            future.set_exception(KafkaError(
                "OPERATION_NOT_ATTEMPTED", f"Partition {tp} already has a pending ISR update"
            ))  # fmt: skip
            return future
        self._unsent[tp] = AlterPartitionItem(tp, leader_epoch, new_isr, partition_epoch, future)
        if self._sender is None or self._sender.done():
            self._sender = asyncio.get_running_loop().create_task(
                self._send_all(), name=f"alter-partition-{self.broker_id}"
            )
        return future

    def close(self) -> None:
        if self._sender is not None:
            self._sender.cancel()
        for item in [*self._unsent.values(), *self._in_flight.values()]:
            item.future.cancel()
        self._unsent.clear()
        self._in_flight.clear()

    # -- sending ----------------------------------------------------------------------

    async def _send_all(self) -> None:
        attempt = 0
        while self._unsent:
            self._in_flight, self._unsent = self._unsent, {}
            items = [i for i in self._in_flight.values() if not i.future.done()]
            if not items:
                continue
            try:
                response = await self.send(
                    functools.partial(self.build_request, items), self.version_for(items)
                )
                if response.error_code:  # NOT_CONTROLLER, STALE_BROKER_EPOCH, ...: again
                    raise KafkaError(response.error_code)
            except KafkaError as e:
                if attempt == 0:  # once per streak: a controller may be away for a while
                    log.info("[AlterPartitionManager broker=%s] AlterPartition not taken: "
                             "%s; sending again", self.broker_id, e.name)  # fmt: skip
                self._requeue(items)
                attempt += 1
                await asyncio.sleep(min(RETRY_BACKOFF_S * 2**attempt, 1.0))
                continue
            attempt = 0
            self._requeue(self._complete(items, response))

    def _requeue(self, items: list[AlterPartitionItem]) -> None:
        """Send these proposals again, ahead of newer ones (none can exist for the same
        partition: submit refuses those)."""
        kept = {i.tp: i for i in items if not i.future.done()}
        self._unsent = {**kept, **self._unsent}
        self._in_flight = {}

    def version_for(self, items: list[AlterPartitionItem]) -> int:
        known = all(self.topic_id(i.tp.topic) is not None for i in items)
        return LATEST_VERSION if known else TOPIC_ID_VERSION - 1

    def build_request(self, items: list[AlterPartitionItem], version: int) -> Any:
        """The AlterPartition request for `items` at `version`."""
        R = m.AlterPartitionRequest
        by_topic: dict[str, list[AlterPartitionItem]] = {}
        for item in items:
            by_topic.setdefault(item.tp.topic, []).append(item)
        topics = []
        for topic, topic_items in by_topic.items():
            partitions = [
                R.PartitionData(
                    partition_index=i.tp.partition,
                    leader_epoch=i.leader_epoch,
                    new_isr=list(i.new_isr) if version < 3 else [],
                    new_isr_with_epochs=[
                        R.BrokerState(broker_id=b, broker_epoch=-1) for b in i.new_isr
                    ]
                    if version >= 3
                    else [],
                    leader_recovery_state=0,
                    partition_epoch=i.partition_epoch,
                )  # fmt: skip
                for i in topic_items
            ]
            topics.append(
                R.TopicData(topic_name=topic, topic_id=self.topic_id(topic), partitions=partitions)
                if version >= TOPIC_ID_VERSION
                else R.TopicData(topic_name=topic, partitions=partitions)
            )
        return R(broker_id=self.broker_id, broker_epoch=self.broker_epoch(), topics=topics)

    def _complete(self, items: list[AlterPartitionItem], response: Any) -> list[AlterPartitionItem]:
        """Complete each proposal with its answer; returns those the response left out
        (sent again, as Kafka's manager does)."""
        answers: dict[TopicPartition, Any] = {}
        names = {self.topic_id(i.tp.topic): i.tp.topic for i in items}
        for topic in response.topics:
            name = topic.topic_name or names.get(topic.topic_id)
            for p in topic.partitions:
                answers[TopicPartition(name, p.partition_index)] = p
        missing = []
        for item in items:
            answer = answers.get(item.tp)
            if answer is None:
                log.warning("[AlterPartitionManager broker=%s] %s was sent but not included "
                            "in the response", self.broker_id, item.tp)  # fmt: skip
                missing.append(item)
            elif answer.error_code:
                _fail(item, KafkaError(answer.error_code))
            elif not item.future.done():
                item.future.set_result(CommittedIsr(
                    answer.leader_id, answer.leader_epoch, list(answer.isr),
                    answer.partition_epoch,
                ))  # fmt: skip
        return missing


def _fail(item: AlterPartitionItem, error: KafkaError) -> None:
    if not item.future.done():
        item.future.set_exception(error)
