"""kt and Apache Kafka 3.9 brokers in one live ZooKeeper cluster: the rolling migration of
docs/migration.md. Three Kafka brokers under continuous acks=all production and a
consuming group are replaced by `kt server-start` one at a time (same broker.id, log.dirs,
zookeeper.connect and port), each step waiting for the ISR to be whole again and the group
to move on; once all are kt (a kt controller), back to Kafka the same way. Nothing
acknowledged is lost, each partition keeps its order, and the group's offsets are never
reset (kt.testing.migration).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kt.testing.migration import MigrationLoad, MixedCluster, create_topics

TOPICS = ["orders", "payments", "audit"]


@pytest.mark.timeout(1500)
def test_a_kafka_cluster_goes_to_kt_and_back_broker_by_broker_under_load(
    kafka_available: None, zookeeper: str, tmp_path: Path
) -> None:
    cluster = MixedCluster(tmp_path, zookeeper)
    try:
        cluster.start_all("kafka")
        create_topics(cluster.bootstrap, TOPICS)
        cluster.wait_healthy(TOPICS)
        load = MigrationLoad(cluster.bootstrap, TOPICS)
        load.start()
        load.wait_progress()
        for kind in ("kt", "kafka"):
            for broker_id in cluster.broker_ids:
                load.step(f"broker {broker_id} to {kind}")
                cluster.swap(broker_id, kind, TOPICS)
                load.wait_progress()
            assert set(cluster.kinds().values()) == {kind}
            assert cluster.controller_id() in cluster.broker_ids
        outcome = load.stop()
    finally:
        cluster.close()
    assert outcome.failed == []
    assert outcome.resets == []
    assert outcome.lost() == []
    assert outcome.out_of_order() == []
    assert sum(len(r) for r in outcome.acked.values()) > 1000
