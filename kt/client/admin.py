"""Admin calls for the tools: topics, partitions, configs, offsets, records, log dirs.

Each method sends one request to the broker that must answer it (the controller for
topic mutations, the leader for offsets and records) and returns plain results with
Kafka error codes; the tools turn codes into Kafka's messages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kt.client.client import KafkaClient, TopicInfo
from kt.errors import KafkaError, error_for
from kt.protocol import ApiKey
from kt.protocol import messages as m

TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4
SET, DELETE = 0, 1  # AlterConfigOp.OpType of IncrementalAlterConfigs


@dataclass
class TopicError:
    name: str
    error_code: int
    error_message: str | None = None


@dataclass
class ConfigValue:
    name: str
    value: str | None
    source: int
    is_default: bool
    is_sensitive: bool
    read_only: bool
    synonyms: list[tuple[str, str | None, int]]


def group_by_leader(
    values: dict[tuple[str, int], int], leaders: dict[tuple[str, int], int]
) -> dict[int, dict[str, list[tuple[int, int]]]]:
    """{(topic, partition): v} -> {leader: {topic: [(partition, v)]}}: one request each."""
    grouped: dict[int, dict[str, list[tuple[int, int]]]] = {}
    for (topic, partition), value in values.items():
        grouped.setdefault(leaders[(topic, partition)], {}).setdefault(topic, []).append(
            (partition, value)
        )
    return grouped


class AdminClient:
    """Admin operations over a KafkaClient."""

    def __init__(self, client: KafkaClient, timeout_ms: int = 30000) -> None:
        self.client = client
        self.timeout_ms = timeout_ms

    # -- topics ----------------------------------------------------------------------

    def create_topic(
        self,
        name: str,
        partitions: int = -1,
        replication_factor: int = -1,
        assignment: dict[int, list[int]] | None = None,
        configs: dict[str, str] | None = None,
        validate_only: bool = False,
    ) -> TopicError:
        R = m.CreateTopicsRequest
        topic = R.CreatableTopic(
            name=name,
            num_partitions=partitions,
            replication_factor=replication_factor,
            assignments=[
                R.CreatableReplicaAssignment(partition_index=p, broker_ids=b)
                for p, b in sorted((assignment or {}).items())
            ],
            configs=[R.CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()],
        )
        response = self.client.send_to_controller(
            ApiKey.CREATE_TOPICS,
            R(topics=[topic], timeout_ms=self.timeout_ms, validate_only=validate_only),
        )
        t = response.topics[0]
        return TopicError(t.name, t.error_code, getattr(t, "error_message", None))

    def delete_topics(self, names: list[str]) -> list[TopicError]:
        response = self.client.send_to_controller(
            ApiKey.DELETE_TOPICS,
            m.DeleteTopicsRequest(
                topic_names=names,
                topics=[m.DeleteTopicsRequest.DeleteTopicState(name=n) for n in names],
                timeout_ms=self.timeout_ms,
            ),
        )
        return [
            TopicError(r.name, r.error_code, getattr(r, "error_message", None))
            for r in response.responses
        ]

    def create_partitions(
        self, name: str, count: int, assignment: list[list[int]] | None = None
    ) -> TopicError:
        R = m.CreatePartitionsRequest
        topic = R.CreatePartitionsTopic(
            name=name,
            count=count,
            assignments=[R.CreatePartitionsAssignment(broker_ids=b) for b in assignment]
            if assignment
            else None,
        )
        response = self.client.send_to_controller(
            ApiKey.CREATE_PARTITIONS,
            R(topics=[topic], timeout_ms=self.timeout_ms, validate_only=False),
        )
        r = response.results[0]
        return TopicError(r.name, r.error_code, r.error_message)

    def describe_topics(self, names: list[str] | None = None) -> dict[str, TopicInfo]:
        return self.client.metadata(names)

    # -- configs ---------------------------------------------------------------------

    def describe_configs(
        self, resource_type: int, name: str, keys: list[str] | None = None
    ) -> tuple[int, str | None, list[ConfigValue]]:
        conn = self._config_connection(resource_type, name)
        R = m.DescribeConfigsRequest
        response = conn.send(
            ApiKey.DESCRIBE_CONFIGS,
            R(
                resources=[
                    R.DescribeConfigsResource(
                        resource_type=resource_type, resource_name=name, configuration_keys=keys
                    )
                ],
                include_synonyms=True,
            ),
        )
        result = response.results[0]
        values = [
            ConfigValue(
                c.name,
                c.value,
                c.config_source,
                c.config_source == 5,
                c.is_sensitive,
                c.read_only,
                [(s.name, s.value, s.source) for s in c.synonyms],
            )  # fmt: skip
            for c in result.configs
        ]
        return result.error_code, result.error_message, values

    def incremental_alter_configs(
        self, resource_type: int, name: str, ops: list[tuple[int, str, str | None]]
    ) -> tuple[int, str | None]:
        conn = self._config_connection(resource_type, name)
        R = m.IncrementalAlterConfigsRequest
        response = conn.send(
            ApiKey.INCREMENTAL_ALTER_CONFIGS,
            R(
                resources=[
                    R.AlterConfigsResource(
                        resource_type=resource_type,
                        resource_name=name,
                        configs=[
                            R.AlterableConfig(name=k, config_operation=op, value=v)
                            for op, k, v in ops
                        ],
                    )
                ],
                validate_only=False,
            ),
        )
        r = response.responses[0]
        return r.error_code, r.error_message

    def describe_log_dirs(
        self, broker: int
    ) -> list[tuple[str, int, list[tuple[str, int, int, int, bool]]]]:
        """One broker's log dirs: (dir, error code, [(topic, partition, size, offset lag,
        is future)])."""
        R = m.DescribeLogDirsRequest
        response = self.client.connection(broker).send(ApiKey.DESCRIBE_LOG_DIRS, R(topics=None))
        if getattr(response, "error_code", 0):
            raise KafkaError(response.error_code, error_for(response.error_code).message)
        return [
            (r.log_dir, r.error_code, [
                (t.name, p.partition_index, p.partition_size, p.offset_lag, p.is_future_key)
                for t in r.topics for p in t.partitions
            ])
            for r in response.results
        ]  # fmt: skip

    def alter_replica_log_dirs(
        self, broker: int, dirs: dict[tuple[str, int], str]
    ) -> dict[tuple[str, int], int]:
        """Move replicas of one broker to other log dirs: an error code per partition."""
        R = m.AlterReplicaLogDirsRequest
        by_dir: dict[str, dict[str, list[int]]] = {}
        for (topic, partition), path in dirs.items():
            by_dir.setdefault(path, {}).setdefault(topic, []).append(partition)
        request = R(dirs=[
            R.AlterReplicaLogDir(path=path, topics=[
                R.AlterReplicaLogDirTopic(name=t, partitions=ps) for t, ps in topics.items()
            ])
            for path, topics in by_dir.items()
        ])  # fmt: skip
        response = self.client.connection(broker).send(ApiKey.ALTER_REPLICA_LOG_DIRS, request)
        return {
            (t.topic_name, p.partition_index): p.error_code
            for t in response.results
            for p in t.partitions
        }

    def elect_leaders(
        self, election_type: int, partitions: list[tuple[str, int]] | None
    ) -> dict[tuple[str, int], tuple[int, str | None]]:
        """ElectLeaders (0 preferred, 1 unclean) of `partitions`, or of every partition that
        needs one (None): (error code, message) per partition."""
        R = m.ElectLeadersRequest
        topics = None
        if partitions is not None:
            by_topic: dict[str, list[int]] = {}
            for topic, partition in partitions:
                by_topic.setdefault(topic, []).append(partition)
            topics = [R.TopicPartitions(topic=t, partitions=ps) for t, ps in by_topic.items()]
        request = R(election_type=election_type, topic_partitions=topics)
        response = self.client.send_to_controller(ApiKey.ELECT_LEADERS, request)
        if response.error_code:
            raise KafkaError(response.error_code, error_for(response.error_code).message)
        return {
            (t.topic, p.partition_id): (p.error_code, p.error_message)
            for t in response.replica_election_results
            for p in t.partition_result
        }

    def alter_partition_reassignments(
        self, targets: dict[tuple[str, int], list[int] | None]
    ) -> dict[tuple[str, int], tuple[int, str | None]]:
        """Move partitions to target replicas (None cancels a move); (error code, message)
        per partition. A request-level error raises KafkaError."""
        R = m.AlterPartitionReassignmentsRequest
        by_topic: dict[str, list[Any]] = {}
        for (topic, partition), replicas in sorted(targets.items()):
            by_topic.setdefault(topic, []).append(
                R.ReassignablePartition(partition_index=partition, replicas=replicas)
            )
        request = R(topics=[R.ReassignableTopic(name=t, partitions=ps)
                            for t, ps in by_topic.items()])  # fmt: skip
        response = self.client.send_to_controller(ApiKey.ALTER_PARTITION_REASSIGNMENTS, request)
        if response.error_code:
            raise KafkaError(response.error_code, response.error_message)
        return {
            (t.name, p.partition_index): (p.error_code, p.error_message)
            for t in response.responses
            for p in t.partitions
        }

    def list_partition_reassignments(
        self, partitions: list[tuple[str, int]] | None = None
    ) -> dict[tuple[str, int], tuple[list[int], list[int], list[int]]]:
        """Moves in progress: (replicas, adding, removing) per partition."""
        R = m.ListPartitionReassignmentsRequest
        topics = None
        if partitions is not None:
            by_topic: dict[str, list[int]] = {}
            for topic, partition in partitions:
                by_topic.setdefault(topic, []).append(partition)
            topics = [R.ListPartitionReassignmentsTopics(name=t, partition_indexes=ps)
                      for t, ps in by_topic.items()]  # fmt: skip
        response = self.client.send_to_controller(
            ApiKey.LIST_PARTITION_REASSIGNMENTS, R(topics=topics)
        )
        if response.error_code:
            raise KafkaError(response.error_code, response.error_message)
        return {
            (t.name, p.partition_index): (
                list(p.replicas),
                list(p.adding_replicas),
                list(p.removing_replicas),
            )
            for t in response.topics
            for p in t.partitions
        }

    def describe_client_quotas(
        self, components: list[tuple[str, str | None]], strict: bool
    ) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
        """Quotas by entity for a filter of (entity type, name) components: a name, "" for
        the default entity, or None for any (ClientQuotaFilterComponent)."""
        R = m.DescribeClientQuotasRequest
        request = R(
            components=[
                R.ComponentData(
                    entity_type=kind,
                    match_type=2 if name is None else 1 if name == "" else 0,
                    match=name or None,
                )
                for kind, name in components
            ],
            strict=strict,
        )
        response = self.client.any_connection().send(ApiKey.DESCRIBE_CLIENT_QUOTAS, request)
        if response.error_code:
            raise KafkaError(response.error_code, response.error_message)
        return {
            tuple((e.entity_type, e.entity_name) for e in entry.entity): {
                v.key: v.value for v in entry.values
            }
            for entry in response.entries or ()
        }

    def alter_client_quotas(
        self, entity: list[tuple[str, str | None]], ops: list[tuple[str, float | None]]
    ) -> None:
        """Set (a value) or remove (None) quota keys of one entity; names None = default."""
        R = m.AlterClientQuotasRequest
        request = R(
            entries=[
                R.EntryData(
                    entity=[R.EntityData(entity_type=t, entity_name=n) for t, n in entity],
                    ops=[R.OpData(key=k, value=v or 0.0, remove=v is None) for k, v in ops],
                )
            ],
            validate_only=False,
        )
        response = self.client.send_to_controller(ApiKey.ALTER_CLIENT_QUOTAS, request)
        for entry in response.entries:
            if entry.error_code:
                raise KafkaError(entry.error_code, entry.error_message)

    def describe_user_scram_credentials(self, users: list[str]) -> dict[str, list[tuple[str, int]]]:
        """user -> [(mechanism name, iterations)]; users without a credential are left out,
        as the Java admin client's DescribeUserScramCredentialsResult.all() leaves them."""
        from kt.security.scram import BY_ID

        R = m.DescribeUserScramCredentialsRequest
        request = R(users=[R.UserName(name=u) for u in users] or None)
        response = self.client.any_connection().send(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
                                                     request)  # fmt: skip
        if response.error_code:
            raise KafkaError(response.error_code, response.error_message)
        out = {}
        for result in response.results:
            if result.error_code == 91:  # RESOURCE_NOT_FOUND: no credential
                continue
            if result.error_code:
                raise KafkaError(result.error_code, result.error_message)
            out[result.user] = [(BY_ID[i.mechanism].name if i.mechanism in BY_ID else "UNKNOWN",
                                 i.iterations) for i in result.credential_infos]  # fmt: skip
        return out

    def alter_user_scram_credentials(
        self, user: str, upsert: dict[str, tuple[int, str]], delete: list[str]
    ) -> None:
        """Set (mechanism -> (iterations, password)) and delete (mechanisms) one user's
        credentials: the salt and the salted password are made here, as the Java admin
        client makes them, and only they travel."""
        import secrets

        from kt.security.scram import MECHANISMS

        R = m.AlterUserScramCredentialsRequest
        upsertions = []
        for name, (iterations, password) in upsert.items():
            mechanism = MECHANISMS[name]
            salt = secrets.token_bytes(32)
            upsertions.append(R.ScramCredentialUpsertion(
                name=user, mechanism=mechanism.kafka_id, iterations=iterations, salt=salt,
                salted_password=mechanism.salted_password(password, salt, iterations),
            ))  # fmt: skip
        request = R(
            deletions=[R.ScramCredentialDeletion(name=user, mechanism=MECHANISMS[name].kafka_id)
                       for name in delete],
            upsertions=upsertions,
        )  # fmt: skip
        response = self.client.send_to_controller(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, request)
        for result in response.results:
            if result.error_code:
                raise KafkaError(result.error_code, result.error_message)

    # -- ACLs ------------------------------------------------------------------------------

    def create_acls(self, bindings: list[tuple[Any, Any]]) -> None:
        """(ResourcePattern, AccessControlEntry) bindings of kt.security.acls."""
        R = m.CreateAclsRequest
        request = R(creations=[R.AclCreation(
            resource_type=p.resource_type, resource_name=p.name,
            resource_pattern_type=p.pattern_type, principal=e.principal, host=e.host,
            operation=e.operation, permission_type=e.permission) for p, e in bindings])  # fmt: skip
        response = self.client.any_connection().send(ApiKey.CREATE_ACLS, request)
        for result in response.results:
            if result.error_code:
                raise KafkaError(result.error_code, result.error_message)

    def describe_acls(self, binding_filter: Any) -> list[tuple[Any, Any]]:
        from kt.security import acls as a

        f = binding_filter
        request = m.DescribeAclsRequest(
            resource_type_filter=f.resource_type, resource_name_filter=f.name,
            pattern_type_filter=f.pattern_type, principal_filter=f.principal,
            host_filter=f.host, operation=f.operation, permission_type=f.permission,
        )  # fmt: skip
        response = self.client.any_connection().send(ApiKey.DESCRIBE_ACLS, request)
        if response.error_code:
            raise KafkaError(response.error_code, response.error_message)
        return [(a.ResourcePattern(r.resource_type, r.resource_name, r.pattern_type),
                 a.AccessControlEntry(x.principal, x.host, x.operation, x.permission_type))
                for r in response.resources for x in r.acls]  # fmt: skip

    def delete_acls(self, filters: list[Any]) -> None:
        R = m.DeleteAclsRequest
        request = R(filters=[R.DeleteAclsFilter(
            resource_type_filter=f.resource_type, resource_name_filter=f.name,
            pattern_type_filter=f.pattern_type, principal_filter=f.principal,
            host_filter=f.host, operation=f.operation, permission_type=f.permission,
        ) for f in filters])  # fmt: skip
        response = self.client.any_connection().send(ApiKey.DELETE_ACLS, request)
        for result in response.filter_results:
            if result.error_code:
                raise KafkaError(result.error_code, result.error_message)

    def _config_connection(self, resource_type: int, name: str) -> Any:
        if resource_type == BROKER_RESOURCE and name and name.isdigit():
            return self.client.connection(int(name))
        return self.client.any_connection()

    # -- offsets and records --------------------------------------------------------------

    def list_offsets(
        self,
        requests: dict[tuple[str, int], int],
        leaders: dict[tuple[str, int], int],
        isolation_level: int = 0,
    ) -> dict[tuple[str, int], tuple[int, int, int]]:
        """(topic, partition) -> timestamp spec; answers (error, offset, timestamp).

        With isolation_level 1 (read_committed), latest is the last stable offset."""
        R = m.ListOffsetsRequest
        out: dict[tuple[str, int], tuple[int, int, int]] = {}
        for leader, topics in group_by_leader(requests, leaders).items():
            request = R(
                replica_id=-1,
                isolation_level=isolation_level,
                topics=[
                    R.ListOffsetsTopic(
                        name=t,
                        partitions=[
                            R.ListOffsetsPartition(partition_index=p, timestamp=ts)
                            for p, ts in parts
                        ],
                    )
                    for t, parts in topics.items()
                ],
            )
            response = self.client.connection(leader).send(ApiKey.LIST_OFFSETS, request)
            for t in response.topics:
                for p in t.partitions:
                    out[(t.name, p.partition_index)] = (p.error_code, p.offset, p.timestamp)
        return out

    def delete_records(
        self, offsets: dict[tuple[str, int], int], leaders: dict[tuple[str, int], int]
    ) -> dict[tuple[str, int], tuple[int, int]]:
        """(topic, partition) -> offset; answers (error, low watermark)."""
        R = m.DeleteRecordsRequest
        out: dict[tuple[str, int], tuple[int, int]] = {}
        for leader, topics in group_by_leader(offsets, leaders).items():
            request = R(
                topics=[
                    R.DeleteRecordsTopic(
                        name=t,
                        partitions=[
                            R.DeleteRecordsPartition(partition_index=p, offset=o) for p, o in parts
                        ],
                    )
                    for t, parts in topics.items()
                ],
                timeout_ms=self.timeout_ms,
            )
            response = self.client.connection(leader).send(ApiKey.DELETE_RECORDS, request)
            for t in response.topics:
                for p in t.partitions:
                    out[(t.name, p.partition_index)] = (p.error_code, p.low_watermark)
        return out
