"""Kafka's broker keys that kt knows but does not read, each with what that means.

Every key of Kafka 3.9's KafkaConfig is known to kt: the keys kt reads are the table of
kt/config.py; the others are here, in one of two kinds.
- Accepted: any value of the key's type is taken and changes nothing, because the key
  sizes or tunes a part that kt's model does not have (thread pools, JVM plugins of a
  feature that another key turns off); `reason` says why.
- NotYet: kt behaves as Kafka does at the key's default; any other value asks for a
  feature kt does not have and stops the broker with one line naming the key, the value
  and the feature.
docs/config-keys.md is generated from these tables (scripts/gen_config_docs.py), and a
test fails when the two disagree.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kt.config_def import PARSERS, at_least, checked_value
from kt.errors import InvalidConfigError

_INT_MAX = 2**31 - 1
_LONG_MAX = 2**63 - 1


@dataclass(frozen=True)
class Accepted:
    reason: str


@dataclass(frozen=True)
class NotYet:
    feature: str
    instead: str = ""  # what to do meanwhile
    kafka_4_default: str | None = None  # Kafka 4.x's own default, accepted as 3.9's is


_THREADS = Accepted("a thread pool's size: one asyncio event loop serves the broker")
_TIERED = Accepted("tiered storage's: read only with remote.log.storage.system.enable=true, "
                   "which kt refuses")  # fmt: skip
_KRAFT = Accepted("KRaft's: read only with process.roles set, which kt refuses")
_ZK_TLS = Accepted("ZooKeeper TLS's: read only with zookeeper.ssl.client.enable=true, "
                   "which kt refuses")  # fmt: skip
_NEW_GROUPS = Accepted("Kafka 4's group coordinator's threads and append linger (kt's coordinator "
                       "runs on the event loop and appends at once), and its limit on the "
                       "number of share groups, which kt does not limit")  # fmt: skip
_SHARE_BOUNDS = Accepted(
    "the bounds of a share group's configs (share.*), which kt checks IncrementalAlterConfigs "
    "on a GROUP against; Kafka also checks the broker's own group.share.* keys against them "
    "at start-up, kt not"
)
_KERBEROS = Accepted("GSSAPI (Kerberos)'s, which kt refuses in sasl.enabled.mechanisms")
_OIDC = Accepted("the OIDC token validator's (sasl.oauthbearer.jwks.endpoint.url), which kt "
                 "refuses: its OAUTHBEARER takes unsecured JWS tokens")  # fmt: skip
_OAUTH_LOGIN = Accepted("the OAUTHBEARER login's (a client's token request); kt's brokers "
                        "log in to each other with unsecured JWS tokens")  # fmt: skip
_NO_OIDC = NotYet("validating OAUTHBEARER tokens (OIDC, KIP-768): kt takes unsecured JWS "
                  "tokens only")  # fmt: skip
_JSSE = "a JSSE {}: kt's TLS is OpenSSL's (ssl.enabled.protocols, ssl.cipher.suites decide)"
_LOGIN = Accepted("the JAAS login's refresh (SASL/OAUTHBEARER, GSSAPI), which kt refuses")
_TOKENS = Accepted("delegation tokens' (KIP-48), which kt does not issue: "
                   "CreateDelegationToken is not served")  # fmt: skip
_PASSWORDS = Accepted("encodes dynamic password configs in ZooKeeper; kt takes no "
                      "dynamic password config")  # fmt: skip
_PURGATORY = Accepted("kt's purgatories drop a request the moment it completes")
_WINDOWS = Accepted("the sample window of the controller mutation quota (KIP-599), which "
                    "kt does not enforce")  # fmt: skip
_METRICS_SAMPLES = Accepted("Kafka's Java metrics' sampling: kt's meters and histograms "
                            "keep Yammer's exponentially weighted rates")  # fmt: skip


# name, type, default (as Kafka 3.9's ConfigDef), validator, what kt makes of it.
UNREAD_KEYS: tuple[tuple[str, str, object, object, Accepted | NotYet], ...] = (
    # -- threads and buffers that kt's model does not have
    ("background.threads", "int", 10, at_least(1), _THREADS),
    ("num.network.threads", "int", 3, at_least(1),
     Accepted("one asyncio event loop serves every connection")),
    ("num.io.threads", "int", 8, at_least(1),
     Accepted("one asyncio event loop serves every request")),
    ("num.replica.fetchers", "int", 1, None,
     Accepted("one fetcher per source broker, all on the event loop")),
    ("num.replica.alter.log.dirs.threads", "int", None, None, _THREADS),
    ("num.recovery.threads.per.data.dir", "int", 1, at_least(1),
     Accepted("recovery runs on one thread")),
    ("queued.max.requests", "int", 500, at_least(1),
     Accepted("a connection's next request is read after its answer")),
    ("log.cleaner.threads", "int", 1, at_least(0), Accepted("one cleaner pass on the event loop")),
    ("log.cleaner.dedupe.buffer.size", "long", 134217728, None,
     Accepted("the cleaner's offset map is a dict")),
    ("log.cleaner.io.buffer.size", "int", 524288, at_least(0),
     Accepted("the cleaner reads whole batches")),
    ("log.cleaner.io.buffer.load.factor", "double", 0.9, None,
     Accepted("the cleaner's offset map is a dict")),
    ("log.cleaner.io.max.bytes.per.second", "double", sys.float_info.max, None,
     NotYet("a throttled log cleaner")),
    ("replica.socket.receive.buffer.bytes", "int", 65536, None,
     Accepted("the kernel sizes a follower's receive buffer")),
    ("zookeeper.max.in.flight.requests", "int", 10, at_least(1),
     Accepted("kazoo pipelines the store's requests on its own")),
    ("fetch.purgatory.purge.interval.requests", "int", 1000, None, _PURGATORY),
    ("producer.purgatory.purge.interval.requests", "int", 1000, None, _PURGATORY),
    ("delete.records.purgatory.purge.interval.requests", "int", 1, None, _PURGATORY),
    ("group.coordinator.threads", "int", 1, at_least(1), _NEW_GROUPS),
    ("group.coordinator.append.linger.ms", "int", 10, at_least(-1), _NEW_GROUPS),  # 4.x: -1
    # -- checkpoints and timers folded into others
    ("log.flush.start.offset.checkpoint.interval.ms", "int", 60000, at_least(0),
     Accepted("kt writes log-start-offset-checkpoint with the recovery points")),
    ("replica.high.watermark.checkpoint.interval.ms", "long", 5000, None,
     Accepted("the high watermark checkpoint is written with the recovery points")),
    ("replica.socket.timeout.ms", "int", 30000, None,
     Accepted("a fetcher's request waits replica.fetch.wait.max.ms; a dead leader is "
              "noticed by the controller")),
    ("log.initial.task.delay.ms", "long", 30000, at_least(0),
     Accepted("kt's periodic log tasks (retention, flush) first run one interval after "
              "start")),
    ("log.dir.failure.timeout.ms", "long", 30000, at_least(1),
     Accepted("KRaft's: a ZooKeeper-mode broker reports a failed log dir through "
              "/log_dir_event_notification at once")),
    ("socket.connection.setup.timeout.ms", "long", 10000, None,
     Accepted("kt's connections to other brokers time out per request "
              "(controller.socket.timeout.ms, replica.fetch.wait.max.ms)")),
    ("socket.connection.setup.timeout.max.ms", "long", 30000, None,
     Accepted("kt's connections to other brokers time out per request "
              "(controller.socket.timeout.ms, replica.fetch.wait.max.ms)")),
    ("controller.socket.timeout.ms", "int", 30000, None,
     NotYet("a controller request timeout other than Kafka's 30 s")),
    ("offsets.commit.required.acks", "short", -1, None,
     Accepted("deprecated in Kafka; commits wait for the ISR")),
    ("offsets.commit.timeout.ms", "int", 5000, at_least(1),
     NotYet("an offset commit timeout other than Kafka's 5 s")),
    ("offsets.topic.compression.codec", "int", 0, None,
     NotYet("compressed __consumer_offsets writes")),
    ("producer.id.expiration.ms", "int", 86400000, at_least(1),
     Accepted("kt keeps a producer's state as long as its log holds the producer's "
              "batches, and expires no idle producer id")),
    ("producer.id.expiration.check.interval.ms", "int", 600000, at_least(1),
     Accepted("kt keeps a producer's state as long as its log's batches")),
    ("transaction.partition.verification.enable", "bool", True, None,
     Accepted("kt's leaders do not ask the transaction coordinator before a transaction's "
              "first write (KIP-890's verification), whatever the value; a transaction "
              "left hanging is found with kt transactions find-hanging")),
    ("unclean.leader.election.interval.ms", "long", 300000, at_least(1), _KRAFT),
    ("broker.id.generation.enable", "bool", True, None,
     Accepted("kt needs a broker.id (or takes 0): no ids from /brokers/seqid yet")),
    ("reserved.broker.max.id", "int", 1000, at_least(0),
     Accepted("only bounds generated ids, which kt does not make")),
    # -- features kt does not have: the default only
    ("process.roles", "list", "", None,
     NotYet("KRaft mode", "; run it on ZooKeeper (zookeeper.connect) or on its embedded "
            "store (neither process.roles nor zookeeper.connect)")),
    ("zookeeper.metadata.migration.enable", "bool", False, None,
     NotYet("the ZooKeeper to KRaft migration (KIP-866)")),
    ("zookeeper.ssl.client.enable", "bool", False, None, NotYet("TLS to ZooKeeper")),
    ("zookeeper.clientCnxnSocket", "string", None, None, NotYet("ZooKeeper client socket classes")),
    ("remote.log.storage.system.enable", "bool", False, None, NotYet("tiered storage")),
    ("metric.reporters", "list", "", None,
     NotYet("metrics reporters", kafka_4_default="org.apache.kafka.common.metrics.JmxReporter")),
    ("kafka.metrics.reporters", "list", "", None, NotYet("metrics reporters")),
    ("auto.include.jmx.reporter", "bool", True, None,
     Accepted("kt has no JMX; its metrics are served on metrics.listeners")),
    ("create.topic.policy.class.name", "class", None, None, NotYet("topic creation policies")),
    ("alter.config.policy.class.name", "class", None, None, NotYet("config change policies")),
    ("client.quota.callback.class", "class", None, None, NotYet("client quota callbacks")),
    ("replica.selector.class", "class", None, None, NotYet("fetching from followers (KIP-392)")),
    ("principal.builder.class", "class",
     "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder", None,
     NotYet("principal builders other than DefaultKafkaPrincipalBuilder")),
    ("sasl.server.callback.handler.class", "class", None, None, NotYet("SASL callback handlers")),
    ("sasl.login.callback.handler.class", "class", None, None, NotYet("SASL callback handlers")),
    ("sasl.client.callback.handler.class", "class", None, None, NotYet("SASL callback handlers")),
    ("sasl.login.class", "class", None, None, NotYet("SASL login classes")),
    ("security.providers", "string", None, None, NotYet("JCA security providers")),
    ("ssl.allow.dn.changes", "bool", False, None,
     NotYet("changing a listener's certificate subject at runtime")),
    ("ssl.allow.san.changes", "bool", False, None,
     NotYet("changing a listener's certificate SANs at runtime")),
    ("group.coordinator.new.enable", "bool", False, None,
     Accepted("Kafka 3.x's switch to the group coordinator of KIP-848: kt's one coordinator "
              "serves the protocols group.coordinator.rebalance.protocols lists")),
    ("group.share.enable", "bool", False, None,
     Accepted("Kafka 3.9's switch of its early-access share groups (KIP-932): kt serves "
              "share groups always, as Kafka 4.4 does")),
    ("unstable.api.versions.enable", "bool", False, None, NotYet("unstable API versions")),
    ("unstable.feature.versions.enable", "bool", False, None,
     NotYet("unstable feature versions")),
    ("eligible.leader.replicas.enable", "bool", False, None,
     NotYet("eligible leader replicas (KIP-966)")),
    ("fetch.max.bytes", "int", 57671680, at_least(1024),
     NotYet("a broker-side cap on Fetch responses (kt sends up to the client's max_bytes)")),
    ("max.incremental.fetch.session.cache.slots", "int", 1000, at_least(0),
     Accepted("kt keeps no incremental fetch sessions (KIP-227), as Kafka with 0 slots: "
              "every Fetch is a full one, which every client handles")),
    ("telemetry.max.bytes", "int", 1048576, at_least(1),
     Accepted("bounds PushTelemetry (KIP-714), which kt does not serve")),
    # -- the JVM's TLS
    ("ssl.protocol", "string", "TLSv1.3", None, Accepted(_JSSE.format("SSLContext's name"))),
    ("ssl.keymanager.algorithm", "string", "SunX509", None,
     Accepted(_JSSE.format("KeyManagerFactory algorithm"))),
    ("ssl.trustmanager.algorithm", "string", "PKIX", None,
     Accepted(_JSSE.format("TrustManagerFactory algorithm"))),
    ("ssl.secure.random.implementation", "string", None, None,
     Accepted(_JSSE.format("SecureRandom"))),
    ("ssl.provider", "string", None, None, Accepted(_JSSE.format("security provider"))),
    # -- Kafka's Java metrics
    ("metrics.num.samples", "int", 2, at_least(1), _METRICS_SAMPLES),
    ("metrics.sample.window.ms", "long", 30000, at_least(1), _METRICS_SAMPLES),
    ("metrics.recording.level", "string", "INFO", None, _METRICS_SAMPLES),
    ("kafka.metrics.polling.interval.secs", "int", 10, at_least(1),
     Accepted("read only by kafka.metrics.reporters, which kt refuses")),
    ("replication.quota.window.num", "int", 11, at_least(1),
     NotYet("a replication throttle window other than Kafka's 11 x 1 s")),
    ("replication.quota.window.size.seconds", "int", 1, at_least(1),
     NotYet("a replication throttle window other than Kafka's 11 x 1 s")),
    ("alter.log.dirs.replication.quota.window.num", "int", 11, at_least(1),
     NotYet("an alter-log-dirs throttle window other than Kafka's 11 x 1 s")),
    ("alter.log.dirs.replication.quota.window.size.seconds", "int", 1, at_least(1),
     NotYet("an alter-log-dirs throttle window other than Kafka's 11 x 1 s")),
    ("controller.quota.window.num", "int", 11, at_least(1), _WINDOWS),
    ("controller.quota.window.size.seconds", "int", 1, at_least(1), _WINDOWS),
    # -- SASL mechanisms kt refuses, and the JAAS login
    *((name, kind, default, None, _KERBEROS) for name, kind, default in (
        ("sasl.kerberos.service.name", "string", None),
        ("sasl.kerberos.kinit.cmd", "string", "/usr/bin/kinit"),
        ("sasl.kerberos.ticket.renew.window.factor", "double", 0.8),
        ("sasl.kerberos.ticket.renew.jitter", "double", 0.05),
        ("sasl.kerberos.min.time.before.relogin", "long", 60000),
        ("sasl.kerberos.principal.to.local.rules", "list", "DEFAULT"),
    )),
    *((name, kind, default, None, _LOGIN) for name, kind, default in (
        ("sasl.login.refresh.window.factor", "double", 0.8),
        ("sasl.login.refresh.window.jitter", "double", 0.05),
        ("sasl.login.refresh.min.period.seconds", "short", 60),
        ("sasl.login.refresh.buffer.seconds", "short", 300),
        ("sasl.login.connect.timeout.ms", "int", None),
        ("sasl.login.read.timeout.ms", "int", None),
        ("sasl.login.retry.backoff.max.ms", "long", 10000),
        ("sasl.login.retry.backoff.ms", "long", 100),
    )),
    *((name, kind, default, None, _OIDC) for name, kind, default in (
        ("sasl.oauthbearer.scope.claim.name", "string", "scope"),
        ("sasl.oauthbearer.sub.claim.name", "string", "sub"),
        ("sasl.oauthbearer.jwks.endpoint.refresh.ms", "long", 3600000),
        ("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", "long", 100),
        ("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", "long", 10000),
        ("sasl.oauthbearer.clock.skew.seconds", "int", 30),
    )),
    ("sasl.oauthbearer.token.endpoint.url", "string", None, None, _OAUTH_LOGIN),
    ("sasl.oauthbearer.jwks.endpoint.url", "string", None, None, _NO_OIDC),
    ("sasl.oauthbearer.expected.audience", "list", None, None, _NO_OIDC),
    ("sasl.oauthbearer.expected.issuer", "string", None, None, _NO_OIDC),
    *((name, kind, default, None, _TOKENS) for name, kind, default in (
        ("delegation.token.master.key", "password", None),
        ("delegation.token.secret.key", "password", None),
        ("delegation.token.max.lifetime.ms", "long", 604800000),
        ("delegation.token.expiry.time.ms", "long", 86400000),
        ("delegation.token.expiry.check.interval.ms", "long", 3600000),
    )),
    *((name, kind, default, None, _PASSWORDS) for name, kind, default in (
        ("password.encoder.secret", "password", None),
        ("password.encoder.old.secret", "password", None),
        ("password.encoder.keyfactory.algorithm", "string", None),
        ("password.encoder.cipher.algorithm", "string", "AES/CBC/PKCS5Padding"),
        ("password.encoder.key.length", "int", 128),
        ("password.encoder.iterations", "int", 4096),
    )),
    # -- ZooKeeper over TLS (refused above)
    *((name, kind, default, None, _ZK_TLS) for name, kind, default in (
        ("zookeeper.ssl.keystore.location", "string", None),
        ("zookeeper.ssl.keystore.password", "password", None),
        ("zookeeper.ssl.keystore.type", "string", None),
        ("zookeeper.ssl.truststore.location", "string", None),
        ("zookeeper.ssl.truststore.password", "password", None),
        ("zookeeper.ssl.truststore.type", "string", None),
        ("zookeeper.ssl.protocol", "string", "TLSv1.2"),
        ("zookeeper.ssl.enabled.protocols", "list", None),
        ("zookeeper.ssl.cipher.suites", "list", None),
        ("zookeeper.ssl.endpoint.identification.algorithm", "string", "HTTPS"),
        ("zookeeper.ssl.crl.enable", "bool", False),
        ("zookeeper.ssl.ocsp.enable", "bool", False),
    )),
    # -- KRaft (refused above)
    *((name, kind, default, None, _KRAFT) for name, kind, default in (
        ("controller.listener.names", "string", None),
        ("sasl.mechanism.controller.protocol", "string", "GSSAPI"),
        ("early.start.listeners", "string", None),
        ("initial.broker.registration.timeout.ms", "int", 60000),
        ("broker.heartbeat.interval.ms", "int", 2000),
        ("broker.session.timeout.ms", "int", 9000),
        ("server.max.startup.time.ms", "long", _LONG_MAX),
        ("metadata.log.dir", "string", None),
        ("metadata.log.segment.bytes", "int", 1073741824),
        ("metadata.log.segment.min.bytes", "int", 8388608),
        ("metadata.log.segment.ms", "long", 604800000),
        ("metadata.max.retention.bytes", "long", 104857600),
        ("metadata.max.retention.ms", "long", 604800000),
        ("metadata.max.idle.interval.ms", "int", 500),
        ("metadata.log.max.record.bytes.between.snapshots", "long", 20971520),
        ("metadata.log.max.snapshot.interval.ms", "long", 3600000),
        ("zookeeper.metadata.migration.min.batch.size", "int", 200),
        ("controller.quorum.voters", "list", ""),
        ("controller.quorum.bootstrap.servers", "list", ""),
        ("controller.quorum.election.timeout.ms", "int", 1000),
        ("controller.quorum.fetch.timeout.ms", "int", 2000),
        ("controller.quorum.election.backoff.max.ms", "int", 1000),
        ("controller.quorum.append.linger.ms", "int", 25),
        ("controller.quorum.request.timeout.ms", "int", 2000),
        ("controller.quorum.retry.backoff.ms", "int", 20),
    )),
    # -- Kafka 4's groups: share groups
    ("group.share.max.groups", "short", 10, None, _NEW_GROUPS),
    *((name, kind, default, None, _SHARE_BOUNDS) for name, kind, default in (
        ("group.share.min.record.lock.duration.ms", "int", 15000),
        ("group.share.max.record.lock.duration.ms", "int", 60000),
        ("group.share.min.assignment.interval.ms", "int", 0),
        ("group.share.max.assignment.interval.ms", "int", 15000),
        ("group.share.max.delivery.count.limit", "int", 10),
        ("group.share.min.delivery.count.limit", "int", 2),
        ("group.share.max.partition.max.record.locks", "int", 4000),
        ("group.share.min.partition.max.record.locks", "int", 100),
    )),
    # -- tiered storage (refused above)
    *((name, kind, default, None, _TIERED) for name, kind, default in (
        ("remote.log.storage.manager.impl.prefix", "string", "rsm.config."),
        ("remote.log.metadata.manager.impl.prefix", "string", "rlmm.config."),
        ("remote.log.storage.manager.class.name", "string", None),
        ("remote.log.storage.manager.class.path", "string", None),
        ("remote.log.metadata.manager.class.name", "string",
         "org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager"),
        ("remote.log.metadata.manager.class.path", "string", None),
        ("remote.log.metadata.manager.listener.name", "string", None),
        ("remote.log.metadata.custom.metadata.max.bytes", "int", 128),
        ("remote.log.index.file.cache.total.size.bytes", "long", 1073741824),
        ("remote.log.manager.thread.pool.size", "int", 10),
        ("remote.log.manager.copier.thread.pool.size", "int", -1),
        ("remote.log.manager.expiration.thread.pool.size", "int", -1),
        ("remote.log.manager.task.interval.ms", "long", 30000),
        ("remote.log.manager.task.retry.backoff.ms", "long", 500),
        ("remote.log.manager.task.retry.backoff.max.ms", "long", 30000),
        ("remote.log.manager.task.retry.jitter", "double", 0.2),
        ("remote.log.reader.threads", "int", 10),
        ("remote.log.reader.max.pending.tasks", "int", 100),
        ("remote.log.manager.copy.max.bytes.per.second", "long", _LONG_MAX),
        ("remote.log.manager.copy.quota.window.num", "int", 11),
        ("remote.log.manager.copy.quota.window.size.seconds", "int", 1),
        ("remote.log.manager.fetch.max.bytes.per.second", "long", _LONG_MAX),
        ("remote.log.manager.fetch.quota.window.num", "int", 11),
        ("remote.log.manager.fetch.quota.window.size.seconds", "int", 1),
        ("remote.fetch.max.wait.ms", "int", 500),
    )),
)  # fmt: skip

_KAFKA_4_GROUPS = Accepted("Kafka 4's group coordinator's tuning: kt computes a group's "
                           "assignment in the heartbeat, with its one assignor of each kind "
                           "(streams groups: sticky, no warm-up tasks, as Kafka 4.4 hands "
                           "out none, no topology description plugin)")  # fmt: skip
_KAFKA_4_SHARE = Accepted("the tuning of Kafka 4's share coordinator (KIP-932) and its "
                          "dead-letter queues (KIP-1191): kt's share coordinator appends each "
                          "state change at once, and kt has no dead-letter queue yet")  # fmt: skip
_KAFKA_4_OAUTH = Accepted("Kafka 4's OAUTHBEARER client credentials and JWT assertion "
                          "login (KIP-1139): a client's; kt's brokers log in with unsecured "
                          "JWS")  # fmt: skip

# Keys that Kafka 4.x brokers (KRaft only) added after 3.9: known, so that a Kafka 4
# server.properties names them without an "unknown" line, but not described, as a 3.9
# broker does not describe them. Read off Kafka 4.4's AbstractKafkaConfig.CONFIG_DEF.
KAFKA_4_KEYS: tuple[tuple[str, str, object, object, Accepted | NotYet], ...] = (
    ("config.providers", "list", "", None, NotYet("config providers (KIP-297)")),
    ("cordoned.log.dirs", "list", "", None, NotYet("cordoned log dirs (KIP-1066)")),
    ("transaction.two.phase.commit.enable", "bool", False, None,
     NotYet("two-phase commit transactions (KIP-939)")),
    ("max.decompressed.message.bytes", "int", 2147483639, None,
     NotYet("a bound on a batch's decompressed size")),
    ("errors.deadletterqueue.auto.create.topics.enable", "bool", False, None, _KAFKA_4_SHARE),
    ("errors.deadletterqueue.topic.name.prefix", "string", "dlq.", None, _KAFKA_4_SHARE),
    ("add.partitions.to.txn.retry.backoff.max.ms", "int", 100, None,
     Accepted("a broker's retries of AddPartitionsToTxn to the transaction coordinator: kt's "
              "leaders verify a transaction in their own process or retry on its answer")),
    ("add.partitions.to.txn.retry.backoff.ms", "int", 20, None,
     Accepted("a broker's retries of AddPartitionsToTxn to the transaction coordinator: kt's "
              "leaders verify a transaction in their own process or retry on its answer")),
    *((name, kind, default, None, _TIERED) for name, kind, default in (
        ("remote.log.index.file.cache.ttl.ms", "long", 900000),
        ("remote.log.manager.follower.thread.pool.size", "int", 2),
        ("log.remote.copy.lag.ms", "long", 0),
        ("log.remote.copy.lag.bytes", "long", -1),
        ("remote.list.offsets.request.timeout.ms", "long", 30000),
        ("follower.fetch.last.tiered.offset.enable", "bool", False),
    )),
    *((name, kind, default, None, _KRAFT) for name, kind, default in (
        ("controller.performance.sample.period.ms", "long", 60000),
        ("controller.performance.always.log.threshold.ms", "long", 2000),
        ("internal.metadata.log.segment.bytes", "int", None),
        ("internal.metadata.max.batch.size.in.bytes", "int", 8388608),
        ("internal.metadata.delete.delay.millis", "long", 60000),
        ("controller.quorum.auto.join.enable", "bool", False),
        ("controller.quorum.fetch.snapshot.max.bytes", "int", 1048576),
        ("controller.quorum.fetch.max.bytes", "int", 1048576),
    )),
    *((name, kind, default, None, _KAFKA_4_GROUPS) for name, kind, default in (
        ("group.coordinator.background.threads", "int", 2),
        ("group.coordinator.cached.buffer.max.bytes", "int", 1048588),
        ("group.consumer.assignment.interval.ms", "int", 1000),
        ("group.consumer.min.assignment.interval.ms", "int", 0),
        ("group.consumer.max.assignment.interval.ms", "int", 15000),
        ("group.consumer.assignor.offload.enable", "bool", True),
        ("group.consumer.regex.refresh.interval.ms", "int", 600000),
        ("group.share.assignors", "list", "simple"),
        ("group.share.assignment.interval.ms", "int", 1000),
        ("group.share.assignor.offload.enable", "bool", True),
        ("group.share.persister.class.name", "string",
         "org.apache.kafka.server.share.persister.DefaultStatePersister"),
        ("group.share.dlq.manager.class.name", "string",
         "org.apache.kafka.server.share.dlq.DefaultShareGroupDLQManager"),
        ("share.fetch.purgatory.purge.interval.requests", "int", 1000),
        ("group.streams.assignors", "list", "sticky"),
        ("group.streams.assignor.offload.enable", "bool", True),
        ("group.streams.num.warmup.replicas", "int", 2),
        ("group.streams.max.warmup.replicas", "int", 20),
        ("group.streams.rack.aware.assignment.tags", "list", ""),
        ("group.streams.topology.description.plugin.class", "class", None),
    )),
    *((name, kind, default, None, _KAFKA_4_SHARE) for name, kind, default in (
        ("share.coordinator.threads", "int", 1),
        ("share.coordinator.load.buffer.size", "int", 5242880),
        ("share.coordinator.state.topic.compression.codec", "int", 0),
        ("share.coordinator.append.linger.ms", "int", -1),
        ("share.coordinator.write.timeout.ms", "int", 5000),
        ("share.coordinator.state.topic.prune.interval.ms", "int", 300000),
        ("share.coordinator.cold.partition.snapshot.interval.ms", "int", 300000),
        ("share.coordinator.cached.buffer.max.bytes", "int", 1048588),
    )),
    *((name, kind, default, None, _KAFKA_4_OAUTH) for name, kind, default in (
        ("sasl.oauthbearer.jwt.retriever.class", "class",
         "org.apache.kafka.common.security.oauthbearer.DefaultJwtRetriever"),
        ("sasl.oauthbearer.scope", "string", None),
        ("sasl.oauthbearer.client.credentials.client.id", "string", None),
        ("sasl.oauthbearer.client.credentials.client.secret", "password", None),
        ("sasl.oauthbearer.assertion.algorithm", "string", "RS256"),
        ("sasl.oauthbearer.assertion.claim.aud", "string", None),
        ("sasl.oauthbearer.assertion.claim.exp.seconds", "int", 300),
        ("sasl.oauthbearer.assertion.claim.iss", "string", None),
        ("sasl.oauthbearer.assertion.claim.jti.include", "bool", False),
        ("sasl.oauthbearer.assertion.claim.nbf.seconds", "int", 60),
        ("sasl.oauthbearer.assertion.claim.sub", "string", None),
        ("sasl.oauthbearer.assertion.file", "string", None),
        ("sasl.oauthbearer.assertion.private.key.file", "string", None),
        ("sasl.oauthbearer.assertion.private.key.passphrase", "password", None),
        ("sasl.oauthbearer.assertion.template.file", "string", None),
    )),
    ("sasl.oauthbearer.jwt.validator.class", "class",
     "org.apache.kafka.common.security.oauthbearer.DefaultJwtValidator", None, _NO_OIDC),
    ("sasl.oauthbearer.allow.unverified.audience", "bool", False, None, _NO_OIDC),
    ("sasl.oauthbearer.allow.unverified.issuer", "bool", False, None, _NO_OIDC),
)  # fmt: skip

UNREAD: dict[str, Accepted | NotYet] = {row[0]: row[4] for row in (*UNREAD_KEYS, *KAFKA_4_KEYS)}


def _as_text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


_ROWS = {row[0]: row for row in (*UNREAD_KEYS, *KAFKA_4_KEYS)}
_KAFKA_4 = {row[0] for row in KAFKA_4_KEYS}
_KAFKA_4_MARK = " (4.x)"


def unread_key(name: str) -> tuple[str, object] | None:
    """(type, Kafka's default) of a key kt knows and does not read; None for another."""
    row = _ROWS.get(name)
    return None if row is None else ("string" if row[1] in ("class", "password") else row[1],
                                     row[2])  # fmt: skip


def refuse_unread(props: Mapping[str, str], base_key: Callable[[str], str] = str) -> None:
    """Stop a broker whose configuration gives a NotYet key anything but Kafka's default,
    itself or for one listener (`base_key` maps listener.name.<l>.[<mechanism>.]<key> to
    <key>): one line naming the key as given, the value and the feature it asks for."""
    for given, text in props.items():
        row = _ROWS.get(base_key(given))
        if row is None or not isinstance(row[4], NotYet):
            continue
        name, kind, default, _, what = row
        parse = PARSERS["string" if kind in ("class", "password") else kind]
        value = checked_value(name, parse, None, text)
        default_text = _as_text(default)
        at_default = value in ("", []) if default_text is None else value == parse(default_text)
        if what.kafka_4_default is not None:
            at_default = at_default or value == parse(what.kafka_4_default)
        if not at_default:
            raise InvalidConfigError(
                f"{given}={text.strip()}: kt does not support {what.feature} yet{what.instead}"
            )


def render_markdown() -> str:
    """docs/config-keys.md: the two tables above as the operator reads them."""
    lines = [
        "# Kafka's broker keys that kt does not read",
        "",
        "Generated from kt/config_unread.py by `python scripts/gen_config_docs.py`; a test",
        "fails when the two disagree. Every other key of Kafka 3.9's KafkaConfig is read and",
        "honoured by kt (kt/config.py), and every topic config of Kafka 3.9's LogConfig too.",
        f"Keys marked {_KAFKA_4_MARK} are Kafka 4.x's (KRaft brokers only), known so that",
        'their files start kt without an "unknown" line.',
        "",
        "## Refused unless at Kafka's default",
        "",
        "Any other value stops `kt server-start` with one line naming the key and the value.",
        "",
        "| key | Kafka's default | what another value asks for |",
        "|---|---|---|",
    ]
    rows = sorted((r for r in _ROWS.values() if isinstance(r[4], NotYet)), key=lambda r: r[0])
    lines += [f"| `{name}`{_KAFKA_4_MARK if name in _KAFKA_4 else ''} | {_shown(default)} | "
              f"{what.feature} |" for name, _, default, _, what in rows]  # fmt: skip
    lines += [
        "",
        "## Accepted, without effect",
        "",
        "Any value of the key's type is taken (a value Kafka refuses, kt refuses too) and",
        "changes nothing, for the reason given.",
        "",
        "| key | Kafka's default | why it has no effect in kt |",
        "|---|---|---|",
    ]
    rows = sorted((r for r in _ROWS.values() if isinstance(r[4], Accepted)), key=lambda r: r[0])
    lines += [f"| `{name}`{_KAFKA_4_MARK if name in _KAFKA_4 else ''} | {_shown(default)} | "
              f"{what.reason} |" for name, _, default, _, what in rows]  # fmt: skip
    return "\n".join(lines) + "\n"


def _shown(default: object) -> str:
    text = _as_text(default)
    return "(none)" if text is None else ("(empty)" if text == "" else f"`{text}`")
