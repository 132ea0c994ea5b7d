"""What the benchmarks share: the machine line, percentiles, tables, and the product run as real processes.

`product_stack()` starts an embedded Temporal dev server (SQLite file in a temp
dir), then `mcp-tasks-temporal worker` and `mcp-tasks-temporal serve` as
subprocesses in their own process groups, exactly as an operator runs them,
and tears all of it down on the way out, exceptions and Ctrl-C included.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TypeVar

import anyio
import httpx
import temporalio
from anyio.abc import Process
from temporalio.client import Client

from mcp_tasks_temporal.ops.dev.embedded_temporal import embedded_temporal, temporal_cli
from mcp_tasks_temporal.temporal.connection import connect_temporal
from tests.wire import base_headers, request_message

REPO_ROOT: Final = Path(__file__).resolve().parent.parent
CONFORMANCE_APP: Final = "mcp_tasks_temporal.testing.conformance:app"
HOST: Final = "127.0.0.1"
# Under uvicorn's 5 s keep-alive timeout: a connection the server is closing must not be reused (ReadError).
KEEPALIVE_EXPIRY_S: Final = 2.0
T = TypeVar("T")


# --- running -------------------------------------------------------------------------------------


def run_main(amain: Callable[[], Awaitable[None]]) -> None:
    """`asyncio.run`, with SIGTERM cancelling the run like Ctrl-C does, so every finally block runs.

    Started from a shell in the background, a process inherits SIGINT ignored; SIGINT is
    restored too, so `python -m benchmarks` can interrupt its children either way.
    """
    signal.signal(signal.SIGINT, signal.default_int_handler)

    async def cancellable() -> None:
        task = asyncio.current_task()
        assert task is not None
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        await amain()

    try:
        asyncio.run(cancellable())
    except asyncio.CancelledError:
        print("\nstopped by SIGTERM", file=sys.stderr)
        raise SystemExit(143) from None
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        raise SystemExit(130) from None


# --- numbers and tables ----------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def percentile(values: Sequence[float], q: int) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def render(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table, padded so it also reads as plain text."""
    cells = [list(header), *(list(row) for row in rows)]
    widths = [max(len(line[i]) for line in cells) for i in range(len(header))]
    lines = [
        "| " + " | ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)) + " |" for line in cells
    ]
    lines.insert(1, "|" + "|".join("-" * (width + 2) for width in widths) + "|")
    return "\n".join(lines)


def machine() -> list[str]:
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    models = [line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if line.startswith("model name")]
    cli = subprocess.run([temporal_cli(), "--version"], capture_output=True, text=True, check=False).stdout.strip()
    return [
        f"nproc: {len(os.sched_getaffinity(0))}",
        f"cpu: {models[0] if models else platform.processor() or 'unknown'}",
        f"python: {sys.version.split()[0]}",
        f"temporalio: {temporalio.__version__}",
        f"temporal CLI: {cli}",
        f"load average at start (1/5/15 min): {load_average()}",
    ]


def load_average() -> str:
    """Other work on this machine competes with the benchmark; the load average tells how much."""
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


# --- /proc -----------------------------------------------------------------------------------------

_CLOCK_TICKS: Final = os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    """VmRSS of a process, in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far."""
    # The command name (field 2) may hold spaces; the fields after its closing parenthesis do not.
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def find_temporal_pid(port: int) -> int | None:
    """The dev server's pid (`embedded_temporal` does not expose it), found by its command line."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"start-dev" in argv and str(port).encode() in argv:
            return int(entry.name)
    return None


@dataclass
class CpuMeter:
    """CPU used by named processes over a span of wall time, as % of one core."""

    pids: Mapping[str, int]

    def start(self) -> tuple[float, dict[str, float]]:
        return time.perf_counter(), {name: cpu_seconds(pid) for name, pid in self.pids.items()}

    def stop(self, started: tuple[float, dict[str, float]]) -> dict[str, float]:
        wall = time.perf_counter() - started[0]
        return {name: 100 * (cpu_seconds(pid) - started[1][name]) / wall for name, pid in self.pids.items()}


def cpu_note(usage: Mapping[str, float]) -> str:
    return " ".join(f"{name} {pct:.0f}%" for name, pct in usage.items())


@dataclass(frozen=True)
class TemporalMetrics:
    """The dev server's Prometheus endpoint, which it opens on a random port and names in its log."""

    url: str

    @classmethod
    async def find(cls, state_dir: Path) -> TemporalMetrics | None:
        log = anyio.Path(state_dir / "temporal.log")
        match = re.search(r"Temporal Metrics:\s+(\S+)", await log.read_text(errors="replace"))
        return cls(match.group(1).replace("localhost", HOST)) if match else None

    async def requests(self, http: httpx.AsyncClient, namespace: str = "default") -> dict[str, float]:
        """`service_requests` of the frontend service, by operation: every RPC any client made."""
        text = (await http.get(self.url)).text
        counts: dict[str, float] = {}
        for line in text.splitlines():
            if not line.startswith("service_requests{"):
                continue
            labels, _, value = line.rpartition(" ")
            if 'service_name="frontend"' in labels and f'namespace="{namespace}"' in labels:
                operation = re.search(r'operation="([^"]+)"', labels)
                if operation:
                    counts[operation.group(1)] = float(value)
        return counts


def rpc_delta(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    return {op: after[op] - before.get(op, 0.0) for op in after if after[op] - before.get(op, 0.0) > 0}


# --- the product as processes ----------------------------------------------------------------------


@dataclass
class Child:
    """A subprocess in its own process group, with its output in a log file."""

    name: str
    process: Process
    log_path: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    async def log(self) -> str:
        path = anyio.Path(self.log_path)
        return await path.read_text(errors="replace") if await path.exists() else ""

    async def check_alive(self) -> None:
        if self.process.returncode is not None:
            raise RuntimeError(f"{self.name} exited with {self.process.returncode}:\n{(await self.log())[-3000:]}")

    async def stop(self, timeout_s: float = 10.0) -> None:
        """SIGTERM to the group, SIGKILL if it lingers; shielded, so it also runs while cancelling."""
        with anyio.CancelScope(shield=True):
            if self.process.returncode is None:
                _signal_group(self.pid, signal.SIGTERM)
                with anyio.move_on_after(timeout_s):
                    await self.process.wait()
            if self.process.returncode is None:
                _signal_group(self.pid, signal.SIGKILL)
                await self.process.wait()
            # Anything the child left in its group goes too.
            _signal_group(self.pid, signal.SIGKILL)


def _signal_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass


async def start_child(
    name: str, command: Sequence[str], log_dir: Path, *, env: Mapping[str, str] | None = None
) -> Child:
    """`command` in its own process group, with this process's environment plus `env`."""
    log_path = log_dir / f"{name}.log"
    with log_path.open("ab") as log:
        child_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        process = await anyio.open_process(
            list(command), stdout=log, stderr=log, cwd=REPO_ROOT, env=child_env, start_new_session=True
        )
    return Child(name, process, log_path)


@dataclass(frozen=True)
class Stack:
    temporal_address: str
    temporal_port: int
    temporal_pid: int | None
    task_queue: str
    client: Client
    metrics: TemporalMetrics | None
    worker: Child
    front: Child
    url: str
    state_dir: Path
    worker_metrics: str | None = None
    """The worker's Prometheus endpoint (the Temporal SDK's metrics), with `product_stack(metrics=True)`."""
    front_metrics: str | None = None
    """The front's, likewise."""

    def pids(self, bench: bool = True) -> dict[str, int]:
        named = {"front": self.front.pid, "worker": self.worker.pid}
        if self.temporal_pid is not None:
            named["temporal"] = self.temporal_pid
        if bench:
            named["bench"] = os.getpid()
        return named


@asynccontextmanager
async def product_stack(
    prefix: str,
    *,
    task_queue: str = "bench",
    app: str = CONFORMANCE_APP,
    metrics: bool = False,
    max_inline_budget_ms: int | None = 0,
) -> AsyncGenerator[Stack]:
    """Dev server + `mcp-tasks-temporal worker` + `mcp-tasks-temporal serve`, all on 127.0.0.1.

    With `metrics`, the worker and the front each serve their Prometheus endpoint (`--metrics-port`).
    `max_inline_budget_ms` caps how long the front waits for a tool before it answers with the task: 0 (every
    call a task, what most benchmarks measure) unless given; `None` leaves each tool its own budget.
    """
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        state_dir = Path(tmp)
        port = free_port()
        async with AsyncExitStack() as stack:
            server = await stack.enter_async_context(embedded_temporal(state_dir=state_dir, port=port, ui_port=None))
            client = await connect_temporal(server.address, namespace=server.namespace)
            common = ["--temporal", server.address, "--task-queue", task_queue, "--app", app]
            cli = [sys.executable, "-m", "mcp_tasks_temporal"]
            worker_metrics, front_metrics = (free_port(), free_port()) if metrics else (None, None)
            worker = await start_child("worker", [*cli, "worker", *common, *_metrics_args(worker_metrics)], state_dir)
            stack.push_async_callback(worker.stop)
            front_port = free_port()
            capped = ["--max-inline-budget-ms", str(max_inline_budget_ms)] if max_inline_budget_ms is not None else []
            serve = [*cli, "serve", *common, "--port", str(front_port), *capped, *_metrics_args(front_metrics)]
            front = await start_child("front", serve, state_dir)
            stack.push_async_callback(front.stop)
            url = f"http://{HOST}:{front_port}/mcp"
            await _until_ready(worker, front, url)
            yield Stack(
                temporal_address=server.address,
                temporal_port=port,
                temporal_pid=find_temporal_pid(port),
                task_queue=task_queue,
                client=client,
                metrics=await TemporalMetrics.find(state_dir),
                worker=worker,
                front=front,
                url=url,
                state_dir=state_dir,
                worker_metrics=_metrics_url(worker_metrics),
                front_metrics=_metrics_url(front_metrics),
            )


def _metrics_args(port: int | None) -> list[str]:
    return ["--metrics-port", str(port)] if port is not None else []


def _metrics_url(port: int | None) -> str | None:
    return f"http://{HOST}:{port}/metrics" if port is not None else None


async def _until_ready(worker: Child, front: Child, url: str, timeout_s: float = 60.0) -> None:
    probe = request_message(0, "server/discover", None)
    with anyio.fail_after(timeout_s):
        while "mcp-tasks-temporal worker:" not in await worker.log():
            await worker.check_alive()
            await anyio.sleep(0.1)
        async with httpx.AsyncClient(timeout=2) as http:
            while True:
                await front.check_alive()
                try:
                    response = await http.post(url, content=json.dumps(probe), headers=base_headers("server/discover"))
                    if response.status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                await anyio.sleep(0.1)


def http_client(connections: int = 64) -> httpx.AsyncClient:
    """HTTP/1.1 with keep-alive, enough connections for the most concurrent phase."""
    limits = httpx.Limits(
        max_connections=connections, max_keepalive_connections=connections, keepalive_expiry=KEEPALIVE_EXPIRY_S
    )
    return httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(60.0), trust_env=False)


async def bounded(limit: int, jobs: Sequence[Callable[[], Awaitable[T]]]) -> list[T]:
    """Run `jobs` with at most `limit` in flight; their results in order."""
    results: dict[int, T] = {}
    limiter = anyio.CapacityLimiter(limit)

    async def one(index: int) -> None:
        async with limiter:
            results[index] = await jobs[index]()

    async with anyio.create_task_group() as group:
        for index in range(len(jobs)):
            group.start_soon(one, index)
    return [results[index] for index in range(len(jobs))]
