"""The network layer (Kafka's SocketServer, RequestChannel): listeners, connections and their
limits, TLS and SASL on the wire, the request memory pool and the request log."""
