"""Names on disk: topic validation, partition directories and segment file names.

A log dir holds one directory per partition, `<topic>-<partition>`, plus, while being
deleted, `<topic>-<partition>.<uuid hex>-delete` (LocalLog.logDeleteDirName). Inside,
every file is named by the base offset of its segment as 20 zero-padded digits
(LogFileUtils.filenamePrefixFromOffset) plus a suffix: `.log`, `.index`, `.timeindex`,
`.txnindex`, `.snapshot`, optionally followed by `.deleted`, `.cleaned` or `.swap`.

Topic names are checked exactly as Kafka's `Topic.validate`: ASCII letters, digits,
`.`, `_`, `-`, at most 249 characters, not `.` or `..`. Together with the integer
partition this keeps every directory name a single path component inside its log dir.
"""

from __future__ import annotations

import re
import uuid

from kt.errors import InvalidTopicError

MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")

LOG_FILE_SUFFIX = ".log"
INDEX_FILE_SUFFIX = ".index"
TIME_INDEX_FILE_SUFFIX = ".timeindex"
TXN_INDEX_FILE_SUFFIX = ".txnindex"
PRODUCER_SNAPSHOT_FILE_SUFFIX = ".snapshot"
DELETED_FILE_SUFFIX = ".deleted"
CLEANED_FILE_SUFFIX = ".cleaned"
SWAP_FILE_SUFFIX = ".swap"

DELETE_DIR_SUFFIX = "-delete"
FUTURE_DIR_SUFFIX = "-future"
STRAY_DIR_SUFFIX = "-stray"
_SPECIAL_DIR = re.compile(r"^(\S+)-(\S+)\.(\S+)(-delete|-future|-stray)$")

LOCK_FILE_NAME = ".lock"
CLEAN_SHUTDOWN_FILE_NAME = ".kafka_cleanshutdown"
RECOVERY_POINT_CHECKPOINT_FILE = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT_FILE = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT_FILE = "replication-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT_FILE = "leader-epoch-checkpoint"


def validate_topic_name(topic: str) -> None:
    """Raise InvalidTopicError (INVALID_TOPIC_EXCEPTION) with Kafka's message if illegal
    (org.apache.kafka.common.internals.Topic.validate, Kafka 3.x)."""
    if not topic:
        problem = "the empty string is not allowed"
    elif topic in (".", ".."):
        problem = f"'{topic}' is not allowed"
    elif len(topic) > MAX_TOPIC_NAME_LENGTH:
        problem = (
            f"the length of '{topic}' is longer than the max allowed length {MAX_TOPIC_NAME_LENGTH}"
        )
    elif not _LEGAL_TOPIC.fullmatch(topic):
        problem = (
            f"'{topic}' contains one or more characters other than ASCII alphanumerics, "
            "'.', '_' and '-'"
        )
    else:
        return
    raise InvalidTopicError(f"Topic name is invalid: {problem}")


def validate_partition(partition: int) -> None:
    if not isinstance(partition, int) or isinstance(partition, bool) or partition < 0:
        raise InvalidTopicError(f"Partition must be a non-negative integer, got {partition!r}")


def log_dir_name(topic: str, partition: int) -> str:
    """`<topic>-<partition>`, after validating both."""
    validate_topic_name(topic)
    validate_partition(partition)
    return f"{topic}-{partition}"


def log_delete_dir_name(topic: str, partition: int) -> str:
    """`<topic>-<partition>.<uuid hex>-delete`, the topic cut so the name fits in 255."""
    suffix = f"-{partition}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"
    return topic[: min(len(topic), 255 - len(suffix))] + suffix


def parse_topic_partition_name(dir_name: str) -> tuple[str, int]:
    """(topic, partition) of a partition directory name, as UnifiedLog.parseTopicPartitionName.

    Raises ValueError when the name is not `topic-partition` or one of the suffixed forms.
    """
    error = ValueError(
        f"Found directory {dir_name!r}, which is not in the form of topic-partition or "
        "topic-partition.uniqueId-delete (if marked for deletion)"
    )
    if not dir_name or "-" not in dir_name:
        raise error
    name = dir_name
    if dir_name.endswith((DELETE_DIR_SUFFIX, FUTURE_DIR_SUFFIX, STRAY_DIR_SUFFIX)):
        if not _SPECIAL_DIR.match(dir_name):
            raise error
        name = dir_name[: dir_name.rindex(".")]
    topic, _, partition_text = name.rpartition("-")
    if not topic or not partition_text or not partition_text.isdigit():
        raise error
    return topic, int(partition_text)


def filename_prefix_from_offset(offset: int) -> str:
    return f"{offset:020d}"


def offset_from_file_name(file_name: str) -> int:
    """The base offset a segment file name starts with; ValueError if it has none."""
    return int(file_name[: file_name.index(".")])


def log_file_name(offset: int, suffix: str = "") -> str:
    return filename_prefix_from_offset(offset) + LOG_FILE_SUFFIX + suffix


def offset_index_file_name(offset: int, suffix: str = "") -> str:
    return filename_prefix_from_offset(offset) + INDEX_FILE_SUFFIX + suffix


def time_index_file_name(offset: int, suffix: str = "") -> str:
    return filename_prefix_from_offset(offset) + TIME_INDEX_FILE_SUFFIX + suffix


def txn_index_file_name(offset: int, suffix: str = "") -> str:
    return filename_prefix_from_offset(offset) + TXN_INDEX_FILE_SUFFIX + suffix


def producer_snapshot_file_name(offset: int) -> str:
    return filename_prefix_from_offset(offset) + PRODUCER_SNAPSHOT_FILE_SUFFIX


def is_index_file_name(file_name: str) -> bool:
    return file_name.endswith((INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX))
