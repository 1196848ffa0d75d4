#!/usr/bin/env bash
# Create a replicated topic on the 3-broker cluster of this directory and describe it:
# one line per partition with its Leader, Replicas and Isr.
set -euo pipefail
BOOTSTRAP=${BOOTSTRAP:-127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094}
TOPIC=${TOPIC:-replicated}
kt topics --bootstrap-server "$BOOTSTRAP" --create --if-not-exists --topic "$TOPIC" \
    --partitions 3 --replication-factor 3 --config min.insync.replicas=2
kt topics --bootstrap-server "$BOOTSTRAP" --describe --topic "$TOPIC"
