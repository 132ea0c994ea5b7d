"""The servers of the peer comparison (`benchmarks/peers.py`): how each is called, and how each is started.

Ours and fastmcp-tasks speak the tasks extension at 2026-07-28 (`TaskServer`); mcp-agent speaks mcp 1.x over
a session, its async tools answering `{workflow_id, run_id}` and its `workflows-get_status` tool reading the
run (`McpAgentServer`). Each measured operation is a method, so the benchmark times the same step on each.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from collections.abc import AsyncGenerator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, cast

import anyio
import anyio.to_thread
import httpx

from tests.wire import HttpMcp, Reply, TaskCalls

from . import mcp_agent_venv
from ._common import HOST, Child, free_port, http_client, start_child
from .throughput import LONG_TOOL, SHORT_TOOL

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
    task_tool: str = "slow_compute"
    """What it creates tasks with: on ours `slow_compute_as_task`, whose every call is a task at once (a quick
    `slow_compute` call is answered with its result there)."""

    def advice(self) -> str:
        return f"pollIntervalMs {self.poll_interval_ms}" if self.poll_interval_ms else "none"

    async def start(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        result = (await self.mcp.call_tool(self.task_tool, dict(arguments))).result
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
            check_result(self.name, answer)  # answered in the call: no task to poll
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
                    check_result(self.name, task.get("result"))
                    return
                if task["status"] in TERMINAL_FAILURES:
                    raise RuntimeError(f"{self.name}: task {task_id} is {task['status']}")


def check_result(server: str, result: Any) -> None:
    """Raise unless `result` is a tool's successful `CallToolResult`."""
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
