"""`tasks/get` two ways: the front's describe-based read against the workflow's `mcp_tasks.state` query.

    .venv/bin/python -m benchmarks.reads [--samples N] [--quick | --smoke] [--history-events N]

Self-contained: it starts its own Temporal dev server (SQLite file in a temp
dir), runs in-process workers with `ToolTaskWorkflow` and a stand-in tool
activity, creates tasks through `TemporalTaskGateway.create` (so the initial
memo is the product's), and times both reads in each task state, including
with no worker polling, where only the describe-based read can answer.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import activity
from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError
from temporalio.worker import Worker

from mcp_tasks_temporal.front.gateway import TemporalTaskGateway, now_ms
from mcp_tasks_temporal.front.gateway.closed_tasks import ClosedTaskCache
from mcp_tasks_temporal.ops.dev.embedded_temporal import embedded_temporal
from mcp_tasks_temporal.temporal.connection import connect_temporal
from mcp_tasks_temporal.temporal.contract import (
    RUN_TOOL_ACTIVITY,
    STATE_QUERY,
    StatusDetails,
    ToolRoundInput,
    ToolTaskInput,
    as_object,
)
from mcp_tasks_temporal.temporal.ids import UNKEYED, new_task_id
from mcp_tasks_temporal.temporal.workflows import ToolTaskWorkflow

from ._common import machine, render

DEFAULT_SAMPLES = 200
QUICK_SAMPLES = 20
WARMUP = 3
# A query with no poller blocks until (nearly) its deadline, so a few attempts say all there is to say.
FAILING_QUERY_SAMPLES = 5
QUICK_FAILING_QUERY_SAMPLES = 3
NO_WORKER_QUERY_TIMEOUT = timedelta(seconds=2)
# --smoke: every case once, to prove the benchmark still runs; its figures mean nothing.
SMOKE_SAMPLES = 3
SMOKE_HISTORY_EVENTS = 30
SMOKE_NO_WORKER_QUERY_TIMEOUT = timedelta(seconds=0.5)
# Generous, so a query that hangs when it should answer shows up as a failure instead of stalling the run.
QUERY_TIMEOUT = timedelta(seconds=10)
# Sampling stops early past these, and the table shows the n actually taken.
CASE_BUDGET_S = 20.0
LONG_HISTORY_BUDGET_S = 90.0
# The server fails a query fast only once the queue has had no poller for this long
# (`matching.queryPollerUnavailableWindow`); before that it waits for one until the deadline.
POLLER_UNAVAILABLE_WINDOW_S = 20.0
RUN_TIMEOUT_S = 175.0
DEFAULT_HISTORY_EVENTS = 600
TTL_MS = 3_600_000
STATUS_MESSAGE = "Crunching (step 1 of 3)"
QUESTION: dict[str, Any] = {
    "method": "elicitation/create",
    "params": {"message": "Another round?", "requestedSchema": {"type": "object", "properties": {}}},
}


# --- the stand-in tool ---------------------------------------------------------------------------


@activity.defn(name=RUN_TOOL_ACTIVITY)
async def stand_in_tool(call: ToolRoundInput) -> dict[str, Any]:
    """Works forever (`work`), asks once (`ask`), asks until declined (`rounds`), or completes (`done`)."""
    behaviour = call.arguments["behaviour"]
    if behaviour == "work":
        return await _work_until_cancelled()
    if behaviour == "ask" and call.round == 0:
        return _input_required()
    if behaviour == "rounds" and not _declined(call.input_responses):
        return _input_required()
    return {"resultType": "complete", "content": [{"type": "text", "text": f"round {call.round}"}], "isError": False}


async def _work_until_cancelled() -> dict[str, Any]:
    # Heartbeats carry the status line exactly as the product's StatusReporter sends it, so
    # `get()` pays for decoding it; they also keep the 30 s heartbeat timeout from firing.
    status = StatusDetails(message=STATUS_MESSAGE, at_ms=now_ms())
    while True:
        activity.heartbeat(status)
        await asyncio.sleep(1.0)


def _input_required() -> dict[str, Any]:
    return {"resultType": "input_required", "inputRequests": {"next": QUESTION}}


def _declined(responses: dict[str, Any] | None) -> bool:
    return any(answer.get("action") == "decline" for answer in (responses or {}).values())


# --- sampling --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Read:
    name: str
    call: Callable[[], Awaitable[Any]]
    n: int
    may_fail: bool = False


@dataclass
class Samples:
    read: Read
    ms: list[float] = field(default_factory=list[float])
    failures: dict[str, list[float]] = field(default_factory=dict[str, list[float]])

    async def take(self) -> None:
        started = time.perf_counter()
        try:
            await self.read.call()
        except Exception as err:
            if not self.read.may_fail:
                raise
            self.failures.setdefault(_failure_kind(err), []).append(_elapsed_ms(started))
        self.ms.append(_elapsed_ms(started))

    @property
    def p50(self) -> float:
        return percentile(self.ms, 50)

    def failure_note(self) -> str:
        if not self.read.may_fail:
            return ""
        if not self.failures:
            return f"answered {len(self.ms)}/{len(self.ms)}"
        failed = sum(len(times) for times in self.failures.values())
        kinds = ", ".join(f"{kind} x{len(times)} after {_span_s(times)}" for kind, times in self.failures.items())
        return f"failed {failed}/{len(self.ms)}: {kinds}"


def _span_s(times_ms: Sequence[float]) -> str:
    low, high = min(times_ms) / 1000, max(times_ms) / 1000
    # The client retries some failures within one call, so a spread here is real, not noise.
    return f"{low:.2f} s" if high - low < 0.05 else f"{low:.2f}-{high:.2f} s"


def _elapsed_ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def _failure_kind(err: Exception) -> str:
    if isinstance(err, RPCError):
        return f'{err.status.name} "{_shorten(err.message)}"'
    return type(err).__name__


def _shorten(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def percentile(values: Sequence[float], q: int) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


async def measure(reads: Sequence[Read], budget_s: float = CASE_BUDGET_S) -> list[Samples]:
    """Interleave the reads sample by sample, so drift on the shared machine hits them alike."""
    samples = [Samples(read) for read in reads]
    for read in reads:
        if not read.may_fail:
            for _ in range(WARMUP):
                await read.call()
    deadline = time.perf_counter() + budget_s
    for index in range(max(read.n for read in reads)):
        if time.perf_counter() > deadline:
            break
        for sample in samples:
            if index < sample.read.n:
                await sample.take()
    return samples


# --- the table -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    case: str
    read: str
    n: int
    p50_ms: float
    p99_ms: float
    ratio: str
    notes: str


def rows_for(case: str, samples: Sequence[Samples], notes: dict[str, str]) -> list[Row]:
    by_name = {sample.read.name: sample for sample in samples}
    get, query = by_name.get("get()"), next((s for name, s in by_name.items() if name.startswith("query")), None)
    rows: list[Row] = []
    for sample in samples:
        ratio = f"{sample.p50 / query.p50:.2g}" if sample is get and query is not None else ""
        note = "; ".join(part for part in (sample.failure_note(), notes.get(sample.read.name, "")) if part)
        rows.append(Row(case, sample.read.name, len(sample.ms), sample.p50, percentile(sample.ms, 99), ratio, note))
    return rows


def render_rows(rows: Iterable[Row]) -> str:
    header = ("case", "read", "n", "p50 ms", "p99 ms", "get/query p50", "notes")
    return render(
        header, [(r.case, r.read, str(r.n), f"{r.p50_ms:.1f}", f"{r.p99_ms:.1f}", r.ratio, r.notes) for r in rows]
    )


# --- tasks and their states ------------------------------------------------------------------------


@dataclass(frozen=True)
class Bench:
    client: Client
    samples: int
    failing_samples: int
    no_worker_query_timeout: timedelta = NO_WORKER_QUERY_TIMEOUT

    def gateway(self, task_queue: str) -> TemporalTaskGateway:
        # Without the closed-task memory: this benchmark compares what each read costs in Temporal.
        return TemporalTaskGateway(self.client, task_queue=task_queue, closed_tasks=ClosedTaskCache(max_entries=0))

    def handle(self, task_id: str) -> WorkflowHandle[Any, Any]:
        return self.client.get_workflow_handle(UNKEYED.workflow_id(task_id, None))


@dataclass(frozen=True)
class Task:
    gateway: TemporalTaskGateway
    handle: WorkflowHandle[Any, Any]
    task_id: str

    async def get(self) -> dict[str, Any]:
        return await self.gateway.get(self.task_id, None)

    async def query(self, rpc_timeout: timedelta = QUERY_TIMEOUT) -> dict[str, Any]:
        return await self.handle.query(STATE_QUERY, rpc_timeout=rpc_timeout)

    async def history_length(self) -> int:
        return (await self.handle.describe()).history_length


async def create(bench: Bench, task_queue: str, behaviour: str) -> Task:
    gateway = bench.gateway(task_queue)
    task = ToolTaskInput(
        task_id=new_task_id(),
        tool="stand-in",
        arguments={"behaviour": behaviour},
        meta={},
        created_at_ms=now_ms(),
        ttl_ms=TTL_MS,
        poll_interval_ms=1000,
    )
    await gateway.create(task, None)
    return Task(gateway, bench.handle(task.task_id), task.task_id)


async def until(task: Task, status: str, *, with_message: bool = False) -> dict[str, Any]:
    async with asyncio.timeout(30):
        while True:
            state = await task.get()
            if state["status"] == status and (not with_message or "statusMessage" in state):
                return state
            await asyncio.sleep(0.02)


async def drive_rounds(task: Task, min_events: int) -> None:
    """Answer round after round until the history is long enough, then decline so the task completes."""
    answered: set[str] = set()
    async with asyncio.timeout(60 + min_events / 10):
        while True:
            state = await task.get()
            if state["status"] == "completed":
                return
            fresh = [key for key in as_object(state.get("inputRequests")) if key not in answered]
            if state["status"] != "input_required" or not fresh:
                await asyncio.sleep(0.005)
                continue
            enough = await task.history_length() >= min_events
            answer: dict[str, Any] = {"action": "decline"} if enough else {"action": "accept", "content": {}}
            await task.gateway.update(task.task_id, None, {fresh[0]: answer})
            answered.add(fresh[0])


def differing_fields(product: dict[str, Any], queried: dict[str, Any]) -> str:
    keys = sorted(key for key in product.keys() | queried.keys() if product.get(key) != queried.get(key))
    return f"query differs from get() in: {', '.join(keys)}" if keys else "query == get()"


# --- the cases -------------------------------------------------------------------------------------


async def compare(
    bench: Bench, case: str, task: Task, status: str, extra: Sequence[Read] = (), budget_s: float = CASE_BUDGET_S
) -> list[Row]:
    """get() against the query for a task whose worker is polling."""
    product, queried = await task.get(), await task.query()
    assert product["status"] == queried["status"] == status, (product, queried)
    n = bench.samples
    reads = [Read("get()", task.get, n), Read("query", task.query, n), *extra]
    notes = {"get()": f"status {status}", "query": differing_fields(product, queried)}
    return rows_for(case, await measure(reads, budget_s), notes)


async def compare_offline(bench: Bench, case: str, task: Task, status: str) -> list[Row]:
    """get() against a query with a short deadline, for a task whose worker is gone."""
    product = await task.get()
    assert product["status"] == status, product

    async def query() -> dict[str, Any]:
        return await task.query(rpc_timeout=bench.no_worker_query_timeout)

    name = f"query (rpc {bench.no_worker_query_timeout.total_seconds():g} s)"
    reads = [Read("get()", task.get, bench.samples), Read(name, query, bench.failing_samples, True)]
    notes = {"get()": f"status {status}, no worker", name: "n capped: each try blocks until about the deadline"}
    return rows_for(case, await measure(reads), notes)


async def offline_cases(bench: Bench, done: Task, working: Task, *, stopped_at: float, smoke: bool) -> list[Row]:
    rows = await compare_offline(bench, "(e) completed, no worker", done, "completed")
    rows += await compare_offline(bench, "(f) working, no worker", working, "working")
    if smoke:
        # (e2) is (e) after a 20 s wait for the server's window: nothing more to prove in a smoke run.
        print(f"(e2) left out by --smoke: it waits {POLLER_UNAVAILABLE_WINDOW_S:g} s for the server's window")
        return rows
    await asyncio.sleep(max(0.0, stopped_at + POLLER_UNAVAILABLE_WINDOW_S + 1 - time.monotonic()))
    window = f"(e2) completed, no poll > {POLLER_UNAVAILABLE_WINDOW_S:g} s"
    return rows + await compare_offline(bench, window, done, "completed")


def raw_pieces(task: Task, n: int, *, with_result: bool) -> list[Read]:
    reads = [Read("describe()", task.handle.describe, n)]
    if with_result:
        reads.append(Read("result()", task.handle.result, n))
    return reads


async def online_cases(bench: Bench, queue: str, evicting_queue: str, history_events: int) -> list[Row]:
    working = await create(bench, queue, "work")
    asking = await create(bench, queue, "ask")
    done = await create(bench, queue, "done")
    evicted = await create(bench, evicting_queue, "work")
    await until(working, "working", with_message=True)
    await until(asking, "input_required")
    await until(done, "completed")
    await until(evicted, "working", with_message=True)
    n = bench.samples
    rows = await compare(bench, "(a) working, cached", working, "working", raw_pieces(working, n, with_result=False))
    rows += await compare(bench, "(b) input_required", asking, "input_required")
    rows += await compare(bench, "(c) completed", done, "completed", raw_pieces(done, n, with_result=True))
    rows += await compare(bench, "(d) working, evicted", evicted, "working")
    if history_events > 0:
        rows += await long_history_case(bench, queue, history_events, short=await done.history_length())
    return rows


async def long_history_case(bench: Bench, queue: str, history_events: int, *, short: int) -> list[Row]:
    task = await create(bench, queue, "rounds")
    started = time.perf_counter()
    await drive_rounds(task, history_events)
    built_s = time.perf_counter() - started
    length = await task.history_length()
    case = f"(g) completed, {length} events"
    pieces = raw_pieces(task, bench.samples, with_result=True)
    rows = await compare(bench, case, task, "completed", pieces, LONG_HISTORY_BUDGET_S)
    note = f"history {length} events vs {short} in (c); built in {built_s:.1f} s"
    return [replace(row, notes=f"{row.notes}; {note}") if row.read == "query" else row for row in rows]


# --- the run ---------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def worker(client: Client, task_queue: str, *, cache: bool) -> Worker:
    # No cache means every workflow task and every query replays the run from its first event.
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[ToolTaskWorkflow],
        activities=[stand_in_tool],
        max_cached_workflows=1000 if cache else 0,
    )


async def run(samples: int, failing_samples: int, history_events: int, *, smoke: bool = False) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="mcp-tasks-reads-") as state_dir:
        async with embedded_temporal(state_dir=Path(state_dir), port=free_port(), ui_port=None) as server:
            client = await connect_temporal(server.address, namespace=server.namespace)
            timeout = SMOKE_NO_WORKER_QUERY_TIMEOUT if smoke else NO_WORKER_QUERY_TIMEOUT
            bench = Bench(client, samples, failing_samples, timeout)
            queue, evicting_queue = "bench-reads", "bench-reads-evicting"
            async with worker(client, queue, cache=True), worker(client, evicting_queue, cache=False):
                rows = await online_cases(bench, queue, evicting_queue, history_events)
                orphan_done = await create(bench, queue, "done")
                orphan_working = await create(bench, queue, "work")
                await until(orphan_done, "completed")
                await until(orphan_working, "working", with_message=True)
            # Both workers are shut down: nothing polls `queue` any more.
            stopped_at = time.monotonic()
            return rows + await offline_cases(bench, orphan_done, orphan_working, stopped_at=stopped_at, smoke=smoke)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.reads", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--samples", type=_positive, default=None, help=f"samples per read (default {DEFAULT_SAMPLES})")
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--quick", action="store_true", help=f"{QUICK_SAMPLES} samples per read")
    modes.add_argument(
        "--smoke",
        action="store_true",
        help=f"{SMOKE_SAMPLES} samples, {SMOKE_HISTORY_EVENTS} events in (g), no (e2): proves it runs, in seconds",
    )
    parser.add_argument(
        "--history-events",
        type=int,
        default=None,
        help=f"minimum history length for case (g); 0 skips it (default {DEFAULT_HISTORY_EVENTS})",
    )
    return parser.parse_args(argv)


async def amain(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    samples = args.samples or (SMOKE_SAMPLES if args.smoke else QUICK_SAMPLES if args.quick else DEFAULT_SAMPLES)
    failing = min(samples, 1 if args.smoke else QUICK_FAILING_QUERY_SAMPLES if args.quick else FAILING_QUERY_SAMPLES)
    history_events = args.history_events
    if history_events is None:
        history_events = SMOKE_HISTORY_EVENTS if args.smoke else DEFAULT_HISTORY_EVENTS
    print("\n".join(machine()))
    print("server: temporal dev server, SQLite file (WAL) in a temp dir; client and workers in this process")
    started = time.perf_counter()
    async with asyncio.timeout(RUN_TIMEOUT_S):
        rows = await run(samples, failing, history_events, smoke=args.smoke)
    print()
    print(render_rows(rows))
    print(f"\ntotal run time: {time.perf_counter() - started:.1f} s")


def main(argv: Sequence[str] | None = None) -> None:
    asyncio.run(amain(argv))


if __name__ == "__main__":
    main()
