"""Replica assignment for new topics and partitions (Kafka's AdminUtils.assignReplicasToBrokers).

Rack-unaware: the leader of partition p is brokers[(p + start_index) % n]; followers are
shifted by 1 + (next_replica_shift + j) % (n - 1), and the shift grows by one every n
partitions so that followers spread. Rack-aware: brokers are first interleaved rack by rack,
then a follower is skipped while its rack (or itself) already holds a replica and some
rack (or broker) holds none.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from kt.errors import KafkaError


def assign_replicas_to_brokers(
    n_partitions: int,
    replication_factor: int,
    brokers: Sequence[int],
    *,
    racks: Mapping[int, str | None] | None = None,
    fixed_start_index: int = -1,
    start_partition_id: int = -1,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    """partition -> replica list, the first replica being the preferred leader."""
    if n_partitions <= 0:
        raise KafkaError("INVALID_PARTITIONS", "Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise KafkaError("INVALID_REPLICATION_FACTOR", "Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise KafkaError(
            "INVALID_REPLICATION_FACTOR",
            f"Replication factor: {replication_factor} larger than available brokers: "
            f"{len(brokers)}.",
        )
    rng = rng or random.Random()
    brokers = sorted(brokers)
    rack_of = {b: (racks or {}).get(b) for b in brokers}
    with_rack = [b for b in brokers if rack_of[b] is not None]
    if not with_rack:
        return _rack_unaware(
            n_partitions, replication_factor, brokers, fixed_start_index, start_partition_id, rng
        )
    if len(with_rack) != len(brokers):
        raise KafkaError(
            "INVALID_REPLICATION_FACTOR",
            "Not all brokers have rack information for replica rack aware assignment.",
        )
    return _rack_aware(
        n_partitions, replication_factor, rack_of, fixed_start_index, start_partition_id, rng
    )


def _start(n: int, fixed_start_index: int, rng: random.Random) -> tuple[int, int]:
    if fixed_start_index >= 0:
        return fixed_start_index, fixed_start_index
    return rng.randrange(n), rng.randrange(n)


def _rack_unaware(
    n_partitions: int,
    rf: int,
    brokers: list[int],
    fixed_start_index: int,
    start_partition_id: int,
    rng: random.Random,
) -> dict[int, list[int]]:
    n = len(brokers)
    start_index, shift = _start(n, fixed_start_index, rng)
    partition = max(start_partition_id, 0)
    assignment: dict[int, list[int]] = {}
    for _ in range(n_partitions):
        if partition > 0 and partition % n == 0:
            shift += 1
        first = (partition + start_index) % n
        replicas = [brokers[first]]
        for j in range(rf - 1):
            replicas.append(brokers[(first + 1 + (shift + j) % (n - 1)) % n])
        assignment[partition] = replicas
        partition += 1
    return assignment


def rack_alternated_brokers(rack_of: Mapping[int, str | None]) -> list[int]:
    """Brokers interleaved one per rack in turn: racks sorted by name, ids sorted in a rack."""
    by_rack: dict[str, list[int]] = {}
    for broker, rack in sorted(rack_of.items()):
        by_rack.setdefault(str(rack), []).append(broker)
    queues = [by_rack[r] for r in sorted(by_rack)]
    result: list[int] = []
    depth = 0
    while len(result) < len(rack_of):
        for queue in queues:
            if depth < len(queue):
                result.append(queue[depth])
        depth += 1
    return result


def _rack_aware(
    n_partitions: int,
    rf: int,
    rack_of: Mapping[int, str | None],
    fixed_start_index: int,
    start_partition_id: int,
    rng: random.Random,
) -> dict[int, list[int]]:
    brokers = rack_alternated_brokers(rack_of)
    n = len(brokers)
    n_racks = len(set(rack_of.values()))
    start_index, shift = _start(n, fixed_start_index, rng)
    partition = max(start_partition_id, 0)
    assignment: dict[int, list[int]] = {}
    for _ in range(n_partitions):
        if partition > 0 and partition % n == 0:
            shift += 1
        first = (partition + start_index) % n
        leader = brokers[first]
        replicas = [leader]
        racks_with_replica = {rack_of[leader]}
        brokers_with_replica = {leader}
        k = 0
        for _ in range(rf - 1):
            while True:
                broker = brokers[(first + 1 + (shift * n_racks + k) % (n - 1)) % n]
                k += 1
                rack = rack_of[broker]
                if (rack not in racks_with_replica or len(racks_with_replica) == n_racks) and (
                    broker not in brokers_with_replica or len(brokers_with_replica) == n
                ):
                    replicas.append(broker)
                    racks_with_replica.add(rack)
                    brokers_with_replica.add(broker)
                    break
        assignment[partition] = replicas
        partition += 1
    return assignment
