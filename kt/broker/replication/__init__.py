"""Replication on one broker (Kafka's ReplicaManager and Partition): the partitions it
hosts, produce and fetch with their purgatories, the followers' fetchers, ISR changes
proposed to the controller, log-dir moves, replication throttles, and what the
controller's requests do here."""
