"""Security: TLS contexts from Kafka's `ssl.*` keys (ssl_factory)."""
