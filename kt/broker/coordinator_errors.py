"""What an append to a coordinator's log (`__consumer_offsets`, `__transaction_state`,
`__share_group_state`) failing with a partition error becomes in the coordinator's
answer: Kafka's mapping in TransactionStateManager.appendTransactionToLog and the group
and share coordinators' CoordinatorOperationExceptionHelper (the client looks for the
coordinator again, or retries)."""

from __future__ import annotations

APPEND_ERRORS = {
    "UNKNOWN_TOPIC_OR_PARTITION": "COORDINATOR_NOT_AVAILABLE",
    "NOT_ENOUGH_REPLICAS": "COORDINATOR_NOT_AVAILABLE",
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND": "COORDINATOR_NOT_AVAILABLE",
    "REQUEST_TIMED_OUT": "COORDINATOR_NOT_AVAILABLE",
    "NOT_LEADER_OR_FOLLOWER": "NOT_COORDINATOR",
    "KAFKA_STORAGE_ERROR": "NOT_COORDINATOR",
    "MESSAGE_TOO_LARGE": "UNKNOWN_SERVER_ERROR",
    "RECORD_LIST_TOO_LARGE": "UNKNOWN_SERVER_ERROR",
    "INVALID_FETCH_SIZE": "UNKNOWN_SERVER_ERROR",
}
