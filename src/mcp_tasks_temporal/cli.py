"""The `mcp-tasks-temporal` command: `dev`, `serve` and `worker`."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Generator, Sequence
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer
from temporalio.client import Client

from mcp_tasks_temporal.app import DEMO_APP, load_app, tasks_extension, use_request_state_keys
from mcp_tasks_temporal.auth import StaticTokenVerifier, load_tokens, require_bearer_tokens
from mcp_tasks_temporal.contract import DEFAULT_NAMESPACE, DEFAULT_TASK_QUEUE, ActivityPolicy
from mcp_tasks_temporal.embedded import embedded_temporal
from mcp_tasks_temporal.gateway import TemporalTaskGateway

logger = logging.getLogger("mcp_tasks_temporal")


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
    parser.add_argument("--namespace", default=os.environ.get("TEMPORAL_NAMESPACE", DEFAULT_NAMESPACE))
    parser.add_argument("--task-queue", default=os.environ.get("MCP_TASKS_TASK_QUEUE", DEFAULT_TASK_QUEUE))


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
        "--request-state-key",
        action="append",
        default=[k for k in os.environ.get("MCP_TASKS_REQUEST_STATE_KEYS", "").split(",") if k],
        metavar="SECRET",
        help="shared key sealing MRTR requestState across front servers (repeat to rotate; first seals)",
    )
    parser.add_argument(
        "--max-body-bytes",
        type=int,
        default=int(os.environ.get("MCP_TASKS_MAX_BODY_BYTES", str(1024 * 1024))),
        help="largest request body accepted (HTTP 413 beyond); keeps task inputs under Temporal's 2 MB payload limit",
    )
    parser.add_argument(
        "--tokens",
        type=Path,
        default=os.environ.get("MCP_TASKS_TOKENS") or None,
        metavar="FILE",
        help="require bearer tokens from FILE ('TOKEN PRINCIPAL' per line); tasks bind to the principal",
    )
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
    parser = argparse.ArgumentParser(prog="mcp-tasks-temporal", description=__doc__)
    parser.add_argument("--log-level", default=os.environ.get("MCP_TASKS_LOG_LEVEL", "WARNING"))
    commands = parser.add_subparsers(dest="command", required=True)

    dev = commands.add_parser("dev", help="embedded Temporal dev server + worker + HTTP front, in one command")
    _add_app_options(dev, default_app=DEMO_APP)
    _add_front_options(dev)
    # Ctrl-C in a terminal should not hang on a long tool: its round is retried on the next start.
    _add_worker_options(dev, graceful_shutdown_s=3)
    dev.add_argument(
        "--state-dir", type=Path, default=Path(".mcp-tasks-temporal"), help="where the Temporal database lives"
    )
    dev.add_argument("--temporal-port", type=int, default=7233)
    dev.add_argument("--ui-port", type=int, default=8233, help="Temporal Web UI port (0 disables the UI)")

    serve = commands.add_parser("serve", help="the MCP front server only, against a Temporal cluster")
    _add_app_options(serve, default_app=None)
    _add_front_options(serve)
    serve.add_argument("--temporal", default=os.environ.get("TEMPORAL_ADDRESS", "127.0.0.1:7233"), metavar="HOST:PORT")
    serve.add_argument("--transport", choices=("http", "stdio"), default="http")

    worker = commands.add_parser("worker", help="a Temporal worker that runs the app's task tools")
    _add_app_options(worker, default_app=None)
    _add_worker_options(worker, graceful_shutdown_s=30)
    worker.add_argument("--temporal", default=os.environ.get("TEMPORAL_ADDRESS", "127.0.0.1:7233"), metavar="HOST:PORT")

    dev.set_defaults(run=_dev)
    serve.set_defaults(run=_serve)
    worker.set_defaults(run=_worker)
    from mcp_tasks_temporal.client._cli import add_commands

    add_commands(commands)
    return parser


def _configure(app: MCPServer[Any], args: argparse.Namespace) -> None:
    extension = tasks_extension(app)
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


async def _serve_http(app: MCPServer[Any], args: argparse.Namespace) -> None:
    if args.tokens is not None:
        verifier = StaticTokenVerifier(load_tokens(args.tokens))
        require_bearer_tokens(app, verifier, server_url=f"http://{args.host}:{args.port}/mcp")
    http_app = app.streamable_http_app(host=args.host, max_request_body_size=args.max_body_bytes)
    config = uvicorn.Config(http_app, host=args.host, port=args.port, log_level="warning", lifespan="on")
    await _HttpServer(config).serve()


async def _run_worker(stack: AsyncExitStack, client: Client, app: MCPServer[Any], args: argparse.Namespace) -> None:
    from mcp_tasks_temporal.activities import ToolActivities
    from mcp_tasks_temporal.worker import build_worker

    state = await stack.enter_async_context(ToolActivities.lifespan(app))
    worker = build_worker(
        client,
        app,
        state,
        task_queue=args.task_queue,
        max_concurrent_activities=args.max_concurrent_tools,
        max_cached_workflows=args.max_cached_workflows,
        graceful_shutdown_s=args.graceful_shutdown,
    )
    await stack.enter_async_context(worker)


async def _dev(args: argparse.Namespace) -> None:
    app = load_app(args.app)
    _configure(app, args)
    async with AsyncExitStack() as stack:
        temporal = await stack.enter_async_context(
            embedded_temporal(
                state_dir=args.state_dir,
                port=args.temporal_port,
                ui_port=args.ui_port or None,
                namespace=args.namespace,
            )
        )
        client = await Client.connect(temporal.address, namespace=temporal.namespace)
        tasks_extension(app).attach(TemporalTaskGateway(client, task_queue=args.task_queue), app)
        await _run_worker(stack, client, app, args)
        print(f"mcp-tasks-temporal dev: serving {args.app}", flush=True)
        print(f"  MCP endpoint  http://{args.host}:{args.port}/mcp", flush=True)
        print(
            f"  Temporal      {temporal.address} (namespace {temporal.namespace}, task queue {args.task_queue})",
            flush=True,
        )
        if temporal.ui_url:
            print(f"  Temporal UI   {temporal.ui_url}", flush=True)
        print(f"  State         {temporal.db_path}", flush=True)
        print("Press Ctrl-C to stop.", flush=True)
        await _serve_http(app, args)
        print("mcp-tasks-temporal dev: stopping", flush=True)


async def _serve(args: argparse.Namespace) -> None:
    app = load_app(args.app)
    _configure(app, args)
    client = await Client.connect(args.temporal, namespace=args.namespace)
    tasks_extension(app).attach(TemporalTaskGateway(client, task_queue=args.task_queue), app)
    if args.transport == "stdio":
        await app.run_stdio_async()
    else:
        print(
            f"mcp-tasks-temporal serve: http://{args.host}:{args.port}/mcp -> {args.temporal}",
            file=sys.stderr,
            flush=True,
        )
        await _serve_http(app, args)


async def _worker(args: argparse.Namespace) -> None:
    app = load_app(args.app)
    _configure(app, args)
    client = await Client.connect(args.temporal, namespace=args.namespace)
    async with AsyncExitStack() as stack:
        await _run_worker(stack, client, app, args)
        print(
            f"mcp-tasks-temporal worker: {args.app} on {args.temporal}/{args.task_queue}", file=sys.stderr, flush=True
        )
        await _until_stopped()


async def _until_stopped() -> None:
    """Wait for Ctrl-C or SIGTERM (a container stop), so shutdown runs the graceful path."""
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            return


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the console script."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    try:
        anyio.run(args.run, args)
    except KeyboardInterrupt:
        pass
    except (ValueError, RuntimeError) as err:
        print(f"mcp-tasks-temporal: {err}", file=sys.stderr)
        raise SystemExit(2) from None
