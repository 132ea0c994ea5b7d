"""Nexus endpoints (and the namespaces they target) on the embedded Temporal, for `dev`, demos and tests.

An endpoint is a name the caller's workflow uses, routed by Temporal to a task
queue in a target namespace. `dev` creates the ones it is given, and keeps
those a previous start already created in its state directory.
"""

from __future__ import annotations

import anyio
from google.protobuf.duration_pb2 import Duration
from temporalio.api.nexus.v1 import EndpointSpec, EndpointTarget
from temporalio.api.operatorservice.v1 import CreateNexusEndpointRequest, ListNexusEndpointsRequest
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest, RegisterNamespaceRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from mcp_tasks_temporal.ops.dev.nexus_routes import EndpointRoute


async def ensure_namespace(client: Client, namespace: str, *, timeout_s: float = 30.0) -> None:
    """Register `namespace` unless it exists, and wait until it answers (registration is asynchronous)."""
    try:
        await client.workflow_service.register_namespace(
            RegisterNamespaceRequest(namespace=namespace, workflow_execution_retention_period=Duration(seconds=86400))
        )
    except RPCError as err:
        if err.status != RPCStatusCode.ALREADY_EXISTS:
            raise
    with anyio.fail_after(timeout_s):
        while True:
            try:
                await client.workflow_service.describe_namespace(DescribeNamespaceRequest(namespace=namespace))
                return
            except RPCError as err:
                if err.status != RPCStatusCode.NOT_FOUND:
                    raise
            await anyio.sleep(0.1)


async def ensure_endpoint(client: Client, route: EndpointRoute) -> None:
    """Create the endpoint unless one of that name exists (then it is left as it is)."""
    existing = await client.operator_service.list_nexus_endpoints(ListNexusEndpointsRequest(name=route.name))
    if existing.endpoints:
        return
    target = EndpointTarget(worker=EndpointTarget.Worker(namespace=route.namespace, task_queue=route.task_queue))
    try:
        await client.operator_service.create_nexus_endpoint(
            CreateNexusEndpointRequest(spec=EndpointSpec(name=route.name, target=target))
        )
    except RPCError as err:
        if err.status != RPCStatusCode.ALREADY_EXISTS:
            raise
