"""AlterPartition at the controller: a leader's ISR proposal, validated and written
(Kafka's KafkaController.processAlterPartition, ZooKeeper mode), as a part of
KafkaController (kt.broker.controller.kafka_controller).

The checks, in Kafka's order, against the controller's context (not the znode):
- the broker is live with the epoch it sent (else STALE_BROKER_EPOCH for the request);
- per partition: a topic id the controller knows (UNKNOWN_TOPIC_ID), a partition it knows
  (UNKNOWN_TOPIC_OR_PARTITION); a leader or partition epoch newer than the context's
  means this broker is no longer the controller (NOT_CONTROLLER); an older leader epoch
  is FENCED_LEADER_EPOCH; a proposal equal to the current state is answered with it (a
  retry after a lost answer); an older partition epoch is INVALID_UPDATE_VERSION; a
  recovering leader is INVALID_REQUEST (kt never elects one); an ISR naming a broker that
  is not live is INELIGIBLE_REPLICA (OPERATION_NOT_ATTEMPTED before v2, KIP-841).
Accepted proposals are written to the state znode conditionally on its version
(INVALID_UPDATE_VERSION if another write came first), every live broker hears the new
state through UpdateMetadata, and a reassignment waiting for its new replicas to join
the ISR may complete.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from kt.broker.controller.context import ControllerContext
from kt.broker.metadata_cache import PartitionState
from kt.broker.replication.partition import TopicPartition
from kt.errors import KafkaError
from kt.protocol import messages as m

log = logging.getLogger(__name__)

RECOVERING = 1  # LeaderRecoveryState.RECOVERING
NULL_TOPIC_ID = uuid.UUID(int=0)


def _code(name: str) -> int:
    return KafkaError(name).code


class AlterPartitionHandling:
    """KafkaController's AlterPartition (mixed into KafkaController)."""

    ctx: ControllerContext
    zk: Any
    channel: Any
    _ask: Callable[..., Awaitable[Any]]
    _send_update_metadata: Callable[..., Awaitable[None]]
    _maybe_complete_reassignment: Callable[..., Awaitable[None]]

    async def alter_partition(self, request: Any, version: int) -> Any:
        """Answer an AlterPartition request (any version, 0 to 3)."""
        response = await self._ask(
            "AlterPartition", lambda: self._process_alter_partition(request, version)
        )
        if response is None:
            return m.AlterPartitionResponse(error_code=_code("NOT_CONTROLLER"))
        return response

    async def _process_alter_partition(self, request: Any, version: int) -> Any:
        broker_id = request.broker_id
        if (
            broker_id not in self.ctx.live_brokers
            or self.channel.broker_epoch(broker_id) != request.broker_epoch
        ):
            log.info("Ignoring AlterPartition from broker %s: stale broker epoch %s",
                     broker_id, request.broker_epoch)  # fmt: skip
            return m.AlterPartitionResponse(error_code=_code("STALE_BROKER_EPOCH"))
        names = {topic_id: name for name, topic_id in self.ctx.topic_ids.items()}
        results: dict[TopicPartition, str | PartitionState] = {}
        unknown_ids: list[Any] = []
        for topic in request.topics:
            name = names.get(topic.topic_id) if version >= 2 else topic.topic_name
            if name is None:
                unknown_ids.append(topic)
                continue
            for p in topic.partitions:
                tp = TopicPartition(name, p.partition_index)
                isr = ([b.broker_id for b in p.new_isr_with_epochs] if version >= 3
                       else list(p.new_isr))  # fmt: skip
                results[tp] = self._alter_isr(tp, broker_id, p, isr, version)
        written = [tp for tp, r in results.items() if isinstance(r, PartitionState)]
        if results:
            await self._send_update_metadata(sorted(self.ctx.live_brokers), list(results))
        for tp in written:
            if tp in self.ctx.adding or tp in self.ctx.removing:
                await self._maybe_complete_reassignment(tp)
        return self._alter_partition_response(results, unknown_ids, version)

    def _alter_isr(
        self, tp: TopicPartition, broker_id: int, proposal: Any, isr: list[int], version: int
    ) -> str | PartitionState:
        """Check one partition's proposal and write it: the state written (or the
        current one, for a proposal already applied), or an error name."""
        current = self.ctx.states.get(tp)
        if current is None:
            return "UNKNOWN_TOPIC_OR_PARTITION"
        if (
            proposal.partition_epoch > current.zk_version
            or proposal.leader_epoch > current.leader_epoch
        ):
            return "NOT_CONTROLLER"
        if proposal.leader_epoch < current.leader_epoch:
            return "FENCED_LEADER_EPOCH"
        if broker_id != current.leader:
            return "INVALID_REQUEST"  # same epoch, another leader: cannot happen unless forged
        if sorted(isr) == sorted(current.isr) and proposal.leader_recovery_state != RECOVERING:
            return current
        if proposal.partition_epoch < current.zk_version:
            return "INVALID_UPDATE_VERSION"
        if proposal.leader_recovery_state == RECOVERING:
            return "INVALID_REQUEST"
        ineligible = sorted(set(isr) - self.ctx.live_brokers)
        if ineligible:
            log.info("Rejecting AlterPartition from broker %s for %s: ineligible replicas %s "
                     "in the new ISR %s", broker_id, tp, ineligible, isr)  # fmt: skip
            return "INELIGIBLE_REPLICA" if version > 1 else "OPERATION_NOT_ATTEMPTED"
        new = PartitionState(
            tp.topic, tp.partition, current.leader, current.leader_epoch,
            list(current.replicas), list(isr), controller_epoch=self.ctx.epoch,
        )  # fmt: skip
        zk_version = self.zk.conditional_update_partition_state(
            new, current.zk_version, self.ctx.epoch_zk_version
        )
        if zk_version is None:
            log.info("Failed to update ISR to %s for partition %s, bad ZK version", isr, tp)
            return "INVALID_UPDATE_VERSION"
        new.zk_version = zk_version
        self.ctx.states[tp] = new
        log.info("ISR of %s updated to %s (AlterPartition from broker %s)", tp, isr, broker_id)
        return new

    def _alter_partition_response(
        self, results: dict[TopicPartition, str | PartitionState], unknown_ids: list[Any],
        version: int,
    ) -> Any:  # fmt: skip
        R = m.AlterPartitionResponse
        by_topic: dict[str, list[Any]] = {}
        for tp, result in results.items():
            if isinstance(result, str):
                data = R.PartitionData(partition_index=tp.partition, error_code=_code(result))
            else:
                data = R.PartitionData(
                    partition_index=tp.partition, error_code=0, leader_id=result.leader,
                    leader_epoch=result.leader_epoch, isr=list(result.isr),
                    leader_recovery_state=0, partition_epoch=result.zk_version,
                )  # fmt: skip
            by_topic.setdefault(tp.topic, []).append(data)
        ids = self.ctx.topic_ids
        topics = [
            R.TopicData(topic_id=ids.get(name) or NULL_TOPIC_ID, partitions=partitions)
            if version >= 2 else R.TopicData(topic_name=name, partitions=partitions)
            for name, partitions in by_topic.items()
        ]  # fmt: skip
        topics += [
            R.TopicData(
                topic_id=topic.topic_id,
                partitions=[
                    R.PartitionData(
                        partition_index=p.partition_index, error_code=_code("UNKNOWN_TOPIC_ID")
                    )
                    for p in topic.partitions
                ],
            )  # fmt: skip
            for topic in unknown_ids
        ]
        return R(error_code=0, topics=topics)
