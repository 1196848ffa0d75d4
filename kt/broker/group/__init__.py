"""The group coordinator and `__consumer_offsets` (Kafka's kafka.coordinator.group).

offsets_records.py: the record formats; group_metadata.py: a group and its members;
group_metadata_manager.py: the groups cache, loading and writing `__consumer_offsets`;
group_coordinator.py: membership (join, sync, heartbeat, leave, timeouts);
group_admin.py: offsets and group administration.
"""
