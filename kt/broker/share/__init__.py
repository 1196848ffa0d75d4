"""Share groups (KIP-932): share partitions, and in time the share group coordinator."""
