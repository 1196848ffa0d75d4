"""The controller (Kafka's kafka.controller package, ZooKeeper mode): elected among the
brokers, it owns the partitions' leaders and ISRs, topic creation and deletion,
reassignments and elections, and tells the brokers through its channel manager."""
