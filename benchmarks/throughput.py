"""Create and read through the front server against the raw temporalio calls under them, and sustained creates/s.

    .venv/bin/python -m benchmarks.throughput [--samples N] [--quick | --smoke]

Self-contained: it starts its own Temporal dev server (SQLite file in a temp
dir) and runs `mcp-tasks-temporal worker` and `mcp-tasks-temporal serve` as
subprocesses with the conformance fixture app. The worker keeps running, so
every task created here completes (`slow_compute` with seconds=0.1); its CPU
competes with the front, the dev server and this process, on the same cores.
Ours and raw are interleaved sample by sample (latency) or phase by phase with
a drain in between (sustained), so drift on the machine hits both alike.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
from temporalio.client import Client

from mcp_tasks_temporal.front.gateway import TemporalTaskGateway, now_ms
from mcp_tasks_temporal.temporal.contract import STATE_QUERY, TOOL_TASK_WORKFLOW, ToolTaskInput
from mcp_tasks_temporal.temporal.feed_contract import TASK_FEED_WORKFLOW
from mcp_tasks_temporal.temporal.ids import UNKEYED, new_task_id
from tests.wire import HttpMcp, TaskCalls, envelope

from ._common import (
    CpuMeter,
    Stack,
    cpu_note,
    http_client,
    load_average,
    machine,
    ms_since,
    percentile,
    positive_int,
    product_stack,
    render,
    run_main,
)

DEFAULT_SAMPLES = 200
QUICK_SAMPLES = 20
WARMUP = 5
INTERLEAVE_SEED = 2663
PHASE_S = 10.0
QUICK_PHASE_S = 3.0
# --smoke: every case and concurrency once, to prove the run; its figures mean nothing.
SMOKE_SAMPLES = 3
SMOKE_PHASE_S = 0.5
SMOKE_CONCURRENCY: Final = (1, 8)
SMOKE_DRAIN_TIMEOUT_S = 10.0
CONCURRENCY: Final = (1, 8, 32)
DRAIN_TIMEOUT_S = 60.0
QUICK_DRAIN_TIMEOUT_S = 20.0
RUN_TIMEOUT_S = 600.0
QUICK_RUN_TIMEOUT_S = 200.0
GET_P50_TARGET = 1.3
COMPLETED_VS_DESCRIBE_TARGET = 1.1
SUSTAINED_TARGET = 0.9
CREATE_OP: Final = "tools/call -> CreateTaskResult (HTTP)"
START_OP: Final = "raw start_workflow"
FLOOR_OP: Final = "tools/call greet, no task (HTTP)"
SHORT_TOOL: Final = {"seconds": 0.1, "label": "bench"}
LONG_TOOL: Final = {"seconds": 3600, "label": "bench-running"}


# --- sampling --------------------------------------------------------------------------------------


@dataclass
class Op:
    name: str
    call: Callable[[], Awaitable[Any]]
    ms: list[float] = field(default_factory=list[float])

    async def take(self) -> None:
        started = time.perf_counter()
        await self.call()
        self.ms.append(ms_since(started))

    @property
    def p50(self) -> float:
        return percentile(self.ms, 50)

    @property
    def p99(self) -> float:
        return percentile(self.ms, 99)


async def interleave(ops: Sequence[Op], samples: int) -> None:
    """Warm every op up, then take one sample of each per round, so drift on the machine hits all alike.

    Each round runs the ops in a fresh (seeded) random order, so none always runs right after the
    same neighbour: a create leaves the worker and the dev server busy with that task for a while,
    and a rotation of one fixed order would still put the same read after it in almost every round.
    """
    for op in ops:
        for _ in range(WARMUP):
            await op.call()
    order = list(ops)
    shuffler = random.Random(INTERLEAVE_SEED)
    for _ in range(samples):
        shuffler.shuffle(order)
        for op in order:
            await op.take()


# --- the calls -------------------------------------------------------------------------------------


@dataclass
class SlowComputeTasks:
    """`slow_compute` tasks through one MCP server, ours or a peer: create one, read one, wait for a state."""

    mcp: TaskCalls

    tool = "slow_compute"
    """The tool its tasks run: one whose every call is answered with its task (a front capped at 0, or a tool
    declared `inline_budget_ms=0`)."""

    async def create(self, arguments: dict[str, Any] = SHORT_TOOL) -> str:
        result = (await self.mcp.call_tool(self.tool, arguments)).result
        if result.get("resultType") != "task":
            raise RuntimeError(f"expected a CreateTaskResult, got {result}")
        return str(result["taskId"])

    async def get(self, task_id: str) -> dict[str, Any]:
        return (await self.mcp.get(task_id)).result

    async def until(self, task_id: str, done: Callable[[dict[str, Any]], bool], timeout_s: float = 60) -> None:
        with anyio.fail_after(timeout_s):
            while not done(await self.get(task_id)):
                await anyio.sleep(0.05)


@dataclass
class Calls(SlowComputeTasks):
    """Each operation through the front, and the raw temporalio calls under it."""

    stack: Stack | None = None
    ttl_ms: int | None = None
    poll_interval_ms: int = 1000

    async def learn_task_settings(self) -> None:
        """The ttlMs and pollIntervalMs the front gives `slow_compute` tasks, so raw starts carry the same."""
        result = (await self.mcp.call_tool(self.tool, SHORT_TOOL)).result
        self.ttl_ms, self.poll_interval_ms = result["ttlMs"], result["pollIntervalMs"]

    @property
    def product(self) -> Stack:
        if self.stack is None:
            raise RuntimeError("Calls needs the product's stack")
        return self.stack

    @property
    def client(self) -> Client:
        return self.product.client

    async def greet(self) -> None:
        result = (await self.mcp.call_tool("greet", {"name": "bench"})).result
        if result.get("resultType") != "complete":
            raise RuntimeError(f"expected a synchronous result, got {result}")

    def task_input(self, label: str) -> ToolTaskInput:
        """What the front hands `start_workflow` for `slow_compute` with SHORT_TOOL's arguments."""
        return ToolTaskInput(
            task_id=new_task_id(),
            tool="slow_compute",
            arguments={**SHORT_TOOL, "label": label},
            meta=envelope(),
            created_at_ms=now_ms(),
            ttl_ms=self.ttl_ms,
            poll_interval_ms=self.poll_interval_ms,
        )

    async def raw_start(self) -> None:
        task = self.task_input("raw")
        await self.client.start_workflow(
            TOOL_TASK_WORKFLOW, task, id=UNKEYED.workflow_id(task.task_id, None), task_queue=self.product.task_queue
        )

    async def gateway_create(self) -> None:
        """The front's own Temporal call (start + memo + ID policies + summary), made from this process."""
        gateway = TemporalTaskGateway(self.client, task_queue=self.product.task_queue)
        await gateway.create(self.task_input("gateway"), None)

    async def running_count(self) -> int:
        # The tasks only: the shared-settings record every process of the queue writes runs as long as the
        # deployment does, on a queue of its own, and the task feed's shards as long as the front follows them.
        query = f'TaskQueue="{self.product.task_queue}" AND ExecutionStatus="Running"'
        query += f' AND WorkflowType != "{TASK_FEED_WORKFLOW}"'
        return (await self.client.count_workflows(query)).count

    async def drain(self, timeout_s: float, *, held: int = 0) -> float:
        """Wait until the worker has finished every task but the `held` long-lived ones; the seconds it took."""
        started = time.perf_counter()
        with anyio.move_on_after(timeout_s):
            while await self.running_count() > held:
                await anyio.sleep(0.25)
        return time.perf_counter() - started


# --- the cases -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    case: str
    op: Op
    baseline: Op | None = None
    target: float | None = None
    notes: str = ""

    @property
    def ratio(self) -> float | None:
        return self.op.p50 / self.baseline.p50 if self.baseline else None

    @property
    def verdict(self) -> str:
        if self.ratio is None or self.target is None:
            return ""
        return f"<= {self.target:g}x: {'met' if self.ratio <= self.target else 'missed'}"

    def cells(self) -> tuple[str, ...]:
        ratio = f"{self.ratio:.2f}" if self.ratio is not None else ""
        op = self.op
        return (self.case, op.name, str(len(op.ms)), f"{op.p50:.1f}", f"{op.p99:.1f}", ratio, self.verdict, self.notes)


async def create_case(calls: Calls, samples: int) -> list[Row]:
    ours = Op(CREATE_OP, calls.create)
    raw = Op(START_OP, calls.raw_start)
    gateway = Op("gateway.create in-process", calls.gateway_create)
    greet = Op(FLOOR_OP, calls.greet)
    await interleave([ours, raw, gateway, greet], samples)
    return [
        Row("(i) create", ours, raw, notes="slow_compute seconds=0.1; ratio vs raw start_workflow"),
        Row("(i) create", raw, notes="same type, ToolTaskInput, queue, ID shape; no memo"),
        Row("(i) create", gateway, raw, notes="the front's call: + memo, ID policies, summary"),
        Row("(iv) floor", greet, notes="SDK synchronous tool call: HTTP + MCP dispatch, no Temporal"),
    ]


async def get_cases(calls: Calls, samples: int) -> list[Row]:
    running_id = await calls.create(LONG_TOOL)
    done_id = await calls.create()
    await calls.until(running_id, lambda task: task["status"] == "working" and "statusMessage" in task)
    await calls.until(done_id, lambda task: task["status"] == "completed")
    running = calls.client.get_workflow_handle(UNKEYED.workflow_id(running_id, None))
    done = calls.client.get_workflow_handle(UNKEYED.workflow_id(done_id, None))

    async def describe_and_result() -> None:
        await done.describe()
        await done.result()

    ours_running = Op("tasks/get (HTTP)", lambda: calls.get(running_id))
    query = Op("raw query mcp_tasks.state", lambda: running.query(STATE_QUERY))
    describe_running = Op("raw describe()", running.describe)
    await interleave([ours_running, query, describe_running], samples)
    ours_done = Op("tasks/get (HTTP)", lambda: calls.get(done_id))
    closed_read = Op("raw describe() + result()", describe_and_result)
    describe_done = Op("raw describe()", done.describe)
    await interleave([ours_done, closed_read, describe_done], samples)
    _ = (await calls.mcp.cancel(running_id)).result
    await calls.until(running_id, lambda task: task["status"] == "cancelled")
    return [
        Row("(ii) get, working", ours_running, query, GET_P50_TARGET, "ratio vs the query"),
        Row("(ii) get, working", query, notes="answered by the worker (cached workflow)"),
        Row("(ii) get, working", describe_running, notes="what tasks/get reads: describe + heartbeat details"),
        Row(
            "(ii) get, completed",
            ours_done,
            describe_done,
            COMPLETED_VS_DESCRIBE_TARGET,
            "ratio vs one describe; after the first read the front answers from its memory of closed tasks",
        ),
        Row("(ii) get, completed", closed_read, notes="what the first tasks/get of a closed task reads"),
        Row("(ii) get, completed", describe_done),
    ]


@dataclass
class Phase:
    """Creates back to back from `concurrency` clients; summed over the phase's runs."""

    name: str
    concurrency: int
    ops: int = 0
    seconds: float = 0.0
    drain_s: float = 0.0
    ms: list[float] = field(default_factory=list[float])
    cpu_pct: dict[str, float] = field(default_factory=dict[str, float])
    """CPU while creating, as % of one core (weighted over the runs)."""
    cpu_s: dict[str, float] = field(default_factory=dict[str, float])
    """CPU seconds used from the first create to the end of the drain: all the work the creates caused."""

    @property
    def rate(self) -> float:
        return self.ops / self.seconds if self.seconds else 0.0

    def cpu_ms_per_op(self) -> str:
        return " ".join(f"{name} {1000 * s / self.ops:.1f}" for name, s in self.cpu_s.items()) if self.ops else ""

    def pct(self) -> str:
        return cpu_note({name: pct / self.seconds for name, pct in self.cpu_pct.items()}) if self.seconds else ""


async def sustained_run(
    calls: Calls, phase: Phase, call: Callable[[], Awaitable[Any]], run_s: float, drain_timeout_s: float
) -> None:
    """One run: `phase.concurrency` clients creating back to back for `run_s`, then the drain."""
    meter = CpuMeter(calls.product.pids())
    deadline = time.perf_counter() + run_s

    async def client() -> None:
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            await call()
            if time.perf_counter() <= deadline:
                phase.ms.append(ms_since(started))
                phase.ops += 1

    whole = meter.start()
    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for _ in range(phase.concurrency):
            group.start_soon(client)
    seconds = min(time.perf_counter(), deadline) - started
    creating = meter.stop(whole)
    phase.drain_s += await calls.drain(drain_timeout_s)
    phase.seconds += seconds
    for name, pct in creating.items():
        phase.cpu_pct[name] = phase.cpu_pct.get(name, 0.0) + pct * seconds
    wall = time.perf_counter() - whole[0]
    for name, pct in meter.stop(whole).items():
        phase.cpu_s[name] = phase.cpu_s.get(name, 0.0) + pct * wall / 100


async def sustained_cases(
    calls: Calls, phase_s: float, drain_timeout_s: float, concurrencies: Sequence[int] = CONCURRENCY
) -> list[tuple[Phase, Phase]]:
    """Ours, raw, raw, ours (half the time each), so a drift over the pair cancels out."""
    pairs: list[tuple[Phase, Phase]] = []
    for concurrency in concurrencies:
        ours, raw = Phase("tools/call (HTTP)", concurrency), Phase("raw start_workflow", concurrency)
        for phase, call in ((ours, calls.create), (raw, calls.raw_start), (raw, calls.raw_start), (ours, calls.create)):
            await sustained_run(calls, phase, call, phase_s / 2, drain_timeout_s)
        pairs.append((ours, raw))
        print(f"sustained x{concurrency}: ours {ours.rate:.1f}/s, raw {raw.rate:.1f}/s", flush=True)
    return pairs


# --- the run ---------------------------------------------------------------------------------------


def create_verdict(rows: Sequence[Row]) -> str:
    """Creating a task costs at most what its two parts cost apart: Temporal's start and the MCP request."""
    ops = {row.op.name: row.op for row in rows}
    create, start, floor = ops[CREATE_OP], ops[START_OP], ops[FLOOR_OP]
    limit = start.p50 + floor.p50
    verdict = "met" if create.p50 <= limit else "missed"
    return (
        f"create: p50 {create.p50:.1f} ms vs raw start {start.p50:.1f} + synchronous tools/call {floor.p50:.1f}"
        f" = {limit:.1f} ms: {create.p50 / limit:.2f}x (target <= 1x: {verdict})"
    )


def latency_table(rows: Sequence[Row]) -> str:
    header = ("case", "op", "n", "p50 ms", "p99 ms", "ours/raw p50", "target", "notes")
    return render(header, [row.cells() for row in rows])


def sustained_table(pairs: Sequence[tuple[Phase, Phase]]) -> str:
    header = (
        "clients",
        "ours creates/s",
        "ours p50/p99 ms",
        "raw starts/s",
        "raw p50/p99 ms",
        "ours/raw",
        "target",
        "drain s (ours/raw)",
    )
    rows: list[tuple[str, ...]] = []
    for ours, raw in pairs:
        ratio = ours.rate / raw.rate if raw.rate else float("nan")
        verdict = f">= {SUSTAINED_TARGET:g}x: {'met' if ratio >= SUSTAINED_TARGET else 'missed'}"
        rows.append(
            (
                str(ours.concurrency),
                f"{ours.rate:.1f}",
                f"{percentile(ours.ms, 50):.1f} / {percentile(ours.ms, 99):.1f}",
                f"{raw.rate:.1f}",
                f"{percentile(raw.ms, 50):.1f} / {percentile(raw.ms, 99):.1f}",
                f"{ratio:.2f}",
                verdict,
                f"{ours.drain_s:.1f} / {raw.drain_s:.1f}",
            )
        )
    return render(header, rows)


def cpu_table(pairs: Sequence[tuple[Phase, Phase]]) -> str:
    header = ("clients", "side", "CPU while creating, % of one core", "CPU ms per create, creating + drain")
    rows = [
        (str(phase.concurrency), phase.name, phase.pct(), phase.cpu_ms_per_op()) for pair in pairs for phase in pair
    ]
    return render(header, rows)


async def run(
    samples: int, phase_s: float, drain_timeout_s: float, concurrencies: Sequence[int] = CONCURRENCY
) -> tuple[list[Row], list[tuple[Phase, Phase]]]:
    async with product_stack("mcp-tasks-throughput-") as stack, http_client() as http:
        calls = Calls(TaskCalls(HttpMcp(stack.url, http)), stack)
        await calls.learn_task_settings()
        rows = await create_case(calls, samples)
        print(f"create samples done; drained in {await calls.drain(drain_timeout_s):.1f} s", flush=True)
        rows += await get_cases(calls, samples)
        print("get samples done", flush=True)
        return rows, await sustained_cases(calls, phase_s, drain_timeout_s, concurrencies)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.throughput", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument(
        "--samples", type=positive_int, default=None, help=f"samples per op (default {DEFAULT_SAMPLES})"
    )
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument(
        "--quick", action="store_true", help=f"{QUICK_SAMPLES} samples per op, {QUICK_PHASE_S:g} s sustained phases"
    )
    modes.add_argument(
        "--smoke",
        action="store_true",
        help=f"{SMOKE_SAMPLES} samples per op, {SMOKE_PHASE_S:g} s sustained phases at {SMOKE_CONCURRENCY} clients:"
        " proves it runs, in seconds",
    )
    return parser.parse_args(argv)


async def amain(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    samples = args.samples or (SMOKE_SAMPLES if args.smoke else QUICK_SAMPLES if args.quick else DEFAULT_SAMPLES)
    phase_s = SMOKE_PHASE_S if args.smoke else QUICK_PHASE_S if args.quick else PHASE_S
    short = args.quick or args.smoke
    print("\n".join(machine()))
    print(
        "server: temporal dev server, SQLite file (WAL) in a temp dir; `mcp-tasks-temporal serve` and `worker`"
        " as subprocesses; this process is the HTTP client (httpx, HTTP/1.1 keep-alive) and the raw temporalio"
        " client; all on 127.0.0.1"
    )
    print(
        "note: the worker runs throughout, so every task completes; its CPU, the dev server's, the front's and"
        " this process's all compete for the same cores"
    )
    started = time.perf_counter()
    drain_timeout_s = SMOKE_DRAIN_TIMEOUT_S if args.smoke else QUICK_DRAIN_TIMEOUT_S if args.quick else DRAIN_TIMEOUT_S
    concurrencies = SMOKE_CONCURRENCY if args.smoke else CONCURRENCY
    async with asyncio.timeout(QUICK_RUN_TIMEOUT_S if short else RUN_TIMEOUT_S):
        rows, pairs = await run(samples, phase_s, drain_timeout_s, concurrencies)
    print()
    print(latency_table(rows))
    print(create_verdict(rows))
    print()
    print(
        f"sustained: {phase_s:g} s per side and concurrency, run as ours, raw, raw, ours ({phase_s / 2:g} s each),"
        " the worker drained after each run"
    )
    print(sustained_table(pairs))
    print()
    print(cpu_table(pairs))
    print(
        "\ntargets: create p50 <= raw start_workflow p50 + synchronous tools/call p50; tasks/get of a completed task"
        f" <= {COMPLETED_VS_DESCRIBE_TARGET:g}x one describe; sustained creates/s >= {SUSTAINED_TARGET:g}x raw"
    )
    print(f"load average at end (1/5/15 min): {load_average()}")
    print(f"\ntotal run time: {time.perf_counter() - started:.1f} s")


def main(argv: Sequence[str] | None = None) -> None:
    run_main(lambda: amain(argv))


if __name__ == "__main__":
    main()
