"""Request handlers, one module per family of Kafka APIs (Kafka's KafkaApis, split).

Every handler is `async def handler(server, header, request, ctx) -> response | None`:
it reads the decoded request, calls the broker's managers, and builds the response
message. None means "no response" (Produce with acks=0).
"""
