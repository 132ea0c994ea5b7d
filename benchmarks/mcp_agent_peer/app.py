"""The benchmark's workload on mcp-agent, the Temporal-native MCP peer; run in its own venv (mcp 1.x).

    python benchmarks/mcp_agent_peer/app.py worker --temporal 127.0.0.1:7233 --task-queue mcp-agent
    python benchmarks/mcp_agent_peer/app.py serve --temporal 127.0.0.1:7233 --task-queue mcp-agent --port 8124

The tools are written the way mcp-agent documents an async tool on its Temporal execution engine: the
decorated function is the workflow's body, and what does I/O is a `@app.workflow_task` (an activity). A
client calls the tool, gets `{workflow_id, run_id}` back, and polls `workflows-get_status` for the result.
The server is mcp-agent's FastMCP over streamable HTTP at `/mcp`, its worker a process of its own, as its
examples run them. `benchmarks/mcp_agent_venv.py` makes the venv and `benchmarks/peers.py` starts both.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys

from mcp_agent.app import MCPApp
from mcp_agent.config import LoggerSettings, OpenTelemetrySettings, Settings, TemporalSettings, UsageTelemetrySettings
from mcp_agent.core.context import Context
from temporalio import activity

TEMPORAL_ENV = "MCP_AGENT_BENCH_TEMPORAL"
TASK_QUEUE_ENV = "MCP_AGENT_BENCH_TASK_QUEUE"

# Both processes import this module, and so does the workflow sandbox: the settings come from the environment.
settings = Settings(
    execution_engine="temporal",
    temporal=TemporalSettings(
        host=os.environ.get(TEMPORAL_ENV, "127.0.0.1:7233"),
        task_queue=os.environ.get(TASK_QUEUE_ENV, "mcp-agent-bench"),
        # An activity's schedule-to-close timeout (60 s by default): the benchmark's long task runs an hour.
        timeout_seconds=7200,
    ),
    logger=LoggerSettings(type="none", transports=["none"], level="error"),
    otel=OpenTelemetrySettings(enabled=False),
    usage_telemetry=UsageTelemetrySettings(enabled=False),
)
app = MCPApp(name="peer-mcp-agent", description="benchmark peer", settings=settings)


@app.workflow_task(name="bench_sleep")
async def bench_sleep(seconds: float) -> str:
    """The tool's work, in an activity: sleep `seconds`, a heartbeat each second (as ours sets a status line).

    The heartbeats also bring the activity its cancellation: without them a cancelled run's hour-long sleep
    would hold a worker slot to the end, and the benchmark cancels one long task per round.
    """
    elapsed = 0.0
    while elapsed < seconds:
        activity.heartbeat(elapsed)
        step = min(1.0, seconds - elapsed)
        await asyncio.sleep(step)
        elapsed += step
    return f"slept {seconds:g}s"


@app.async_tool(name="instant")
async def instant(seconds: float = 0, label: str = "job", app_ctx: Context | None = None) -> str:
    """A 0 s tool: the workflow returns at once, no activity (`seconds` is taken, as `slow_compute`'s, and ignored)."""
    return f"{label} done"


@app.async_tool(name="slow_compute")
async def slow_compute(seconds: float = 0.05, label: str = "job", app_ctx: Context | None = None) -> str:
    """Work for `seconds` in an activity, as a tool that does I/O must on this engine."""
    context = app_ctx or app.context
    done = await context.executor.execute(bench_sleep, seconds)
    if isinstance(done, BaseException):
        raise done
    return f"{label} {done}"


async def run_worker() -> None:
    from mcp_agent.executor.temporal import create_temporal_worker_for_app

    async with create_temporal_worker_for_app(app) as worker:
        print("mcp-agent worker: running", flush=True)
        await worker.run()


async def run_server(port: int) -> None:
    import uvicorn
    from mcp_agent.server.app_server import create_mcp_server_for_app

    async with app.run() as running:
        mcp = create_mcp_server_for_app(running)
        config = uvicorn.Config(mcp.streamable_http_app(), host="127.0.0.1", port=port, log_level="warning")
        print(f"mcp-agent server: http://127.0.0.1:{port}/mcp", flush=True)
        await uvicorn.Server(config).serve()


def main() -> None:
    parser = argparse.ArgumentParser(prog="benchmarks/mcp_agent_peer/app.py")
    parser.add_argument("role", choices=["serve", "worker"])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    asyncio.run(run_worker() if args.role == "worker" else run_server(args.port))


if __name__ == "__main__":
    main()
