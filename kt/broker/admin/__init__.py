"""The admin side of a broker (Kafka's ZkAdminManager and AdminZkClient): topics,
partitions, configs, client quotas and SCRAM credentials as the metadata store holds them,
validated and written on the broker's store threads."""
