"""Push at scale: the task feed against one history long poll per task, at several numbers of watched tasks.

    .venv/bin/python -m benchmarks.push --watched 1000,5000,20000 [--samples M] [--quick | --smoke]

One dev server, one worker, and a front in feed mode (`MCP_TASKS_PUSH=feed`) that
creates `confirm_delete` tasks and parks them in `input_required`. For each
size N, two fresh fronts are started against them: one in poll mode (today's
per-task history long polls: the baseline) and one in feed mode. Both listen
on the same N tasks (1,000 per listen, the server's limit) at the same time,
and the run measures, per front:

- the listen acknowledgement (each listen of 1,000; and until every snapshot came);
- front RSS per watched task (after the listens and the idle window, against before them);
- idle Temporal RPCs from the front over the idle window, by operation (the dev
  server's own counters; the two modes use disjoint operations: history polls and
  describes for poll mode, updates and their polls for the feed);
- state change -> notification: M watched tasks answered one at a time; the same
  change is timed on both fronts' streams (first frame showing it, and `completed`).
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

import anyio
import httpx

from tests.wire import HttpMcp, TaskCalls

from ._common import (
    Child,
    Stack,
    _until_ready,  # pyright: ignore[reportPrivateUsage]
    free_port,
    http_client,
    percentile,
    product_stack,
    render,
    rpc_delta,
    rss_mib,
    start_child,
)
from .push import ANSWER, ListenStream, Parked, create_parked, until_input_required

LISTEN_SIZE: Final = 1000
POLL_OPERATIONS: Final = frozenset(
    {"GetWorkflowExecutionHistory", "PollWorkflowExecutionHistory", "DescribeWorkflowExecution"}
)
FEED_OPERATIONS: Final = frozenset({"UpdateWorkflowExecution", "PollWorkflowExecutionUpdate", "QueryWorkflow"})
SAMPLE_TIMEOUT_S: Final = 30.0
MODES: Final = ("poll", "feed")
SETTLE_S: Final = 5.0


@dataclass
class ModeResult:
    acks_s: list[float] = field(default_factory=list[float])
    all_snapshots_s: float = 0.0
    rss_before_mib: float = 0.0
    rss_after_mib: float = 0.0
    idle_rpc_per_s: float = 0.0
    idle_ops: dict[str, float] = field(default_factory=dict[str, float])
    change_ms: list[float] = field(default_factory=list[float])
    completed_ms: list[float] = field(default_factory=list[float])
    missed: int = 0
    """Samples whose `completed` did not reach this front's stream within `SAMPLE_TIMEOUT_S`."""


@dataclass
class SizeResult:
    watched: int
    modes: dict[str, ModeResult] = field(default_factory=lambda: {m: ModeResult() for m in MODES})


async def start_front(stack: Stack, mode: str, name: str) -> tuple[Child, str]:
    port = free_port()
    common = ["--temporal", stack.temporal_address, "--task-queue", stack.task_queue]
    common += ["--app", "mcp_tasks_temporal.testing.conformance:app", "--port", str(port)]
    previous = os.environ.get("MCP_TASKS_PUSH")
    os.environ["MCP_TASKS_PUSH"] = mode
    try:
        front = await start_child(name, [sys.executable, "-m", "mcp_tasks_temporal", "serve", *common], stack.state_dir)
    finally:
        if previous is None:
            os.environ.pop("MCP_TASKS_PUSH", None)
        else:
            os.environ["MCP_TASKS_PUSH"] = previous
    url = f"http://127.0.0.1:{port}/mcp"
    await _until_ready(stack.worker, front, url)
    return front, url


async def measure_size(
    stack: Stack,
    http: httpx.AsyncClient,
    mcp: TaskCalls,
    watched: list[Parked],
    samples: list[Parked],
    idle_window_s: float,
) -> SizeResult:
    n = len(watched)
    result = SizeResult(n)
    fronts = {mode: await start_front(stack, mode, f"front-{mode}-{n}") for mode in MODES}
    try:
        await anyio.sleep(1.0)
        for mode, (front, _) in fronts.items():
            result.modes[mode].rss_before_mib = rss_mib(front.pid)
        ids = [t.task_id for t in watched]
        chunks = [ids[i : i + LISTEN_SIZE] for i in range(0, n, LISTEN_SIZE)]
        streams = {mode: [ListenStream(http, url, chunk) for chunk in chunks] for mode, (_, url) in fronts.items()}
        async with anyio.create_task_group() as group:
            for mode in MODES:
                opened = time.perf_counter()
                for stream in streams[mode]:
                    await group.start(stream.run)
                for stream in streams[mode]:
                    await stream.until(lambda s=stream: len(s.frames) == len(s.task_ids), 600, "every snapshot")
                taken = result.modes[mode]
                taken.all_snapshots_s = time.perf_counter() - opened
                taken.acks_s = [(s.acked_at or s.opened_at) - s.opened_at for s in streams[mode]]
                print(
                    f"  {n} watched, {mode}: {len(chunks)} listens acked after"
                    f" {max(taken.acks_s):.2f} s at most, every snapshot after {taken.all_snapshots_s:.2f} s",
                    flush=True,
                )
                # The first front's watchers settle (the poll front reads each history once) before the next listens.
                await anyio.sleep(SETTLE_S)
            await anyio.sleep(2.0)
            await idle(stack, http, result, idle_window_s)
            for mode, (front, _) in fronts.items():
                taken = result.modes[mode]
                taken.rss_after_mib = rss_mib(front.pid)
                print(
                    f"  {n} watched, {mode}: idle {taken.idle_rpc_per_s:.2f} RPC/s from the front;"
                    f" RSS {taken.rss_before_mib:.1f} -> {taken.rss_after_mib:.1f} MiB",
                    flush=True,
                )
            stream_of = {mode: {t: s for s in streams[mode] for t in s.task_ids} for mode in MODES}
            for task in samples:
                await sample(mcp, {mode: stream_of[mode][task.task_id] for mode in MODES}, task, result)
            group.cancel_scope.cancel()
    finally:
        for mode, (front, _) in fronts.items():
            log = await front.log()
            # Each watcher that had to retry Temporal says so once per streak.
            retried = log.count(" failing (")
            if retried:
                print(f"  {n} watched, {mode}: {retried} retry warnings in the front's log", flush=True)
            await front.stop()
    return result


async def idle(stack: Stack, http: httpx.AsyncClient, result: SizeResult, window_s: float) -> None:
    if stack.metrics is None:
        print("  idle RPCs not measured: the dev server named no metrics endpoint", flush=True)
        return
    before = await stack.metrics.requests(http)
    await anyio.sleep(window_s)
    delta = rpc_delta(before, await stack.metrics.requests(http))
    for mode, operations in (("poll", POLL_OPERATIONS), ("feed", FEED_OPERATIONS)):
        ops = {op: count / window_s for op, count in delta.items() if op in operations}
        result.modes[mode].idle_ops = ops
        result.modes[mode].idle_rpc_per_s = sum(ops.values())


async def sample(mcp: TaskCalls, streams: dict[str, ListenStream], task: Parked, result: SizeResult) -> None:
    """Answer one watched task; time its change and its completion on both fronts' streams."""
    before = {mode: len(stream.of(task.task_id)) for mode, stream in streams.items()}
    sent, sent_wall_ms = time.perf_counter(), time.time() * 1000
    await mcp.update(task.task_id, {task.key: ANSWER})
    for mode, stream in streams.items():

        def completed(stream: ListenStream = stream, mode: str = mode) -> bool:
            return any(f.status == "completed" for f in stream.of(task.task_id)[before[mode] :])

        try:
            await stream.until(completed, SAMPLE_TIMEOUT_S, f"{task.task_id} completed ({mode})")
        except TimeoutError as err:
            print(f"  {mode}: {err}", flush=True)
            result.modes[mode].missed += 1
            continue
        new = [f for f in stream.of(task.task_id)[before[mode] :] if (f.last_updated_ms or 0) >= sent_wall_ms - 1]
        done = next(f for f in new if f.status == "completed")
        result.modes[mode].change_ms.append((new[0].at - sent) * 1000)
        result.modes[mode].completed_ms.append((done.at - sent) * 1000)


async def run_scale(sizes: Sequence[int], samples: int, idle_window_s: float) -> list[SizeResult]:
    os.environ["MCP_TASKS_PUSH"] = "feed"  # the creating front: its tasks publish to the feed
    results: list[SizeResult] = []
    async with product_stack("mcp-tasks-push-scale-") as stack, http_client(128) as http:
        mcp = TaskCalls(HttpMcp(stack.url, http))
        parked: list[Parked] = []
        for n in sorted(sizes):
            wanted = n + samples
            if len(parked) < wanted:
                started = time.perf_counter()
                ids = await create_parked(mcp, wanted - len(parked))
                parked += await until_input_required(mcp, ids, timeout_s=max(180.0, 0.2 * len(ids)))
                print(f"{len(parked)} tasks waiting ({time.perf_counter() - started:.0f} s to create)", flush=True)
            watched = parked[:n]
            # The sampled tasks are among the watched ones and end; the rest stay for the next size.
            sampled = watched[:samples]
            results.append(await measure_size(stack, http, mcp, watched, sampled, idle_window_s))
            parked = parked[samples:]
            print(table([results[-1]]), flush=True)
    return results


def table(results: Sequence[SizeResult]) -> str:
    header = (
        "watched",
        "mode",
        "idle RPC/s",
        "RSS KiB/task",
        "ack s (max of listens)",
        "all snapshots s",
        "change p50/p99 ms",
        "completed p50/p99 ms",
        "feed/poll p50",
        "missed",
    )
    rows: list[tuple[str, ...]] = []
    for r in results:
        base = r.modes["poll"]
        for mode in MODES:
            m = r.modes[mode]
            per_task = (m.rss_after_mib - m.rss_before_mib) * 1024 / r.watched
            ratio = (
                f"{percentile(m.change_ms, 50) / percentile(base.change_ms, 50):.2f}"
                if m.change_ms and base.change_ms and mode == "feed"
                else ""
            )
            rows.append(
                (
                    f"{r.watched:,}",
                    mode,
                    f"{m.idle_rpc_per_s:.2f}",
                    f"{per_task:.1f}",
                    f"{max(m.acks_s):.2f}" if m.acks_s else "",
                    f"{m.all_snapshots_s:.2f}",
                    _pp(m.change_ms),
                    _pp(m.completed_ms),
                    ratio,
                    str(m.missed),
                )
            )
    return render(header, rows)


def _pp(values: Sequence[float]) -> str:
    if not values:
        return ""
    return f"{percentile(values, 50):.1f} / {percentile(values, 99):.1f}"


def idle_ops(results: Sequence[SizeResult]) -> str:
    lines: list[str] = []
    for r in results:
        for mode in MODES:
            ops = ", ".join(f"{op} {v:.2f}/s" for op, v in sorted(r.modes[mode].idle_ops.items())) or "none"
            lines.append(f"{r.watched:,} watched, {mode}: {ops}")
    return "\n".join(lines)


def listens_for(watched: int) -> int:
    return math.ceil(watched / LISTEN_SIZE)
