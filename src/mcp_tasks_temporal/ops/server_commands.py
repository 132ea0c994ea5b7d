"""What `dev`, `serve`, `worker` and `codec-server` run (`server_cli` declares them), imported when one runs.

Each takes its process's validated settings (`ops.settings.processes`).
"""

from __future__ import annotations

import logging
import os
import shlex
import signal
import sys
import tempfile
import threading
from collections.abc import Generator
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
import uvicorn
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from pydantic import AnyHttpUrl
from temporalio.client import Client
from temporalio.service import RPCError

from mcp_tasks_temporal.front.app_lookup import default_task_queue, tasks_extension
from mcp_tasks_temporal.front.http.auth import StaticTokenVerifier
from mcp_tasks_temporal.front.http.endpoint import BearerAuth, mcp_endpoint
from mcp_tasks_temporal.front.settings import DEFAULT_CLOSED_TASK_CACHE, FrontSettings
from mcp_tasks_temporal.front.stdio import serve_stdio
from mcp_tasks_temporal.ops.app_loading import load_app
from mcp_tasks_temporal.ops.codec_server import codec_app
from mcp_tasks_temporal.ops.dev.embedded_temporal import EmbeddedTemporal, embedded_temporal
from mcp_tasks_temporal.ops.dev.nexus_routes import EndpointRoute
from mcp_tasks_temporal.ops.dev.owner_secret import use_dev_owner_secret
from mcp_tasks_temporal.ops.dev.ports import PortInUseError, check_ports
from mcp_tasks_temporal.ops.dev.state_dir import StateDirLock, state_dir_lock
from mcp_tasks_temporal.ops.dev.worker_process import (
    DevWorker,
    DevWorkerError,
    SupervisedWorker,
    dev_worker,
    stop_with_parent,
)
from mcp_tasks_temporal.ops.settings import environment
from mcp_tasks_temporal.ops.settings.fields import DEFAULT_UI_ORIGINS
from mcp_tasks_temporal.ops.settings.processes import (
    ALLOW_UNKEYED_OWNER_KEYS_ENV,
    CodecServerSettings,
    DevSettings,
    ServeSettings,
    WorkerSettings,
)
from mcp_tasks_temporal.sdk_compat import forget_captured_signals
from mcp_tasks_temporal.temporal.app_plugins import app_client_plugins
from mcp_tasks_temporal.temporal.connection import (
    ConnectionOptions,
    connect,
)
from mcp_tasks_temporal.temporal.contract import ActivityPolicy
from mcp_tasks_temporal.temporal.deployment import Deployment, pinned_on_other_builds, set_current
from mcp_tasks_temporal.temporal.fairness_options import parse_weight
from mcp_tasks_temporal.temporal.ids import OWNER_SECRET_ENV
from mcp_tasks_temporal.temporal.metrics import install_metrics, metrics_runtime
from mcp_tasks_temporal.temporal.payload_limits import PayloadLimits, namespace_blob_limit
from mcp_tasks_temporal.temporal.payload_storage import open_storage
from mcp_tasks_temporal.temporal.queue_fronts import fronts_watched
from mcp_tasks_temporal.temporal.search_attributes import check_namespace, require_on
from mcp_tasks_temporal.temporal.shared_settings import SharedSettings, announce_settings, check_shared_settings
from mcp_tasks_temporal.temporal.tracing import setup_tracing, tracing_plugins

logger = logging.getLogger("mcp_tasks_temporal")

_DEV_TEMPORAL_HOST = "127.0.0.1"

ServerSettings = DevSettings | ServeSettings | WorkerSettings
FrontProcessSettings = DevSettings | ServeSettings
WorkerProcessSettings = DevSettings | WorkerSettings
_S = TypeVar("_S", DevSettings, ServeSettings, WorkerSettings)


def for_app(args: _S, app: MCPServer[Any]) -> _S:
    """`args` with the app's own task queue where none was given (`mcp-tasks/<the MCPServer's name>`)."""
    return args if args.task_queue else args.model_copy(update={"task_queue": default_task_queue(app)})


def configure(app: MCPServer[Any], args: ServerSettings) -> None:
    extension = tasks_extension(app)
    if args.agent_model:
        from mcp_tasks_temporal.contrib import MissingExtra

        try:
            from mcp_tasks_temporal.contrib.pydantic_ai import AgentModel, configure_model
        except MissingExtra as missing:
            raise ValueError(f"--agent-model needs the {missing.extra} extra: {missing.install}") from None
        configure_model(AgentModel(args.agent_model, args.openai_base_url, args.openai_key()))
    args.owner_keying()  # a secret too short stops the start, not a request
    if isinstance(args, WorkerSettings):
        return
    if "ttl_ms" in args.model_fields_set:
        extension.default_ttl_ms = args.ttl_ms
    if args.poll_interval_ms:
        extension.default_poll_interval_ms = args.poll_interval_ms
    if args.nexus_reply_endpoint:
        extension.nexus_reply_endpoint = args.nexus_reply_endpoint
    policy = extension.default_activity
    overrides: dict[str, Any] = {}
    if args.heartbeat_timeout:
        overrides["heartbeat_timeout_s"] = args.heartbeat_timeout
    if args.max_attempts:
        overrides["maximum_attempts"] = args.max_attempts
    if args.tool_timeout:
        overrides["start_to_close_timeout_s"] = args.tool_timeout
    if overrides:
        extension.default_activity = ActivityPolicy(**{**vars(policy), **overrides})


def front_settings(args: FrontProcessSettings, *, search_attributes: bool, web_ui: str | None) -> FrontSettings:
    """The front's library settings, from the process's (validated once, when the command started)."""
    closed = args.closed_task_cache
    return FrontSettings(
        task_queue=args.task_queue,
        push=args.push,
        push_give_up_s=args.push_give_up_s,
        max_body_bytes=args.max_body_bytes,
        closed_task_cache=DEFAULT_CLOSED_TASK_CACHE if closed is None else closed,
        require_mcp_name=args.require_mcp_name,
        request_state_keys=tuple(args.request_state_key),
        owner_keying=args.owner_keying(),
        fairness_keys=args.fairness_keys,
        fairness_weights=dict(parse_weight(entry) for entry in args.fairness_weight),
        search_attributes=search_attributes,
        web_ui=web_ui,
        payload_storage=args.storage(),
        max_inline_budget_ms=args.max_inline_budget_ms,
    )


class _HttpServer(uvicorn.Server):
    @contextmanager
    def capture_signals(self) -> Generator[None]:
        with super().capture_signals():
            yield
            forget_captured_signals(self)


def bearer_auth(args: FrontProcessSettings) -> BearerAuth | None:
    """The front's bearer auth, if asked for; a bad key set or token file stops the start, on one line.

    Raises:
        ValueError: `serve` with authentication and without the owner secret: whoever sees workflow IDs
            could tell whose tasks they are. `dev` goes on (a state directory from before it drew a
            secret keeps its tasks' unkeyed keys), as `serve` does with `$MCP_TASKS_ALLOW_UNKEYED_OWNER_KEYS`,
            and `mcp_endpoint` says so in a warning.
    """
    auth = _verified_bearer(args)
    if auth is None or args.owner_keying().secret is not None or not isinstance(args, ServeSettings):
        return auth
    if not args.allow_unkeyed_owner_keys:
        raise ValueError(owner_secret_required("--tokens" if args.tokens is not None else "--jwt-jwks"))
    return auth


def owner_secret_required(flag: str) -> str:
    """Why `serve` with `flag` refuses to start without the owner secret, and how to make one."""
    return (
        f"{flag} needs ${OWNER_SECRET_ENV}: without it owner keys are unkeyed hashes, and whoever sees workflow IDs"
        " can test guessed principals against them; create one with"
        " `python3 -c 'import secrets; print(secrets.token_urlsafe(32))'` and give every front, worker, admin and"
        " audit of the deployment the same value (tasks created without it: docs/operations.md, 'Owner keys';"
        f" ${ALLOW_UNKEYED_OWNER_KEYS_ENV}=1 serves them unkeyed anyway)"
    )


def _verified_bearer(args: FrontProcessSettings) -> BearerAuth | None:
    if args.tokens is not None and args.jwt_jwks is not None:
        raise ValueError("--tokens and --jwt-jwks are alternatives: choose one")
    if args.tokens is not None:
        return BearerAuth(StaticTokenVerifier.from_file(args.tokens))
    if args.jwt_jwks is None:
        return None
    from mcp_tasks_temporal.front.http.jwt_auth import JwtSettings, JwtVerifier

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


def _http_server(
    app: MCPServer[Any], args: FrontProcessSettings, client: Client, settings: FrontSettings, auth: BearerAuth | None
) -> _HttpServer:
    """`app`'s MCP endpoint (`mcp_endpoint`, which attaches it) under uvicorn, its lifespan run around its requests."""
    # `serve` refused unkeyed owner keys with auth already, unless told (`bearer_auth`); `dev` keeps a state
    # directory's. Either way the endpoint's warning says what it means.
    endpoint = mcp_endpoint(
        app,
        client,
        settings=settings,
        auth=auth,
        host=args.host,
        allow_unkeyed_owner_keys=isinstance(args, DevSettings) or args.allow_unkeyed_owner_keys,
    )
    return _HttpServer(uvicorn.Config(endpoint, host=args.host, port=args.port, log_level="warning", lifespan="on"))


def _start_telemetry(args: ServerSettings, role: str) -> None:
    """Tracing and metrics, before the first Temporal client: both are fixed when a client connects."""
    setup_tracing(f"mcp-tasks-temporal-{role}", environment(), flag=args.otel)
    if args.metrics_port:
        install_metrics(
            f"{args.metrics_host}:{args.metrics_port}", service=f"mcp-tasks-temporal-{role}", environ=environment()
        )


async def _connect(
    stack: AsyncExitStack,
    args: ServerSettings,
    app: MCPServer[Any],
    options: ConnectionOptions | None = None,
    *,
    require_namespace: bool = True,
) -> Client:
    """The command's Temporal client: its connection flags over the environment, or `options` alone.

    Payload storage (its cloud client) stays open as long as `stack`.
    """
    storage = await stack.enter_async_context(open_storage(args.storage()))
    return await connect(
        options or _connection_options(args),
        codec=args.payload_codec(),
        external_storage=storage,
        runtime=metrics_runtime(),
        # Only their client side: the workers get them after `McpTasksPlugin`, which adds the app's workflows.
        plugins=[*app_client_plugins(tasks_extension(app)), *tracing_plugins()],
        environ=environment(),
        use_environment=options is None,  # TEMPORAL_* describe the user's cluster, not a server started here
        require_namespace=require_namespace,
    )


def _connection_options(args: ServerSettings) -> ConnectionOptions:
    """The connection flags of `serve` and `worker`; `dev` connects to the server it started."""
    if isinstance(args, DevSettings):
        return ConnectionOptions()
    return args.connection_options()


async def _agree_on_settings(
    stack: AsyncExitStack, client: Client, args: ServerSettings, role: str, *, owner: bool = False
) -> None:
    """Refuse to start with settings a running process of the task queue does not share, then hold ours out to
    those that start later, for as long as `stack` (temporal/shared_settings.py).

    `owner`: `dev`, whose Temporal is its own, compares with nobody; the processes it starts compare with it.
    A front (`serve`) compares its owner keying too, and holds its settings out while it serves: its
    endpoint does (`mcp_endpoint`, `serve_stdio`), as any front of the library's does.
    """
    front = isinstance(args, ServeSettings)
    deployment = None if front else (args.deployment_name or "")
    owner_keys = args.owner_keying().fingerprint() if front else None
    mine = SharedSettings.of(role, args.storage(), args.payload_codec(), deployment, owner_keys=owner_keys, front=front)
    if not owner:
        await check_shared_settings(client, args.task_queue, mine)
    if not front:
        await stack.enter_async_context(announce_settings(client, args.task_queue, mine))


async def _payload_limits(client: Client, args: ServerSettings) -> PayloadLimits:
    return PayloadLimits(blob_limit=await namespace_blob_limit(client), storage=args.storage())


async def _run_worker(
    stack: AsyncExitStack, client: Client, app: MCPServer[Any], args: WorkerProcessSettings, *, make_current: bool
) -> None:
    from mcp_tasks_temporal.temporal.worker import build_worker, workflow_tool_workers

    deployment = Deployment.from_args(args.deployment_name, args.build_id)
    tasks = tasks_extension(app)
    worker = build_worker(
        client,
        tasks,
        app,
        task_queue=args.task_queue,
        max_concurrent_activities=args.max_concurrent_tools,
        max_cached_workflows=args.max_cached_workflows,
        graceful_shutdown_s=args.graceful_shutdown,
        payload_limits=await _payload_limits(client, args),
        deployment=deployment,
    )
    await stack.enter_async_context(worker)
    for own_queue in workflow_tool_workers(
        client,
        tasks,
        app,
        task_queue=args.task_queue,
        max_concurrent_activities=args.max_concurrent_tools,
        graceful_shutdown_s=args.graceful_shutdown,
        deployment=deployment,
    ):
        await stack.enter_async_context(own_queue)
    if deployment is not None and make_current:
        # Before the ready line: whoever waits for it may start tasks that must run on this build.
        await set_current(client, deployment)


async def _pinned_elsewhere(client: Client, args: WorkerProcessSettings) -> str | None:
    """The other builds of this worker's deployment that still run pinned tasks, with their counts.

    Those tasks go on only while a worker of their own build polls, which a
    restart as the new build (`dev` on one machine) silently ends.
    """
    deployment = Deployment.from_args(args.deployment_name, args.build_id)
    if deployment is None:
        return None
    try:
        builds = await pinned_on_other_builds(client, deployment)
    except RPCError as err:  # a hint only: never a reason not to start
        logger.debug("could not count pinned tasks on other builds: %s", err.message)
        return None
    if not builds:
        return None
    counted = ", ".join(f"{build} ({count})" for build, count in builds.most_common())
    example = builds.most_common(1)[0][0].split(":", 1)[-1]
    command = " ".join(shlex.quote(part) for part in worker_command_for(client, args, build_id=example))
    return f"pinned tasks still run on {counted}; each goes on only while a worker of its build runs ({command})"


def worker_command_for(client: Client, args: WorkerProcessSettings, *, build_id: str) -> list[str]:
    """A worker of another build beside this process: every setting the task queue's processes share.

    A worker started without them is refused at start (temporal/shared_settings.py); beside
    `dev`, whose payload storage is on by default, that is the storage directory above all.
    """
    command = ["mcp-tasks-temporal", "worker", "--app", args.app, "--task-queue", args.task_queue]
    command += ["--address", client.service_client.config.target_host, "--namespace", client.namespace]
    if args.codec:
        command += ["--codec", args.codec]
    elif args.codec_key_file is not None:
        command += ["--codec-key-file", str(args.codec_key_file.resolve())]
    elif args.codec_keys is not None:
        command += ["--codec-key-file", "FILE"]  # the keys came from the environment: not printed
    command += args.storage().worker_args()
    return [*command, "--deployment-name", args.deployment_name or "", "--build-id", build_id]


async def dev(args: DevSettings) -> None:
    async with AsyncExitStack() as stack:
        # The state directory first: a Temporal server a killed `dev` left running there still holds
        # its ports, and is stopped before they are checked.
        lock = stack.enter_context(state_dir_lock(args.state_dir)) if args.state_dir is not None else None
        try:
            await _run_dev(stack, lock, use_dev_owner_secret(args))
        except anyio.get_cancelled_exc_class():
            # Ctrl-C before the banner: say so at once, since stopping what already started takes seconds.
            print("mcp-tasks-temporal dev: stopping", flush=True)
            raise


async def _run_dev(stack: AsyncExitStack, lock: StateDirLock | None, args: DevSettings) -> None:
    # Every port is checked before anything starts or prints: a second `dev` must not come up
    # half-way, and above all must not find the first one's Temporal on "its" port and use it.
    wanted = [
        (args.host, args.port, "--port", "MCP endpoint"),
        (_DEV_TEMPORAL_HOST, args.temporal_port, "--temporal-port", "Temporal"),
    ]
    if args.ui_port:
        wanted.append((_DEV_TEMPORAL_HOST, args.ui_port, "--ui-port", "Temporal UI"))
    if args.metrics_port:
        wanted.append((args.metrics_host, args.metrics_port, "--metrics-port", "metrics"))
    check_ports(wanted)
    app = load_app(args.app)
    args = for_app(args, app)
    configure(app, args)
    _start_telemetry(args, "dev")
    auth = bearer_auth(args)  # a bad key set or token file stops the start, before anything runs
    Deployment.from_args(args.deployment_name, args.build_id)  # both or neither, checked before anything starts
    if args.payload_storage == "local" and args.payload_dir is None:
        # Large results just work on one machine: beside the Temporal database, or for the run only.
        payload_dir = (
            args.state_dir / "payloads"
            if args.state_dir is not None
            else Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mcp-tasks-payloads-")))
        )
        args = args.model_copy(update={"payload_dir": payload_dir})
    temporal = await stack.enter_async_context(
        embedded_temporal(
            state_dir=args.state_dir,
            lock=lock,
            host=_DEV_TEMPORAL_HOST,
            port=args.temporal_port,
            ui_port=args.ui_port or None,
            namespace=args.namespace,
            extra_namespaces=args.nexus_namespace,
        )
    )
    await _nexus_endpoints(temporal, args)
    client = await _connect(stack, args, app, ConnectionOptions(address=temporal.address, namespace=temporal.namespace))
    indexed = await check_namespace(client, address=temporal.address, namespace=temporal.namespace, role="dev")
    await _agree_on_settings(stack, client, args, "dev", owner=True)
    settings = front_settings(args, search_attributes=indexed, web_ui=temporal.ui_url)
    server = _http_server(app, args, client, settings, auth)
    worker: SupervisedWorker | None = None
    if args.in_process_worker or args.metrics_port:
        await _run_worker(stack, client, app, args, make_current=True)
    else:
        worker = await stack.enter_async_context(
            dev_worker(
                args,
                address=temporal.address,
                namespace=temporal.namespace,
                log_path=temporal.log_path.with_name("worker.log"),
            )
        )
    temporal_exit: int | None = None
    worker_error: DevWorkerError | None = None
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

        async def watch_worker(worker: SupervisedWorker) -> None:
            nonlocal worker_error
            worker_error = await worker.keep_running(lambda line: print(f"mcp-tasks-temporal dev: {line}", flush=True))
            server.should_exit = True

        group.start_soon(serve)
        group.start_soon(watch_temporal)
        # The console says once when a task's workflow code keeps failing, as tasks/get does.
        group.start_soon(tasks_extension(app).gateway.watch_failing)
        if worker is not None:
            group.start_soon(watch_worker, worker)
        # The banner says the endpoint is up, so it waits until it is.
        while not server.started and not bind_failed and temporal_exit is None and worker_error is None:
            await anyio.sleep(0.02)
        if server.started:
            pinned = await _pinned_elsewhere(client, args)
            _dev_banner(args, temporal, worker.current if worker is not None else None, pinned)
    if temporal_exit is not None and worker is not None:
        await worker.stop(temporal_gone=True)
    if bind_failed:
        raise PortInUseError(args.host, args.port, "--port", "MCP endpoint")
    if temporal_exit is not None:
        raise RuntimeError(f"the embedded Temporal server exited with code {temporal_exit}; see {temporal.log_path}")
    if worker_error is not None:
        raise worker_error
    print("mcp-tasks-temporal dev: stopping", flush=True)


async def _nexus_endpoints(temporal: EmbeddedTemporal, args: DevSettings) -> None:
    """The endpoints `dev` was asked for; the reply endpoint routes to this app's own namespace and queue."""
    routes = list(args.nexus_endpoint)
    if args.nexus_reply_endpoint:
        routes.append(EndpointRoute(args.nexus_reply_endpoint, temporal.namespace, args.task_queue))
    if not routes:
        return
    from mcp_tasks_temporal.ops.dev.nexus_endpoints import ensure_endpoint

    client = await Client.connect(temporal.address, namespace=temporal.namespace)
    for route in routes:
        await ensure_endpoint(client, route)


def _dev_banner(args: DevSettings, temporal: EmbeddedTemporal, worker: DevWorker | None, pinned: str | None) -> None:
    print(f"mcp-tasks-temporal dev: serving {args.app}", flush=True)
    print(f"  MCP endpoint  http://{args.host}:{args.port}/mcp", flush=True)
    print(
        f"  Temporal      {temporal.address} (namespace {temporal.namespace}, task queue {args.task_queue})",
        flush=True,
    )
    if temporal.ui_url:
        print(f"  Temporal UI   {temporal.ui_url}", flush=True)
    print(f"  State         {temporal.db_path}", flush=True)
    for route in args.nexus_endpoint:
        print(f"  Nexus         {route.name} -> {route.namespace}/{route.task_queue}", flush=True)
    if args.nexus_reply_endpoint:
        print(f"  Nexus reply   {args.nexus_reply_endpoint} -> {temporal.namespace}/{args.task_queue}", flush=True)
    if args.payload_storage == "local":
        print(f"  Payloads      {args.payload_dir} (over {args.payload_threshold} bytes)", flush=True)
    if worker is not None:
        print(f"  Worker        pid {worker.pid}, log {worker.log_path}", flush=True)
    if args.deployment_name:
        print(f"  Build         {args.deployment_name}:{args.build_id} (current)", flush=True)
    if pinned:
        print(f"  Other builds  {pinned}", flush=True)
    print("Press Ctrl-C to stop.", flush=True)


async def serve(args: ServeSettings) -> None:
    app = load_app(args.app)
    args = for_app(args, app)
    configure(app, args)
    _start_telemetry(args, "front")
    auth = bearer_auth(args) if args.transport == "http" else None
    async with AsyncExitStack() as stack:
        client, settings = await open_front(stack, app, args)
        if args.transport == "stdio":
            await serve_stdio(app, client, settings)
        else:
            server = _http_server(app, args, client, settings, auth)
            print(
                f"mcp-tasks-temporal serve: http://{args.host}:{args.port}/mcp -> {_where(client)}",
                file=sys.stderr,
                flush=True,
            )
            await server.serve()


async def open_front(stack: AsyncExitStack, app: MCPServer[Any], args: ServeSettings) -> tuple[Client, FrontSettings]:
    """What `serve` does before it serves: the front's client and its settings, checked against Temporal.

    The client's connection and payload storage stay open as long as `stack`.
    """
    # A front may come up before its namespace exists; `/readyz` reports that until it does.
    client = await _connect(stack, args, app, require_namespace=False)
    address = client.service_client.config.target_host
    indexed = await check_namespace(client, address=address, namespace=client.namespace, role="serve")
    await _agree_on_settings(stack, client, args, "serve")
    return client, front_settings(args, search_attributes=indexed, web_ui=args.temporal_ui)


async def open_worker(stack: AsyncExitStack, app: MCPServer[Any], args: WorkerSettings) -> Client:
    """What `worker` runs: `app`'s (configured) workers, polling until `stack` closes. Returns their client."""
    client = await _connect(stack, args, app)
    # Task workflows write `McpStatus`: a worker refuses a namespace without it, naming the command that adds it.
    address = client.service_client.config.target_host
    await require_on(client, address=address, namespace=client.namespace)
    await _agree_on_settings(stack, client, args, "worker")
    await _run_worker(stack, client, app, args, make_current=args.make_current)
    # A worker's log says while no front uses its queue (the fronts' logs say the converse).
    await stack.enter_async_context(fronts_watched(client, args.task_queue))
    return client


async def worker(args: WorkerSettings) -> None:
    if Deployment.from_args(args.deployment_name, args.build_id) is None and args.make_current:
        raise ValueError("--make-current needs --deployment-name and --build-id")
    app = load_app(args.app)
    args = for_app(args, app)
    configure(app, args)
    _start_telemetry(args, "worker")
    async with AsyncExitStack() as stack:
        client = await open_worker(stack, app, args)
        pinned = await _pinned_elsewhere(client, args) if args.make_current else None
        if pinned:
            logger.warning("%s", pinned)
        build = f", build {args.deployment_name}:{args.build_id}" if args.deployment_name else ""
        print(
            f"mcp-tasks-temporal worker: {args.app} on {_where(client)}, task queue {args.task_queue}{build}",
            file=sys.stderr,
            flush=True,
        )
        await _until_stopped(args.stop_with_parent)


def _where(client: Client) -> str:
    return f"{client.service_client.config.target_host} (namespace {client.namespace})"


async def codec_server(args: CodecServerSettings) -> None:
    codec = args.payload_codec()
    if codec is None:
        raise ValueError("codec-server needs the codec: --codec-key-file, $MCP_TASKS_CODEC_KEYS or --codec")
    verifier = StaticTokenVerifier.from_file(args.tokens) if args.tokens is not None else None
    # Who decrypted what is the audit trail operators want from this server, whatever the global level.
    logging.getLogger("mcp_tasks_temporal.ops.codec_server").setLevel(logging.INFO)
    http_app = codec_app(codec, ui_origins=args.ui_origin or DEFAULT_UI_ORIGINS, verifier=verifier)
    config = uvicorn.Config(http_app, host=args.host, port=args.port, log_level="warning")
    print(f"mcp-tasks-temporal codec-server: http://{args.host}:{args.port}", file=sys.stderr, flush=True)
    await uvicorn.Server(config).serve()


ORPHANED_EXIT_S = 3.0
"""How long `dev`'s worker may take to stop once `dev` is gone, however it went."""


def _exit_without_drain() -> None:
    """`dev` is gone, and its Temporal with it: end within `ORPHANED_EXIT_S`, whatever still runs.

    A graceful drain would wait `--graceful-shutdown` for running tools whose heartbeats and results
    can no longer reach a Temporal server; their attempts are retried when `dev` starts again.
    """
    print(
        "mcp-tasks-temporal worker: dev is gone; stopping without waiting for running tools",
        file=sys.stderr,
        flush=True,
    )

    def exit_now() -> None:
        sys.stderr.flush()
        os._exit(0)

    timer = threading.Timer(ORPHANED_EXIT_S, exit_now)
    timer.daemon = True
    timer.start()


async def _until_stopped(parent_pid: int | None) -> None:
    """Wait for Ctrl-C or SIGTERM (a container stop), so shutdown runs the graceful path.

    `dev`'s worker also stops when `dev` is gone, even if it was killed too hard to stop it.
    """
    async with anyio.create_task_group() as group:

        async def on_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    break
            # The kernel's parent-death signal is a SIGTERM too: by now this process has a new parent.
            if parent_pid is not None and os.getppid() != parent_pid:
                _exit_without_drain()
            group.cancel_scope.cancel()

        async def on_orphaned(parent_pid: int) -> None:
            await stop_with_parent(parent_pid)
            _exit_without_drain()
            group.cancel_scope.cancel()

        group.start_soon(on_signal)
        if parent_pid is not None:
            group.start_soon(on_orphaned, parent_pid)
