"""kt: Apache Kafka rebuilt in Python, one executable with an embedded broker."""

__version__ = "0.1.0"
