"""Push at scale: the task feed against one history long poll per task, at several numbers of watched tasks.

    .venv/bin/python -m benchmarks.push --watched 1000,5000,20000 [--samples M] [--quick | --smoke]

One dev server, one worker, and a front that creates one `confirm_delete` task
over HTTP; the others are started straight through the Temporal client with that
task's own workflow input (a new task ID each; each joins the task feed when a
listen first names it), 64 at a time, which is what a feed front's `tools/call`
would do, and their parking in `input_required` is read from visibility. For each size N,
fresh fronts listen on N of them, one mode after the other, so neither mode's
load lands on the other's figures: a front in feed mode, then one in poll mode
(today's per-task history long polls: the baseline), up to `POLL_MAX` watched
tasks (past that the baseline's long polls already fail here). At the largest
size (or at every size, `--three-fronts every`), N is also spread over three feed fronts. Per front:

- the listen acknowledgement (each listen of up to `LISTEN_SIZE`; and until every snapshot came); in feed
  mode, until every watched task joined the feed (the first listen that names a task asks it on);
- in feed mode, just before: the N tasks read from visibility (`observe_listed`, what the ack was built from
  before the shards' indexes) and from the shards' indexes (`observe_indexed`), from this process;
- front RSS per watched task: after the listens and the idle window, against before them. "Before" is after a
  warm-up listen on `WARMUP_TASKS` other tasks, closed before the measured ones open: what a front's first
  listen costs once (imports and first uses along the listen's path, its heap trim handing back what the
  front's start left free) is printed apart, as the fixed cost, and per watched task counted from before it;
- the marginal RSS per watched task between two sizes: (growth at the larger - growth at the smaller) / the
  difference in tasks, one front each;
- idle Temporal RPCs from the front over the idle window, by operation (the dev server's own counters);
- state change -> notification: M watched tasks answered one at a time (first frame showing it, and `completed`).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

import anyio
import httpx

from mcp_tasks_temporal.front.gateway import TemporalTaskGateway
from mcp_tasks_temporal.front.gateway.reads import listed_tasks
from mcp_tasks_temporal.temporal.contract import Memo, ToolTaskInput, as_object
from mcp_tasks_temporal.temporal.ids import UNKEYED
from tests.wire import HttpMcp, TaskCalls

from ._common import (
    Child,
    Stack,
    _until_ready,  # pyright: ignore[reportPrivateUsage]
    free_port,
    http_client,
    load_average,
    percentile,
    product_stack,
    render,
    rpc_delta,
    rss_mib,
    start_child,
)
from .push import ANSWER, ELICITATION, ListenStream, Parked

LISTEN_SIZE: Final = 10_000
POLL_MAX: Final = 5_000
"""Largest size the baseline runs at: at 5,000 its history polls already fail and are retried."""
START_CONCURRENCY: Final = 64
POLL_OPERATIONS: Final = frozenset(
    {"GetWorkflowExecutionHistory", "PollWorkflowExecutionHistory", "DescribeWorkflowExecution"}
)
FEED_OPERATIONS: Final = frozenset(
    {
        # A feed front reads each shard's history and keeps each in use (signal-with-start of an empty publish),
        # and lists its queue's runs closed with nothing published (terminated, timed out) every few seconds;
        # one from before read each shard with the stream's update and its result.
        "ListWorkflowExecutions",
        "GetWorkflowExecutionHistory",
        "PollWorkflowExecutionHistory",
        "SignalWithStartWorkflowExecution",
        "UpdateWorkflowExecution",
        "PollWorkflowExecutionUpdate",
        "QueryWorkflow",
        "DescribeWorkflowExecution",
    }
)
SAMPLE_TIMEOUT_S: Final = 30.0
SETTLE_S: Final = 5.0
"""Quiet time between the snapshots and the idle window; at most a quarter of the window (a smoke run's is 2 s)."""
PARK_STALL_S: Final = 180.0
"""Parking fails when this long passes with no task newly waiting for its answer."""
WARMUP_TASKS: Final = 300
"""Tasks of the warm-up listen, on each front before it is measured: at least a large listen (front/heap.py)."""


@dataclass
class ModeResult:
    mode: str
    fronts: int = 1
    acks_s: list[float] = field(default_factory=list[float])
    all_snapshots_s: float = 0.0
    joined_s: float | None = None
    """Feed mode: from the listens' start until every watched task is in its shard's index (a task joins the
    feed when a listen first names it: one signal to it, and its announcement to the shard)."""
    visibility_read_s: float | None = None
    """Feed mode: the watched tasks read from visibility, 500 IDs a query (the ack's reads before the index)."""
    index_read_s: float | None = None
    """Feed mode: the watched tasks looked up in the shards' indexes (one query per shard)."""
    indexed: int = 0
    rss_kib_per_task: list[float] = field(default_factory=list[float])
    """One per front, from after the warm-up listen."""
    rss_growth_mib: list[float] = field(default_factory=list[float])
    """One per front: its RSS growth with the watched tasks, from after the warm-up listen."""
    fixed_mib: list[float] = field(default_factory=list[float])
    """One per front: what the warm-up listen left (the first listen's one-time cost)."""
    rss_kib_per_task_cold: list[float] = field(default_factory=list[float])
    """One per front: as `rss_kib_per_task`, but counted from before the warm-up listen."""
    idle_rpc_per_s: float = 0.0
    """Per front."""
    idle_ops: dict[str, float] = field(default_factory=dict[str, float])
    change_ms: list[float] = field(default_factory=list[float])
    completed_ms: list[float] = field(default_factory=list[float])
    missed: int = 0
    """Samples whose `completed` did not reach the stream within `SAMPLE_TIMEOUT_S`."""
    retries: int = 0
    load: str = ""
    skipped: str = ""


@dataclass
class SizeResult:
    watched: int
    modes: list[ModeResult] = field(default_factory=list[ModeResult])


# --- creating and parking tasks --------------------------------------------------------------------


async def create_parked(stack: Stack, mcp: TaskCalls, count: int) -> list[Parked]:
    """`count` confirm_delete tasks in input_required: one over HTTP, the rest with its workflow input."""
    template = await _template(stack, mcp)
    gateway = TemporalTaskGateway(stack.client, task_queue=stack.task_queue)
    gateway.feed_runs = lambda workflow_id: True
    await gateway.start_feed_shards()  # a task whose shard does not exist yet would not publish
    ids = [str(uuid.uuid4()) for _ in range(count)]
    limiter = anyio.CapacityLimiter(START_CONCURRENCY)

    async def start(task_id: str) -> None:
        async with limiter:
            task = dataclasses.replace(template, task_id=task_id, created_at_ms=int(time.time() * 1000))
            await gateway.create(task, None)

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for task_id in ids:
            group.start_soon(start, task_id)
    print(f"  started {count} tasks in {time.perf_counter() - started:.1f} s", flush=True)
    return await until_parked(stack, ids)


async def _template(stack: Stack, mcp: TaskCalls) -> ToolTaskInput:
    result = (await mcp.call_tool("confirm_delete", {"filename": "bench.txt"}, capabilities=ELICITATION)).result
    handle = stack.client.get_workflow_handle(UNKEYED.workflow_id(str(result["taskId"]), None))
    async for event in handle.fetch_history_events():
        payloads = event.workflow_execution_started_event_attributes.input.payloads
        [task] = await stack.client.data_converter.decode(payloads, [ToolTaskInput])
        assert isinstance(task, ToolTaskInput)
        return task
    raise RuntimeError("the template task has no start event")


async def until_parked(stack: Stack, task_ids: Sequence[str], stall_s: float = PARK_STALL_S) -> list[Parked]:
    """Every task once visibility shows it waiting for its answer, with its question's key.

    The worker's pace is the machine's: 20,000 tasks took 12 minutes at load 3-4 and would take about 50 at
    load 12, so the bound is on progress (a round of `stall_s` with no task newly parked), not on the whole.
    """
    parked: dict[str, Parked] = {}
    by_workflow = {UNKEYED.workflow_id(t, None): t for t in task_ids}
    while len(parked) < len(task_ids):
        with anyio.fail_after(stall_s):
            before = len(parked)
            await _park_round(stack, by_workflow, parked)
            while len(parked) == before:
                await anyio.sleep(2.0)
                await _park_round(stack, by_workflow, parked)
        if len(parked) < len(task_ids):
            await anyio.sleep(2.0)
    return [parked[t] for t in task_ids]


async def _park_round(stack: Stack, by_workflow: Mapping[str, str], parked: dict[str, Parked]) -> None:
    """One read of visibility for the tasks not parked yet; each one waiting for its answer goes into `parked`."""
    waiting = [w for w, t in by_workflow.items() if t not in parked]
    # A visibility read that fails is left out of `listed_tasks`; its tasks are asked again next round.
    for wid, seen in (await listed_tasks(stack.client, waiting)).items():
        memo = seen.memo
        status = memo.get(Memo.STATUS)
        questions = as_object(memo.get(Memo.INPUT_REQUESTS))
        if status == "input_required" and questions:
            parked[by_workflow[wid]] = Parked(by_workflow[wid], next(iter(questions)))
        elif status != "working" or not seen.running:
            raise RuntimeError(f"task {by_workflow[wid]} is {status}, not waiting for input")


# --- one mode at one size --------------------------------------------------------------------------


@dataclass(frozen=True)
class Front:
    child: Child
    url: str
    metrics_url: str
    """Its Prometheus endpoint: `mcp_push_subscribers` says when a closed listen has let go of its tasks."""


async def start_front(stack: Stack, mode: str, name: str) -> Front:
    port, metrics_port = free_port(), free_port()
    common = ["--temporal", stack.temporal_address, "--task-queue", stack.task_queue]
    common += ["--app", "mcp_tasks_temporal.testing.conformance:app", "--port", str(port)]
    common += ["--max-inline-budget-ms", "0"]  # tasks, however quick their tools
    common += ["--metrics-port", str(metrics_port)]
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
    return Front(front, url, f"http://127.0.0.1:{metrics_port}/metrics")


async def measure_mode(
    stack: Stack,
    http: httpx.AsyncClient,
    mcp: TaskCalls,
    mode: str,
    watched: list[Parked],
    samples: list[Parked],
    idle_window_s: float,
    spare: list[Parked],
    fronts: int = 1,
) -> ModeResult:
    n = len(watched)
    result = ModeResult(mode, fronts)
    label = f"{n} watched, {mode}" + (f", {fronts} fronts" if fronts > 1 else "")
    if mode == "feed":
        await reads(stack, watched, result)
    launched = [await start_front(stack, mode, f"front-{mode}-{n}-{i}") for i in range(fronts)]
    started = [(f.child, f.url) for f in launched]
    share = -(-n // fronts)
    parts = [watched[i * share : (i + 1) * share] for i in range(fronts)]
    try:
        await anyio.sleep(1.0)
        rss_start = [rss_mib(front.pid) for front, _ in started]
        warm = -(-len(spare) // fronts)
        for i, front in enumerate(launched):
            await warm_up(http, front, [t.task_id for t in spare[i * warm : (i + 1) * warm]])
        rss_before = [rss_mib(front.pid) for front, _ in started]
        result.fixed_mib = [after - before for before, after in zip(rss_start, rss_before, strict=True)]
        streams: list[list[ListenStream]] = []
        for (_, url), part in zip(started, parts, strict=True):
            ids = [t.task_id for t in part]
            streams.append([ListenStream(http, url, ids[i : i + LISTEN_SIZE]) for i in range(0, len(ids), LISTEN_SIZE)])
        async with anyio.create_task_group() as group:
            opened = time.perf_counter()
            for stream in [s for per_front in streams for s in per_front]:
                await group.start(stream.run)
            for stream in [s for per_front in streams for s in per_front]:
                await stream.until(lambda s=stream: len(s.frames) == len(s.task_ids), 900, "every snapshot")
            result.all_snapshots_s = time.perf_counter() - opened
            result.acks_s = [(s.acked_at or s.opened_at) - s.opened_at for per in streams for s in per]
            print(
                f"  {label}: {len(result.acks_s)} listens acked after {max(result.acks_s):.2f} s at most"
                f" ({', '.join(f'{a:.2f}' for a in result.acks_s)}), every snapshot after"
                f" {result.all_snapshots_s:.2f} s; load {load_average()}",
                flush=True,
            )
            if mode == "feed":
                await until_joined(stack, [t.task_id for t in watched], result, opened)
            await anyio.sleep(min(SETTLE_S, idle_window_s / 4))
            await idle(stack, http, result, idle_window_s)
            for (front, _), start, before, part in zip(started, rss_start, rss_before, parts, strict=True):
                after = rss_mib(front.pid)
                result.rss_growth_mib.append(after - before)
                result.rss_kib_per_task.append((after - before) * 1024 / len(part))
                result.rss_kib_per_task_cold.append((after - start) * 1024 / len(part))
            result.load = load_average()
            print(
                f"  {label}: idle {result.idle_rpc_per_s:.2f} RPC/s per front"
                f" ({', '.join(f'{op} {v:.2f}/s' for op, v in sorted(result.idle_ops.items())) or 'none'});"
                f" RSS per watched task {', '.join(f'{k:.1f}' for k in result.rss_kib_per_task)} KiB"
                f" ({', '.join(f'{k:.1f}' for k in result.rss_kib_per_task_cold)} counted from before the"
                f" warm-up listen, which left {', '.join(f'{m:.1f}' for m in result.fixed_mib)} MiB);"
                f" load {result.load}",
                flush=True,
            )
            stream_of = {t: s for per in streams for s in per for t in s.task_ids}
            for task in samples:
                await sample(mcp, stream_of[task.task_id], task, result)
            group.cancel_scope.cancel()
    finally:
        for front, _ in started:
            # Each watcher that had to retry Temporal says so once per streak.
            result.retries += (await front.log()).count(" failing (")
            await front.stop()
    if result.retries:
        print(f"  {label}: {result.retries} retry warnings in the fronts' logs", flush=True)
    return result


async def reads(stack: Stack, watched: list[Parked], result: ModeResult) -> None:
    """What the ack reads, from this process: visibility (before the shards' indexes) and the indexes."""
    gateway = TemporalTaskGateway(stack.client, task_queue=stack.task_queue)
    ids = [t.task_id for t in watched]
    started = time.perf_counter()
    listed_now = await gateway.observe_listed(ids, None)
    result.visibility_read_s = time.perf_counter() - started
    started = time.perf_counter()
    result.indexed = len(await gateway.observe_indexed(ids, None))
    result.index_read_s = time.perf_counter() - started
    print(
        f"  {len(ids)} watched: visibility read {result.visibility_read_s:.2f} s ({len(listed_now)} listed),"
        f" shard indexes {result.index_read_s:.2f} s ({result.indexed} indexed); load {load_average()}",
        flush=True,
    )


async def until_joined(stack: Stack, task_ids: list[str], result: ModeResult, opened: float) -> None:
    """Until the shards' indexes hold every watched task: the joins a first listen asked for are done, so the
    idle window and the changes measure the feed, not the joins still arriving."""
    gateway = TemporalTaskGateway(stack.client, task_queue=stack.task_queue)
    with anyio.fail_after(900):
        while len(await gateway.observe_indexed(task_ids, None)) < len(task_ids):
            await anyio.sleep(0.5)
    result.joined_s = time.perf_counter() - opened
    print(
        f"  {len(task_ids)} watched: every task on the feed {result.joined_s:.2f} s after the listens opened",
        flush=True,
    )


async def warm_up(http: httpx.AsyncClient, front: Front, task_ids: Sequence[str]) -> None:
    """A listen on `task_ids` until every snapshot came, then closed: the front's first listen, not measured.

    Done once the front has let go of its tasks (its subscribers back to none), so none of them is counted
    in the RSS before the measured listens and freed during them.
    """
    if not task_ids:
        return
    stream = ListenStream(http, front.url, task_ids)
    async with anyio.create_task_group() as group:
        await group.start(stream.run)
        await stream.until(lambda: len(stream.frames) == len(task_ids), 300, "every warm-up snapshot")
        group.cancel_scope.cancel()
    with anyio.fail_after(120):
        while await subscribers(http, front) > 0:
            await anyio.sleep(0.2)


async def subscribers(http: httpx.AsyncClient, front: Front) -> float:
    """The front's open task subscriptions, from its metrics."""
    text = (await http.get(front.metrics_url)).text
    for line in text.splitlines():
        if line.startswith("mcp_push_subscribers"):
            return float(line.rpartition(" ")[2])
    return 0.0


async def idle(stack: Stack, http: httpx.AsyncClient, result: ModeResult, window_s: float) -> None:
    if stack.metrics is None:
        print("  idle RPCs not measured: the dev server named no metrics endpoint", flush=True)
        return
    before = await stack.metrics.requests(http)
    await anyio.sleep(window_s)
    delta = rpc_delta(before, await stack.metrics.requests(http))
    operations = POLL_OPERATIONS if result.mode == "poll" else FEED_OPERATIONS
    ops = {op: count / window_s / result.fronts for op, count in delta.items() if op in operations}
    result.idle_ops = ops
    result.idle_rpc_per_s = sum(ops.values())


async def sample(mcp: TaskCalls, stream: ListenStream, task: Parked, result: ModeResult) -> None:
    """Answer one watched task; time its change and its completion on the stream that holds it."""
    before = len(stream.of(task.task_id))
    sent, sent_wall_ms = time.perf_counter(), time.time() * 1000
    await mcp.update(task.task_id, {task.key: ANSWER})

    def completed() -> bool:
        return any(f.status == "completed" for f in stream.of(task.task_id)[before:])

    try:
        await stream.until(completed, SAMPLE_TIMEOUT_S, f"{task.task_id} completed ({result.mode})")
    except TimeoutError as err:
        print(f"  {result.mode}: {err}", flush=True)
        result.missed += 1
        return
    new = [f for f in stream.of(task.task_id)[before:] if (f.last_updated_ms or 0) >= sent_wall_ms - 1]
    done = next(f for f in new if f.status == "completed")
    result.change_ms.append((new[0].at - sent) * 1000)
    result.completed_ms.append((done.at - sent) * 1000)


# --- the run ---------------------------------------------------------------------------------------


async def run_scale(
    sizes: Sequence[int],
    samples: int,
    idle_window_s: float,
    warmup: int = WARMUP_TASKS,
    *,
    three_fronts_everywhere: bool = False,
) -> list[SizeResult]:
    # The creating front follows nothing: the fronts measured are the only ones polling the shards.
    os.environ["MCP_TASKS_PUSH"] = "poll"
    results: list[SizeResult] = []
    largest = max(sizes)

    def three_fronts(n: int) -> bool:
        return n > 1 and (three_fronts_everywhere or n == largest)

    async with product_stack("mcp-tasks-push-scale-") as stack, http_client(128) as http:
        mcp = TaskCalls(HttpMcp(stack.url, http))
        parked: list[Parked] = []
        for n in sorted(sizes):
            # Each mode answers its own samples; the three-front case too.
            runs = (2 if n <= POLL_MAX else 1) + (1 if three_fronts(n) else 0)
            # The warm-up listens take the tasks after the watched ones: up to three fronts' worth.
            wanted = n + runs * samples + 3 * warmup
            if len(parked) < wanted:
                started = time.perf_counter()
                parked += await create_parked(stack, mcp, wanted - len(parked))
                took = time.perf_counter() - started
                print(
                    f"{len(parked)} tasks waiting ({took:.0f} s to create and park); load {load_average()}", flush=True
                )
            size = SizeResult(n)
            for mode in ("feed", "poll"):
                if mode == "poll" and n > POLL_MAX:
                    size.modes.append(ModeResult(mode, skipped=f"not run past {POLL_MAX:,}: failing there already"))
                    continue
                # The samples are the first watched tasks; they end, so the next run watches the ones after.
                watched, spare = parked[:n], parked[n : n + warmup]
                size.modes.append(
                    await measure_mode(stack, http, mcp, mode, watched, watched[:samples], idle_window_s, spare)
                )
                parked = parked[samples:]
            if three_fronts(n):
                watched, spare = parked[:n], parked[n : n + 3 * warmup]
                size.modes.append(
                    await measure_mode(
                        stack, http, mcp, "feed", watched, watched[:samples], idle_window_s, spare, fronts=3
                    )
                )
                parked = parked[samples:]
            results.append(size)
            print(table([size]), flush=True)
    return results


def table(results: Sequence[SizeResult]) -> str:
    header = (
        "watched",
        "mode",
        "fronts",
        "idle RPC/s per front",
        "RSS KiB/task (from cold)",
        "first listen MiB",
        "ack s (max of listens)",
        "visibility / index read s",
        "all snapshots s",
        "all on the feed s",
        "change p50/p99 ms",
        "completed p50/p99 ms",
        "vs poll: RPC, RSS, ack, p50",
        "missed",
        "load (1/5/15)",
    )
    rows: list[tuple[str, ...]] = []
    for r in results:
        base = next((m for m in r.modes if m.mode == "poll" and not m.skipped), None)
        for m in r.modes:
            if m.skipped:
                rows.append((f"{r.watched:,}", m.mode, "", m.skipped, *[""] * (len(header) - 4)))
                continue
            rows.append(
                (
                    f"{r.watched:,}",
                    m.mode,
                    str(m.fronts),
                    f"{m.idle_rpc_per_s:.2f}",
                    "/".join(f"{k:.1f}" for k in m.rss_kib_per_task)
                    + f" ({'/'.join(f'{k:.1f}' for k in m.rss_kib_per_task_cold)})",
                    "/".join(f"{k:.1f}" for k in m.fixed_mib),
                    f"{max(m.acks_s):.2f}" if m.acks_s else "",
                    _reads(m),
                    f"{m.all_snapshots_s:.2f}",
                    f"{m.joined_s:.2f}" if m.joined_s is not None else "",
                    _pp(m.change_ms),
                    _pp(m.completed_ms),
                    _ratios(m, base) if base is not None and m is not base else "",
                    str(m.missed),
                    m.load,
                )
            )
    return render(header, rows)


def marginals(results: Sequence[SizeResult]) -> str:
    """RSS per watched task added between two sizes, one front each: what a watcher costs, fixed costs aside."""
    lines: list[str] = []
    for mode in ("feed", "poll"):
        grown = [
            (r.watched, m.rss_growth_mib[0])
            for r in sorted(results, key=lambda r: r.watched)
            for m in r.modes
            if m.mode == mode and m.fronts == 1 and not m.skipped and m.rss_growth_mib
        ]
        for (small, at_small), (large, at_large) in zip(grown, grown[1:], strict=False):
            per_task = (at_large - at_small) * 1024 / (large - small)
            lines.append(f"{mode}: {small:,} -> {large:,} watched: {per_task:.1f} KiB per added watched task")
    return "\n".join(lines)


def _ratios(m: ModeResult, base: ModeResult) -> str:
    def ratio(a: float, b: float) -> str:
        return f"{a / b:.3f}" if b else "-"

    rss = ratio(max(m.rss_kib_per_task), max(base.rss_kib_per_task))
    ack = ratio(max(m.acks_s), max(base.acks_s)) if m.acks_s and base.acks_s else "-"
    p50 = ratio(percentile(m.change_ms, 50), percentile(base.change_ms, 50)) if m.change_ms and base.change_ms else "-"
    return f"{ratio(m.idle_rpc_per_s, base.idle_rpc_per_s)}, {rss}, {ack}, {p50}"


def _reads(m: ModeResult) -> str:
    if m.visibility_read_s is None or m.index_read_s is None:
        return ""
    return f"{m.visibility_read_s:.2f} / {m.index_read_s:.2f} ({m.indexed:,} indexed)"


def _pp(values: Sequence[float]) -> str:
    if not values:
        return ""
    return f"{percentile(values, 50):.1f} / {percentile(values, 99):.1f}"


def idle_ops(results: Sequence[SizeResult]) -> str:
    lines: list[str] = []
    for r in results:
        for m in r.modes:
            if m.skipped:
                continue
            ops = ", ".join(f"{op} {v:.2f}/s" for op, v in sorted(m.idle_ops.items())) or "none"
            lines.append(f"{r.watched:,} watched, {m.mode}, {m.fronts} front(s): {ops}")
    return "\n".join(lines)
