"""DescribeAcls, CreateAcls, DeleteAcls (Kafka's AclApis): SECURITY_DISABLED without an
authorizer; CLUSTER_AUTHORIZATION_FAILED without DESCRIBE (describe) or ALTER (create,
delete) on the cluster; bindings checked as Kafka checks them before any is stored."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kt.errors import CLUSTER_AUTHORIZATION_FAILED, INVALID_REQUEST, SECURITY_DISABLED, KafkaError
from kt.protocol import messages as m
from kt.security import acls as a

if TYPE_CHECKING:
    from kt.broker.broker_services import BrokerServices

NO_AUTHORIZER = "No Authorizer is configured on the broker"


def _denied(broker: BrokerServices, ctx: Any, operation: int) -> tuple[int, str | None] | None:
    if broker.authorizer is None:
        return SECURITY_DISABLED, NO_AUTHORIZER
    if not broker.authorizer.authorize_cluster(ctx, operation):
        return CLUSTER_AUTHORIZATION_FAILED, KafkaError(CLUSTER_AUTHORIZATION_FAILED).args[0]
    return None


async def describe_acls(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    R = m.DescribeAclsResponse
    denied = _denied(broker, ctx, a.DESCRIBE)
    if denied is not None:
        return R(error_code=denied[0], error_message=denied[1], resources=[])
    binding_filter = a.AclBindingFilter(
        request.resource_type_filter, request.resource_name_filter, request.pattern_type_filter,
        request.principal_filter, request.host_filter, request.operation,
        request.permission_type,
    )  # fmt: skip
    by_pattern: dict[a.ResourcePattern, list[a.AccessControlEntry]] = {}
    for pattern, entry in broker.authorizer.bindings(binding_filter):
        by_pattern.setdefault(pattern, []).append(entry)
    return R(error_code=0, error_message=None, resources=[
        R.DescribeAclsResource(
            resource_type=p.resource_type, resource_name=p.name, pattern_type=p.pattern_type,
            acls=[R.AclDescription(principal=e.principal, host=e.host, operation=e.operation,
                                   permission_type=e.permission) for e in entries],
        ) for p, entries in by_pattern.items()
    ])  # fmt: skip


def _invalid(c: Any) -> str | None:
    """Why a creation cannot be stored, or None (AclApis' and AclEntry's checks)."""
    if c.resource_type not in a.TYPE_NAMES:
        return "Invalid resource type"
    if c.resource_pattern_type not in (a.LITERAL, a.PREFIXED):
        return "Invalid pattern type"
    if c.operation not in a.OPERATION_NAMES:
        return "Invalid operation"
    if c.permission_type not in a.PERMISSION_NAMES:
        return "Invalid permission type"
    kind, colon, name = c.principal.partition(":")
    if not colon or not kind or not name:
        return f"Invalid principal {c.principal}"
    if c.resource_type == a.CLUSTER and c.resource_name != a.CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {a.CLUSTER_NAME}"
    if not c.resource_name:
        return "Invalid empty resource name specified"
    return None


async def create_acls(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    R = m.CreateAclsResponse
    denied = _denied(broker, ctx, a.ALTER)
    if denied is not None:
        return R(results=[R.AclCreationResult(error_code=denied[0], error_message=denied[1])
                          for _ in request.creations])  # fmt: skip
    results = []
    bindings = []
    for c in request.creations:
        why = _invalid(c)
        results.append(R.AclCreationResult(error_code=INVALID_REQUEST if why else 0,
                                           error_message=why))  # fmt: skip
        if why is None:
            bindings.append((
                a.ResourcePattern(c.resource_type, c.resource_name, c.resource_pattern_type),
                a.AccessControlEntry(c.principal, c.host, c.operation, c.permission_type),
            ))  # fmt: skip
    await broker.authorizer.create(bindings)
    return R(results=results)


async def delete_acls(broker: BrokerServices, header: Any, request: Any, ctx: Any) -> Any:
    R = m.DeleteAclsResponse
    denied = _denied(broker, ctx, a.ALTER)
    if denied is not None:
        return R(filter_results=[R.DeleteAclsFilterResult(error_code=denied[0],
                                                          error_message=denied[1])
                                 for _ in request.filters])  # fmt: skip
    results = []
    for f in request.filters:
        binding_filter = a.AclBindingFilter(
            f.resource_type_filter, f.resource_name_filter, f.pattern_type_filter,
            f.principal_filter, f.host_filter, f.operation, f.permission_type,
        )  # fmt: skip
        removed = await broker.authorizer.delete(binding_filter)
        results.append(R.DeleteAclsFilterResult(error_code=0, error_message=None, matching_acls=[
            R.DeleteAclsMatchingAcl(
                error_code=0, error_message=None, resource_type=p.resource_type,
                resource_name=p.name, pattern_type=p.pattern_type, principal=e.principal,
                host=e.host, operation=e.operation, permission_type=e.permission,
            ) for p, e in removed
        ]))  # fmt: skip
    return R(filter_results=results)
