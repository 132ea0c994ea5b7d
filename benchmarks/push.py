"""Push latency: `tasks/update` -> `notifications/tasks` on one listen stream holding 1,000 tasks.

    .venv/bin/python -m benchmarks.push [--tasks N] [--samples M] [--quick | --smoke]
    .venv/bin/python -m benchmarks.push --watched 1000,5000,20000 [--samples M] [--quick | --smoke]

With `--watched`, the task feed against per-task history long polls at each size
(`benchmarks/push_scale.py`); `--smoke` runs both, at a handful of tasks.

Self-contained: it starts its own Temporal dev server (SQLite file in a temp
dir) and runs `mcp-tasks-temporal worker` and `mcp-tasks-temporal serve` as
subprocesses with the conformance fixture app. It parks N `confirm_delete`
tasks in `input_required`, opens ONE `subscriptions/listen` with all N
taskIds, then answers M of them one at a time and times the notifications that
follow. The baseline, measured in the same run and interleaved sample by sample,
is the same state change seen with the raw temporalio client: signal the
workflow and wait for the event on a history long poll, while the front keeps
the other long polls parked.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

import anyio
import anyio.abc
import httpx
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent

from mcp_tasks_temporal.front.push.listen import MAX_TASK_IDS
from mcp_tasks_temporal.temporal.contract import INPUT_SIGNAL, as_object
from mcp_tasks_temporal.temporal.ids import UNKEYED
from tests.wire import HttpMcp, TaskCalls, base_headers, request_message, sse_frames

from ._common import (
    CpuMeter,
    Stack,
    bounded,
    cpu_note,
    http_client,
    machine,
    ms_since,
    percentile,
    positive_int,
    product_stack,
    render,
    rpc_delta,
    rss_mib,
    run_main,
)

DEFAULT_TASKS = 1000
DEFAULT_SAMPLES = 100
QUICK_SAMPLES = 20
# --smoke: a handful of tasks on the listen and a short idle window; proves the run, not the figures.
SMOKE_TASKS = 10
SMOKE_SAMPLES = 3
SMOKE_IDLE_WINDOW_S = 2.0
SMOKE_WARMUP = 3
"""Tasks of each front's warm-up listen in a smoke run of `--watched` (a real run takes `push_scale.WARMUP_TASKS`)."""
WARMUP = 3
CREATE_CONCURRENCY = 16
ELICITATION: Final[dict[str, Any]] = {"elicitation": {}}
TRANSIENT_ERROR: Final = -32603
"""`tasks/get` answered "Task service unavailable, try again": what a front says when a Temporal call timed out."""
ANSWER: Final = {"action": "accept", "content": {"confirm": True}}
TARGET_P50_MS = 100.0
# What the front calls while its watchers wait; the worker's polls are the other operations.
FRONT_IDLE_OPERATIONS: Final = frozenset(
    {"PollWorkflowExecutionHistory", "GetWorkflowExecutionHistory", "DescribeWorkflowExecution"}
)
# The server holds an idle history long poll for 20 s (`history.longPollExpirationInterval`), so a
# window of whole multiples of that sees every watcher re-poll the same number of times.
IDLE_WINDOW_S = 40.0
QUICK_IDLE_WINDOW_S = 20.0
# Long enough that the raw follower's next page request is parked at the server before the signal.
PARK_S = 0.05
SAMPLE_TIMEOUT_S = 30.0
RUN_TIMEOUT_S = 600.0
QUICK_RUN_TIMEOUT_S = 240.0


# --- the listen stream -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Frame:
    at: float
    """`perf_counter()` when the frame was read."""
    wall_ms: float
    task_id: str
    status: str
    last_updated_ms: float | None
    input_keys: tuple[str, ...]


def _iso_ms(value: object) -> float | None:
    if not isinstance(value, str):
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000


@dataclass
class ListenStream:
    """One `subscriptions/listen` over HTTP SSE, read in the background; every frame is kept."""

    http: httpx.AsyncClient
    url: str
    task_ids: Sequence[str]
    frames: dict[str, list[Frame]] = field(default_factory=dict[str, list[Frame]])
    acked_at: float | None = None
    acked_ids: int = 0
    opened_at: float = 0.0
    _changed: anyio.Event = field(default_factory=anyio.Event)

    def message(self) -> dict[str, Any]:
        params = {"notifications": {"taskIds": list(self.task_ids)}}
        return request_message(77, "subscriptions/listen", params, capabilities=ELICITATION)

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        self.opened_at = time.perf_counter()
        request = self.http.stream(
            "POST",
            self.url,
            content=json.dumps(self.message()),
            headers=base_headers("subscriptions/listen"),
            timeout=httpx.Timeout(10.0, read=None),
        )
        async with request as response:
            if response.status_code != 200:
                raise RuntimeError(f"listen refused: HTTP {response.status_code} {await response.aread()!r}")
            task_status.started()
            async for frame in sse_frames(response):
                self._take(frame)

    def _take(self, frame: dict[str, Any]) -> None:
        at, wall_ms = time.perf_counter(), time.time() * 1000
        method, params = frame.get("method"), as_object(frame.get("params"))
        if method == "notifications/subscriptions/acknowledged":
            self.acked_at = at
            self.acked_ids = len(params.get("notifications", {}).get("taskIds", []))
        elif method == "notifications/tasks":
            task_id = str(params["taskId"])
            self.frames.setdefault(task_id, []).append(
                Frame(
                    at=at,
                    wall_ms=wall_ms,
                    task_id=task_id,
                    status=str(params["status"]),
                    last_updated_ms=_iso_ms(params.get("lastUpdatedAt")),
                    input_keys=tuple(params.get("inputRequests") or ()),
                )
            )
        self._changed.set()
        self._changed = anyio.Event()

    def of(self, task_id: str) -> list[Frame]:
        return self.frames.get(task_id, [])

    async def until(self, done: Callable[[], bool], timeout_s: float, what: str) -> None:
        try:
            with anyio.fail_after(timeout_s):
                while not done():
                    await self._changed.wait()
        except TimeoutError:
            raise TimeoutError(f"no {what} on the listen stream within {timeout_s:g} s") from None


# --- tasks -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Parked:
    task_id: str
    key: str
    """The task-level key of its one outstanding question."""


async def create_parked(mcp: TaskCalls, count: int) -> list[str]:
    async def create() -> str:
        result = (await mcp.call_tool("confirm_delete", {"filename": "bench.txt"}, capabilities=ELICITATION)).result
        if result.get("resultType") != "task":
            raise RuntimeError(f"expected a task, got {result}")
        return str(result["taskId"])

    return await bounded(CREATE_CONCURRENCY, [create] * count)


async def until_input_required(mcp: TaskCalls, task_ids: Sequence[str], timeout_s: float) -> list[Parked]:
    """Every task once it waits for its answer, with its question's key, by `tasks/get`.

    The worker takes tasks about in creation order, so the tasks are checked a batch at a
    time in that order, and a batch that is not all there yet is retried after a pause:
    polling all the stragglers at once would only take CPU from the worker it waits for.
    """
    parked: list[Parked] = []

    def get(task_id: str) -> Callable[[], Awaitable[Parked | None]]:
        async def job() -> Parked | None:
            reply = await mcp.get(task_id)
            if reply.body.get("error", {}).get("code") == TRANSIENT_ERROR:
                return None  # Temporal slow to answer on a loaded machine: asked again with the next batch
            task = reply.result
            if task["status"] == "input_required" and task.get("inputRequests"):
                return Parked(task_id, next(iter(task["inputRequests"])))
            if task["status"] != "working":
                raise RuntimeError(f"task {task_id} is {task['status']}, not waiting for input")
            return None

        return job

    with anyio.fail_after(timeout_s):
        while len(parked) < len(task_ids):
            batch = task_ids[len(parked) : len(parked) + CREATE_CONCURRENCY]
            found = await bounded(CREATE_CONCURRENCY, [get(task_id) for task_id in batch])
            ready = list(itertools.takewhile(lambda task: task is not None, found))
            parked += [task for task in ready if task is not None]
            if len(ready) < len(batch):
                await anyio.sleep(0.5)
    return parked


# --- samples ---------------------------------------------------------------------------------------


@dataclass
class Results:
    ours_change: list[float] = field(default_factory=list[float])
    ours_completed: list[float] = field(default_factory=list[float])
    ours_ack: list[float] = field(default_factory=list[float])
    ours_signal: list[float] = field(default_factory=list[float])
    ours_commit: list[float] = field(default_factory=list[float])
    ours_delivery: list[float] = field(default_factory=list[float])
    first_statuses: dict[str, int] = field(default_factory=dict[str, int])
    raw_change: list[float] = field(default_factory=list[float])
    raw_completed: list[float] = field(default_factory=list[float])
    raw_signal: list[float] = field(default_factory=list[float])
    raw_commit: list[float] = field(default_factory=list[float])
    raw_delivery: list[float] = field(default_factory=list[float])


_MODIFIED = EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED
_COMPLETED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED
_SIGNALED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED


def _event_ms(event: HistoryEvent) -> float:
    """When the server wrote the event (its own clock, on this machine)."""
    return event.event_time.ToMilliseconds() + (event.event_time.nanos % 1_000_000) / 1e6


async def ours(stack: Stack, mcp: TaskCalls, stream: ListenStream, task: Parked, results: Results | None) -> None:
    """Answer over HTTP; time the notifications the listen stream brings for this task."""
    before = len(stream.of(task.task_id))
    sent, sent_wall_ms = time.perf_counter(), time.time() * 1000
    _ = (await mcp.update(task.task_id, {task.key: ANSWER})).result
    ack_ms = ms_since(sent)

    def completed() -> bool:
        return any(frame.status == "completed" for frame in stream.of(task.task_id)[before:])

    await stream.until(completed, SAMPLE_TIMEOUT_S, f"{task.task_id} completed")
    if results is None:
        return
    # The first frame that shows a state from after the update (lastUpdatedAt has ms resolution).
    new = [f for f in stream.of(task.task_id)[before:] if (f.last_updated_ms or 0) >= sent_wall_ms - 1]
    first, done = new[0], next(frame for frame in new if frame.status == "completed")
    results.ours_change.append((first.at - sent) * 1000)
    results.ours_completed.append((done.at - sent) * 1000)
    results.ours_ack.append(ack_ms)
    results.first_statuses[first.status] = results.first_statuses.get(first.status, 0) + 1
    # Read after the fact, outside the timing: when the server recorded the signal, and the memo upsert behind `first`.
    handle = stack.client.get_workflow_handle(UNKEYED.workflow_id(task.task_id, None))
    history = [event async for event in handle.fetch_history_events()]
    signal_ms = next(_event_ms(e) for e in history if e.event_type == _SIGNALED)
    upsert_ms = next(_event_ms(e) for e in history if e.event_type == _MODIFIED and _event_ms(e) >= signal_ms)
    results.ours_signal.append(signal_ms - sent_wall_ms)
    results.ours_commit.append(upsert_ms - signal_ms)
    results.ours_delivery.append(first.wall_ms - upsert_ms)


async def raw(stack: Stack, task: Parked, results: Results | None) -> None:
    """Signal with the raw client; time the events on a history long poll of the workflow."""
    handle = stack.client.get_workflow_handle(UNKEYED.workflow_id(task.task_id, None))
    length = (await handle.describe()).history_length
    events: list[tuple[float, float, HistoryEvent]] = []
    caught_up, closed = anyio.Event(), anyio.Event()
    sent = sent_wall_ms = 0.0

    async def follow() -> None:
        async for event in handle.fetch_history_events(wait_new_event=True):
            events.append((time.perf_counter(), time.time() * 1000, event))
            if event.event_id >= length:
                caught_up.set()
            if event.event_type == _COMPLETED:
                closed.set()
                return

    with anyio.fail_after(SAMPLE_TIMEOUT_S):
        async with anyio.create_task_group() as group:
            group.start_soon(follow)
            await caught_up.wait()
            await anyio.sleep(PARK_S)
            sent, sent_wall_ms = time.perf_counter(), time.time() * 1000
            await handle.signal(INPUT_SIGNAL, {task.key: ANSWER})
            await closed.wait()
    if results is None:
        return
    after = [(at, wall_ms, event) for at, wall_ms, event in events if at >= sent]
    change = next((at, wall_ms, event) for at, wall_ms, event in after if event.event_type == _MODIFIED)
    done = next(at for at, _, event in after if event.event_type == _COMPLETED)
    results.raw_change.append((change[0] - sent) * 1000)
    results.raw_completed.append((done - sent) * 1000)
    signal_ms = next(_event_ms(event) for _, _, event in after if event.event_type == _SIGNALED)
    results.raw_signal.append(signal_ms - sent_wall_ms)
    results.raw_commit.append(_event_ms(change[2]) - signal_ms)
    results.raw_delivery.append(change[1] - _event_ms(change[2]))


# --- the run ---------------------------------------------------------------------------------------


@dataclass
class Report:
    tasks: int
    samples: int
    results: Results = field(default_factory=Results)

    def note(self, line: str) -> None:
        """Progress and the one-line figures go out as they come; the table comes last."""
        print(line, flush=True)


async def run(report: Report, idle_window_s: float) -> None:
    n, m = report.tasks, report.samples
    async with product_stack("mcp-tasks-push-") as stack, http_client() as http:
        mcp = TaskCalls(HttpMcp(stack.url, http))
        started = time.perf_counter()
        ids = await create_parked(mcp, n + m + WARMUP)
        report.note(f"created {len(ids)} confirm_delete tasks in {time.perf_counter() - started:.1f} s")
        parked = await until_input_required(mcp, ids, timeout_s=180)
        report.note(f"all {len(parked)} in input_required after {time.perf_counter() - started:.1f} s")
        # Both sides sample the oldest tasks, alternately. The worker caches 1,000 workflows (the SDK's
        # default), so past that the oldest are evicted and replay their history on the next workflow
        # task: 10-20 ms more on this machine, which must not land on one side only.
        pool = 2 * (m + WARMUP)
        sampled, fresh = parked[0:pool:2], parked[1:pool:2]
        listened = sampled + parked[pool:]
        report.note(
            f"sampled: the {pool} oldest tasks, alternately ours (on the listen) and raw (not on it);"
            f" {len(listened)} tasks on the listen"
        )
        await anyio.sleep(1.0)
        rss_before = rss_mib(stack.front.pid)

        stream = ListenStream(http, stack.url, [task.task_id for task in listened])
        async with anyio.create_task_group() as group:
            await group.start(stream.run)

            def snapshots() -> bool:
                return len(stream.frames) == n

            await stream.until(snapshots, 120, "every snapshot")
            all_in = time.perf_counter() - stream.opened_at
            acked = (stream.acked_at or stream.opened_at) - stream.opened_at
            report.note(
                f"listen: ack ({stream.acked_ids} taskIds) after {acked:.2f} s, all {n} snapshots after {all_in:.2f} s"
            )
            await anyio.sleep(2.0)
            rss_snapshot = rss_mib(stack.front.pid)
            await idle(report, stack, http, idle_window_s)
            # After the idle window, the snapshot's transient garbage (N describes) is mostly gone.
            rss_idle = rss_mib(stack.front.pid)
            report.note(
                f"front RSS: {rss_before:.1f} MiB before the listen; with {n} tasks subscribed {rss_snapshot:.1f} MiB"
                f" 2 s after the snapshot, {rss_idle:.1f} MiB after the idle window"
                f" (+{(rss_idle - rss_before) * 1024 / n:.1f} KiB per subscribed task)"
            )

            for index in range(WARMUP):
                await ours(stack, mcp, stream, listened[index], None)
                await raw(stack, fresh[index], None)
            # Interleaved, so drift on the shared machine hits both alike.
            for index in range(m):
                await ours(stack, mcp, stream, listened[WARMUP + index], report.results)
                await raw(stack, fresh[WARMUP + index], report.results)
            report.note(f"front RSS after the samples: {rss_mib(stack.front.pid):.1f} MiB")
            group.cancel_scope.cancel()


async def idle(report: Report, stack: Stack, http: httpx.AsyncClient, window_s: float) -> None:
    """CPU, and the RPCs the front makes, while all N long polls sit idle."""
    meter = CpuMeter(stack.pids(bench=False))
    before = await stack.metrics.requests(http) if stack.metrics else None
    started = meter.start()
    await anyio.sleep(window_s)
    usage = meter.stop(started)
    after = await stack.metrics.requests(http) if stack.metrics else None
    report.note(f"idle {window_s:.0f} s, CPU (% of one core): {cpu_note(usage)}")
    if before is None or after is None:
        report.note("idle RPCs not measured: the dev server named no metrics endpoint")
        return
    delta = rpc_delta(before, after)
    front = {op: count for op, count in delta.items() if op in FRONT_IDLE_OPERATIONS}
    others = {op: count for op, count in delta.items() if op not in FRONT_IDLE_OPERATIONS}
    report.note(
        f"idle {window_s:.0f} s, front -> Temporal: {sum(front.values()) / window_s:.1f} RPC/s"
        f" ({_per_s(front, window_s) or 'none'}; the server's frontend service_requests;"
        f" the worker meanwhile: {_per_s(others, window_s) or 'none'})"
    )


def _per_s(counts: dict[str, float], window_s: float) -> str:
    return ", ".join(f"{op} {count / window_s:.1f}/s" for op, count in sorted(counts.items()))


def table(results: Results, tasks: int) -> str:
    header = ("measure", "n", "p50 ms", "p99 ms", "ours/raw p50", "notes")

    def row(name: str, values: Sequence[float], ratio: str = "", notes: str = "") -> tuple[str, ...]:
        return (name, str(len(values)), f"{percentile(values, 50):.1f}", f"{percentile(values, 99):.1f}", ratio, notes)

    def ratio(a: Sequence[float], b: Sequence[float]) -> str:
        return f"{percentile(a, 50) / percentile(b, 50):.2f}" if a and b else ""

    r = results
    firsts = ", ".join(f"{status} x{count}" for status, count in sorted(r.first_statuses.items()))
    rows = [
        row(
            "(a) ours: tasks/update sent -> first notifications/tasks",
            r.ours_change,
            ratio(r.ours_change, r.raw_change),
            f"{tasks} tasks on one listen; first status: {firsts}",
        ),
        row("(a) raw: signal sent -> WORKFLOW_PROPERTIES_MODIFIED", r.raw_change, "", "history long poll, raw client"),
        row(
            "(b) ours: tasks/update sent -> completed notification",
            r.ours_completed,
            ratio(r.ours_completed, r.raw_completed),
        ),
        row("(b) raw: signal sent -> WORKFLOW_EXECUTION_COMPLETED", r.raw_completed),
        row("ours: tasks/update ack (HTTP response)", r.ours_ack, "", "waits until the memo shows the answer"),
        row(
            "(a) ours, part 1: update sent -> signal recorded",
            r.ours_signal,
            ratio(r.ours_signal, r.raw_signal),
            "HTTP + the front's describe + the signal RPC; event times are the server's clock",
        ),
        row("(a) raw, part 1: signal sent -> signal recorded", r.raw_signal, "", "the signal RPC"),
        row(
            "(a) ours, part 2: signal recorded -> upsert written",
            r.ours_commit,
            ratio(r.ours_commit, r.raw_commit),
            "the worker's workflow task (same work both sides)",
        ),
        row("(a) raw, part 2: signal recorded -> upsert written", r.raw_commit),
        row(
            "(a) ours, part 3: upsert written -> notification read",
            r.ours_delivery,
            ratio(r.ours_delivery, r.raw_delivery),
            "long poll wakes the front, decode, task_view, SSE",
        ),
        row("(a) raw, part 3: upsert written -> event read", r.raw_delivery, "", "long poll wakes the raw client"),
    ]
    return render(header, rows)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.push", description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--tasks",
        type=positive_int,
        default=None,
        help=f"tasks on the listen (default {DEFAULT_TASKS}, at most {MAX_TASK_IDS})",
    )
    parser.add_argument(
        "--samples", type=positive_int, default=None, help=f"answered tasks timed (default {DEFAULT_SAMPLES})"
    )
    parser.add_argument(
        "--watched",
        type=_sizes,
        default=None,
        help="feed vs per-task long polls at these numbers of watched tasks, e.g. 1000,5000,20000",
    )
    parser.add_argument(
        "--three-fronts",
        choices=["largest", "every"],
        default="largest",
        help="with --watched: the sizes at which three feed-mode fronts share the watched tasks (default: the largest)",
    )
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument(
        "--quick", action="store_true", help=f"{QUICK_SAMPLES} samples, {QUICK_IDLE_WINDOW_S:g} s idle window"
    )
    modes.add_argument(
        "--smoke",
        action="store_true",
        help=f"{SMOKE_TASKS} tasks, {SMOKE_SAMPLES} samples, {SMOKE_IDLE_WINDOW_S:g} s idle window: proves it runs",
    )
    args = parser.parse_args(argv)
    if args.tasks is None:
        args.tasks = SMOKE_TASKS if args.smoke else DEFAULT_TASKS
    if args.tasks > MAX_TASK_IDS:
        parser.error(f"--tasks: the server takes at most {MAX_TASK_IDS} taskIds per listen")
    return args


def _sizes(text: str) -> list[int]:
    return [positive_int(part) for part in text.split(",") if part.strip()]


async def scale_main(
    sizes: Sequence[int],
    samples: int,
    idle_window_s: float,
    warmup: int | None = None,
    *,
    three_fronts_everywhere: bool = False,
) -> None:
    from .push_scale import WARMUP_TASKS, idle_ops, marginals, run_scale, table

    print("\n".join(machine()))
    print(
        "server: temporal dev server, SQLite file (WAL) in a temp dir; one worker; tasks started with a front's own"
        " workflow input; per size, a fresh feed-mode front, then a fresh poll-mode front (baseline), listening on"
        " the same tasks; at "
        + ("every size" if three_fronts_everywhere else "the largest size")
        + ", also three feed-mode fronts sharing them"
    )
    started = time.perf_counter()
    results = await run_scale(
        sizes,
        samples,
        idle_window_s,
        WARMUP_TASKS if warmup is None else warmup,
        three_fronts_everywhere=three_fronts_everywhere,
    )
    print()
    print(table(results))
    print()
    print(idle_ops(results))
    if marginal := marginals(results):
        print()
        print(marginal)
    print(f"\ntotal run time: {time.perf_counter() - started:.1f} s")


async def amain(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    if args.watched:
        samples = args.samples or (SMOKE_SAMPLES if args.smoke else QUICK_SAMPLES if args.quick else DEFAULT_SAMPLES)
        idle_s = SMOKE_IDLE_WINDOW_S if args.smoke else QUICK_IDLE_WINDOW_S if args.quick else IDLE_WINDOW_S
        await scale_main(
            args.watched,
            samples,
            idle_s,
            SMOKE_WARMUP if args.smoke else None,
            three_fronts_everywhere=args.three_fronts == "every",
        )
        return
    samples = args.samples or (SMOKE_SAMPLES if args.smoke else QUICK_SAMPLES if args.quick else DEFAULT_SAMPLES)
    tasks = max(args.tasks, samples + WARMUP)
    if tasks > MAX_TASK_IDS:
        raise SystemExit(f"--samples: at most {MAX_TASK_IDS - WARMUP} with {MAX_TASK_IDS} tasks per listen")
    print("\n".join(machine()))
    print(
        "server: temporal dev server, SQLite file (WAL) in a temp dir; `mcp-tasks-temporal serve` and `worker`"
        " as subprocesses; this process is the HTTP client and the raw temporalio client; all on 127.0.0.1"
    )
    report = Report(tasks, samples)
    started = time.perf_counter()
    short = args.quick or args.smoke
    idle_window_s = SMOKE_IDLE_WINDOW_S if args.smoke else QUICK_IDLE_WINDOW_S if args.quick else IDLE_WINDOW_S
    async with asyncio.timeout(QUICK_RUN_TIMEOUT_S if short else RUN_TIMEOUT_S):
        await run(report, idle_window_s)
    print()
    print(table(report.results, tasks))
    p50 = percentile(report.results.ours_change, 50)
    verdict = "met" if p50 <= TARGET_P50_MS else "missed"
    print(
        f"\ntarget: state change -> notification p50 <= {TARGET_P50_MS:g} ms with 1,000 subscribed tasks;"
        f" measured with {tasks}: p50 {p50:.1f} ms: {verdict}"
    )
    print(f"\ntotal run time: {time.perf_counter() - started:.1f} s")
    if args.smoke:
        await scale_main([SMOKE_TASKS], SMOKE_SAMPLES, SMOKE_IDLE_WINDOW_S, SMOKE_WARMUP)


def main(argv: Sequence[str] | None = None) -> None:
    run_main(lambda: amain(argv))


if __name__ == "__main__":
    main()
