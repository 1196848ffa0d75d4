#!/usr/bin/env bash
# Copy Apache Kafka's jars (interop/pom.xml) into the cache that kt.reference_kafka reads:
# $KT_KAFKA_HOME, by default ~/.cache/kt/kafka-<version>, and Spark's Kafka connector
# (interop/spark-kafka/pom.xml) into its spark-kafka/ directory. Maven's local repository
# makes a second run fast and offline; nothing lands in the repository.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$here/pom.xml")"
dest="${KT_KAFKA_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/kt/kafka-$version}"
mvn -q -B -f "$here/pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$dest/libs" -DoverWriteIfNewer=true
echo "$version" > "$dest/VERSION"
echo "Apache Kafka $version: $(ls "$dest/libs" | wc -l) jars in $dest/libs"

# Apache Kafka 4 (KRaft only, interop/kafka4/pom.xml): the oracle of the APIs and tools
# Kafka 4 added, in a directory of its own (kt.reference_kafka.kafka_home(KAFKA4_VERSION)).
version4="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$here/kafka4/pom.xml")"
dest4="${XDG_CACHE_HOME:-$HOME/.cache}/kt/kafka-$version4"
mvn -q -B -f "$here/kafka4/pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$dest4/libs" -DoverWriteIfNewer=true \
    -DexcludeArtifactIds=kafka-streams,rocksdbjni
echo "$version4" > "$dest4/VERSION"
echo "Apache Kafka $version4: $(ls "$dest4/libs" | wc -l) jars in $dest4/libs"
# Kafka Streams 4 and RocksDB, for streams applications run beside libs/ (its classpath
# then names both): Kafka's broker does not load them.
mvn -q -B -f "$here/kafka4/pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$dest4/streams" -DoverWriteIfNewer=true \
    -DincludeArtifactIds=kafka-streams,rocksdbjni
echo "Kafka Streams $version4: $(ls "$dest4/streams")"

# The connector, and of its dependencies only those that pyspark's jars do not hold.
spark_version="$(sed -n 's:.*<spark.kafka.version>\(.*\)</spark.kafka.version>.*:\1:p' \
    "$here/spark-kafka/pom.xml")"
rm -rf "$dest/spark-kafka"
mvn -q -B -f "$here/spark-kafka/pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$dest/spark-kafka" \
    -DincludeArtifactIds=spark-sql-kafka-0-10_2.13,spark-token-provider-kafka-0-10_2.13,kafka-clients,commons-pool2
echo "$spark_version" > "$dest/spark-kafka/VERSION"
echo "Spark's Kafka connector $spark_version: $(ls "$dest/spark-kafka"/*.jar | wc -l) jars in $dest/spark-kafka"

# The Prometheus JMX exporter's Java agent, for the metrics oracle.
rm -rf "$dest/jmx-exporter"
mvn -q -B -f "$here/jmx-exporter/pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$dest/jmx-exporter"
echo "JMX exporter: $(ls "$dest/jmx-exporter")"
