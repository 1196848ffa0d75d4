"""Request handlers, one module per family of Kafka APIs (Kafka's KafkaApis, split).

Every handler is `async def handler(broker, header, request, ctx) -> response | None`,
`broker` the broker's services (kt.broker.broker_services): it reads the decoded
request, calls those services, and builds the response message. None means "no
response" (Produce with acks=0).
"""
