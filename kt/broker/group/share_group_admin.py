"""The operations on a share group's share partitions' state that the admin APIs ask the
group coordinator for (Kafka's GroupMetadataManager and GroupCoordinatorService):
AlterShareGroupOffsets (an empty or new group's partitions initialized at given offsets),
DeleteShareGroupOffsets (a topic's state deleted) and, before DeleteGroups deletes an empty
share group, the deletion of all its share partitions' state. Each moves partitions through
the ShareGroupStatePartitionMetadata record (share_partition_metadata.py) around the share
coordinator's work, as Kafka does.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kt.broker.group import share_group_records as sr
from kt.broker.group import share_partition_metadata as spm
from kt.broker.group.heartbeat_request import GroupError
from kt.broker.group.share_group import ShareGroup
from kt.errors import KafkaError

if TYPE_CHECKING:
    from kt.broker.group.share_group_coordinator import ShareGroupCoordinator

log = logging.getLogger(__name__)

UNKNOWN = "UNKNOWN_TOPIC_OR_PARTITION"
UNKNOWN_MESSAGE = KafkaError(UNKNOWN).error.message
NO_OFFSETS = "There is no offset information to delete."


@dataclass
class AlteredTopic:
    """AlterShareGroupOffsets' answer for a topic: (partition, error name) each."""

    name: str
    topic_id: uuid.UUID | None
    partitions: list[tuple[int, str]]


@dataclass
class DeletedTopic:
    """DeleteShareGroupOffsets' answer for a topic."""

    name: str
    topic_id: uuid.UUID | None
    error: str
    message: str | None


async def alter_offsets(
    c: ShareGroupCoordinator, group_id: str, topics: list[tuple[str, list[tuple[int, int]]]]
) -> tuple[str, str | None, list[AlteredTopic]]:
    """alterShareGroupOffsets: an empty (or new) share group's partitions start at the
    given offsets: recorded as initializing, initialized on the share coordinator at
    the group epoch, then recorded as initialized. (error, message, per topic)."""
    from kt.broker.share.share_coordinator import ShareStateError
    from kt.broker.share.share_state import SharePartitionKey

    status = c.manager.group_status(group_id)
    if status != "NONE":
        return status, None, []
    try:
        group = c.share_group(group_id, True)
    except GroupError as e:
        return e.error, e.message, []
    if group.members:
        return "NON_EMPTY_GROUP", "The group is not empty.", []
    now = c.clock()
    results: list[AlteredTopic] = []
    change: spm.InitMap = {}
    offsets: dict[tuple[uuid.UUID, int], int] = {}
    for name, partitions in topics:
        count = len(c.topics.topic_partitions(name))
        if not count:
            results.append(AlteredTopic(name, None, [(p, UNKNOWN) for p, _ in partitions]))
            continue
        topic_id = c.topics.topic_id(name)
        answered = []
        for partition, offset in partitions:
            if partition < count:
                offsets[(topic_id, partition)] = offset
                answered.append((partition, "NONE"))
            else:
                answered.append((partition, UNKNOWN))
        valid = frozenset(p for p, _ in partitions if p < count)
        change[topic_id] = spm.InitTopic(name, valid, now)
        results.append(AlteredTopic(name, topic_id, answered))
    if change:
        records = [sr.partition_metadata(group_id, spm.with_initializing(
            group.partition_metadata, change))]  # fmt: skip
        c.apply(group_id, records)
        error = await c.manager.write(group_id, records)
        if error != "NONE":
            return error, None, []
    failed: dict[tuple[uuid.UUID, int], str] = {}
    for (topic_id, partition), offset in sorted(offsets.items(), key=lambda kv: str(kv[0])):
        key = SharePartitionKey(group_id, topic_id, partition)
        try:
            await c.persister.initialize(key, group.group_epoch, offset)
        except ShareStateError as e:
            failed[(topic_id, partition)] = e.error
    if failed:  # buildErrorResponse: the partitions say their error
        for topic in results:
            topic.partitions = [(p, failed.get((topic.topic_id, p), e))  # type: ignore[arg-type]
                                for p, e in topic.partitions]  # fmt: skip
        return "NONE", None, results
    done = {t: v for t, v in change.items() if v.partitions}
    if done:
        holder = c.manager.get_group(group_id)
        if holder is not None and holder.share is not None:
            value = spm.with_initialized(holder.share.partition_metadata, done)
            records = [sr.partition_metadata(group_id, value)]
            c.apply(group_id, records)
            await c.manager.write(group_id, records)
    return "NONE", None, results


async def delete_offsets(
    c: ShareGroupCoordinator, group_id: str, topic_names: list[str]
) -> tuple[str, str | None, list[DeletedTopic]]:
    """deleteShareGroupOffsets: an empty share group's initialized topics (or those
    still deleting) move to deleting, their state is deleted on the share
    coordinator, then they leave the deleting topics. (error, message, per topic)."""
    from kt.broker.share.share_coordinator import ShareStateError
    from kt.broker.share.share_state import SharePartitionKey

    status = c.manager.group_status(group_id)
    if status != "NONE":
        return status, None, []
    holder = c.manager.get_group(group_id)
    if holder is None:
        return "GROUP_ID_NOT_FOUND", f"Group {group_id} not found.", []
    group = holder.share
    if group is None:
        return "GROUP_ID_NOT_FOUND", f"Group {group_id} is not a share group.", []
    if group.members:
        return "NON_EMPTY_GROUP", "The group is not empty.", []
    info = group.partition_metadata
    if info is None:
        return "NONE", None, []
    initialized = dict(info.initialized)
    deleting = dict(info.deleting)
    to_delete: dict[uuid.UUID, tuple[str, frozenset[int]]] = {}
    answers: list[DeletedTopic] = []
    for name in topic_names:
        count = len(c.topics.topic_partitions(name))
        topic_id = c.topics.topic_id(name) if count else None
        if topic_id is None:
            answers.append(DeletedTopic(name, None, UNKNOWN, UNKNOWN_MESSAGE))
        elif topic_id in initialized:
            to_delete[topic_id] = (name, initialized.pop(topic_id).partitions)
            deleting[topic_id] = name
        elif topic_id in deleting:
            to_delete[topic_id] = (name, frozenset(range(count)))
        else:
            answers.append(DeletedTopic(name, None, UNKNOWN, NO_OFFSETS))
    records = [sr.partition_metadata(group_id, spm.SharePartitionMetadata(
        dict(info.initializing), initialized, deleting))]  # fmt: skip
    c.apply(group_id, records)
    error = await c.manager.write(group_id, records)
    if error != "NONE" or not to_delete:
        return error, None, answers
    done = {}
    for topic_id in sorted(to_delete, key=str):
        name, partitions = to_delete[topic_id]
        failure = None
        for partition in sorted(partitions):
            try:
                await c.persister.delete(SharePartitionKey(group_id, topic_id, partition))
            except ShareStateError as e:
                failure = e.error
                break
        if failure is None:
            done[topic_id] = name
        else:
            message = KafkaError(failure).error.message
            answers.append(DeletedTopic(name, topic_id, failure, message))
    if done:  # completeDeleteShareGroupOffsets
        current = group.partition_metadata or spm.SharePartitionMetadata()
        left = {t: n for t, n in current.deleting.items() if t not in done}
        records = [sr.partition_metadata(group_id, spm.SharePartitionMetadata(
            dict(current.initializing), dict(current.initialized), left))]  # fmt: skip
        c.apply(group_id, records)
        error = await c.manager.write(group_id, records)
        if error != "NONE":
            return error, None, []
    return "NONE", None, [DeletedTopic(n, t, "NONE", None) for t, n in done.items()] + answers


async def delete_state(c: ShareGroupCoordinator, group_ids: Iterable[str]) -> dict[str, str]:
    """Before DeleteGroups deletes them (Kafka's deleteShareGroups): each empty share
    group's share partitions go to its deleting topics (a record), and their state is
    deleted on the share coordinator. The errors of the share groups that cannot be
    deleted (NON_EMPTY_GROUP, or the share coordinator's); other groups are not named."""
    from kt.broker.share.share_coordinator import ShareStateError
    from kt.broker.share.share_state import SharePartitionKey

    errors = {}
    for group_id in group_ids:
        if c.manager.group_status(group_id) != "NONE":
            continue
        holder = c.manager.get_group(group_id)
        group = holder.share if holder is not None else None
        if group is None:
            continue
        if group.members:
            errors[group_id] = "NON_EMPTY_GROUP"  # ShareGroup.validateDeleteGroup
            continue
        if group.partition_metadata is None:
            continue  # never initialized anything: nothing to delete but the group
        deleting = _partitions_to_delete(c, group)
        records = [sr.partition_metadata(group_id, spm.SharePartitionMetadata(
            deleting={t: v.name for t, v in deleting.items()}))]  # fmt: skip
        c.apply(group_id, records)
        error = await c.manager.write(group_id, records)
        for topic_id in sorted(deleting, key=str):
            for partition in sorted(deleting[topic_id].partitions):
                if error != "NONE":
                    break
                try:
                    await c.persister.delete(SharePartitionKey(group_id, topic_id,
                                                                  partition))  # fmt: skip
                except ShareStateError as e:
                    log.error("Unable to delete share group partition(s) - %s: %s",
                              group_id, e.error)  # fmt: skip
                    error = e.error
        if error != "NONE":
            errors[group_id] = error
    return errors


def _partitions_to_delete(c: ShareGroupCoordinator, group: ShareGroup) -> spm.InitMap:
    """shareGroupBuildPartitionDeleteRequest: the initialized and initializing
    partitions, and every partition of a topic still deleting that still exists."""
    info = group.partition_metadata
    if info is None:
        return {}
    out = spm.combine(info.initialized, info.initializing)
    retry = {}
    for topic_id in info.deleting:
        name = c.topics.topic_for_id(topic_id)
        count = len(c.topics.topic_partitions(name)) if name is not None else 0
        if count:
            retry[topic_id] = spm.InitTopic(name, frozenset(range(count)))  # type: ignore[arg-type]
        else:
            log.warning("Some topics for share group id %s were not found in the "
                        "metadata image - %s", group.group_id, topic_id)  # fmt: skip
    return spm.combine(out, retry)
