"""The `mcp-tasks-temporal` command: `dev`, `serve`, `worker` and `codec-server`."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import tempfile
from collections.abc import Generator, Sequence
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import uvicorn
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from pydantic import AnyHttpUrl
from temporalio.client import Client

from mcp_tasks_temporal.app import DEMO_APP, default_task_queue, load_app, tasks_extension, use_request_state_keys
from mcp_tasks_temporal.auth import StaticTokenVerifier, load_tokens
from mcp_tasks_temporal.closed_tasks import DEFAULT_MAX_ENTRIES, ClosedTaskCache
from mcp_tasks_temporal.codec import add_codec_options, codec_from_args, new_key
from mcp_tasks_temporal.codec_server import DEFAULT_UI_ORIGINS, codec_app
from mcp_tasks_temporal.connection import (
    ConnectionOptions,
    TemporalConnectionError,
    add_connection_options,
    connect,
)
from mcp_tasks_temporal.contract import DEFAULT_NAMESPACE, ActivityPolicy
from mcp_tasks_temporal.dev_worker import PARENT_PID_ENV, DevWorker, dev_worker, exit_error, stop_with_parent
from mcp_tasks_temporal.embedded import EmbeddedTemporal, embedded_temporal, state_dir_lock
from mcp_tasks_temporal.gateway import TemporalTaskGateway
from mcp_tasks_temporal.health import health_routes
from mcp_tasks_temporal.http_errors import JsonRpcHttpErrors
from mcp_tasks_temporal.http_front import BearerAuth, front_app
from mcp_tasks_temporal.metrics import FrontMetrics, RequestMetrics, install_metrics, metrics_runtime
from mcp_tasks_temporal.payload_limits import PayloadLimits, namespace_blob_limit
from mcp_tasks_temporal.payload_storage import add_storage_options, open_storage, storage_from_args
from mcp_tasks_temporal.ports import PortInUseError, check_ports
from mcp_tasks_temporal.protocol_versions import AdvertiseServedVersions, run_stdio
from mcp_tasks_temporal.search_attributes import check_namespace
from mcp_tasks_temporal.tracing import client_interceptors, setup_tracing, shutdown_tracing

logger = logging.getLogger("mcp_tasks_temporal")

_DEV_TEMPORAL_HOST = "127.0.0.1"

SERVER_EXIT_STATUSES = """exit status:
  0  stopped by Ctrl-C or SIGTERM
  2  did not start, or stopped on an error, with one line saying why: bad arguments, a bad --app,
     a port or state directory already in use (dev), Temporal unreachable, the embedded Temporal
     server exited (dev)"""


def _ttl(value: str) -> int | None:
    if value.lower() in ("none", "null", "unlimited"):
        return None
    ms = int(value)
    if ms <= 0:
        raise argparse.ArgumentTypeError("a TTL is a positive number of milliseconds, or 'none'")
    return ms


def _add_app_options(parser: argparse.ArgumentParser, *, default_app: str | None) -> None:
    parser.add_argument(
        "--app",
        default=os.environ.get("MCP_TASKS_APP", default_app),
        required=default_app is None and "MCP_TASKS_APP" not in os.environ,
        help="the MCPServer to serve, as MODULE:ATTR"
        + (f" (default: the built-in demo, {default_app})" if default_app else ""),
    )
    parser.add_argument(
        "--task-queue",
        default=os.environ.get("MCP_TASKS_TASK_QUEUE") or None,
        help="Temporal task queue of the app's tasks (default: mcp-tasks/<the MCPServer's name>; "
        "front servers and workers of one app must use the same)",
    )
    parser.add_argument(
        "--agent-model",
        default=None,
        metavar="NAME",
        help="model of the app's sub-agents, served by the OpenAI-compatible endpoint at OPENAI_BASE_URL "
        "(env MCP_TASKS_AGENT_MODEL; needs the agent extra)",
    )


def _add_front_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default=os.environ.get("MCP_TASKS_HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("MCP_TASKS_PORT", "8000")))
    parser.add_argument(
        "--ttl-ms",
        type=_ttl,
        default=argparse.SUPPRESS,
        metavar="MS|none",
        help="default task TTL for tools that set none (default: 1 day)",
    )
    parser.add_argument("--poll-interval-ms", type=int, default=None, help="suggested client poll interval")
    parser.add_argument(
        "--closed-task-cache",
        type=int,
        default=int(os.environ.get("MCP_TASKS_CLOSED_TASK_CACHE", str(DEFAULT_MAX_ENTRIES))),
        metavar="ENTRIES",
        help="closed tasks this front serves from memory, without a Temporal call (0 disables)",
    )
    parser.add_argument(
        "--request-state-key",
        action="append",
        default=_env_list("MCP_TASKS_REQUEST_STATE_KEYS"),
        metavar="SECRET",
        help="shared key sealing MRTR requestState across front servers (repeat to rotate; first seals)",
    )
    parser.add_argument(
        "--max-body-bytes",
        type=int,
        default=int(os.environ.get("MCP_TASKS_MAX_BODY_BYTES", str(1024 * 1024))),
        metavar="BYTES",
        help="largest request body accepted, HTTP 413 beyond ($MCP_TASKS_MAX_BODY_BYTES, default 1 MiB); "
        "arguments over Temporal's 2 MiB payload limit also need --payload-storage",
    )
    parser.add_argument(
        "--tokens",
        type=Path,
        default=os.environ.get("MCP_TASKS_TOKENS") or None,
        metavar="FILE",
        help="require bearer tokens from FILE ('TOKEN PRINCIPAL' per line); tasks bind to the principal",
    )
    _add_jwt_options(parser)
    # Activity policy is recorded with each task when it is created, so it is the front's to choose.
    parser.add_argument(
        "--heartbeat-timeout",
        type=float,
        default=None,
        help="seconds without a heartbeat before a tool attempt counts as lost (30)",
    )
    parser.add_argument(
        "--max-attempts", type=int, default=None, help="attempts of a tool run lost to a crash or timeout (3)"
    )
    parser.add_argument("--tool-timeout", type=float, default=None, help="seconds one tool attempt may run (6 h)")


def _env_list(name: str) -> list[str]:
    """A comma-separated environment variable as a list, empty items dropped."""
    return [item for item in os.environ.get(name, "").split(",") if item]


def _add_jwt_options(parser: argparse.ArgumentParser) -> None:
    jwt = parser.add_argument_group("JWT bearer tokens (instead of --tokens)")
    jwt.add_argument(
        "--jwt-jwks",
        default=os.environ.get("MCP_TASKS_JWT_JWKS") or None,
        metavar="FILE|URL",
        help="verify bearer JWTs against this JWKS (a file, re-read when it changes, or the identity provider's URL)",
    )
    jwt.add_argument("--jwt-issuer", default=os.environ.get("MCP_TASKS_JWT_ISSUER"), help="required `iss`")
    jwt.add_argument("--jwt-audience", default=os.environ.get("MCP_TASKS_JWT_AUDIENCE"), help="required `aud`")
    jwt.add_argument(
        "--jwt-principal-claim",
        default=os.environ.get("MCP_TASKS_JWT_PRINCIPAL_CLAIM", "sub"),
        metavar="CLAIM",
        help="claim naming the principal tasks bind to (default: sub)",
    )
    jwt.add_argument(
        "--jwt-scope",
        action="append",
        default=_env_list("MCP_TASKS_JWT_SCOPES"),
        metavar="SCOPE",
        help="scope every token must carry (repeatable; HTTP 403 without it)",
    )
    jwt.add_argument(
        "--public-url",
        default=os.environ.get("MCP_TASKS_PUBLIC_URL") or None,
        metavar="URL",
        help="this server's MCP endpoint as clients reach it; with JWTs, publishes RFC 9728 metadata naming the issuer",
    )


def _add_observability_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--otel",
        action="store_true",
        default=os.environ.get("MCP_TASKS_OTEL", "").lower() in ("1", "true"),
        help="export OpenTelemetry traces (also on when the standard OTEL_EXPORTER_OTLP_* variables are set)",
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=int(os.environ.get("MCP_TASKS_METRICS_PORT", "0")) or None,
        metavar="PORT",
        help="serve Prometheus metrics (Temporal SDK and this process's) at http://HOST:PORT/metrics",
    )
    parser.add_argument(
        "--metrics-host",
        default=os.environ.get("MCP_TASKS_METRICS_HOST", "127.0.0.1"),
        help="address the metrics endpoint binds (0.0.0.0 in a container)",
    )


def _add_worker_options(parser: argparse.ArgumentParser, *, graceful_shutdown_s: float) -> None:
    parser.add_argument("--max-concurrent-tools", type=int, default=100, help="tool executions a worker runs at once")
    parser.add_argument(
        "--max-cached-workflows", type=int, default=1000, help="task workflows kept in memory, about 150 KB each"
    )
    parser.add_argument(
        "--graceful-shutdown",
        type=float,
        default=graceful_shutdown_s,
        metavar="SECONDS",
        help="how long running tools may finish on stop; the rest are retried by the next worker",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcp-tasks-temporal",
        description=__doc__,
        epilog="`mcp-tasks-temporal COMMAND --help` shows each command's options and exit statuses.",
    )
    parser.add_argument("--log-level", default=os.environ.get("MCP_TASKS_LOG_LEVEL", "WARNING"))
    commands = parser.add_subparsers(dest="command", required=True)

    dev = commands.add_parser(
        "dev",
        help="embedded Temporal dev server + worker + HTTP front, in one command",
        epilog=SERVER_EXIT_STATUSES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_app_options(dev, default_app=DEMO_APP)
    _add_front_options(dev)
    # Ctrl-C in a terminal should not hang on a long tool: its round is retried on the next start.
    _add_worker_options(dev, graceful_shutdown_s=3)
    dev.add_argument("--namespace", default=DEFAULT_NAMESPACE, help="namespace of the embedded Temporal")
    add_codec_options(dev)
    add_storage_options(dev, default_kind="local")
    dev.add_argument(
        "--state-dir", type=Path, default=Path(".mcp-tasks-temporal"), help="where the Temporal database lives"
    )
    dev.add_argument("--temporal-port", type=int, default=7233)
    dev.add_argument("--ui-port", type=int, default=8233, help="Temporal Web UI port (0 disables the UI)")
    dev.add_argument(
        "--in-process-worker",
        action="store_true",
        help="run the tools in dev's own process (a debugger's breakpoints in a tool then stop there) instead of "
        "a worker process beside it, which lets the front answer faster; implied by --metrics-port, so the one "
        "endpoint has the worker's metrics too",
    )
    _add_observability_options(dev)

    serve = commands.add_parser(
        "serve",
        help="the MCP front server only, against a Temporal cluster",
        epilog=SERVER_EXIT_STATUSES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_app_options(serve, default_app=None)
    _add_front_options(serve)
    add_connection_options(serve)
    add_codec_options(serve)
    add_storage_options(serve)
    serve.add_argument("--transport", choices=("http", "stdio"), default="http")
    _add_observability_options(serve)
    serve.add_argument(
        "--temporal-ui",
        default=os.environ.get("TEMPORAL_UI_ADDRESS") or None,
        metavar="URL",
        help="Temporal Web UI address; tasks/get then links each task's page in its _meta",
    )

    worker = commands.add_parser(
        "worker",
        help="a Temporal worker that runs the app's task tools",
        epilog=SERVER_EXIT_STATUSES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_app_options(worker, default_app=None)
    _add_worker_options(worker, graceful_shutdown_s=30)
    add_connection_options(worker)
    add_codec_options(worker)
    add_storage_options(worker)
    _add_observability_options(worker)

    codec_server = commands.add_parser(
        "codec-server", help="decrypt payloads for the Temporal Web UI and CLI (their remote codec endpoint)"
    )
    add_codec_options(codec_server)
    codec_server.add_argument("--host", default=os.environ.get("MCP_TASKS_CODEC_HOST", "127.0.0.1"))
    codec_server.add_argument("--port", type=int, default=int(os.environ.get("MCP_TASKS_CODEC_PORT", "8081")))
    codec_server.add_argument(
        "--ui-origin",
        action="append",
        default=_env_list("MCP_TASKS_CODEC_UI_ORIGINS"),
        metavar="URL",
        help=f"origin of a Temporal Web UI allowed to call it, e.g. https://cloud.temporal.io "
        f"(repeatable; default {', '.join(DEFAULT_UI_ORIGINS)})",
    )
    codec_server.add_argument(
        "--tokens",
        type=Path,
        default=os.environ.get("MCP_TASKS_CODEC_TOKENS") or None,
        metavar="FILE",
        help="require a bearer token from FILE ('TOKEN PRINCIPAL' per line) on every call",
    )
    codec_key = commands.add_parser("codec-key", help="print a new random AES-256-GCM key for --codec-key-file")

    dev.set_defaults(run=_dev)
    serve.set_defaults(run=_serve)
    worker.set_defaults(run=_worker)
    codec_server.set_defaults(run=_codec_server)
    codec_key.set_defaults(run=_codec_key)
    from mcp_tasks_temporal.client._cli import add_commands

    add_commands(commands)
    from mcp_tasks_temporal.operator_cli import add_operator_commands

    add_operator_commands(commands)
    return parser


def _configure(app: MCPServer[Any], args: argparse.Namespace) -> None:
    extension = tasks_extension(app)
    if not args.task_queue:
        args.task_queue = default_task_queue(app)
    if getattr(args, "agent_model", None):
        try:
            from mcp_tasks_temporal.agent import configure_model
        except ImportError:
            raise ValueError('--agent-model needs the agent extra: pip install "mcp-tasks-temporal[agent]"') from None
        configure_model(args.agent_model)
    if getattr(args, "request_state_key", None):
        use_request_state_keys(app, args.request_state_key)
    if "ttl_ms" in vars(args):
        extension.default_ttl_ms = args.ttl_ms
    if getattr(args, "poll_interval_ms", None):
        extension.default_poll_interval_ms = args.poll_interval_ms
    policy = extension.default_activity
    overrides: dict[str, Any] = {}
    if getattr(args, "heartbeat_timeout", None):
        overrides["heartbeat_timeout_s"] = args.heartbeat_timeout
    if getattr(args, "max_attempts", None):
        overrides["maximum_attempts"] = args.max_attempts
    if getattr(args, "tool_timeout", None):
        overrides["start_to_close_timeout_s"] = args.tool_timeout
    if overrides:
        extension.default_activity = ActivityPolicy(**{**vars(policy), **overrides})


class _HttpServer(uvicorn.Server):
    @contextmanager
    def capture_signals(self) -> Generator[None]:
        # uvicorn re-raises Ctrl-C/SIGTERM once it has stopped, as a KeyboardInterrupt that would cut
        # short what follows: the worker's graceful shutdown and then the embedded Temporal server's.
        with super().capture_signals():
            yield
            self._captured_signals.clear()  # pyright: ignore[reportPrivateUsage]


def _bearer_auth(args: argparse.Namespace) -> BearerAuth | None:
    if args.tokens is not None and args.jwt_jwks is not None:
        raise ValueError("--tokens and --jwt-jwks are alternatives: choose one")
    if args.tokens is not None:
        return BearerAuth(StaticTokenVerifier(load_tokens(args.tokens)))
    if args.jwt_jwks is None:
        return None
    from mcp_tasks_temporal.jwt_auth import JwtSettings, JwtVerifier

    if not args.jwt_issuer or not args.jwt_audience:
        raise ValueError("--jwt-jwks needs --jwt-issuer and --jwt-audience")
    settings = JwtSettings(
        jwks=args.jwt_jwks,
        issuer=args.jwt_issuer,
        audience=args.jwt_audience,
        principal_claim=args.jwt_principal_claim,
    )
    metadata = None
    if args.public_url:
        # The JWT issuer does exist (it signs the tokens), so it is the authorization server clients are sent to.
        metadata = AuthSettings(
            issuer_url=AnyHttpUrl(args.jwt_issuer),
            resource_server_url=AnyHttpUrl(args.public_url),
            required_scopes=list(args.jwt_scope) or None,
            validate_token_resource=False,  # the verifier checks `aud` itself
        )
    return BearerAuth(JwtVerifier(settings), required_scopes=tuple(args.jwt_scope), settings=metadata)


def _http_server(app: MCPServer[Any], args: argparse.Namespace, client: Client, auth: BearerAuth | None) -> _HttpServer:
    # Stateless for the handshake revisions too: an older client's requests may reach any front server.
    mcp_app = app.streamable_http_app(host=args.host, max_request_body_size=args.max_body_bytes, stateless_http=True)
    http_app = front_app(mcp_app, auth=auth, extra_routes=health_routes(client))
    wrapped = JsonRpcHttpErrors(http_app, max_body_bytes=args.max_body_bytes)
    config = uvicorn.Config(wrapped, host=args.host, port=args.port, log_level="warning", lifespan="on")
    return _HttpServer(config)


async def _serve_http(app: MCPServer[Any], args: argparse.Namespace, client: Client, auth: BearerAuth | None) -> None:
    await _http_server(app, args, client, auth).serve()


def _start_telemetry(args: argparse.Namespace, role: str) -> None:
    """Tracing and metrics, before the first Temporal client: both are fixed when a client connects."""
    setup_tracing(f"mcp-tasks-temporal-{role}", flag=args.otel)
    if args.metrics_port:
        install_metrics(f"{args.metrics_host}:{args.metrics_port}")


async def _connect(
    stack: AsyncExitStack,
    args: argparse.Namespace,
    app: MCPServer[Any],
    options: ConnectionOptions | None = None,
    *,
    require_namespace: bool = True,
) -> Client:
    """The command's Temporal client: its connection flags over the environment, or `options` alone.

    Payload storage (its cloud client) stays open as long as `stack`.
    """
    storage = await stack.enter_async_context(open_storage(storage_from_args(args)))
    return await connect(
        options or ConnectionOptions.from_args(args),
        codec=codec_from_args(args),
        external_storage=storage,
        interceptors=client_interceptors(),
        runtime=metrics_runtime(),
        plugins=tasks_extension(app).plugins,
        use_environment=options is None,  # TEMPORAL_* describe the user's cluster, not a server started here
        require_namespace=require_namespace,
    )


async def _payload_limits(client: Client, args: argparse.Namespace) -> PayloadLimits:
    return PayloadLimits(blob_limit=await namespace_blob_limit(client), storage=storage_from_args(args))


async def _attach_front(
    app: MCPServer[Any], client: Client, args: argparse.Namespace, *, search_attributes: bool, web_ui: str | None
) -> None:
    metrics = FrontMetrics.from_runtime()
    # First, so it also counts what later middleware answers by itself (subscriptions/listen).
    app.middleware.insert(0, RequestMetrics(metrics))
    app.middleware.append(AdvertiseServedVersions())
    closed_tasks = ClosedTaskCache(max_entries=args.closed_task_cache)
    gateway = TemporalTaskGateway(
        client,
        task_queue=args.task_queue,
        metrics=metrics,
        closed_tasks=closed_tasks,
        search_attributes=search_attributes,
        web_ui=web_ui,
        payload_limits=await _payload_limits(client, args),
    )
    tasks_extension(app).attach(gateway, app)


async def _run_worker(stack: AsyncExitStack, client: Client, app: MCPServer[Any], args: argparse.Namespace) -> None:
    from mcp_tasks_temporal.activities import ToolActivities
    from mcp_tasks_temporal.worker import build_worker, workflow_tool_workers

    state = await stack.enter_async_context(ToolActivities.lifespan(app))
    worker = build_worker(
        client,
        app,
        state,
        task_queue=args.task_queue,
        max_concurrent_activities=args.max_concurrent_tools,
        max_cached_workflows=args.max_cached_workflows,
        graceful_shutdown_s=args.graceful_shutdown,
        payload_limits=await _payload_limits(client, args),
    )
    await stack.enter_async_context(worker)
    for own_queue in workflow_tool_workers(
        client,
        app,
        task_queue=args.task_queue,
        max_concurrent_activities=args.max_concurrent_tools,
        graceful_shutdown_s=args.graceful_shutdown,
    ):
        await stack.enter_async_context(own_queue)


async def _dev(args: argparse.Namespace) -> None:
    # Every port is checked before anything starts or prints: a second `dev` must not come up
    # half-way, and above all must not find the first one's Temporal on "its" port and use it.
    wanted = [
        (args.host, args.port, "--port", "MCP endpoint"),
        (_DEV_TEMPORAL_HOST, args.temporal_port, "--temporal-port", "Temporal"),
    ]
    if args.ui_port:
        wanted.append((_DEV_TEMPORAL_HOST, args.ui_port, "--ui-port", "Temporal UI"))
    if getattr(args, "metrics_port", None):
        wanted.append((args.metrics_host, args.metrics_port, "--metrics-port", "metrics"))
    check_ports(wanted)
    app = load_app(args.app)
    _configure(app, args)
    _start_telemetry(args, "dev")
    auth = _bearer_auth(args)  # a bad key set or token file stops the start, before anything runs
    async with AsyncExitStack() as stack:
        if args.state_dir is not None:
            stack.enter_context(state_dir_lock(args.state_dir))
        if args.payload_storage == "local" and args.payload_dir is None:
            # Large results just work on one machine: beside the Temporal database, or for the run only.
            args.payload_dir = (
                args.state_dir / "payloads"
                if args.state_dir is not None
                else Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mcp-tasks-payloads-")))
            )
        temporal = await stack.enter_async_context(
            embedded_temporal(
                state_dir=args.state_dir,
                host=_DEV_TEMPORAL_HOST,
                port=args.temporal_port,
                ui_port=args.ui_port or None,
                namespace=args.namespace,
            )
        )
        client = await _connect(
            stack, args, app, ConnectionOptions(address=temporal.address, namespace=temporal.namespace)
        )
        indexed = await check_namespace(client, address=temporal.address, namespace=temporal.namespace, role="dev")
        await _attach_front(app, client, args, search_attributes=indexed, web_ui=temporal.ui_url)
        worker: DevWorker | None = None
        if args.in_process_worker or args.metrics_port:
            await _run_worker(stack, client, app, args)
        else:
            worker = await stack.enter_async_context(
                dev_worker(
                    args,
                    address=temporal.address,
                    namespace=temporal.namespace,
                    log_path=temporal.log_path.with_name("worker.log"),
                )
            )
        server = _http_server(app, args, client, auth)
        temporal_exit: int | None = None
        worker_exit: int | None = None
        bind_failed = False
        async with anyio.create_task_group() as group:

            async def serve() -> None:
                nonlocal bind_failed
                try:
                    await server.serve()
                except SystemExit:  # uvicorn's answer to a port taken since the check
                    bind_failed = True
                group.cancel_scope.cancel()

            async def watch_temporal() -> None:
                nonlocal temporal_exit
                temporal_exit = await temporal.exited()
                server.should_exit = True

            async def watch_worker(worker: DevWorker) -> None:
                nonlocal worker_exit
                worker_exit = await worker.exited()
                server.should_exit = True

            group.start_soon(serve)
            group.start_soon(watch_temporal)
            if worker is not None:
                group.start_soon(watch_worker, worker)
            # The banner says the endpoint is up, so it waits until it is.
            while not server.started and not bind_failed and temporal_exit is None and worker_exit is None:
                await anyio.sleep(0.02)
            if server.started:
                _dev_banner(args, temporal, worker)
        if bind_failed:
            raise PortInUseError(args.host, args.port, "--port", "MCP endpoint")
        if temporal_exit is not None:
            raise RuntimeError(
                f"the embedded Temporal server exited with code {temporal_exit}; see {temporal.log_path}"
            )
        if worker is not None and worker_exit is not None:
            raise exit_error(worker_exit, worker)
        print("mcp-tasks-temporal dev: stopping", flush=True)


def _dev_banner(args: argparse.Namespace, temporal: EmbeddedTemporal, worker: DevWorker | None) -> None:
    print(f"mcp-tasks-temporal dev: serving {args.app}", flush=True)
    print(f"  MCP endpoint  http://{args.host}:{args.port}/mcp", flush=True)
    print(
        f"  Temporal      {temporal.address} (namespace {temporal.namespace}, task queue {args.task_queue})",
        flush=True,
    )
    if temporal.ui_url:
        print(f"  Temporal UI   {temporal.ui_url}", flush=True)
    print(f"  State         {temporal.db_path}", flush=True)
    if args.payload_storage == "local":
        print(f"  Payloads      {args.payload_dir} (over {args.payload_threshold} bytes)", flush=True)
    if worker is not None:
        print(f"  Worker        pid {worker.pid}, log {worker.log_path}", flush=True)
    print("Press Ctrl-C to stop.", flush=True)


async def _serve(args: argparse.Namespace) -> None:
    app = load_app(args.app)
    _configure(app, args)
    _start_telemetry(args, "front")
    auth = _bearer_auth(args) if args.transport == "http" else None
    async with AsyncExitStack() as stack:
        # A front may come up before its namespace exists; `/readyz` reports that until it does.
        client = await _connect(stack, args, app, require_namespace=False)
        address = client.service_client.config.target_host
        indexed = await check_namespace(client, address=address, namespace=client.namespace, role="serve")
        await _attach_front(app, client, args, search_attributes=indexed, web_ui=args.temporal_ui)
        if args.transport == "stdio":
            await run_stdio(app)
        else:
            print(
                f"mcp-tasks-temporal serve: http://{args.host}:{args.port}/mcp -> {_where(client)}",
                file=sys.stderr,
                flush=True,
            )
            await _serve_http(app, args, client, auth)


async def _worker(args: argparse.Namespace) -> None:
    app = load_app(args.app)
    _configure(app, args)
    _start_telemetry(args, "worker")
    async with AsyncExitStack() as stack:
        client = await _connect(stack, args, app)
        # The worker upserts nothing the run did not start with; this only tells the operator what is missing.
        address = client.service_client.config.target_host
        await check_namespace(client, address=address, namespace=client.namespace, role="worker")
        await _run_worker(stack, client, app, args)
        print(
            f"mcp-tasks-temporal worker: {args.app} on {_where(client)}, task queue {args.task_queue}",
            file=sys.stderr,
            flush=True,
        )
        await _until_stopped()


def _where(client: Client) -> str:
    return f"{client.service_client.config.target_host} (namespace {client.namespace})"


async def _codec_server(args: argparse.Namespace) -> None:
    codec = codec_from_args(args)
    if codec is None:
        raise ValueError("codec-server needs the codec: --codec-key-file, $MCP_TASKS_CODEC_KEYS or --codec")
    verifier = StaticTokenVerifier(load_tokens(args.tokens)) if args.tokens is not None else None
    # Who decrypted what is the audit trail operators want from this server, whatever the global level.
    logging.getLogger("mcp_tasks_temporal.codec_server").setLevel(logging.INFO)
    http_app = codec_app(codec, ui_origins=args.ui_origin or DEFAULT_UI_ORIGINS, verifier=verifier)
    config = uvicorn.Config(http_app, host=args.host, port=args.port, log_level="warning")
    print(f"mcp-tasks-temporal codec-server: http://{args.host}:{args.port}", file=sys.stderr, flush=True)
    await uvicorn.Server(config).serve()


async def _codec_key(args: argparse.Namespace) -> None:
    print(new_key())


async def _until_stopped() -> None:
    """Wait for Ctrl-C or SIGTERM (a container stop), so shutdown runs the graceful path.

    `dev`'s worker also stops when `dev` is gone, even if it was killed too hard to stop it.
    """
    parent = os.environ.get(PARENT_PID_ENV)
    async with anyio.create_task_group() as group:

        async def on_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    break
            group.cancel_scope.cancel()

        async def on_orphaned(parent_pid: int) -> None:
            await stop_with_parent(parent_pid)
            group.cancel_scope.cancel()

        group.start_soon(on_signal)
        if parent is not None and parent.isdigit():
            group.start_soon(on_orphaned, int(parent))


def _single_cause(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one exception at the bottom of nested single-member groups, or the group itself."""
    cause: BaseException = group
    while True:
        members = cast("tuple[BaseException, ...] | None", getattr(cause, "exceptions", None))
        if members is None or len(members) != 1:
            return cause
        cause = members[0]


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the console script."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    try:
        try:
            anyio.run(args.run, args)
        except BaseExceptionGroup as group:
            # A task group (the push hub's, the app's lifespan) wraps what stopped the command; one
            # cause is reported as itself, on one line, like any other.
            raise _single_cause(group) from None
    except KeyboardInterrupt:
        # Ctrl-C is how `dev`, `serve` and `worker` stop; for a client command it cut the wait short.
        if getattr(args, "client_command", False):
            raise SystemExit(130) from None
    except TemporalConnectionError as err:
        print(f"mcp-tasks-temporal: {err}", file=sys.stderr, flush=True)
        sys.stdout.flush()
        # A failed connect can leave a thread of Temporal's Rust core calling back into Python while the
        # interpreter finalizes, which aborts the process (SIGABRT) instead of exiting with our status.
        os._exit(6)
    except (ValueError, RuntimeError) as err:
        print(f"mcp-tasks-temporal: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    finally:
        shutdown_tracing()
    if getattr(args, "one_shot_temporal", False):
        # A short-lived process that used a Temporal client can abort in interpreter teardown
        # (the SDK's Rust threads take the GIL while it is finalizing, temporalio/sdk-python#300):
        # everything is done and flushed, so skip the teardown.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(getattr(args, "exit_status", 0))
