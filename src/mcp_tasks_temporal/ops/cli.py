"""The `mcp-tasks-temporal` command.

Servers: `dev` (all in one), `serve` (the MCP front), `worker`, `codec-server`, `codec-key`.
Task client: `call`, `get`, `answer`, `cancel`, `watch`, `tasks`. Operators: `audit`, `admin`.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import cast

from mcp_tasks_temporal.client._commands import add_commands
from mcp_tasks_temporal.ops.cli_options import DEFAULT_UI_ORIGINS, add_codec_options, add_connection_options
from mcp_tasks_temporal.ops.dev.nexus_routes import EndpointRoute
from mcp_tasks_temporal.ops.fairness_options import add_fairness_options
from mcp_tasks_temporal.ops.operator_commands import add_operator_commands
from mcp_tasks_temporal.ops.payload_options import add_storage_options
from mcp_tasks_temporal.ops.settings import apply_environment
from mcp_tasks_temporal.temporal.contract import DEFAULT_NAMESPACE

DEMO_APP = "mcp_tasks_temporal.demo:app"
"""The app `dev` serves without --app (`app.DEMO_APP`, which imports the MCP SDK)."""

_SERVER_COMMANDS = frozenset({"dev", "serve", "worker"})
EXIT_TEMPORAL_UNREACHABLE = 6
"""The operator commands' status for a Temporal they cannot reach; the servers say 2, as for any failed start."""

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
        default=default_app,
        required=default_app is None,
        help="the MCPServer to serve, as MODULE:ATTR"
        + (f" (default: the built-in demo, {default_app})" if default_app else ""),
    )
    parser.add_argument(
        "--task-queue",
        default=None,
        help="Temporal task queue of the app's tasks (default: mcp-tasks/<the MCPServer's name>; "
        "front servers and workers of one app must use the same)",
    )
    parser.add_argument(
        "--agent-model",
        default=None,
        metavar="NAME",
        help="model of the app's sub-agents, served by the OpenAI-compatible endpoint at OPENAI_BASE_URL "
        "(needs the agent extra)",
    )


def _add_front_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address the MCP endpoint binds")
    parser.add_argument("--port", type=int, default=8000, help="port of the MCP endpoint")
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
        default=None,
        metavar="ENTRIES",
        help="closed tasks this front serves from memory, without a Temporal call (0 disables; default 10000)",
    )
    parser.add_argument(
        "--request-state-key",
        action="append",
        default=[],
        metavar="SECRET",
        help="shared key sealing MRTR requestState across front servers (repeat to rotate; first seals)",
    )
    parser.add_argument(
        "--max-body-bytes",
        type=int,
        default=1024 * 1024,
        metavar="BYTES",
        help="largest request body accepted, HTTP 413 beyond (default 1 MiB); "
        "arguments over Temporal's 2 MiB payload limit also need --payload-storage",
    )
    parser.add_argument(
        "--max-body-bytes-in-flight",
        type=int,
        default=None,
        metavar="BYTES",
        help="request body bytes the front takes in at once, all requests together; a request that does not fit "
        "waits, then gets HTTP 503 and -32051 (default 32 MiB)",
    )
    parser.add_argument(
        "--max-listen-task-ids",
        type=int,
        default=None,
        metavar="N",
        help="task IDs one subscriptions/listen may name, -32602 beyond (default 10000)",
    )
    parser.add_argument(
        "--max-listens-per-caller",
        type=int,
        default=None,
        metavar="N",
        help="listens one principal (an anonymous client: its address) may hold open on this front, -32050 beyond "
        "(default 8)",
    )
    parser.add_argument(
        "--tokens",
        type=Path,
        default=None,
        metavar="FILE",
        help="require bearer tokens from FILE ('TOKEN PRINCIPAL' per line); tasks bind to the principal",
    )
    parser.add_argument(
        "--require-mcp-name",
        action="store_true",
        default=False,
        help="refuse tasks/* requests without an Mcp-Name header (-32020), for proxies that route by it "
        "(a header naming another task is always refused)",
    )
    parser.add_argument(
        "--nexus-reply-endpoint",
        default=None,
        metavar="NAME",
        help="Nexus endpoint targeting this namespace and task queue, through which the handler workflows of "
        "Nexus tools report status (docs/nexus.md); without it their status does not cross",
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


def _add_jwt_options(parser: argparse.ArgumentParser) -> None:
    jwt = parser.add_argument_group("JWT bearer tokens (instead of --tokens)")
    jwt.add_argument(
        "--jwt-jwks",
        default=None,
        metavar="FILE|URL",
        help="verify bearer JWTs against this JWKS (a file, re-read when it changes, or the identity provider's URL)",
    )
    jwt.add_argument("--jwt-issuer", default=None, help="required `iss`")
    jwt.add_argument("--jwt-audience", default=None, help="required `aud`")
    jwt.add_argument(
        "--jwt-principal-claim",
        default="sub",
        metavar="CLAIM",
        help="claim naming the principal tasks bind to (default: sub)",
    )
    jwt.add_argument(
        "--jwt-scope",
        action="append",
        default=[],
        metavar="SCOPE",
        help="scope every token must carry (repeatable; HTTP 403 without it)",
    )
    jwt.add_argument(
        "--public-url",
        default=None,
        metavar="URL",
        help="this server's MCP endpoint as clients reach it; with JWTs, publishes RFC 9728 metadata naming the issuer",
    )


def _add_observability_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--otel",
        action="store_true",
        default=False,
        help="export OpenTelemetry traces (also on when the standard OTEL_EXPORTER_OTLP_* variables are set)",
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        metavar="PORT",
        help="serve Prometheus metrics (Temporal SDK and this process's) at http://HOST:PORT/metrics",
    )
    parser.add_argument(
        "--metrics-host",
        default="127.0.0.1",
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


def _add_deployment_options(parser: argparse.ArgumentParser, *, dev: bool) -> None:
    group = parser.add_argument_group(
        "Worker versioning",
        "With both, the worker registers as this build of a Temporal worker deployment: pinned tasks finish on "
        "the build they started on, auto-upgrade ones move to the current build (docs/operations.md). "
        + ("`dev` makes its build current." if dev else "Without them the worker is unversioned."),
    )
    group.add_argument("--deployment-name", default=None, metavar="NAME", help="the worker deployment")
    group.add_argument("--build-id", default=None, metavar="ID", help="this worker's build (e.g. the release)")
    if not dev:
        group.add_argument(
            "--make-current",
            action="store_true",
            default=False,
            help="make this build current once the worker polls, so new tasks run on it at once "
            "(otherwise `admin set-current`, after the replay check)",
        )


def _lazy(name: str) -> Callable[[argparse.Namespace], Awaitable[None]]:
    """The server command `name`, imported when it runs: Temporal, the MCP SDK and uvicorn take seconds
    to import, which `--help` and the client commands do not need."""

    async def run(args: argparse.Namespace) -> None:
        from mcp_tasks_temporal.ops import server_commands

        await getattr(server_commands, name)(args)

    return run


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcp-tasks-temporal",
        description=__doc__,
        epilog="`mcp-tasks-temporal COMMAND --help` shows each command's options and exit statuses.",
    )
    parser.add_argument("--log-level", default="WARNING", help="DEBUG, INFO, WARNING or ERROR")
    commands = parser.add_subparsers(dest="command", required=True)

    dev = commands.add_parser(
        "dev",
        help="embedded Temporal dev server + worker + HTTP front, in one command",
        epilog=SERVER_EXIT_STATUSES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_app_options(dev, default_app=DEMO_APP)
    _add_front_options(dev)
    add_fairness_options(dev)
    # Ctrl-C in a terminal should not hang on a long tool: its round is retried on the next start.
    _add_worker_options(dev, graceful_shutdown_s=3)
    _add_deployment_options(dev, dev=True)
    dev.add_argument("--namespace", default=DEFAULT_NAMESPACE, help="namespace of the embedded Temporal")
    add_codec_options(dev)
    add_storage_options(dev, default_kind="local")
    dev.add_argument(
        "--state-dir", type=Path, default=Path(".mcp-tasks-temporal"), help="where the Temporal database lives"
    )
    dev.add_argument(
        "--nexus-namespace",
        action="append",
        default=[],
        metavar="NAMESPACE",
        help="another namespace on the embedded Temporal, for a Nexus handler's worker (repeatable)",
    )
    dev.add_argument(
        "--nexus-endpoint",
        action="append",
        type=EndpointRoute.parse,
        default=[],
        metavar="NAME=NAMESPACE/TASK_QUEUE",
        help="create this Nexus endpoint on the embedded Temporal (repeatable); "
        "--nexus-reply-endpoint is created too, targeting --namespace and --task-queue",
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
    add_fairness_options(serve)
    add_connection_options(serve)
    add_codec_options(serve)
    add_storage_options(serve)
    serve.add_argument("--transport", choices=("http", "stdio"), default="http")
    _add_observability_options(serve)
    serve.add_argument(
        "--temporal-ui",
        default=None,
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
    _add_deployment_options(worker, dev=False)
    add_connection_options(worker)
    add_codec_options(worker)
    add_storage_options(worker)
    _add_observability_options(worker)

    codec_server = commands.add_parser(
        "codec-server", help="decrypt payloads for the Temporal Web UI and CLI (their remote codec endpoint)"
    )
    add_codec_options(codec_server)
    codec_server.add_argument("--host", default="127.0.0.1", help="address the codec server binds")
    codec_server.add_argument("--port", type=int, default=8081, help="port of the codec server")
    codec_server.add_argument(
        "--ui-origin",
        action="append",
        default=[],
        metavar="URL",
        help=f"origin of a Temporal Web UI allowed to call it, e.g. https://cloud.temporal.io "
        f"(repeatable; default {', '.join(DEFAULT_UI_ORIGINS)})",
    )
    codec_server.add_argument(
        "--tokens",
        type=Path,
        default=None,
        metavar="FILE",
        help="require a bearer token from FILE ('TOKEN PRINCIPAL' per line) on every call",
    )
    codec_key = commands.add_parser("codec-key", help="print a new random AES-256-GCM key for --codec-key-file")

    dev.set_defaults(run=_lazy("dev"))
    serve.set_defaults(run=_lazy("serve"))
    worker.set_defaults(run=_lazy("worker"))
    codec_server.set_defaults(run=_lazy("codec_server"))
    codec_key.set_defaults(run=_lazy("codec_key"))
    apply_environment(parser, "")
    for name, command in (("dev", dev), ("serve", serve), ("worker", worker), ("codec-server", codec_server)):
        apply_environment(command, name)
    add_commands(commands)
    add_operator_commands(commands)
    return parser


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
    status = run(args)
    if getattr(args, "one_shot_temporal", False):
        # A short-lived process that used a Temporal client can abort in interpreter teardown (the SDK's
        # Rust threads take the GIL while it is finalizing, temporalio/sdk-python#300; a failed connect
        # can leave one calling back into Python): everything is done and flushed, so skip the teardown.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    if status:
        raise SystemExit(status)


def run(args: argparse.Namespace) -> int:
    """Run a parsed command line to its end; its exit status (the process is left to the caller)."""
    import anyio

    from mcp_tasks_temporal.temporal.connection import TemporalConnectionError
    from mcp_tasks_temporal.temporal.tracing import shutdown_tracing

    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    try:
        try:
            try:
                anyio.run(args.run, args)
            except BaseExceptionGroup as group:
                # A task group (the push hub's, the app's lifespan) wraps what stopped the command; one
                # cause is reported as itself, on one line, like any other.
                raise _single_cause(group) from None
        except KeyboardInterrupt:
            # Ctrl-C is how `dev`, `serve` and `worker` stop; for a client command it cut the wait short.
            return 130 if getattr(args, "client_command", False) else 0
        except TemporalConnectionError as err:
            print(f"mcp-tasks-temporal: {err}", file=sys.stderr, flush=True)
            args.one_shot_temporal = True
            return 2 if args.command in _SERVER_COMMANDS else EXIT_TEMPORAL_UNREACHABLE
        except (ValueError, RuntimeError) as err:
            print(f"mcp-tasks-temporal: {err}", file=sys.stderr)
            return 2
        finally:
            shutdown_tracing()
    except SystemExit as exit_:
        if exit_.code is None or isinstance(exit_.code, int):
            return exit_.code or 0
        print(exit_.code, file=sys.stderr)
        return 1
    return getattr(args, "exit_status", 0)
