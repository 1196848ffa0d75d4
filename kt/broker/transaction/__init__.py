"""The transaction coordinator (Kafka's kafka.coordinator.transaction): transactional ids'
state in `__transaction_state`, the APIs that drive a transaction, and the markers that
end it in every partition it wrote."""
