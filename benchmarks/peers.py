"""Side by side with fastmcp-tasks (in memory and on Redis), and against the raw Temporal calls, in one run.

    .venv/bin/pip install -e ".[peers]"          # fastmcp-tasks; redis-server comes from the OS (apt)
    .venv/bin/python -m benchmarks.peers [--samples N] [--quick | --smoke]

Three servers answer the same HTTP requests at 2026-07-28 (`benchmarks/peer_app.py` has the peer's tools):
ours (`serve` + `worker` on a dev server, SQLite WAL), fastmcp-tasks on its in-memory backend, and
fastmcp-tasks on a Redis this benchmark starts (AOF, fsync every second). Latencies are interleaved sample
by sample across all of them, sustained creates run phase by phase, so drift on the machine hits every
column alike. Without fastmcp-tasks or redis-server the missing columns are left out and said so.

Targets: `tasks/get` p50 on working, input_required and completed tasks <= fastmcp-tasks on Redis; a completed
read <= 1.1x one raw `describe`; create p50 <= raw `start_workflow` p50 + the synchronous `tools/call` p50.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import anyio
import httpx

from mcp_tasks_temporal.temporal.ids import UNKEYED
from tests.wire import HttpMcp, TaskCalls

from ._common import (
    HOST,
    Child,
    free_port,
    http_client,
    load_average,
    machine,
    percentile,
    positive_int,
    product_stack,
    render,
    run_main,
    start_child,
)
from .throughput import LONG_TOOL, Calls, Op, SlowComputeTasks, interleave

DEFAULT_SAMPLES = 200
QUICK_SAMPLES = 20
PHASE_S = 10.0
QUICK_PHASE_S = 3.0
# --smoke: fastmcp-tasks in memory only (no Redis to start), a few samples, short phases.
SMOKE_SAMPLES = 3
SMOKE_PHASE_S = 0.5
CLIENTS: Final = 10
READ_TARGET = 1.0
COMPLETED_VS_DESCRIBE_TARGET = 1.1
CONFIRM: Final = {"filename": "bench.txt"}
ELICITATION: Final[dict[str, Any]] = {"elicitation": {}}


@dataclass
class Server(SlowComputeTasks):
    """One MCP server under test, with a task in each state to read."""

    name: str = ""
    running: str = ""
    waiting: str = ""
    done: str = ""

    async def prepare(self) -> None:
        """A task in each state: working (an hour-long tool), input_required, completed."""
        self.running = await self.create(LONG_TOOL)
        asked = (await self.mcp.call_tool("confirm_delete", CONFIRM, capabilities=ELICITATION)).result
        self.waiting = str(asked["taskId"])
        self.done = await self.create()
        await self.until(self.running, lambda task: task["status"] == "working")
        await self.until(self.waiting, lambda task: task["status"] == "input_required")
        await self.until(self.done, lambda task: task["status"] == "completed")

    def held(self) -> list[str]:
        """The tasks `prepare` leaves open until `release`."""
        return [task_id for task_id in (self.running, self.waiting) if task_id]

    async def release(self) -> None:
        for task_id in self.held():
            _ = (await self.mcp.cancel(task_id)).result


@dataclass
class Column:
    server: str
    create: Op
    get_working: Op
    get_waiting: Op
    get_done: Op
    creates_per_s: float = 0.0
    failures: list[str] = field(default_factory=list[str])


def column(server: Server) -> Column:
    return Column(
        server.name,
        Op(f"{server.name} create", server.create),
        Op(f"{server.name} get working", lambda: server.get(server.running)),
        Op(f"{server.name} get input_required", lambda: server.get(server.waiting)),
        Op(f"{server.name} get completed", lambda: server.get(server.done)),
    )


async def sustained(create: Callable[[], Awaitable[Any]], seconds: float, clients: int = CLIENTS) -> float:
    """Creates per second from `clients` concurrent callers over `seconds`."""
    done = 0
    deadline = time.perf_counter() + seconds

    async def caller() -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            await create()
            done += 1

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for _ in range(clients):
            group.start_soon(caller)
    return done / (time.perf_counter() - started)


# --- the peer's processes ---------------------------------------------------------------------------


def peer_available() -> str | None:
    """Why the peer columns cannot run here, or None."""
    if importlib.util.find_spec("fastmcp_tasks") is None:
        return 'fastmcp-tasks is not installed: pip install -e ".[peers]"'
    return None


async def start_redis(log_dir: Path) -> tuple[Child, int] | None:
    binary = shutil.which("redis-server")
    if binary is None:
        return None
    port = free_port()
    command = [
        binary, "--port", str(port), "--bind", HOST, "--dir", str(log_dir), "--save", "",
        "--appendonly", "yes", "--appendfsync", "everysec",
    ]  # fmt: skip
    child = await start_child("redis", command, log_dir)
    with anyio.fail_after(30):
        while "Ready to accept connections" not in await child.log():
            await child.check_alive()
            await anyio.sleep(0.05)
    return child, port


async def start_peer(name: str, docket_url: str, log_dir: Path) -> tuple[Child, str]:
    port = free_port()
    os.environ["FASTMCP_DOCKET_URL"] = docket_url
    try:
        child = await start_child(name, [sys.executable, "-m", "benchmarks.peer_app", "--port", str(port)], log_dir)
    finally:
        del os.environ["FASTMCP_DOCKET_URL"]
    url = f"http://{HOST}:{port}/mcp"
    http = http_client(4)
    probe = TaskCalls(HttpMcp(url, http))
    with anyio.fail_after(60):
        while True:
            await child.check_alive()
            try:
                _ = (await probe.call_tool("greet", {"name": "probe"})).result
                break
            except (httpx.TransportError, AssertionError, ValueError):
                await anyio.sleep(0.1)
    await http.aclose()
    return child, url


@asynccontextmanager
async def peers(log_dir: Path, *, redis: bool = True) -> AsyncGenerator[list[tuple[str, str]]]:
    """(name, URL) of each fastmcp-tasks server that could start; reasons for the rest are printed."""
    started: list[tuple[str, str]] = []
    async with AsyncExitStack() as stack:
        reason = peer_available()
        if reason is not None:
            print(f"fastmcp-tasks columns left out: {reason}")
            yield started
            return
        child, url = await start_peer("fastmcp-memory", "memory://", log_dir)
        stack.push_async_callback(child.stop)
        started.append(("fastmcp-tasks memory", url))
        if not redis:
            print("fastmcp-tasks on Redis left out: --smoke runs the in-memory peer only")
            yield started
            return
        redis_server = await start_redis(log_dir)
        if redis_server is None:
            print("fastmcp-tasks on Redis left out: redis-server is not on PATH (apt-get install redis-server)")
        else:
            redis_child, port = redis_server
            stack.push_async_callback(redis_child.stop)
            child, url = await start_peer("fastmcp-redis", f"redis://{HOST}:{port}/0", log_dir)
            stack.push_async_callback(child.stop)
            started.append(("fastmcp-tasks Redis", url))
        yield started


# --- the run -----------------------------------------------------------------------------------------


@dataclass
class Results:
    columns: list[Column]
    raw_start: Op
    raw_describe_done: Op
    floor: Op
    raw_starts_per_s: float


async def run(samples: int, phase_s: float, *, redis: bool = True) -> Results:
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as tmp:
        async with AsyncExitStack() as stack:
            product = await stack.enter_async_context(product_stack("bench-peers-temporal-"))
            http = await stack.enter_async_context(http_client())
            calls = Calls(TaskCalls(HttpMcp(product.url, http)), product)
            await calls.learn_task_settings()
            servers = [Server(calls.mcp, "ours")]
            for name, url in await stack.enter_async_context(peers(Path(tmp), redis=redis)):
                servers.append(Server(TaskCalls(HttpMcp(url, http)), name))
            for server in servers:
                await server.prepare()
            columns = [column(server) for server in servers]
            done = product.client.get_workflow_handle(UNKEYED.workflow_id(servers[0].done, None))
            raw_start = Op("raw start_workflow", calls.raw_start)
            raw_describe_done = Op("raw describe() of a completed task", done.describe)
            floor = Op("tools/call greet (synchronous, ours)", calls.greet)
            ops = [raw_start, raw_describe_done, floor]
            for col in columns:
                ops += [col.create, col.get_working, col.get_waiting, col.get_done]
            await interleave(ops, samples)
            # Ours holds two tasks open (working and input_required) until `release`: the drain leaves them.
            held = len(servers[0].held())
            for server, col in zip(servers, columns, strict=True):
                col.creates_per_s = await sustained(server.create, phase_s)
                await calls.drain(60, held=held)
            raw_starts_per_s = await sustained(calls.raw_start, phase_s)
            for server in servers:
                await server.release()
            return Results(columns, raw_start, raw_describe_done, floor, raw_starts_per_s)


def _verdict(value: float, limit: float) -> str:
    return "met" if value <= limit else "missed"


def report(results: Results) -> str:
    columns = results.columns
    header = ["", *(c.server for c in columns), "raw Temporal"]
    rows: list[list[str]] = []

    def line(label: str, pick: Callable[[Column], Op], raw: Op | None = None) -> None:
        rows.append([label, *(f"{percentile(pick(c).ms, 50):.1f}" for c in columns), f"{raw.p50:.1f}" if raw else ""])

    line("create p50 ms", lambda c: c.create, results.raw_start)
    line("tasks/get working p50 ms", lambda c: c.get_working)
    line("tasks/get input_required p50 ms", lambda c: c.get_waiting)
    line("tasks/get completed p50 ms", lambda c: c.get_done, results.raw_describe_done)
    rates = [f"{c.creates_per_s:.0f}" for c in columns]
    rows.append([f"creates/s, {CLIENTS} clients", *rates, f"{results.raw_starts_per_s:.0f}"])
    rows.append(["synchronous tools/call p50 ms", f"{results.floor.p50:.1f}", *([""] * len(columns))])
    out = [render(header, rows), ""]
    ours = columns[0]
    redis = next((c for c in columns if c.server.endswith("Redis")), None)
    if redis is not None:
        pairs = (
            ("working", ours.get_working, redis.get_working),
            ("input_required", ours.get_waiting, redis.get_waiting),
            ("completed", ours.get_done, redis.get_done),
        )
        for label, mine, theirs in pairs:
            ratio = mine.p50 / theirs.p50
            out.append(
                f"tasks/get {label}: ours / fastmcp-tasks Redis = {ratio:.2f}x "
                f"(target <= {READ_TARGET:g}x: {_verdict(ratio, READ_TARGET)})"
            )
    else:
        out.append("tasks/get vs fastmcp-tasks Redis: not measured (no Redis column)")
    ratio = ours.get_done.p50 / results.raw_describe_done.p50
    out.append(
        f"tasks/get completed: ours / raw describe = {ratio:.2f}x "
        f"(target <= {COMPLETED_VS_DESCRIBE_TARGET:g}x: {_verdict(ratio, COMPLETED_VS_DESCRIBE_TARGET)})"
    )
    floor = results.raw_start.p50 + results.floor.p50
    out.append(
        f"create: ours p50 {ours.create.p50:.1f} ms vs raw start {results.raw_start.p50:.1f} + synchronous call "
        f"{results.floor.p50:.1f} = {floor:.1f} ms: {ours.create.p50 / floor:.2f}x (target <= 1x: "
        f"{_verdict(ours.create.p50, floor)})"
    )
    return "\n".join(out)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.peers", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--samples", type=positive_int, default=None)
    parser.add_argument("--seconds", type=float, default=None, help="length of each sustained phase")
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--quick", action="store_true", help=f"{QUICK_SAMPLES} samples, {QUICK_PHASE_S:g} s phases")
    modes.add_argument(
        "--smoke",
        action="store_true",
        help=f"{SMOKE_SAMPLES} samples, {SMOKE_PHASE_S:g} s phases, no Redis column: proves it runs, in seconds",
    )
    return parser.parse_args(argv)


async def amain(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    samples = args.samples or (SMOKE_SAMPLES if args.smoke else QUICK_SAMPLES if args.quick else DEFAULT_SAMPLES)
    phase_s = args.seconds or (SMOKE_PHASE_S if args.smoke else QUICK_PHASE_S if args.quick else PHASE_S)
    print("\n".join(machine()))
    print(f"load average before: {load_average()}")
    print(f"{samples} interleaved samples per op; sustained phases of {phase_s:g} s with {CLIENTS} clients", flush=True)
    results = await run(samples, phase_s, redis=not args.smoke)
    print(report(results))
    print(f"load average after: {load_average()}")


def main(argv: list[str] | None = None) -> None:
    run_main(lambda: amain(argv))


if __name__ == "__main__":
    main()
