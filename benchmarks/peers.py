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
samples, and the plain synchronous 50 ms call is sampled in those rounds too, so the advised-cadence ratio
compares calls that waited alike (on a small VM a pause of seconds slows the next hand-off between processes,
a plain call's too); sustained creates run phase by phase with the Temporal task queues drained in between. A peer that
cannot run here (not installed, no redis-server) is left out, saying why.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import anyio
from temporalio.client import Client

from mcp_tasks_temporal.temporal.feed_contract import TASK_FEED_WORKFLOW
from mcp_tasks_temporal.temporal.ids import UNKEYED
from tests.wire import HttpMcp, TaskCalls

from ._common import http_client, load_average, machine, positive_int, product_stack, render, run_main
from .peer_servers import (
    FIFTY_MS_TOOL,
    ZERO_TOOL,
    McpAgentServer,
    Server,
    SessionHttpMcp,
    TaskServer,
    check_result,
    peers,
)
from .throughput import Calls, Op

OURS_APP: Final = "benchmarks.ours_app:app"
AS_TASK: Final = "slow_compute_as_task"
"""Ours' tasks of `slow_compute` for the create rows: declared `inline_budget_ms=0`, as a long tool is."""
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
"""Per op at the advised cadence (none in a smoke run: up to 5 s each)."""
SEED = 2663
CLIENTS: Final = 10

# Targets (ratios measured in this run).
RESULT_TARGET = 1.0
READ_TARGET = 1.0
CREATE_OVER_RAW_MS = 3.0
CREATES_TARGET = 0.8
SYNC_TARGET = 1.5
COMPLETED_VS_DESCRIBE_TARGET = 1.1


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
    """Until the dev server runs nothing but the workflows the servers hold open (and our front's task feed
    shards, which run while it follows them)."""
    queues = [s.task_queue for s in servers if s.task_queue]
    query = "(" + " OR ".join(f'TaskQueue="{q}"' for q in queues) + ') AND ExecutionStatus="Running"'
    query += f' AND WorkflowType != "{TASK_FEED_WORKFLOW}"'
    held = sum(s.held for s in servers)
    running = held + 1
    with anyio.move_on_after(timeout_s):
        while (running := (await client.count_workflows(query)).count) > held:
            await anyio.sleep(0.25)
    if running > held:
        print(f"drain: {running - held} workflows still running after {timeout_s:g} s", flush=True)


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
    sync_fifty_advised: Op
    """The same plain call, sampled in the advised-cadence rounds: after the peers' pauses of seconds, which on a
    small VM slow every hand-off between processes, a plain call's as much as a task's."""
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


async def run(
    samples: int, advised_samples: int, phase_s: float, *, may_install: bool, advised_warmup: int = ADVISED_WARMUP
) -> Results:
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as tmp:
        async with AsyncExitStack() as stack:
            # The app's own budgets, as a user's front serves them: a quick `slow_compute` is answered in the call.
            ours_stack = product_stack("bench-peers-temporal-", app=OURS_APP, max_inline_budget_ms=None)
            product = await stack.enter_async_context(ours_stack)
            http = await stack.enter_async_context(http_client())
            calls = Calls(TaskCalls(HttpMcp(product.url, http)), product)
            calls.tool = AS_TASK
            await calls.learn_task_settings()
            ours = TaskServer("ours", calls.mcp, held=2, task_queue=product.task_queue, task_tool=AS_TASK)
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
            done = product.client.get_workflow_handle(UNKEYED.workflow_id(ours.done, None))

            async def sync_fifty() -> None:
                answer = (await calls.mcp.call_tool("slow_compute_sync", FIFTY_MS_TOOL)).result
                check_result("ours", answer)

            results = Results(
                columns,
                raw_start=Op("raw start_workflow", calls.raw_start),
                raw_describe_done=Op("raw describe() of a completed task", done.describe),
                greet=Op("tools/call greet (synchronous, ours)", calls.greet),
                sync_fifty=Op("tools/call slow_compute_sync 50 ms (synchronous, ours)", sync_fifty),
                sync_fifty_advised=Op(
                    "tools/call slow_compute_sync 50 ms (synchronous, ours), advised rounds", sync_fifty
                ),
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
            advised = [op for col in columns for op in advised_ops(col)]
            await interleave([*advised, results.sync_fifty_advised], advised_samples, advised_warmup)
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
    if results.sync_fifty_advised.ms:
        rows.append(
            [
                "plain synchronous call p50 ms: 50 ms tool, in the advised rounds",
                f"{results.sync_fifty_advised.p50:.1f}",
                *blank,
                "",
            ]
        )
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

    def ratio(label: str, mine: float | None, theirs: float | None, target: float | None, higher: bool = False) -> None:
        """`mine / theirs`, against `target` if there is one: at most it, or with `higher` at least it."""
        if mine is None or theirs is None or theirs == 0:
            return
        value = mine / theirs
        if target is None:
            out.append(f"{label}: {value:.2f}x")
            return
        ok = value >= target if higher else value <= target
        sign = ">=" if higher else "<="
        out.append(f"{label}: {value:.2f}x (target {sign} {target:g}x: {_verdict(ok)})")

    for peer in others:
        name = peer.server.name
        # The targets name mcp-agent and fastmcp-tasks on Redis; the in-memory column is context.
        targeted = isinstance(peer.server, McpAgentServer) or name.endswith("Redis")
        creates_target = CREATES_TARGET if name.endswith("Redis") else None
        for key, cadence in (("zero", "10 ms polling"), ("zero_advised", "advised cadence")):
            ratio(
                f"0 s tool result in hand, {cadence}, ours / {name}",
                ours.p50(key),
                peer.p50(key),
                RESULT_TARGET if targeted else None,
            )
        for key, label in (("get_working", "working"), ("get_waiting", "input_required"), ("get_done", "completed")):
            ratio(f"tasks/get {label}, ours / {name}", ours.p50(key), peer.p50(key), READ_TARGET if targeted else None)
        ratio(f"creates/s, ours / {name}", ours.creates_per_s, peer.creates_per_s, creates_target, higher=True)
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
    for key, label, plain in (
        ("fifty", "10 ms polling", results.sync_fifty),
        ("fifty_advised", "advised cadence", results.sync_fifty_advised),
    ):
        mine = ours.p50(key)
        if mine is not None and plain.ms:
            sync = plain.p50
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
    results = await run(
        samples,
        advised,
        phase_s,
        may_install=not (args.smoke or args.no_install),
        advised_warmup=0 if args.smoke else ADVISED_WARMUP,
    )
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
