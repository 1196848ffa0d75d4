"""Preferred and unclean leader elections (ElectLeaders) through `kt leader-election` and
`kt preferred-replica-election`, /admin/preferred_replica_election, and the controller's
automatic leader rebalance, on an embedded cluster."""

from __future__ import annotations

import time

import pytest

from kt.testing import KtCluster
from tests.integration.conftest import kt_command, kt_ok
from tests.integration.test_reassignment import FAST, create

pytestmark = pytest.mark.slow

NO_REBALANCE = {**FAST, "auto.leader.rebalance.enable": "false"}


def move_leadership_away_from(cluster: KtCluster, broker: int, topic: str, partition: int) -> None:
    """Restart `broker`: its partitions are led by another replica, and it rejoins the ISR."""
    cluster.stop_broker(broker)
    cluster.wait_until(lambda: cluster.leader_of(topic, partition) not in (-1, broker),
                       what="leadership moved")  # fmt: skip
    cluster.start_broker(broker)
    cluster.wait_until(lambda: broker in cluster.partition_state(topic, partition).isr,
                       what="the broker back in the ISR")  # fmt: skip


def elect(cluster: KtCluster, *args: str) -> list[str]:
    return kt_ok("leader-election", "--bootstrap-server", cluster.bootstrap_servers, *args)


def test_preferred_election_returns_leadership(kt_cluster) -> None:
    cluster = kt_cluster(3, overrides=NO_REBALANCE)
    create(cluster, "elect", {0: [0, 1], 1: [1, 0]})
    move_leadership_away_from(cluster, 0, "elect", 0)
    assert cluster.leader_of("elect", 0) == 1
    assert elect(cluster, "--election-type", "preferred", "--all-topic-partitions") == [
        "Successfully completed leader election (PREFERRED) for partitions elect-0"
    ]
    assert cluster.leader_of("elect", 0) == 0
    assert elect(cluster, "--election-type", "PREFERRED", "--topic", "elect",
                 "--partition", "0") == [
        "Valid replica already elected for partitions elect-0"]  # fmt: skip
    # The older tool: the same election, after its deprecation line.
    move_leadership_away_from(cluster, 0, "elect", 0)
    out = kt_ok("preferred-replica-election", "--bootstrap-server", cluster.bootstrap_servers)
    assert out == [
        "This tool is deprecated. Please use kafka-leader-election tool. Tracking issue: "
        "KAFKA-8405",
        "Successfully completed leader election (PREFERRED) for partitions elect-0",
    ]
    assert cluster.leader_of("elect", 0) == 0


def test_an_election_that_cannot_happen(kt_cluster, tmp_path) -> None:
    cluster = kt_cluster(3, overrides=NO_REBALANCE)
    create(cluster, "stuck", {0: [0, 1]})
    cluster.stop_broker(0)
    cluster.wait_until(lambda: cluster.leader_of("stuck", 0) == 1, what="broker 1 leading")
    plan = tmp_path / "elect.json"
    plan.write_text('{"partitions":[{"topic":"stuck","partition":0},'
                    '{"topic":"gone","partition":0}]}')  # fmt: skip
    result = kt_command(
        "leader-election", "--bootstrap-server", cluster.bootstrap_servers,
        "--election-type", "preferred", "--path-to-json-file", str(plan),
    )  # fmt: skip
    assert result.returncode == 1
    assert sorted(result.stdout.splitlines()) == [
        "Error completing leader election (PREFERRED) for partition: gone-0: "
        "org.apache.kafka.common.errors.UnknownTopicOrPartitionException: The partition does "
        "not exist.",
        "Error completing leader election (PREFERRED) for partition: stuck-0: "
        "org.apache.kafka.common.errors.PreferredLeaderNotAvailableException: Failed to elect "
        "leader for partition stuck-0 under strategy "
        "PreferredReplicaPartitionLeaderElectionStrategy",
    ]
    assert result.stderr == "2 replica(s) could not be elected\n"
    # Unclean: only a partition without a leader is elected.
    assert elect(cluster, "--election-type", "unclean", "--topic", "stuck",
                 "--partition", "0") == [
        "Valid replica already elected for partitions stuck-0"]  # fmt: skip
    usage = kt_command("leader-election", "--bootstrap-server", cluster.bootstrap_servers,
                       "--election-type", "preferred", "--topic", "stuck")  # fmt: skip
    assert (usage.returncode, usage.stderr) == (1, "Missing required option(s): partition\n")


def test_the_admin_znode_and_the_automatic_rebalance(kt_cluster) -> None:
    cluster = kt_cluster(3, overrides=NO_REBALANCE)
    create(cluster, "by-znode", {0: [0, 1]})
    move_leadership_away_from(cluster, 0, "by-znode", 0)
    zk = cluster._any_broker().zk
    cluster._call(lambda: zk.create_preferred_replica_election([("by-znode", 0)]))  # type: ignore[union-attr]
    cluster.wait_until(lambda: cluster.leader_of("by-znode", 0) == 0,
                       what="the election through /admin/preferred_replica_election")  # fmt: skip
    cluster.wait_until(
        lambda: cluster._call(lambda: zk.get_preferred_replica_election()) is None,  # type: ignore[union-attr]
        what="/admin/preferred_replica_election deleted",
    )


@pytest.mark.parametrize("percentage", ["10", "100"])
def test_auto_leader_rebalance(kt_cluster, percentage: str) -> None:
    """Broker 0 leads none of the two partitions it is preferred for: an imbalance of 100 %.
    Above leader.imbalance.per.broker.percentage (10) the controller moves them back, in
    its first check (5 s after its election) or the next (every 1 s here); at 100 % the
    imbalance is not above it, and nothing moves."""
    cluster = kt_cluster(3, overrides={
        **FAST, "leader.imbalance.check.interval.seconds": "1",
        "leader.imbalance.per.broker.percentage": percentage,
    })  # fmt: skip
    create(cluster, "balanced", {0: [0, 1], 1: [0, 2], 2: [1, 0]})
    move_leadership_away_from(cluster, 0, "balanced", 0)
    cluster.wait_until(lambda: 0 in cluster.partition_state("balanced", 1).isr,
                       what="broker 0 back in every ISR")  # fmt: skip

    def leaders() -> list[int]:
        return [cluster.leader_of("balanced", p) for p in range(3)]

    if percentage == "10":
        cluster.wait_until(lambda: leaders() == [0, 0, 1], timeout_s=20,
                           what="the automatic rebalance")  # fmt: skip
    else:
        moved = leaders()
        time.sleep(8)  # past the first check and several more
        assert leaders() == moved and moved[:2] != [0, 0]
