"""DescribeClientQuotas and AlterClientQuotas, as ZooKeeper-mode Kafka answers them (the
store's side in kt.broker.admin.client_quotas)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kt.errors import KafkaError
from kt.metadata.jvm_order import java_hash_order
from kt.protocol import messages as m

if TYPE_CHECKING:
    from kt.broker.broker_services import BrokerServices


async def describe_client_quotas(
    broker: BrokerServices, header: Any, request: Any, ctx: Any
) -> Any:
    R = m.DescribeClientQuotasResponse
    try:
        found = await broker.store.call(
            broker.client_quotas.describe, request.components, request.strict
        )
    except KafkaError as e:
        return R(error_code=e.code, error_message=str(e), entries=None)
    entries = [
        R.EntryData(
            entity=[R.EntityData(entity_type=t, entity_name=n) for t, n in entity],
            values=[R.ValueData(key=k, value=values[k]) for k in java_hash_order(values)],
        )
        for entity, values in found.items()
    ]
    return R(entries=entries)


async def alter_client_quotas(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    R = m.AlterClientQuotasResponse
    results = []
    for entry in request.entries:
        entity = [(e.entity_type, e.entity_name) for e in entry.entity]
        try:
            await broker.store.call(
                broker.client_quotas.alter, entity, entry.ops, request.validate_only
            )
            error = KafkaError("NONE")
        except KafkaError as e:
            error = e
        results.append(
            R.EntryData(
                error_code=error.code,
                error_message=None if error.code == 0 else str(error),
                entity=[R.EntityData(entity_type=t, entity_name=n) for t, n in entity],
            )
        )
    return R(entries=results)
