"""The request layer (Kafka's KafkaApis): a frame decoded, authorized, handed to its handler
(kt.broker.api.handlers) with the broker's services, and the answer encoded."""
