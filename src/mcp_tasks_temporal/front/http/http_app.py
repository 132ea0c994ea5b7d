"""The front server's HTTP app: the MCP endpoint, bearer authentication in front of it, and the probes.

The user's `MCPServer` is built before the command line decides about
authentication, and it takes its verifier only at construction. Rather than
reach into it, its Starlette app is wrapped with the SDK's own public bearer
middleware, which is what `MCPServer(auth=..., token_verifier=...)` installs.
The probes stay outside the authentication: an orchestrator has no token.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from dataclasses import dataclass

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import TokenVerifier
from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes
from mcp.server.auth.settings import AuthSettings
from starlette.applications import Starlette
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.routing import BaseRoute, Mount
from starlette.types import ASGIApp


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


def front_app(
    mcp_app: Starlette,
    *,
    auth: BearerAuth | None,
    extra_routes: Sequence[BaseRoute] = (),
    running: Callable[[], AbstractAsyncContextManager[None]] | None = None,
) -> Starlette:
    """`mcp_app` (from `MCPServer.streamable_http_app`) behind `auth`, next to `extra_routes` that need none.

    `running` (the extension's push watchers) lives exactly as long as the server.
    """
    routes: list[BaseRoute] = list(extra_routes)
    protected: ASGIApp = mcp_app
    if auth is not None:
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
    routes.append(Mount("", app=protected))

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncGenerator[None]:
        # The MCP app's lifespan runs its session manager; a mounted app's lifespan would not run by itself.
        async with running() if running is not None else nullcontext(), mcp_app.router.lifespan_context(mcp_app):
            yield

    return Starlette(routes=routes, lifespan=lifespan)
