"""Side by side with fastmcp-tasks (in memory and on Redis) and mcp-agent (on Temporal), and the raw Temporal calls.

    .venv/bin/pip install -e ".[peers]"          # fastmcp-tasks; redis-server comes from the OS (apt)
    .venv/bin/python -m benchmarks.peers [--samples N] [--quick | --smoke] [--no-install]

Four servers, one run, one Temporal dev server (SQLite WAL):

- ours: `serve` + `worker` with `benchmarks/ours_app.py` (the conformance fixture's tools, the extension's
  default `pollIntervalMs`, and a plain synchronous twin of `slow_compute`);
- fastmcp-tasks on its in-memory backend, and on a Redis this benchmark starts on a free port (AOF, fsync every
  second), both serving `benchmarks/peer_app.py`;
- mcp-agent, the Temporal-native peer: its FastMCP server over streamable HTTP and its Temporal worker, on the
  same dev server as ours (a task queue of its own), serving `benchmarks/mcp_agent_peer/app.py` from a venv of
  its own (mcp<2; `benchmarks/mcp_agent_venv.py` installs it on first use, which `--no-install` and `--smoke`
  never do).

This process is every server's client, over HTTP with httpx: at 2026-07-28 with the tasks extension for ours
and fastmcp-tasks (`tools/call` -> `CreateTaskResult`, then `tasks/get`), and over an mcp 1.x session for
mcp-agent, as its clients do (`tools/call` -> `{workflow_id, run_id}`, then its `workflows-get_status` tool).
"Result in hand" is from sending `tools/call` to holding the tool's result, polling at a cadence: every 10
ms, or at the server's advice (`pollIntervalMs`, re-read from every answer; the `CreateTaskResult` is the
task's first status, so the first `tasks/get` comes one interval after it). mcp-agent advises none and its
run's answer carries no status, so at its cadence the reads follow its own wait for a run's result: one at
once, then after 50 ms, doubling up to 1 s. Latencies are interleaved sample by sample in a shuffled order
per round, across all servers; the advised-cadence samples, seconds each, get rounds of their own with fewer
samples; sustained creates run phase by phase with the Temporal task queues drained in between. A peer that
cannot run here (not installed, no redis-server) is left out, saying why.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, cast

import anyio
import anyio.to_thread
import httpx
from temporalio.client import Client

from mcp_tasks_temporal.temporal.ids import workflow_id
from tests.wire import HttpMcp, Reply, TaskCalls

from . import mcp_agent_venv
from ._common import (
    HOST,
    Child,
    free_port,
    http_client,
    load_average,
    machine,
    positive_int,
    product_stack,
    render,
    run_main,
    start_child,
)
from .throughput import LONG_TOOL, SHORT_TOOL, Calls, Op

OURS_APP: Final = "benchmarks.ours_app:app"
DEFAULT_SAMPLES = 200
QUICK_SAMPLES = 20
SMOKE_SAMPLES = 3
ADVISED_SAMPLES = 20
QUICK_ADVISED_SAMPLES = 5
SMOKE_ADVISED_SAMPLES = 1
PHASE_S = 10.0
QUICK_PHASE_S = 3.0
SMOKE_PHASE_S = 0.5
WARMUP = 5
ADVISED_WARMUP = 1
SEED = 2663
CLIENTS: Final = 10
FAST_POLL_S: Final = 0.010
ZERO_TOOL: Final = {"seconds": 0, "label": "bench"}
FIFTY_MS_TOOL: Final = {"seconds": 0.05, "label": "bench"}
CONFIRM: Final = {"filename": "bench.txt"}
ELICITATION: Final[dict[str, Any]] = {"elicitation": {}}
RESULT_TIMEOUT_S: Final = 60.0
MCP_AGENT_QUEUE: Final = "mcp-agent-bench"
MCP_AGENT_WAIT: Final = (0.05, 2.0, 1.0)
"""mcp-agent's own wait for a run's result (`_wait_for_completion` in its app server): first delay, factor, cap."""
LEGACY_VERSION: Final = "2025-06-18"
TERMINAL_FAILURES: Final = frozenset({"failed", "cancelled", "input_required", "error"})

# Targets (ratios measured in this run).
RESULT_TARGET = 1.0
READ_TARGET = 1.0
CREATE_OVER_RAW_MS = 3.0
CREATES_TARGET = 0.8
SYNC_TARGET = 1.5
COMPLETED_VS_DESCRIBE_TARGET = 1.1


# --- servers -----------------------------------------------------------------------------------------


class Server:
    """One MCP server under test: what each measured operation does against it."""

    name: str
    held: int = 0
    """Workflows it keeps running on the dev server until `release` (the drain leaves them)."""
    task_queue: str | None = None

    def advice(self) -> str:
        """The poll cadence it advises, as printed."""
        return "none"

    async def prepare(self) -> None: ...
    async def release(self) -> None: ...
    async def create(self, arguments: Mapping[str, Any] = SHORT_TOOL) -> None: ...
    async def create_long(self) -> None: ...
    async def cancel_pending(self) -> None: ...
    async def get_working(self) -> None: ...
    async def get_waiting(self) -> None: ...
    async def get_done(self) -> None: ...
    async def result_in_hand(self, arguments: Mapping[str, Any], advised: bool, tool: str = "slow_compute") -> None: ...

    @property
    def has_waiting(self) -> bool:
        return True


@dataclass
class TaskServer(Server):
    """Ours or fastmcp-tasks: the tasks extension at 2026-07-28."""

    name: str
    mcp: TaskCalls
    held: int = 0
    task_queue: str | None = None
    running: str = ""
    waiting: str = ""
    done: str = ""
    poll_interval_ms: int | None = None
    pending: list[str] = field(default_factory=list[str])

    def advice(self) -> str:
        return f"pollIntervalMs {self.poll_interval_ms}" if self.poll_interval_ms else "none"

    async def start(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        result = (await self.mcp.call_tool("slow_compute", dict(arguments))).result
        if result.get("resultType") != "task":
            raise RuntimeError(f"{self.name}: expected a CreateTaskResult, got {result}")
        return result

    async def create(self, arguments: Mapping[str, Any] = SHORT_TOOL) -> None:
        await self.start(arguments)

    async def create_long(self) -> None:
        self.pending.append(str((await self.start(LONG_TOOL))["taskId"]))

    async def cancel_pending(self) -> None:
        while self.pending:
            _ = (await self.mcp.cancel(self.pending.pop())).result

    async def view(self, task_id: str) -> dict[str, Any]:
        return (await self.mcp.get(task_id)).result

    async def until(self, task_id: str, status: str) -> None:
        with anyio.fail_after(RESULT_TIMEOUT_S):
            while (await self.view(task_id))["status"] != status:
                await anyio.sleep(0.05)

    async def prepare(self) -> None:
        """A task in each state: working (an hour-long tool), input_required, completed."""
        created = await self.start(LONG_TOOL)
        self.running, self.poll_interval_ms = str(created["taskId"]), created.get("pollIntervalMs")
        asked = (await self.mcp.call_tool("confirm_delete", CONFIRM, capabilities=ELICITATION)).result
        self.waiting = str(asked["taskId"])
        self.done = str((await self.start(SHORT_TOOL))["taskId"])
        await self.until(self.running, "working")
        await self.until(self.waiting, "input_required")
        await self.until(self.done, "completed")

    async def release(self) -> None:
        self.pending += [self.running, self.waiting]
        await self.cancel_pending()

    async def get_working(self) -> None:
        await self.view(self.running)

    async def get_waiting(self) -> None:
        await self.view(self.waiting)

    async def get_done(self) -> None:
        await self.view(self.done)

    async def result_in_hand(self, arguments: Mapping[str, Any], advised: bool, tool: str = "slow_compute") -> None:
        answer = (await self.mcp.call_tool(tool, dict(arguments))).result
        if answer.get("resultType", "complete") == "complete":
            _check_result(self.name, answer)  # answered in the call: no task to poll
            return
        # The CreateTaskResult is the task's first status: the first `tasks/get` comes one interval later.
        task, task_id = answer, str(answer["taskId"])
        interval_ms = answer.get("pollIntervalMs")
        with anyio.fail_after(RESULT_TIMEOUT_S):
            while True:
                interval_ms = task.get("pollIntervalMs", interval_ms)
                await anyio.sleep(interval_ms / 1000 if advised and interval_ms else FAST_POLL_S)
                task = await self.view(task_id)
                if task["status"] == "completed":
                    _check_result(self.name, task.get("result"))
                    return
                if task["status"] in TERMINAL_FAILURES:
                    raise RuntimeError(f"{self.name}: task {task_id} is {task['status']}")


def _check_result(server: str, result: Any) -> None:
    if not isinstance(result, dict) or result.get("isError") or not result.get("content"):  # pyright: ignore[reportUnknownMemberType]
        raise RuntimeError(f"{server}: expected the tool's result, got {result}")


class SessionHttpMcp:
    """An mcp 1.x client over streamable HTTP: `initialize`, then requests carrying the session's ID."""

    def __init__(self, url: str, http: httpx.AsyncClient) -> None:
        self.url = url
        self.http = http
        self.headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        self._next_id = 0

    async def post(self, message: dict[str, Any]) -> httpx.Response:
        return await self.http.post(self.url, content=json.dumps(message), headers=self.headers)

    async def open(self) -> None:
        client = {"name": "bench", "version": "1"}
        params = {"protocolVersion": LEGACY_VERSION, "capabilities": {}, "clientInfo": client}
        response = await self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
        _ = Reply.of(response).result
        self.headers = {
            **self.headers,
            "mcp-session-id": response.headers["mcp-session-id"],
            "mcp-protocol-version": LEGACY_VERSION,
        }
        await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The tool's structured answer: its `structuredContent`, or the JSON in its text."""
        self._next_id += 1
        message = {
            "jsonrpc": "2.0",
            "id": self._next_id,
            "method": "tools/call",
            "params": {"name": name, "arguments": dict(arguments)},
        }
        result = Reply.of(await self.post(message)).result
        if result.get("isError"):
            raise RuntimeError(f"mcp-agent: {name} failed: {result}")
        structured: Any = result.get("structuredContent")
        if isinstance(structured, dict):
            inner: Any = cast(dict[str, Any], structured).get("result", structured)
            if isinstance(inner, dict):
                return cast(dict[str, Any], inner)
        parsed: dict[str, Any] = json.loads(result["content"][0]["text"])
        return parsed


@dataclass
class McpAgentServer(Server):
    """mcp-agent on its Temporal engine: an async tool starts a workflow; `workflows-get_status` reads it."""

    session: SessionHttpMcp
    name: str = "mcp-agent"
    held: int = 1
    task_queue: str | None = MCP_AGENT_QUEUE
    running: dict[str, str] = field(default_factory=dict[str, str])
    done: dict[str, str] = field(default_factory=dict[str, str])
    pending: list[dict[str, str]] = field(default_factory=list[dict[str, str]])

    @property
    def has_waiting(self) -> bool:
        return False

    def advice(self) -> str:
        return "none (its own wait: 50 ms x2 to 1 s)"

    async def start(self, arguments: Mapping[str, Any], tool: str = "slow_compute") -> dict[str, str]:
        ids = await self.session.call_tool(tool, arguments)
        return {"workflow_id": str(ids["workflow_id"]), "run_id": str(ids["run_id"])}

    async def status(self, ids: Mapping[str, str]) -> dict[str, Any]:
        return await self.session.call_tool("workflows-get_status", ids)

    async def until(self, ids: Mapping[str, str], status: str) -> None:
        with anyio.fail_after(RESULT_TIMEOUT_S):
            while (await self.status(ids)).get("status") != status:
                await anyio.sleep(0.05)

    async def create(self, arguments: Mapping[str, Any] = SHORT_TOOL) -> None:
        await self.start(arguments)

    async def create_long(self) -> None:
        self.pending.append(await self.start(LONG_TOOL))

    async def cancel_pending(self) -> None:
        while self.pending:
            await self.session.call_tool("workflows-cancel", self.pending.pop())

    async def prepare(self) -> None:
        self.running = await self.start(LONG_TOOL)
        self.done = await self.start(ZERO_TOOL, "instant")
        await self.until(self.running, "running")
        await self.until(self.done, "completed")

    async def release(self) -> None:
        self.pending.append(self.running)
        await self.cancel_pending()

    async def get_working(self) -> None:
        await self.status(self.running)

    async def get_done(self) -> None:
        await self.status(self.done)

    async def result_in_hand(self, arguments: Mapping[str, Any], advised: bool, tool: str = "slow_compute") -> None:
        ids = await self.start(arguments, tool)
        first, factor, cap = MCP_AGENT_WAIT
        delay = first if advised else FAST_POLL_S
        with anyio.fail_after(RESULT_TIMEOUT_S):
            if not advised:
                await anyio.sleep(FAST_POLL_S)  # every 10 ms, as for the others; its own wait reads at once
            while True:
                status = await self.status(ids)
                if status.get("status") == "completed":
                    if status.get("result") is None:
                        raise RuntimeError(f"mcp-agent: run {ids} completed without a result: {status}")
                    return
                if status.get("status") in TERMINAL_FAILURES:
                    raise RuntimeError(f"mcp-agent: run {ids} is {status.get('status')}: {status.get('error')}")
                await anyio.sleep(delay)
                if advised:
                    delay = min(cap, delay * factor)


# --- starting the peers ------------------------------------------------------------------------------


def fastmcp_available() -> str | None:
    """Why fastmcp-tasks cannot run here, or None."""
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


async def start_fastmcp(name: str, docket_url: str, log_dir: Path) -> tuple[Child, str]:
    port = free_port()
    command = [sys.executable, "-m", "benchmarks.peer_app", "--port", str(port)]
    child = await start_child(name, command, log_dir, env={"FASTMCP_DOCKET_URL": docket_url})
    url = f"http://{HOST}:{port}/mcp"
    async with http_client(4) as http:
        probe = TaskCalls(HttpMcp(url, http))
        with anyio.fail_after(60):
            while True:
                await child.check_alive()
                try:
                    _ = (await probe.call_tool("greet", {"name": "probe"})).result
                    return child, url
                except (httpx.TransportError, AssertionError, ValueError):
                    await anyio.sleep(0.1)


async def start_mcp_agent(python: Path, temporal: str, log_dir: Path) -> tuple[list[Child], str]:
    """mcp-agent's worker and server on the dev server at `temporal`; the server's URL once both are up."""
    env = {mcp_agent_venv.TEMPORAL_ENV: temporal, mcp_agent_venv.TASK_QUEUE_ENV: MCP_AGENT_QUEUE}
    app = str(mcp_agent_venv.APP)
    worker = await start_child("mcp-agent-worker", [str(python), app, "worker"], log_dir, env=env)
    port = free_port()
    server = await start_child("mcp-agent-server", [str(python), app, "serve", "--port", str(port)], log_dir, env=env)
    children = [worker, server]
    url = f"http://{HOST}:{port}/mcp"
    try:
        with anyio.fail_after(120):
            while "mcp-agent worker: running" not in await worker.log():
                await worker.check_alive()
                await anyio.sleep(0.1)
            async with http_client(2) as http:
                while True:
                    await server.check_alive()
                    try:
                        await SessionHttpMcp(url, http).open()
                        return children, url
                    except (httpx.TransportError, AssertionError, ValueError, KeyError):
                        await anyio.sleep(0.2)
    except BaseException:
        for child in children:
            await child.stop()
        raise


@dataclass(frozen=True)
class PeerUrls:
    fastmcp: list[tuple[str, str]]
    mcp_agent: str | None


@asynccontextmanager
async def peers(log_dir: Path, temporal: str, *, may_install: bool) -> AsyncGenerator[PeerUrls]:
    """Every peer that can run here, started side by side; each one left out says why."""
    fastmcp: list[tuple[str, str]] = []
    agent_url: list[str] = []
    async with AsyncExitStack() as stack:

        async def memory() -> None:
            child, url = await start_fastmcp("fastmcp-memory", "memory://", log_dir)
            stack.push_async_callback(child.stop)
            fastmcp.insert(0, ("fastmcp-tasks memory", url))

        async def redis() -> None:
            try:
                started = await start_redis(log_dir)
            except (RuntimeError, TimeoutError, OSError) as err:
                print(f"fastmcp-tasks on Redis left out: redis-server did not start ({err})"[:2000])
                return
            if started is None:
                print("fastmcp-tasks on Redis left out: redis-server is not on PATH (apt-get install redis-server)")
                return
            redis_child, port = started
            stack.push_async_callback(redis_child.stop)
            child, url = await start_fastmcp("fastmcp-redis", f"redis://{HOST}:{port}/0", log_dir)
            stack.push_async_callback(child.stop)
            fastmcp.append(("fastmcp-tasks Redis", url))

        async def agent() -> None:
            python, reason = await anyio.to_thread.run_sync(lambda: mcp_agent_venv.usable(may_install=may_install))
            if python is None:
                print(f"mcp-agent left out: {reason}")
                return
            try:
                children, url = await start_mcp_agent(python, temporal, log_dir)
            except (RuntimeError, TimeoutError, OSError) as err:
                print(f"mcp-agent left out: it did not start ({err})"[:2000])
                return
            for child in children:
                stack.push_async_callback(child.stop)
            agent_url.append(url)

        reason = fastmcp_available()
        async with anyio.create_task_group() as group:
            if reason is None:
                group.start_soon(memory)
                group.start_soon(redis)
            else:
                print(f"fastmcp-tasks columns left out: {reason}")
            group.start_soon(agent)
        yield PeerUrls(fastmcp, agent_url[0] if agent_url else None)


# --- sampling ----------------------------------------------------------------------------------------


async def interleave(
    ops: Sequence[Op], samples: int, warmup: int, between: Callable[[], Awaitable[None]] | None = None
) -> None:
    """Warm every op up, then one sample of each per round in a seeded shuffled order; `between` after each round.

    `between` (untimed) undoes what a round left behind, such as the long tasks its creates started.
    """
    for op in ops:
        for _ in range(warmup):
            await op.call()
    if between is not None:
        await between()
    order = list(ops)
    shuffler = random.Random(SEED)
    for _ in range(samples):
        shuffler.shuffle(order)
        for op in order:
            await op.take()
        if between is not None:
            await between()


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


async def drain(client: Client, servers: Sequence[Server], timeout_s: float = 60) -> None:
    """Until the dev server runs nothing but the workflows the servers hold open."""
    queues = [s.task_queue for s in servers if s.task_queue]
    query = "(" + " OR ".join(f'TaskQueue="{q}"' for q in queues) + ') AND ExecutionStatus="Running"'
    held = sum(s.held for s in servers)
    with anyio.move_on_after(timeout_s):
        while (await client.count_workflows(query)).count > held:
            await anyio.sleep(0.25)


# --- the run -----------------------------------------------------------------------------------------


@dataclass
class Column:
    server: Server
    ops: dict[str, Op] = field(default_factory=dict[str, Op])
    creates_per_s: float = 0.0

    def add(self, key: str, label: str, call: Callable[[], Awaitable[Any]]) -> Op:
        op = Op(f"{self.server.name} {label}", call)
        self.ops[key] = op
        return op

    def p50(self, key: str) -> float | None:
        op = self.ops.get(key)
        return op.p50 if op is not None and op.ms else None


@dataclass
class Results:
    columns: list[Column]
    raw_start: Op
    raw_describe_done: Op
    greet: Op
    sync_fifty: Op
    raw_starts_per_s: float = 0.0
    samples: int = 0
    advised_samples: int = 0


def fast_ops(column: Column) -> list[Op]:
    server = column.server

    def result(arguments: Mapping[str, Any], tool: str = "slow_compute") -> Callable[[], Awaitable[None]]:
        return lambda: server.result_in_hand(arguments, advised=False, tool=tool)

    ops = [
        column.add("create", "create (long task)", server.create_long),
        column.add("get_working", "tasks/get working", server.get_working),
        column.add("get_done", "tasks/get completed", server.get_done),
        column.add("zero", "0 s tool, result in hand, 10 ms polling", result(ZERO_TOOL, _zero_tool(server))),
        column.add("fifty", "50 ms tool, result in hand, 10 ms polling", result(FIFTY_MS_TOOL)),
    ]
    if server.has_waiting:
        ops.append(column.add("get_waiting", "tasks/get input_required", server.get_waiting))
    if isinstance(server, McpAgentServer):
        ops.append(column.add("zero_activity", "0 s activity, result in hand, 10 ms polling", result(ZERO_TOOL)))
    return ops


def advised_ops(column: Column) -> list[Op]:
    server = column.server
    ops = [
        column.add(
            "zero_advised",
            "0 s tool, result in hand, advised cadence",
            lambda: server.result_in_hand(ZERO_TOOL, advised=True, tool=_zero_tool(server)),
        )
    ]
    # A 50 ms tool at the advised cadence where that cadence is a second or less: ours, mcp-agent.
    if not server.name.startswith("fastmcp"):
        ops.append(
            column.add(
                "fifty_advised",
                "50 ms tool, result in hand, advised cadence",
                lambda: server.result_in_hand(FIFTY_MS_TOOL, advised=True),
            )
        )
    return ops


def _zero_tool(server: Server) -> str:
    """mcp-agent's 0 s tool is the workflow body alone, as a user writes it; the others run every tool as work."""
    return "instant" if isinstance(server, McpAgentServer) else "slow_compute"


async def run(samples: int, advised_samples: int, phase_s: float, *, may_install: bool) -> Results:
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as tmp:
        async with AsyncExitStack() as stack:
            product = await stack.enter_async_context(product_stack("bench-peers-temporal-", app=OURS_APP))
            http = await stack.enter_async_context(http_client())
            calls = Calls(TaskCalls(HttpMcp(product.url, http)), product)
            await calls.learn_task_settings()
            ours = TaskServer("ours", calls.mcp, held=2, task_queue=product.task_queue)
            servers: list[Server] = [ours]
            started = await stack.enter_async_context(
                peers(Path(tmp), product.temporal_address, may_install=may_install)
            )
            servers += [TaskServer(name, TaskCalls(HttpMcp(url, http))) for name, url in started.fastmcp]
            if started.mcp_agent is not None:
                session = SessionHttpMcp(started.mcp_agent, http)
                await session.open()
                servers.append(McpAgentServer(session))
            for server in servers:
                await server.prepare()
            print(f"servers ready: {', '.join(s.name for s in servers)}; load {load_average()}", flush=True)
            columns = [Column(server) for server in servers]
            done = product.client.get_workflow_handle(workflow_id(ours.done, None))

            async def sync_fifty() -> None:
                answer = (await calls.mcp.call_tool("slow_compute_sync", FIFTY_MS_TOOL)).result
                _check_result("ours", answer)

            results = Results(
                columns,
                raw_start=Op("raw start_workflow", calls.raw_start),
                raw_describe_done=Op("raw describe() of a completed task", done.describe),
                greet=Op("tools/call greet (synchronous, ours)", calls.greet),
                sync_fifty=Op("tools/call slow_compute_sync 50 ms (synchronous, ours)", sync_fifty),
                samples=samples,
                advised_samples=advised_samples,
            )

            async def cancel_long_tasks() -> None:
                for server in servers:
                    await server.cancel_pending()

            ops = [results.raw_start, results.raw_describe_done, results.greet, results.sync_fifty]
            for col in columns:
                ops += fast_ops(col)
            await interleave(ops, samples, WARMUP, cancel_long_tasks)
            print(f"latency samples done; load {load_average()}", flush=True)
            await interleave([op for col in columns for op in advised_ops(col)], advised_samples, ADVISED_WARMUP)
            print(f"advised-cadence samples done; load {load_average()}", flush=True)
            await drain(product.client, servers)
            for col in columns:
                col.creates_per_s = await sustained(col.server.create, phase_s)
                await drain(product.client, servers)
            results.raw_starts_per_s = await sustained(calls.raw_start, phase_s)
            for server in servers:
                await server.release()
            return results


# --- the report --------------------------------------------------------------------------------------


def _ms(value: float | None) -> str:
    return "" if value is None else f"{value:.1f}"


def _verdict(ok: bool) -> str:
    return "met" if ok else "missed"


def table(results: Results) -> str:
    columns = results.columns
    header = ["", *(c.server.name for c in columns), "raw Temporal"]
    rows: list[list[str]] = [["advised poll cadence", *(c.server.advice() for c in columns), ""]]

    def line(label: str, key: str, raw: str = "") -> None:
        rows.append([label, *(_ms(c.p50(key)) for c in columns), raw])

    line("0 s tool, result in hand p50 ms, 10 ms polling", "zero")
    line(f"0 s tool, result in hand p50 ms, advised cadence (n={results.advised_samples})", "zero_advised")
    line("50 ms tool, result in hand p50 ms, 10 ms polling", "fifty")
    line(f"50 ms tool, result in hand p50 ms, advised cadence (n={results.advised_samples})", "fifty_advised")
    line("create (long task) p50 ms", "create", f"{results.raw_start.p50:.1f} (start_workflow)")
    line("tasks/get working p50 ms", "get_working")
    line("tasks/get input_required p50 ms", "get_waiting")
    line("tasks/get completed p50 ms", "get_done", f"{results.raw_describe_done.p50:.1f} (describe)")
    rates = [f"{c.creates_per_s:.0f}" for c in columns]
    rows.append([f"creates/s, {CLIENTS} clients", *rates, f"{results.raw_starts_per_s:.0f}"])
    blank = [""] * (len(columns) - 1)
    rows.append(["plain synchronous call p50 ms: greet", f"{results.greet.p50:.1f}", *blank, ""])
    rows.append(["plain synchronous call p50 ms: 50 ms tool", f"{results.sync_fifty.p50:.1f}", *blank, ""])
    out = [render(header, rows)]
    agent = next((c for c in columns if isinstance(c.server, McpAgentServer)), None)
    if agent is not None and (activity := agent.p50("zero_activity")) is not None:
        out.append(
            f"mcp-agent's 0 s tool is its workflow body alone; the same done in an activity, as ours and every tool"
            f" with I/O on mcp-agent runs: {activity:.1f} ms p50 at 10 ms polling"
        )
    return "\n".join(out)


def ratios(results: Results) -> str:
    """Ours against each peer and the raw calls, as the targets name them."""
    ours, *others = results.columns
    out: list[str] = []

    def ratio(label: str, mine: float | None, theirs: float | None, target: float, higher: bool = False) -> None:
        """`mine / theirs` against `target`: at most it, or with `higher` at least it."""
        if mine is None or theirs is None or theirs == 0:
            return
        value = mine / theirs
        ok = value >= target if higher else value <= target
        sign = ">=" if higher else "<="
        out.append(f"{label}: {value:.2f}x (target {sign} {target:g}x: {_verdict(ok)})")

    for peer in others:
        name = peer.server.name
        zero = ours.p50("zero"), peer.p50("zero")
        ratio(f"0 s tool result in hand, 10 ms polling, ours / {name}", *zero, RESULT_TARGET)
        ratio(
            f"0 s tool result in hand, advised cadence, ours / {name}",
            ours.p50("zero_advised"),
            peer.p50("zero_advised"),
            RESULT_TARGET,
        )
        for key, label in (("get_working", "working"), ("get_waiting", "input_required"), ("get_done", "completed")):
            ratio(f"tasks/get {label}, ours / {name}", ours.p50(key), peer.p50(key), READ_TARGET)
        ratio(f"creates/s, ours / {name}", ours.creates_per_s, peer.creates_per_s, CREATES_TARGET, higher=True)
    raw = results.raw_start.p50
    for col in results.columns:
        create = col.p50("create")
        if create is not None and col.server.task_queue:
            out.append(
                f"create (long task), {col.server.name}: p50 {create:.1f} ms vs raw start_workflow {raw:.1f} ms:"
                f" +{create - raw:.1f} ms, {create / raw:.2f}x"
                + (
                    f" (target <= raw + {CREATE_OVER_RAW_MS:g} ms: {_verdict(create <= raw + CREATE_OVER_RAW_MS)})"
                    if col is ours
                    else ""
                )
            )
    sync = results.sync_fifty.p50
    for key, label in (("fifty", "10 ms polling"), ("fifty_advised", "advised cadence")):
        mine = ours.p50(key)
        if mine is not None:
            value = mine / sync
            out.append(
                f"50 ms tool, task-capable call ({label}) / plain synchronous call on ours: {mine:.1f} / {sync:.1f} ms"
                f" = {value:.2f}x (target <= {SYNC_TARGET:g}x: {_verdict(value <= SYNC_TARGET)})"
            )
    done = ours.p50("get_done")
    if done is not None:
        value = done / results.raw_describe_done.p50
        out.append(
            f"tasks/get completed, ours / raw describe: {value:.2f}x"
            f" (target <= {COMPLETED_VS_DESCRIBE_TARGET:g}x: {_verdict(value <= COMPLETED_VS_DESCRIBE_TARGET)})"
        )
    return "\n".join(out)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.peers", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--samples", type=positive_int, default=None, help="interleaved samples per latency op")
    parser.add_argument(
        "--advised-samples", type=positive_int, default=None, help="samples per op at each server's advised cadence"
    )
    parser.add_argument("--seconds", type=float, default=None, help="length of each sustained phase")
    parser.add_argument(
        "--no-install", action="store_true", help="leave mcp-agent out unless its venv is already installed"
    )
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument(
        "--quick",
        action="store_true",
        help=f"{QUICK_SAMPLES} samples, {QUICK_ADVISED_SAMPLES} at the advised cadence, {QUICK_PHASE_S:g} s phases",
    )
    modes.add_argument(
        "--smoke",
        action="store_true",
        help=f"{SMOKE_SAMPLES} samples, {SMOKE_ADVISED_SAMPLES} at the advised cadence, {SMOKE_PHASE_S:g} s phases,"
        " no install: proves it runs",
    )
    return parser.parse_args(argv)


async def amain(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    samples = args.samples or (SMOKE_SAMPLES if args.smoke else QUICK_SAMPLES if args.quick else DEFAULT_SAMPLES)
    advised = args.advised_samples or (
        SMOKE_ADVISED_SAMPLES if args.smoke else QUICK_ADVISED_SAMPLES if args.quick else ADVISED_SAMPLES
    )
    phase_s = args.seconds or (SMOKE_PHASE_S if args.smoke else QUICK_PHASE_S if args.quick else PHASE_S)
    print("\n".join(machine()))
    print(
        f"{samples} interleaved samples per op ({advised} at the advised cadence); sustained phases of"
        f" {phase_s:g} s with {CLIENTS} clients",
        flush=True,
    )
    started = time.perf_counter()
    results = await run(samples, advised, phase_s, may_install=not (args.smoke or args.no_install))
    print()
    print(table(results))
    print()
    print(ratios(results))
    print(f"\nload average at end (1/5/15 min): {load_average()}")
    print(f"total run time: {time.perf_counter() - started:.1f} s")


def main(argv: Sequence[str] | None = None) -> None:
    run_main(lambda: amain(argv))


if __name__ == "__main__":
    main()
