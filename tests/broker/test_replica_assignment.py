"""Replica assignment as Kafka's AdminUtils computes it."""

import pytest

from kt.broker.admin.assign_replicas import assign_replicas_to_brokers, rack_alternated_brokers
from kt.errors import KafkaError


def test_seed_001_example() -> None:
    # Seed 001's cluster (brokers 0,1,2, 3 partitions, RF 2) drew start index 2, shift 1.
    class Drawn:
        def __init__(self) -> None:
            self.values = [2, 1]

        def randrange(self, n: int) -> int:
            return self.values.pop(0)

    got = assign_replicas_to_brokers(3, 2, [0, 1, 2], rng=Drawn())  # type: ignore[arg-type]
    assert got == {0: [2, 1], 1: [0, 2], 2: [1, 0]}


def test_followers_spread_after_n_partitions() -> None:
    got = assign_replicas_to_brokers(10, 3, [0, 1, 2, 3, 4], fixed_start_index=0)
    # The documented example from AdminUtils' comment.
    assert got[0] == [0, 1, 2]
    assert got[4] == [4, 0, 1]
    assert got[5] == [0, 2, 3]
    assert got[9] == [4, 1, 2]


def test_rack_alternated_list() -> None:
    racks = {0: "r1", 1: "r3", 2: "r3", 3: "r2", 4: "r2", 5: "r1"}
    assert rack_alternated_brokers(racks) == [0, 3, 1, 5, 4, 2]


def test_rack_aware_puts_replicas_on_distinct_racks() -> None:
    racks = {0: "a", 1: "a", 2: "b", 3: "b", 4: "c", 5: "c"}
    got = assign_replicas_to_brokers(12, 3, list(racks), racks=racks)
    for replicas in got.values():
        assert len({racks[b] for b in replicas}) == 3


@pytest.mark.parametrize(
    ("partitions", "rf", "message"),
    [
        (0, 1, "Number of partitions must be larger than 0."),
        (1, 0, "Replication factor must be larger than 0."),
        (1, 3, "Replication factor: 3 larger than available brokers: 1."),
    ],
)
def test_errors(partitions: int, rf: int, message: str) -> None:
    with pytest.raises(KafkaError, match=message.replace(".", r"\.")):
        assign_replicas_to_brokers(partitions, rf, [0])
