"""Memory of a worker and a front server against the number of tasks waiting for input, and read latency.

    .venv/bin/python -m benchmarks.memory [--tasks N] [--quick | --smoke] [--in-flight K]

Self-contained: it starts its own embedded Temporal dev server (SQLite file in a
temp dir), one worker and one front server as subprocesses
(`python -m mcp_tasks_temporal worker|serve --app mcp_tasks_temporal.testing.conformance:app`),
and creates N `confirm_delete` tasks over HTTP (`--tasks`, 10,000 by default,
1,000 with `--quick`), each of which asks for a confirmation and then waits for
it (`input_required`). Every 1,000 tasks (250 with `--quick`), once the worker
has caught up with the creates, it samples the resident memory (VmRSS of the
process and its children) of the worker, the front and Temporal.

The claim it checks: neither the worker nor the front holds per-task state, so
their RSS stays flat however many tasks wait. The worker keeps at most 1,000
workflows in its cache (the SDK's default) and evicts the rest; the front keeps
nothing. Then it times `tasks/get` through the front over 200 random waiting
tasks (most of them evicted from the worker's cache), over 200 tasks answered
and closed with the worker then stopped, and over waiting tasks with the worker
stopped.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import temporalio

from mcp_tasks_temporal.ops.dev.embedded_temporal import embedded_temporal
from tests.wire import HttpMcp, TaskCalls, base_headers, request_message

from ._common import KEEPALIVE_EXPIRY_S, find_temporal_pid, free_port

APP = "mcp_tasks_temporal.testing.conformance:app"
TOOL = "confirm_delete"
DEFAULT_TASKS = 10_000
QUICK_TASKS = 1_000
SAMPLE_EVERY = 1_000
QUICK_SAMPLE_EVERY = 250
READ_SAMPLES = 200
# --smoke: every phase once on a few dozen tasks, to prove the run; its figures mean nothing.
SMOKE_TASKS = 24
SMOKE_SAMPLE_EVERY = 12
SMOKE_READ_SAMPLES = 6
WARMUP = 5
IN_FLIGHT = 16
TAIL = 20
"""Before a memory sample, the last TAIL tasks created must be waiting: the worker has caught up."""
CATCH_UP_S = 120.0
WORKER_CACHE = 1000  # temporalio.worker.Worker(max_cached_workflows=...) default


# --- processes -----------------------------------------------------------------------------------


@dataclass
class Child:
    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path

    def log(self, tail: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-tail:] if self.log_path.exists() else ""

    @property
    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, timeout: float = 20) -> None:
        if not self.alive:
            return
        os.killpg(self.popen.pid, signal.SIGTERM)
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(timeout)


def spawn(name: str, args: list[str], workdir: Path) -> Child:
    log_path = workdir / f"{name}.log"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    with log_path.open("ab") as log:
        popen = subprocess.Popen(
            [sys.executable, "-m", "mcp_tasks_temporal", *args],
            stdout=log,
            stderr=log,
            env=env,
            start_new_session=True,
        )
    return Child(name, popen, log_path)


async def until(predicate: Any, *, bound_s: float, what: str) -> None:
    try:
        with anyio.fail_after(bound_s):
            while not await predicate():
                await anyio.sleep(0.1)
    except TimeoutError:
        raise TimeoutError(f"timed out after {bound_s:g} s waiting for {what}") from None


async def start_worker(workdir: Path, temporal: str, task_queue: str) -> Child:
    worker = spawn("worker", ["worker", "--temporal", temporal, "--task-queue", task_queue, "--app", APP], workdir)

    async def ready() -> bool:
        if not worker.alive:
            raise RuntimeError(f"the worker exited:\n{worker.log()}")
        return "mcp-tasks-temporal worker:" in worker.log()

    await until(ready, bound_s=60, what="the worker")
    return worker


async def start_front(workdir: Path, temporal: str, task_queue: str, port: int, http: httpx.AsyncClient) -> Child:
    args = ["serve", "--temporal", temporal, "--task-queue", task_queue, "--app", APP, "--port", str(port)]
    args += ["--max-inline-budget-ms", "0"]  # tasks, however quick their tools
    front = spawn("front", args, workdir)
    url = f"http://127.0.0.1:{port}/mcp"

    async def ready() -> bool:
        if not front.alive:
            raise RuntimeError(f"the front server exited:\n{front.log()}")
        try:
            response = await http.post(
                url,
                content=json.dumps(request_message(0, "server/discover", None)),
                headers=base_headers("server/discover"),
                timeout=2,
            )
        except httpx.TransportError:
            return False
        return response.status_code == 200

    await until(ready, bound_s=60, what="the front server")
    return front


def _parents() -> dict[int, int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after the last ')'.
        parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    return parents


def cpu_s(pid: int) -> float:
    """User + system CPU seconds the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int | None) -> float:
    """VmRSS of `pid` plus all its descendants, in MB."""
    if pid is None:
        return float("nan")
    parents = _parents()
    family = {pid}
    grew = True
    while grew:
        grew = False
        for child, parent in parents.items():
            if parent in family and child not in family:
                family.add(child)
                grew = True
    total_kb = 0
    for member in family:
        try:
            for line in Path(f"/proc/{member}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total_kb += int(line.split()[1])
        except OSError:
            continue
    return total_kb / 1024


# --- the wire ------------------------------------------------------------------------------------


async def create(mcp: TaskCalls, filename: str) -> str:
    result = (await mcp.call_tool(TOOL, {"filename": filename}, capabilities={"elicitation": {}})).result
    if result.get("resultType") != "task":
        raise RuntimeError(f"expected a task, got {result}")
    return str(result["taskId"])


# --- measuring -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemorySample:
    waiting: int
    worker_mb: float
    front_mb: float
    temporal_mb: float
    created_per_s: float
    """Creates per second through the front, in the batch before this sample."""
    waiting_per_s: float
    """Tasks per second of that batch that reached `input_required` (create to the worker catching up)."""


@dataclass(frozen=True)
class Latency:
    case: str
    ms: list[float]

    def pct(self, q: int) -> float:
        if len(self.ms) == 1:
            return self.ms[0]
        return statistics.quantiles(self.ms, n=100, method="inclusive")[q - 1]


async def create_many(mcp: TaskCalls, start: int, count: int, in_flight: int, into: list[str]) -> None:
    limiter = anyio.CapacityLimiter(in_flight)
    made: dict[int, str] = {}

    async def one(i: int) -> None:
        async with limiter:
            made[i] = await create(mcp, f"file-{i}.txt")

    async with anyio.create_task_group() as group:
        for i in range(start, start + count):
            group.start_soon(one, i)
    into.extend(made[i] for i in sorted(made))


async def until_waiting(mcp: TaskCalls, task_ids: Sequence[str]) -> None:
    """Bounded poll until every one of these tasks is `input_required`."""
    pending = list(task_ids)
    with anyio.fail_after(CATCH_UP_S):
        while pending:
            pending = [tid for tid in pending if (await mcp.get(tid)).result["status"] != "input_required"]
            if pending:
                await anyio.sleep(0.2)


async def until_completed(mcp: TaskCalls, task_ids: Sequence[str], in_flight: int) -> None:
    """Bounded poll until every one of these tasks is `completed`."""
    pending = list(task_ids)
    limiter = anyio.CapacityLimiter(in_flight)
    with anyio.fail_after(CATCH_UP_S):
        while pending:
            still: list[str] = []

            async def one(task_id: str, still: list[str] = still) -> None:
                async with limiter:
                    task = (await mcp.get(task_id)).result
                if task["status"] != "completed":
                    if task["status"] != "working" and task["status"] != "input_required":
                        raise RuntimeError(f"task {task_id} ended {task['status']}: {task}")
                    still.append(task_id)

            async with anyio.create_task_group() as group:
                for task_id in pending:
                    group.start_soon(one, task_id)
            pending = still
            if pending:
                await anyio.sleep(0.2)


async def time_gets(mcp: TaskCalls, case: str, task_ids: Sequence[str], expect: str) -> Latency:
    for task_id in task_ids[:WARMUP]:
        await mcp.get(task_id)
    ms: list[float] = []
    for task_id in task_ids:
        started = time.perf_counter()
        task = (await mcp.get(task_id)).result
        ms.append((time.perf_counter() - started) * 1000)
        if task["status"] != expect:
            raise RuntimeError(f"{case}: expected {expect}, got {task['status']}")
    return Latency(case, ms)


async def answer(mcp: TaskCalls, task_ids: Sequence[str], in_flight: int) -> None:
    limiter = anyio.CapacityLimiter(in_flight)

    async def one(task_id: str) -> None:
        async with limiter:
            task = (await mcp.get(task_id)).result
            [key] = task["inputRequests"]
            acked = await mcp.update(task_id, {key: {"action": "accept", "content": {"confirm": True}}})
            if "result" not in acked.body:
                raise RuntimeError(f"tasks/update failed: {acked.body}")

    async with anyio.create_task_group() as group:
        for task_id in task_ids:
            group.start_soon(one, task_id)


# --- the run -------------------------------------------------------------------------------------


@dataclass
class Report:
    tasks: int
    samples: list[MemorySample] = field(default_factory=list[MemorySample])
    latencies: list[Latency] = field(default_factory=list[Latency])
    create_s: float = 0.0
    total_s: float = 0.0
    cpu_ms_per_task: dict[str, float] = field(default_factory=dict[str, float])
    """CPU time of each process over the creates (until every task waited), per task."""


def machine() -> str:
    models = [
        line.split(":", 1)[1].strip()
        for line in Path("/proc/cpuinfo").read_text().splitlines()
        if line.startswith("model name")
    ]
    return (
        f"nproc: {len(os.sched_getaffinity(0))}, cpu: {models[0] if models else platform.processor() or 'unknown'}, "
        f"python: {sys.version.split()[0]}, temporalio: {temporalio.__version__}"
    )


async def run(tasks: int, sample_every: int, in_flight: int, workdir: Path, read_samples: int = READ_SAMPLES) -> Report:
    report = Report(tasks)
    port, front_port = free_port(), free_port()
    task_queue = "benchmark-memory"
    started = time.monotonic()
    async with (
        embedded_temporal(state_dir=workdir / "temporal", port=port, ui_port=None) as temporal,
        httpx.AsyncClient(
            timeout=60, limits=httpx.Limits(max_connections=in_flight * 2, keepalive_expiry=KEEPALIVE_EXPIRY_S)
        ) as http,
    ):
        children: list[Child] = []
        try:
            worker = await start_worker(workdir, temporal.address, task_queue)
            children.append(worker)
            front = await start_front(workdir, temporal.address, task_queue, front_port, http)
            children.append(front)
            mcp = TaskCalls(HttpMcp(f"http://127.0.0.1:{front_port}/mcp", http))
            server_pid = find_temporal_pid(port)

            def sample(waiting: int, rate: float, ready: float) -> None:
                row = MemorySample(
                    waiting, rss_mb(worker.popen.pid), rss_mb(front.popen.pid), rss_mb(server_pid), rate, ready
                )
                report.samples.append(row)
                print(
                    f"  {row.waiting:>6} waiting: worker {row.worker_mb:.0f} MB, front {row.front_mb:.0f} MB, "
                    f"temporal {row.temporal_mb:.0f} MB ({rate:.0f} creates/s, {ready:.0f} waiting/s)",
                    flush=True,
                )

            sample(0, 0.0, 0.0)
            cpu_before = {
                name: cpu_s(pid)
                for name, pid in (("worker", worker.popen.pid), ("front", front.popen.pid), ("temporal", server_pid))
                if pid is not None
            }
            task_ids: list[str] = []
            create_started = time.monotonic()
            while len(task_ids) < tasks:
                batch = min(sample_every, tasks - len(task_ids))
                batch_started = time.monotonic()
                await create_many(mcp, len(task_ids), batch, in_flight, task_ids)
                rate = batch / (time.monotonic() - batch_started)
                await until_waiting(mcp, task_ids[-TAIL:])
                sample(len(task_ids), rate, batch / (time.monotonic() - batch_started))
            report.create_s = time.monotonic() - create_started
            for name, pid in (("worker", worker.popen.pid), ("front", front.popen.pid), ("temporal", server_pid)):
                if pid is not None:
                    report.cpu_ms_per_task[name] = (cpu_s(pid) - cpu_before[name]) * 1000 / tasks

            rng = random.Random(2663)
            chosen = rng.sample(task_ids, min(read_samples, len(task_ids)))
            others = [tid for tid in rng.sample(task_ids, min(read_samples * 2, len(task_ids))) if tid not in chosen]
            evicted = max(0, len(task_ids) - WORKER_CACHE) / len(task_ids)
            report.latencies.append(
                await time_gets(
                    mcp, f"waiting, worker up (~{evicted:.0%} evicted from its cache)", chosen, "input_required"
                )
            )
            await answer(mcp, chosen, in_flight)
            await until_completed(mcp, chosen, in_flight)
            worker.stop()
            report.latencies.append(await time_gets(mcp, "closed (completed), worker stopped", chosen, "completed"))
            report.latencies.append(
                await time_gets(mcp, "waiting, worker stopped", others[:read_samples], "input_required")
            )
        except BaseException:
            for child in children:
                print(f"--- {child.name} log (tail)\n{child.log()}", file=sys.stderr)
            raise
        finally:
            for child in children:
                child.stop()
    report.total_s = time.monotonic() - started
    return report


def render(report: Report) -> str:
    lines = [f"benchmarks.memory: {report.tasks} `{TOOL}` tasks waiting for input; {machine()}", ""]
    lines.append("| tasks waiting | worker RSS MB | front RSS MB | temporal RSS MB | creates/s | waiting/s |")
    lines.append("|---:|---:|---:|---:|---:|---:|")
    for s in report.samples:
        rate = f"{s.created_per_s:.0f}" if s.created_per_s else "-"
        ready = f"{s.waiting_per_s:.0f}" if s.waiting_per_s else "-"
        lines.append(f"| {s.waiting} | {s.worker_mb:.1f} | {s.front_mb:.1f} | {s.temporal_mb:.1f} | {rate} | {ready} |")
    at_1000 = next((s for s in report.samples if s.waiting >= 1000), None)
    last = report.samples[-1]
    if at_1000 is not None and last.waiting > at_1000.waiting:
        lines.append("")
        lines.append(
            f"RSS at {last.waiting} vs at {at_1000.waiting} tasks: worker x{last.worker_mb / at_1000.worker_mb:.2f}, "
            f"front x{last.front_mb / at_1000.front_mb:.2f}, temporal x{last.temporal_mb / at_1000.temporal_mb:.2f}"
        )
    lines.append("")
    lines.append("| tasks/get through the front | n | p50 ms | p99 ms | max ms |")
    lines.append("|---|---:|---:|---:|---:|")
    lines.extend(
        f"| {lat.case} | {len(lat.ms)} | {lat.pct(50):.1f} | {lat.pct(99):.1f} | {max(lat.ms):.1f} |"
        for lat in report.latencies
    )
    lines.append("")
    lines.append(f"creates: {report.tasks} in {report.create_s:.0f} s; whole run {report.total_s:.0f} s")
    cpu = ", ".join(f"{name} {ms:.1f}" for name, ms in report.cpu_ms_per_task.items())
    lines.append(f"CPU ms per task, create to waiting: {cpu}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.memory", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=None, help=f"tasks to create ({DEFAULT_TASKS})")
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--quick", action="store_true", help=f"{QUICK_TASKS} tasks, a sample every {QUICK_SAMPLE_EVERY}")
    modes.add_argument(
        "--smoke",
        action="store_true",
        help=f"{SMOKE_TASKS} tasks, {SMOKE_READ_SAMPLES} reads per case: proves it runs, in seconds",
    )
    parser.add_argument("--in-flight", type=int, default=IN_FLIGHT, help="concurrent requests while creating")
    args = parser.parse_args(argv)
    tasks = args.tasks or (SMOKE_TASKS if args.smoke else QUICK_TASKS if args.quick else DEFAULT_TASKS)
    if args.smoke:
        sample_every = SMOKE_SAMPLE_EVERY
    else:
        sample_every = QUICK_SAMPLE_EVERY if args.quick or tasks < 2 * SAMPLE_EVERY else SAMPLE_EVERY
    read_samples = SMOKE_READ_SAMPLES if args.smoke else READ_SAMPLES
    # Bounded: creates run at tens per second here; allow a slow machine several times that.
    bound_s = 180 + tasks * 0.12

    async def bounded() -> Report:
        with anyio.fail_after(bound_s):
            with tempfile.TemporaryDirectory(prefix="mcp-tasks-memory-") as tmp:
                return await run(tasks, sample_every, args.in_flight, Path(tmp), read_samples)

    print(f"benchmarks.memory: {tasks} tasks, sampling every {sample_every} (bound {bound_s:.0f} s)", flush=True)
    print(render(anyio.run(bounded)))


if __name__ == "__main__":
    main()
