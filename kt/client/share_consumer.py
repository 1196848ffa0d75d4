"""A share group member (KIP-932), as Kafka's KafkaShareConsumer with
share.acknowledgement.mode=explicit: it heartbeats to the group's coordinator
(ShareGroupHeartbeat), fetches the partitions it is assigned from their leaders in one
share session per leader (ShareFetch), and acknowledges each record it was handed
(accept, release or reject) with its next fetch; the offsets it acquired but was not handed
(control records) are acknowledged as gaps. Closing sends what is left to acknowledge,
ends each share session (ShareAcknowledge, epoch -1) and leaves the group.

Synchronous, for the tools: `poll` heartbeats when due and fetches once from each leader.
"""

from __future__ import annotations

import base64
import time
import uuid
from dataclasses import dataclass
from typing import Any

from kt.client.client import KafkaClient
from kt.client.consumer import ConsumerRecord
from kt.errors import KafkaError
from kt.protocol import ApiKey
from kt.protocol import messages as m
from kt.storage.records import iter_batches

GAP, ACCEPT, RELEASE, REJECT = 0, 1, 2, 3  # AcknowledgeType
_REJOIN = frozenset(("UNKNOWN_MEMBER_ID", "FENCED_MEMBER_EPOCH"))
_SESSION_LOST = frozenset(("SHARE_SESSION_NOT_FOUND", "INVALID_SHARE_SESSION_EPOCH"))


@dataclass(slots=True)
class ShareRecord(ConsumerRecord):
    """A record and how many times it was delivered (this time included)."""

    delivery_count: int = 1


def _member_id() -> str:
    """Uuid.randomUuid().toString(): URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


class ShareConsumer:
    def __init__(
        self, client: KafkaClient, group_id: str, topics: list[str], *,
        max_wait_ms: int = 500, max_records: int = 500, max_bytes: int = 50 << 20,
    ) -> None:  # fmt: skip
        self.client = client
        self.group_id = group_id
        self.topics = topics
        self.max_wait_ms = max_wait_ms
        self.max_records = max_records
        self.max_bytes = max_bytes
        self.member_id = _member_id()
        self.member_epoch = 0
        self.heartbeat_interval_s = 0.0
        self._next_heartbeat = 0.0
        self.assignment: dict[uuid.UUID, list[int]] = {}
        self._names: dict[uuid.UUID, str] = {}
        self._ids: dict[str, uuid.UUID] = {}
        self._sessions: dict[int, int] = {}  # leader -> next share session epoch
        self._leaders: dict[tuple[str, int], int] = {}
        self._acks: dict[tuple[uuid.UUID, int], dict[int, int]] = {}

    # -- membership ------------------------------------------------------------------------

    def _coordinator(self) -> Any:
        deadline = time.monotonic() + self.client.timeout_s
        while True:
            error, node, _, _ = self.client.find_coordinator(self.group_id, 0)
            if error == 0:
                return self.client.connection(node)
            if time.monotonic() > deadline:
                raise KafkaError(error, f"Cannot find the coordinator of {self.group_id}")
            time.sleep(0.1)

    def _heartbeat(self, leaving: bool = False) -> None:
        epoch = -1 if leaving else self.member_epoch
        request = m.ShareGroupHeartbeatRequest(
            group_id=self.group_id, member_id=self.member_id, member_epoch=epoch,
            subscribed_topic_names=self.topics if self.member_epoch == 0 else None,
        )  # fmt: skip
        response = self._coordinator().send(ApiKey.SHARE_GROUP_HEARTBEAT, request)
        if leaving:
            return
        error = KafkaError(response.error_code).name if response.error_code else "NONE"
        if error in _REJOIN:
            self.member_epoch, self.assignment = 0, {}
            self._next_heartbeat = 0.0
            return
        if error != "NONE":
            if error in ("NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE",
                         "COORDINATOR_LOAD_IN_PROGRESS"):  # fmt: skip
                self._next_heartbeat = time.monotonic() + 0.1
                return
            raise KafkaError(response.error_code, response.error_message)
        self.member_epoch = response.member_epoch
        self.heartbeat_interval_s = response.heartbeat_interval_ms / 1000
        self._next_heartbeat = time.monotonic() + self.heartbeat_interval_s
        if response.assignment is not None:
            self.assignment = {t.topic_id: list(t.partitions)
                               for t in response.assignment.topic_partitions}  # fmt: skip
            self._refresh_metadata()

    def _refresh_metadata(self) -> None:
        for name, info in self.client.metadata(self.topics).items():
            if info.topic_id is not None:
                self._names[info.topic_id] = name
                self._ids[name] = info.topic_id
            for p, state in info.partitions.items():
                self._leaders[(name, p)] = state.leader

    # -- fetching --------------------------------------------------------------------------

    def poll(self, timeout_ms: int) -> list[ShareRecord]:
        """Records acquired for this member within `timeout_ms` (may be empty)."""
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            if time.monotonic() >= self._next_heartbeat:
                self._heartbeat()
            records = self._fetch_all() if self.assignment else []
            if not self.assignment:
                time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))
            if records or time.monotonic() >= deadline:
                return records

    def _by_leader(self) -> dict[int, list[tuple[uuid.UUID, int]]]:
        out: dict[int, list[tuple[uuid.UUID, int]]] = {}
        for topic_id, partitions in self.assignment.items():
            name = self._names.get(topic_id)
            for p in partitions:
                leader = self._leaders.get((name, p), -1) if name else -1
                if leader >= 0:
                    out.setdefault(leader, []).append((topic_id, p))
        for topic_id, p in self._acks:  # acknowledgements of partitions no longer assigned
            name = self._names.get(topic_id)
            leader = self._leaders.get((name, p), -1) if name else -1
            if leader >= 0 and (topic_id, p) not in out.get(leader, []):
                out.setdefault(leader, []).append((topic_id, p))
        return out

    def _fetch_all(self) -> list[ShareRecord]:
        out: list[ShareRecord] = []
        for leader, partitions in self._by_leader().items():
            out += self._fetch(leader, partitions)
        return out

    def _fetch(self, leader: int, partitions: list[tuple[uuid.UUID, int]]) -> list[ShareRecord]:
        R = m.ShareFetchRequest
        epoch = self._sessions.get(leader, 0)
        by_topic: dict[uuid.UUID, list[Any]] = {}
        sent: list[tuple[uuid.UUID, int]] = []
        for topic_id, p in partitions:
            batches = self._ack_batches(topic_id, p) if epoch > 0 else []
            if batches:
                sent.append((topic_id, p))
            by_topic.setdefault(topic_id, []).append(R.FetchPartition(
                partition_index=p, acknowledgement_batches=batches))  # fmt: skip
        request = R(group_id=self.group_id, member_id=self.member_id,
                    share_session_epoch=epoch, max_wait_ms=self.max_wait_ms, min_bytes=1,
                    max_bytes=self.max_bytes, max_records=self.max_records,
                    batch_size=self.max_records,
                    topics=[R.FetchTopic(topic_id=t, partitions=ps)
                            for t, ps in by_topic.items()])  # fmt: skip
        try:
            response = self.client.connection(leader).send(ApiKey.SHARE_FETCH, request, 1)
        except KafkaError:
            self._sessions.pop(leader, None)
            self._refresh_metadata()
            return []
        error = KafkaError(response.error_code).name if response.error_code else "NONE"
        if error != "NONE":
            self._sessions.pop(leader, None)  # the session is gone: a new one next time
            if error not in _SESSION_LOST:
                time.sleep(0.1)
            return []
        for key in sent:
            self._acks.pop(key, None)
        self._sessions[leader] = epoch + 1 if epoch < 2**31 - 1 else 1
        out: list[ShareRecord] = []
        for topic in response.responses:
            name = self._names.get(topic.topic_id)
            for part in topic.partitions:
                if part.error_code or name is None:
                    if part.error_code:
                        self._refresh_metadata()
                    continue
                out += self._records(topic.topic_id, name, part)
        return out

    def _records(self, topic_id: uuid.UUID, name: str, part: Any) -> list[ShareRecord]:
        """The acquired records of one partition's answer; the acquired offsets without a
        record to hand (control records) acknowledged as gaps."""
        ranges = [(a.first_offset, a.last_offset, a.delivery_count)
                  for a in part.acquired_records]  # fmt: skip
        if not ranges:
            return []
        count_of: dict[int, int] = {}
        for first, last, count in ranges:
            for offset in range(first, last + 1):
                count_of[offset] = count
        out = []
        data = part.records
        data = data if isinstance(data, bytes | bytearray) else (data or b"")
        for batch in iter_batches(data):
            if batch.is_control:
                continue
            ts_type = batch.timestamp_type
            for r in batch.records():
                count = count_of.pop(r.offset, None)
                if count is not None:
                    out.append(ShareRecord(name, part.partition_index, r.offset, r.timestamp,
                                           ts_type, r.key, r.value, r.headers, count))  # fmt: skip
        gaps = self._acks.setdefault((topic_id, part.partition_index), {})
        for offset in count_of:
            gaps[offset] = GAP
        return out

    # -- acknowledging ---------------------------------------------------------------------

    def acknowledge(self, record: ShareRecord, kind: int = ACCEPT) -> None:
        topic_id = self._ids.get(record.topic)
        if topic_id is not None:
            self._acks.setdefault((topic_id, record.partition), {})[record.offset] = kind

    def _ack_batches(self, topic_id: uuid.UUID, partition: int) -> list[Any]:
        """The partition's acknowledgements as batches of consecutive offsets of one type."""
        R = m.ShareFetchRequest
        acks = self._acks.get((topic_id, partition), {})
        out: list[Any] = []
        for offset in sorted(acks):
            kind = acks[offset]
            last = out[-1] if out else None
            if (
                last is not None
                and last.last_offset == offset - 1
                and last.acknowledge_types == [kind]
            ):
                last.last_offset = offset
            else:
                out.append(R.AcknowledgementBatch(first_offset=offset, last_offset=offset,
                                                  acknowledge_types=[kind]))  # fmt: skip
        return out

    def close(self) -> None:
        """Acknowledge what is left, end the share sessions, leave the group."""
        R = m.ShareAcknowledgeRequest
        for leader, partitions in self._by_leader().items():
            epoch = self._sessions.get(leader, 0)
            if epoch == 0:
                continue
            by_topic: dict[uuid.UUID, list[Any]] = {}
            for topic_id, p in partitions:
                batches = [R.AcknowledgementBatch(first_offset=b.first_offset,
                                                  last_offset=b.last_offset,
                                                  acknowledge_types=b.acknowledge_types)
                           for b in self._ack_batches(topic_id, p)]  # fmt: skip
                if batches:
                    by_topic.setdefault(topic_id, []).append(R.AcknowledgePartition(
                        partition_index=p, acknowledgement_batches=batches))  # fmt: skip
            request = R(group_id=self.group_id, member_id=self.member_id,
                        share_session_epoch=-1,
                        topics=[R.AcknowledgeTopic(topic_id=t, partitions=ps)
                                for t, ps in by_topic.items()])  # fmt: skip
            try:
                self.client.connection(leader).send(ApiKey.SHARE_ACKNOWLEDGE, request, 1)
            except KafkaError:
                pass  # the broker is gone: its locks expire
        self._sessions.clear()
        self._acks.clear()
        if self.member_epoch > 0:
            try:
                self._heartbeat(leaving=True)
            except KafkaError:
                pass  # the session timeout fences the member
