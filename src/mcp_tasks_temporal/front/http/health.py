"""`/healthz` and `/readyz` for load balancers and orchestrators.

`/healthz` says the process serves HTTP (restart it when this fails);
`/readyz` says it can do its job: Temporal answers and the namespace exists
(take it out of rotation while this fails, but do not restart it: a Temporal
outage is not cured by restarting the fronts).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


def health_routes(unready_reason: Callable[[], Awaitable[str | None]], namespace: str) -> list[Route]:
    """`unready_reason` asks Temporal through the gateway (`TemporalTaskGateway.unready_reason`) why not."""

    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> JSONResponse:
        reason = await unready_reason()
        if reason is not None:
            return JSONResponse({"status": "unready", "reason": reason}, status_code=503)
        return JSONResponse({"status": "ready", "namespace": namespace})

    return [Route("/healthz", healthz, methods=["GET"]), Route("/readyz", readyz, methods=["GET"])]
