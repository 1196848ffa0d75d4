#!/usr/bin/env bash
# Copy Apache Kafka's jars (interop/pom.xml) into the cache that kt.reference_kafka reads:
# $KT_KAFKA_HOME, by default ~/.cache/kt/kafka-<version>. Maven's local repository makes a
# second run fast and offline; nothing lands in the repository.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$here/pom.xml")"
dest="${KT_KAFKA_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/kt/kafka-$version}"
mvn -q -B -f "$here/pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$dest/libs" -DoverWriteIfNewer=true
echo "$version" > "$dest/VERSION"
echo "Apache Kafka $version: $(ls "$dest/libs" | wc -l) jars in $dest/libs"
