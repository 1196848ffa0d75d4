"""Thin click commands: parse options, call kt.tools or kt.broker, render.

Each subcommand lives in its own module and is imported only when it runs, so that
`kt server-start` pays for nothing it does not use. COMMANDS maps the name a user
types to "module:attribute"; kt/cli.py builds the root group from it.
"""

COMMANDS: dict[str, str] = {
    "acls": "kt.commands.acls:acls",
    "configs": "kt.commands.configs:configs",
    "console-consumer": "kt.commands.console:console_consumer",
    "console-producer": "kt.commands.console:console_producer",
    "console-share-consumer": "kt.commands.console:console_share_consumer",
    "consumer-groups": "kt.commands.consumer_groups:consumer_groups",
    "consumer-perf-test": "kt.commands.perf:consumer_perf_test",
    "delete-records": "kt.commands.offsets:delete_records",
    "dump-log": "kt.commands.dump_log:dump_log",
    "features": "kt.commands.features:features",
    "get-offsets": "kt.commands.offsets:get_offsets",
    "leader-election": "kt.commands.leader_election:leader_election",
    "log-dirs": "kt.commands.log_dirs:log_dirs",
    "preferred-replica-election": "kt.commands.leader_election:preferred_replica_election",
    "producer-perf-test": "kt.commands.perf:producer_perf_test",
    "reassign": "kt.commands.reassign:reassign_partitions",
    "reassign-partitions": "kt.commands.reassign:reassign_partitions",
    "server-start": "kt.commands.server:server_start",
    "server-stop": "kt.commands.server:server_stop",
    "share-groups": "kt.commands.share_groups:share_groups",
    "streams-groups": "kt.commands.streams_groups:streams_groups",
    "topics": "kt.commands.topics:topics",
    "top": "kt.commands.top:top",
    "transactions": "kt.commands.transactions:transactions",
    "spark-export": "kt.commands.spark_export:spark_export",
    "spark-import": "kt.commands.spark_import:spark_import",
}
