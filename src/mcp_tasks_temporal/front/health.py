"""`/healthz` and `/readyz` for load balancers and orchestrators.

`/healthz` says the process serves HTTP (restart it when this fails);
`/readyz` says it can do its job: Temporal answers and the namespace exists
(take it out of rotation while this fails, but do not restart it: a Temporal
outage is not cured by restarting the fronts).
"""

from __future__ import annotations

import logging
from datetime import timedelta

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

logger = logging.getLogger(__name__)


async def temporal_unready_reason(client: Client, *, timeout_s: float = 2.0) -> str | None:
    """Why this process cannot serve tasks now, or `None` when it can."""
    try:
        await client.workflow_service.describe_namespace(
            DescribeNamespaceRequest(namespace=client.namespace),
            # A probe must answer within its own deadline, not wait out the client's retries.
            retry=False,
            timeout=timedelta(seconds=timeout_s),
        )
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return "namespace not found"
        logger.warning("readiness: Temporal call failed: %s", err.status.name if err.status else "?")
        return "Temporal unreachable"
    return None


def health_routes(client: Client) -> list[Route]:
    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> JSONResponse:
        reason = await temporal_unready_reason(client)
        if reason is not None:
            return JSONResponse({"status": "unready", "reason": reason}, status_code=503)
        return JSONResponse({"status": "ready", "namespace": client.namespace})

    return [Route("/healthz", healthz, methods=["GET"]), Route("/readyz", readyz, methods=["GET"])]
