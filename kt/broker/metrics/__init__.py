"""The broker's own metrics (its meters, gauges and Kafka Exporter's series, and the
servers of /metrics), built on kt/metrics, which knows nothing of the broker."""
