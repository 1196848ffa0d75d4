"""Kafka error codes: one table, code <-> name <-> retriable <-> message.

Every protocol error in kt travels as one of these codes (clients/.../protocol/Errors.java
in Apache Kafka). `KafkaError` is the one exception hierarchy kt raises for them; the
broker catches it and writes `.code` into the response.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ErrorCode:
    code: int
    name: str
    retriable: bool
    message: str
    invalid_metadata: bool = False  # clients refresh metadata before retrying


# (code, NAME, retriable, invalid_metadata, default message) -- from Kafka's Errors.java.
_TABLE: tuple[tuple[int, str, bool, bool, str], ...] = (
    (
        -1,
        "UNKNOWN_SERVER_ERROR",
        False,
        False,
        "The server experienced an unexpected error when processing the request.",
    ),
    (0, "NONE", False, False, ""),
    (
        1,
        "OFFSET_OUT_OF_RANGE",
        False,
        False,
        "The requested offset is not within the range of offsets maintained by the server.",
    ),
    (
        2,
        "CORRUPT_MESSAGE",
        True,
        False,
        "This message has failed its CRC checksum, exceeds the valid size, has a null key for a "
        "compacted topic, or is otherwise corrupt.",
    ),
    (
        3,
        "UNKNOWN_TOPIC_OR_PARTITION",
        True,
        True,
        "This server does not host this topic-partition.",
    ),
    (
        5,
        "LEADER_NOT_AVAILABLE",
        True,
        True,
        "There is no leader for this topic-partition as we are in the middle of a leadership "
        "election.",
    ),
    (
        6,
        "NOT_LEADER_OR_FOLLOWER",
        True,
        True,
        "For requests intended only for the leader, this error indicates that the broker is not "
        "the current leader.",
    ),
    (7, "REQUEST_TIMED_OUT", True, False, "The request timed out."),
    (
        9,
        "REPLICA_NOT_AVAILABLE",
        True,
        True,
        "The replica is not available for the requested topic-partition.",
    ),
    (
        10,
        "MESSAGE_TOO_LARGE",
        False,
        False,
        "The request included a message larger than the max message size the server will accept.",
    ),
    (
        13,
        "NETWORK_EXCEPTION",
        True,
        True,
        "The server disconnected before a response was received.",
    ),
    (
        14,
        "COORDINATOR_LOAD_IN_PROGRESS",
        True,
        False,
        "The coordinator is loading and hence can't process requests.",
    ),
    (15, "COORDINATOR_NOT_AVAILABLE", True, False, "The coordinator is not available."),
    (16, "NOT_COORDINATOR", True, False, "This is not the correct coordinator."),
    (
        17,
        "INVALID_TOPIC_EXCEPTION",
        False,
        False,
        "The request attempted to perform an operation on an invalid topic.",
    ),
    (
        19,
        "NOT_ENOUGH_REPLICAS",
        True,
        False,
        "Messages are rejected since there are fewer in-sync replicas than required.",
    ),
    (
        20,
        "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
        True,
        False,
        "Messages are written to the log, but to fewer in-sync replicas than required.",
    ),
    (
        21,
        "INVALID_REQUIRED_ACKS",
        False,
        False,
        "Produce request specified an invalid value for required acks.",
    ),
    (22, "ILLEGAL_GENERATION", False, False, "Specified group generation id is not valid."),
    (25, "UNKNOWN_MEMBER_ID", False, False, "The coordinator is not aware of this member."),
    (27, "REBALANCE_IN_PROGRESS", False, False, "The group is rebalancing, so a rejoin is needed."),
    (35, "UNSUPPORTED_VERSION", False, False, "The version of API is not supported."),
    (36, "TOPIC_ALREADY_EXISTS", False, False, "Topic with this name already exists."),
    (37, "INVALID_PARTITIONS", False, False, "Number of partitions is below 1."),
    (
        38,
        "INVALID_REPLICATION_FACTOR",
        False,
        False,
        "Replication factor is below 1 or larger than the number of available brokers.",
    ),
    (40, "INVALID_CONFIG", False, False, "Configuration is invalid."),
    (41, "NOT_CONTROLLER", True, False, "This is not the correct controller for this cluster."),
    (
        42,
        "INVALID_REQUEST",
        False,
        False,
        "This most likely occurs because of a request being malformed by the client library or "
        "the message was sent to an incompatible broker. See the broker logs for more details.",
    ),
    (
        45,
        "OUT_OF_ORDER_SEQUENCE_NUMBER",
        False,
        False,
        "The broker received an out of order sequence number.",
    ),
    (
        46,
        "DUPLICATE_SEQUENCE_NUMBER",
        False,
        False,
        "The broker received a duplicate sequence number.",
    ),
    (
        47,
        "INVALID_PRODUCER_EPOCH",
        False,
        False,
        "Producer attempted to produce with an old epoch.",
    ),
    (54, "SECURITY_DISABLED", False, False, "Security features are disabled."),
    # Storage (kt.storage.log): batch too large for a segment, legacy magic, txn state, disk.
    (
        18,
        "RECORD_LIST_TOO_LARGE",
        False,
        False,
        "The request included message batch larger than the configured segment size on the server.",
    ),
    (
        43,
        "UNSUPPORTED_FOR_MESSAGE_FORMAT",
        False,
        False,
        "The message format version on the broker does not support the request.",
    ),
    (
        48,
        "INVALID_TXN_STATE",
        False,
        False,
        "The producer attempted a transactional operation in an invalid state.",
    ),
    (
        56,
        "KAFKA_STORAGE_ERROR",
        True,
        True,
        "Disk error when trying to access log file on the disk.",
    ),
    (
        76,
        "UNSUPPORTED_COMPRESSION_TYPE",
        False,
        False,
        "The requesting client does not support the compression type of given partition.",
    ),
    (
        79,
        "MEMBER_ID_REQUIRED",
        False,
        False,
        "The group member needs to have a valid member id before actually entering a consumer "
        "group.",
    ),
    (
        87,
        "INVALID_RECORD",
        False,
        False,
        "This record has failed the validation on broker and hence will be rejected.",
    ),
)

BY_CODE: dict[int, ErrorCode] = {
    code: ErrorCode(code, name, retriable, message, invalid_metadata)
    for code, name, retriable, invalid_metadata, message in _TABLE
}
BY_NAME: dict[str, ErrorCode] = {e.name: e for e in BY_CODE.values()}


def error_for(code: int) -> ErrorCode:
    """The table entry for `code`; unknown codes map to UNKNOWN_SERVER_ERROR's shape."""
    found = BY_CODE.get(code)
    if found is None:
        return ErrorCode(code, f"UNKNOWN_ERROR_{code}", False, f"Unknown error code {code}.")
    return found


class KafkaError(Exception):
    """An error that has a Kafka error code; the broker answers with `.code`."""

    def __init__(self, name_or_code: str | int, message: str | None = None) -> None:
        entry = BY_NAME[name_or_code] if isinstance(name_or_code, str) else error_for(name_or_code)
        self.error = entry
        self.code = entry.code
        self.name = entry.name
        self.retriable = entry.retriable
        super().__init__(message or entry.message)


class ProtocolError(Exception):
    """Malformed bytes on the wire: says what was wrong and where. The connection closes."""


class CorruptRecordError(KafkaError):
    """A stored or received batch failed its size or CRC check (CORRUPT_MESSAGE)."""

    def __init__(self, message: str) -> None:
        super().__init__("CORRUPT_MESSAGE", message)


class InvalidTopicError(KafkaError):
    """A topic name that Kafka would refuse (INVALID_TOPIC_EXCEPTION)."""

    def __init__(self, message: str) -> None:
        super().__init__("INVALID_TOPIC_EXCEPTION", message)
