"""The MCP endpoint of an app as an ASGI app: run it as it is, or mount it in a service of your own.

    endpoint = mcp_endpoint(app, client, settings=FrontSettings(...), auth=BearerAuth(verifier))

Everything a front needs to be correct is inside: the extension attached to Temporal
(`attachment`), stateless Streamable HTTP for both protocol eras (the handshake
revisions' capabilities echoed in their session ID, their question replies taken by
any front), requests ended with their credential, JSON-RPC errors where the SDK
answers plain HTTP, and the push watchers, which its lifespan runs. The lifespan
must run around its requests: mounted, the host's lifespan enters it
(`endpoint.router.lifespan_context(endpoint)`), as Starlette does not run a mounted
app's own. Nothing here is process-wide: two endpoints of two apps in one process
share nothing.

The user's `MCPServer` is built before its front is configured, and it takes its
verifier only at construction. Rather than reach into it, its Starlette app is
wrapped with the SDK's own public bearer middleware, which is what
`MCPServer(auth=..., token_verifier=...)` installs. The probes stay outside the
authentication: an orchestrator has no token.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import TokenVerifier
from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.routing import BaseRoute, Mount
from starlette.types import ASGIApp

from mcp_tasks_temporal.front.app_lookup import default_task_queue, tasks_extension
from mcp_tasks_temporal.front.gateway import TemporalTaskGateway
from mcp_tasks_temporal.front.http.credential_life import EndWithCredential
from mcp_tasks_temporal.front.http.health import health_routes
from mcp_tasks_temporal.front.http.http_errors import JsonRpcHttpErrors
from mcp_tasks_temporal.front.legacy.handshake_requests import HandshakeEraRequests
from mcp_tasks_temporal.front.settings import FrontSettings

if TYPE_CHECKING:
    from temporalio.client import Client

__all__ = ["BearerAuth", "FrontSettings", "mcp_endpoint"]

logger = logging.getLogger(__name__)

UNKEYED_WITH_AUTH = (
    "bearer authentication needs keyed owner keys: unkeyed, whoever sees workflow IDs can test guessed principals"
    " against them; give FrontSettings(owner_keying=OwnerKeying.of(secret)) the secret every front, worker and"
    " operator command of the deployment shares ($MCP_TASKS_OWNER_SECRET for the commands; make one with"
    " `python3 -c 'import secrets; print(secrets.token_urlsafe(32))'`), or pass allow_unkeyed_owner_keys=True"
    " to accept unkeyed ones"
)


@dataclass(frozen=True)
class BearerAuth:
    """A verifier, and optionally where clients learn who issues its tokens.

    `settings` (resource server URL plus the issuer of its tokens) is given only
    when that issuer is a real authorization server, typically the JWT issuer;
    it then publishes RFC 9728 protected-resource metadata naming it. Static
    tokens have no issuer to name, so they publish none.
    """

    verifier: TokenVerifier
    required_scopes: Sequence[str] = ()
    settings: AuthSettings | None = None


def mcp_endpoint(
    app: MCPServer[Any],
    client: Client,
    *,
    settings: FrontSettings | None = None,
    auth: BearerAuth | None = None,
    path: str = "/mcp",
    host: str | None = None,
    transport_security: TransportSecuritySettings | None = None,
    probes: bool = True,
    allow_unkeyed_owner_keys: bool = False,
) -> Starlette:
    """The ASGI app of `app`'s MCP endpoint, its tasks kept in Temporal through `client`.

    Attaches the app's `TasksExtension` (once: an app has one front per process) and
    returns a Starlette app whose lifespan runs the MCP session manager and the push
    watchers. Serve it with uvicorn, or mount it: `Mount("/mcp", app=endpoint)` with
    `path="/"` answers at `/mcp/`, and the host's lifespan enters the endpoint's.

    Args:
        app: The MCP app, built with `MCPServer(extensions=[TasksExtension()])`.
        client: A connected Temporal client; its namespace holds the tasks, its data converter
            (codec, payload storage) must be the workers' own.
        settings: How the front serves (task queue, push mode, body limit, shared keys, owner keying, ...).
        auth: Bearer authentication in front of the MCP endpoint; tasks bind to the principal it reports.
        path: Where the MCP endpoint answers within the returned app.
        host: The address the endpoint is bound to, as `serve --host` gives it: a loopback one makes the SDK
            refuse other Host and Origin headers (DNS rebinding protection), as for any `MCPServer`. `None`,
            for a service that answers under its own names: no such check unless `transport_security` asks.
        transport_security: The SDK's Host and Origin checks, as `MCPServer.streamable_http_app` takes them.
        probes: Serve `/healthz` (the process answers) and `/readyz` (Temporal and the namespace answer, and a
            worker polls each task queue the front starts tasks on).
        allow_unkeyed_owner_keys: Serve `auth` with unkeyed owner keys (`settings.owner_keying` without a
            secret) anyway, with a warning: whoever sees workflow IDs can then test guessed principals
            against them. For a deployment whose tasks were all created that way; see `OwnerKeying`.

    Raises:
        ValueError: `app` has no `TasksExtension`, a workflow tool's name is taken, or `auth` is given with
            unkeyed owner keys and without `allow_unkeyed_owner_keys`.
        RuntimeError: The extension is already attached.
    """
    settings = settings or FrontSettings()
    if auth is not None and settings.owner_keying.secret is None:
        if not allow_unkeyed_owner_keys:
            raise ValueError(UNKEYED_WITH_AUTH)
        logger.warning(
            "bearer authentication with unkeyed owner keys (allow_unkeyed_owner_keys=True): whoever sees workflow"
            " IDs can test guessed principals against them; key them with a secret every process of the deployment"
            " shares (docs/operations.md, 'Owner keys')"
        )
    extension = tasks_extension(app)
    gateway = TemporalTaskGateway.for_front(client, settings, task_queue=settings.task_queue or default_task_queue(app))
    front = extension.attach(gateway, app, settings)
    if auth is not None:
        # Outermost, so it ends long polls and push streams whichever layer serves them.
        app.middleware.insert(0, EndWithCredential(auth.verifier))
    limit = settings.max_body_bytes
    # Stateless for the handshake revisions too: an older client's requests may reach any front server.
    mcp_app = app.streamable_http_app(
        streamable_http_path=path,
        host=host or "",  # the SDK derives its checks from a loopback host only
        transport_security=transport_security,
        max_request_body_size=limit,
        stateless_http=True,
    )
    # Replies to the questions a front asked on a request's stream may reach any front, and the handshake
    # revisions' capabilities reach every front through the session ID the client echoes.
    mcp_app.add_middleware(HandshakeEraRequests, gateway=gateway, sessions=front.session_keys, max_body_bytes=limit)
    routes: list[BaseRoute] = [*health_routes(gateway.unready_reason, client.namespace)] if probes else []
    routes.append(Mount("", app=protected_app(mcp_app, auth) if auth is not None else mcp_app))

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncGenerator[None]:
        await gateway.read_namespace_limits()
        # The MCP app's lifespan runs its session manager; a mounted app's lifespan would not run by itself.
        async with extension.running(), mcp_app.router.lifespan_context(mcp_app):
            yield

    return Starlette(routes=routes, lifespan=lifespan, middleware=[Middleware(JsonRpcHttpErrors, max_body_bytes=limit)])


def protected_app(mcp_app: ASGIApp, auth: BearerAuth) -> Starlette:
    """`mcp_app` behind bearer `auth`, with the protected-resource metadata that names its issuer, if any."""
    routes: list[BaseRoute] = []
    metadata_url = None
    settings = auth.settings
    if settings is not None and settings.resource_server_url is not None:
        metadata_url = build_resource_metadata_url(settings.resource_server_url)
        routes += create_protected_resource_routes(
            resource_url=settings.resource_server_url,
            authorization_servers=[settings.issuer_url],
            scopes_supported=list(auth.required_scopes) or None,
        )
    protected = AuthenticationMiddleware(
        AuthContextMiddleware(RequireAuthMiddleware(mcp_app, list(auth.required_scopes), metadata_url)),
        backend=BearerAuthBackend(auth.verifier),
    )
    return Starlette(routes=[*routes, Mount("", app=protected)])
