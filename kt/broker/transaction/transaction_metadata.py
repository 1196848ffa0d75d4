"""One transactional id's state at its coordinator (Kafka's TransactionMetadata).

A change is prepared first (`prepare_*` returns the TxnTransitMetadata to write and
marks the transition pending), written to `__transaction_state`, and only then applied
(`complete_transition_to`); while one is pending, other requests for the id get
CONCURRENT_TRANSACTIONS. The transitions allowed are Kafka's (validPreviousStates).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from kt.broker.transaction.transaction_log import TransactionState

S = TransactionState
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_EPOCH = 32767

VALID_PREVIOUS_STATES: dict[TransactionState, frozenset[TransactionState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}


class TransactionStateError(Exception):
    """A transition Kafka's state machine does not allow (a coordinator bug)."""


@dataclass(frozen=True)
class TxnTransitMetadata:
    """The state a transition leads to: what is written to the log."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    txn_state: TransactionState
    topic_partitions: frozenset[tuple[str, int]]
    txn_start_timestamp: int
    txn_last_update_timestamp: int


@dataclass
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    last_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    txn_timeout_ms: int = 60_000
    state: TransactionState = S.EMPTY
    topic_partitions: set[tuple[str, int]] = field(default_factory=set)
    txn_start_timestamp: int = -1
    txn_last_update_timestamp: int = -1
    pending_state: TransactionState | None = None
    has_failed_epoch_fence: bool = False

    @property
    def pending_transition_in_progress(self) -> bool:
        return self.pending_state is not None

    @property
    def is_producer_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    def current(self) -> TxnTransitMetadata:
        return TxnTransitMetadata(
            self.producer_id,
            self.last_producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.txn_timeout_ms,
            self.state,
            frozenset(self.topic_partitions),
            self.txn_start_timestamp,
            self.txn_last_update_timestamp,
        )

    def _prepare(self, state: TransactionState, **changes: object) -> TxnTransitMetadata:
        if self.pending_state is not None:
            raise TransactionStateError(
                f"Preparing transaction state transition to {state.state_name} while it "
                f"already has a pending state {self.pending_state.state_name}"
            )
        if self.state not in VALID_PREVIOUS_STATES[state]:
            raise TransactionStateError(
                f"Preparing transaction state transition to {state.state_name} failed since "
                f"the target state {state.state_name} is not a valid previous state of the "
                f"current state {self.state.state_name}"
            )
        self.pending_state = state
        return replace(self.current(), txn_state=state, **changes)  # type: ignore[arg-type]

    # -- the transitions ----------------------------------------------------------------

    def prepare_increment_producer_epoch(
        self, timeout_ms: int, expected_epoch: int | None, now: int
    ) -> TxnTransitMetadata | str:
        """InitProducerId on a known id: the epoch goes up (or an error name)."""
        if self.is_producer_epoch_exhausted:
            raise TransactionStateError(f"Cannot allocate any more producer epochs for {self}")
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epochs = (bumped, NO_PRODUCER_EPOCH)
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epochs = (bumped, self.producer_epoch)
        elif expected_epoch == self.last_producer_epoch:
            epochs = (self.producer_epoch, self.last_producer_epoch)  # a retried bump
        else:
            return "PRODUCER_FENCED"
        return self._prepare(
            S.EMPTY,
            producer_epoch=epochs[0],
            last_producer_epoch=epochs[1],
            txn_timeout_ms=timeout_ms,
            topic_partitions=frozenset(),
            txn_start_timestamp=-1,
            txn_last_update_timestamp=now,
        )

    def prepare_producer_id_rotation(
        self, producer_id: int, timeout_ms: int, now: int, record_last_epoch: bool
    ) -> TxnTransitMetadata:
        """The epoch ran out: a new producer id at epoch 0."""
        return self._prepare(
            S.EMPTY,
            producer_id=producer_id,
            last_producer_id=self.producer_id,
            producer_epoch=0,
            last_producer_epoch=self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
            txn_timeout_ms=timeout_ms,
            topic_partitions=frozenset(),
            txn_start_timestamp=-1,
            txn_last_update_timestamp=now,
        )

    def prepare_fence_producer_epoch(self) -> TxnTransitMetadata:
        """Bump the epoch of an ongoing transaction that is to be aborted (a new producer
        instance, or a timeout); never written itself: the abort is written with it."""
        if self.is_producer_epoch_exhausted:
            raise TransactionStateError(f"Cannot fence producer with epoch equal to max: {self}")
        epoch = self.producer_epoch if self.has_failed_epoch_fence else self.producer_epoch + 1
        return self._prepare(S.PREPARE_EPOCH_FENCE, producer_epoch=epoch)

    def prepare_add_partitions(
        self, partitions: set[tuple[str, int]], now: int
    ) -> TxnTransitMetadata:
        start = now if self.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT) else None
        return self._prepare(
            S.ONGOING,
            topic_partitions=frozenset(self.topic_partitions | partitions),
            txn_start_timestamp=self.txn_start_timestamp if start is None else start,
            txn_last_update_timestamp=now,
        )

    def prepare_abort_or_commit(self, state: TransactionState, now: int) -> TxnTransitMetadata:
        return self._prepare(state, txn_last_update_timestamp=now)

    def prepare_complete(self, now: int) -> TxnTransitMetadata:
        state = S.COMPLETE_COMMIT if self.state == S.PREPARE_COMMIT else S.COMPLETE_ABORT
        return self._prepare(state, topic_partitions=frozenset(), txn_last_update_timestamp=now)

    def prepare_dead(self) -> TxnTransitMetadata:
        return self._prepare(S.DEAD, topic_partitions=frozenset())

    def complete_transition_to(self, transit: TxnTransitMetadata) -> None:
        """The transit was written: it becomes the state."""
        if self.pending_state != transit.txn_state:
            raise TransactionStateError(
                f"Completing transaction state transition to {transit.txn_state.state_name} "
                f"while its pending state is {self.pending_state}"
            )
        self.producer_id = transit.producer_id
        self.last_producer_id = transit.last_producer_id
        self.producer_epoch = transit.producer_epoch
        self.last_producer_epoch = transit.last_producer_epoch
        self.txn_timeout_ms = transit.txn_timeout_ms
        self.state = transit.txn_state
        self.topic_partitions = set(transit.topic_partitions)
        self.txn_start_timestamp = transit.txn_start_timestamp
        self.txn_last_update_timestamp = transit.txn_last_update_timestamp
        self.pending_state = None
        self.has_failed_epoch_fence = False


def is_epoch_exhausted(epoch: int) -> bool:
    """Kafka keeps the last epoch for the bump that fences: Short.MaxValue - 1."""
    return epoch >= MAX_EPOCH - 1
