"""Leader election as Kafka's OfflinePartitionLeaderElectionStrategy decides it."""

from kt.broker.controller.kafka_controller import NO_LEADER, elect_leader


def test_first_live_replica_in_isr_in_assignment_order() -> None:
    assert elect_leader([2, 1, 0], [0, 1, 2], {0, 1, 2}) == (2, [0, 1, 2])
    assert elect_leader([2, 1, 0], [0, 1], {0, 1, 2}) == (1, [0, 1])


def test_dead_brokers_leave_the_isr() -> None:
    assert elect_leader([2, 1, 0], [2, 1, 0], {0, 1}) == (1, [1, 0])


def test_no_live_isr_member_means_no_leader() -> None:
    assert elect_leader([2, 1], [2], {1}) == (NO_LEADER, [])


def test_unclean_election_takes_the_first_live_replica() -> None:
    assert elect_leader([2, 1], [2], {1}, unclean=True) == (1, [1])
