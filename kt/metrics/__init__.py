"""The broker's metrics: Kafka's Yammer metrics (meters, histograms, gauges) under
Kafka's MBean names, and their Prometheus exposition under the names Strimzi's JMX
exporter rules give them, served on `metrics.listeners`."""
