"""What one tool task costs Temporal, from `tools/call` to its result in hand: RPCs, workflow tasks, events.

    .venv/bin/python -m benchmarks.round_trips [--tasks N] [--quick | --smoke]

One dev server, `mcp-tasks-temporal worker` and `serve` as subprocesses, each with `--metrics-port`: the
Temporal SDK's own Prometheus counters (`temporal_request` and `temporal_long_request` by operation, workflow
and activity tasks run, eager activities) say what the front and the worker each asked of the server, and the
dev server's `service_requests` what it answered to all clients (this process's own calls are counted apart,
through a client of its own with the same counters). N tasks of each case run one after the other; the
counters are read before and after, each read once the dev server has flushed its counters (it reports
about once a second), the idle rate over the same time is subtracted, and the difference is divided by N.
Each task's history gives the workflow tasks, activity tasks, memo and search-attribute upserts and events
by type.

Cases (the conformance fixture's `slow_compute`, served by `benchmarks/ours_app.py` with the extension's
defaults, and its twin `slow_compute_as_task`, declared `inline_budget_ms=0`):

- task, 0 s: `tools/call` of the twin, answered with a task; this process waits for the workflow to close with
  its own Temporal client (the dev server column counts that wait), then one `tasks/get` returns the result;
- task, 50 ms: the same with `seconds=0.05`, which sets one status line (a heartbeat) first;
- in the call, 0 s and 50 ms: `tools/call` of `slow_compute`, which the front answers with the result, its
  tool having ended within the default budget (the runs' histories found through visibility);
- plain call, 0 s: the same tool called without the tasks extension, which the front holds open until the result;
- `tasks/get` of a working task, and a repeated `tasks/get` of a completed one: per read, the front's RPCs
  only (the working task's own heartbeats go on meanwhile).

Counts, not times: they do not depend on the machine's load, so one run is the figure.
"""

from __future__ import annotations

import argparse
import os
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final

import anyio
import httpx
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

from mcp_tasks_temporal.temporal.ids import UNKEYED
from tests.wire import HttpMcp, TaskCalls

from ._common import (
    HOST,
    Stack,
    free_port,
    http_client,
    load_average,
    machine,
    positive_int,
    product_stack,
    render,
    run_main,
)

DEFAULT_TASKS = 20
SMOKE_TASKS = 2
IDLE_WINDOW_S = 10.0
SMOKE_IDLE_WINDOW_S = 2.0
SETTLE_S = 2.5
"""Before each read of the counters: the dev server reports its own about once a second."""
SMOKE_SETTLE_S = 1.2
WARMUP = 3
APP: Final = "benchmarks.ours_app:app"
AS_TASK: Final = "slow_compute_as_task"
"""`slow_compute` declared `inline_budget_ms=0`: every call answered with its task."""
LONG_TOOL: Final = {"seconds": 3600, "label": "working"}
RESULT_TIMEOUT_S = 60.0
_LINE: Final = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$")
_LABEL: Final = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


# --- reading counters ------------------------------------------------------------------------------


Series = dict[tuple[str, frozenset[tuple[str, str]]], float]


class Tally(dict[str, float]):
    """Counts by name; a name never counted is 0."""

    def __missing__(self, key: str) -> float:
        return 0.0

    def add(self, other: Mapping[str, float]) -> None:
        for key, value in other.items():
            self[key] += value


async def scrape(http: httpx.AsyncClient, url: str) -> Series:
    """Every sample of a Prometheus text endpoint, by metric name and label set."""
    return parse_series((await http.get(url)).text)


def parse_series(text: str) -> Series:
    """Every sample of Prometheus text exposition, by metric name and label set."""
    series: Series = {}
    for line in text.splitlines():
        match = _LINE.match(line)
        if match is None or line.startswith("#"):
            continue
        name, labels, value = match.groups()
        series[(name, frozenset(_LABEL.findall(labels or "")))] = float(value)
    return series


def total(series: Series, name: str, **wanted: str) -> float:
    """The sum of `name` over the label sets that carry every `wanted` label."""
    return sum(
        value
        for (metric, labels), value in series.items()
        if metric == name and all((k, v) in labels for k, v in wanted.items())
    )


def by_label(series: Series, names: Sequence[str], label: str) -> Tally:
    counts: Tally = Tally()
    for (metric, labels), value in series.items():
        if metric in names:
            for key, text in labels:
                if key == label:
                    counts[text] += value
    return counts


@dataclass(frozen=True)
class Probe:
    """Where the counters are: the front's, the worker's and this process's SDK metrics, the dev server's."""

    stack: Stack
    http: httpx.AsyncClient
    own_metrics: str
    client: Client
    """This process's Temporal client, counted by `own_metrics`."""
    units: int
    settle_s: float = SETTLE_S

    async def snapshot(self) -> Snapshot:
        stack = self.stack
        assert stack.front_metrics and stack.worker_metrics and stack.metrics
        await anyio.sleep(self.settle_s)
        return Snapshot(
            time.perf_counter(),
            await scrape(self.http, stack.front_metrics),
            await scrape(self.http, stack.worker_metrics),
            await scrape(self.http, self.own_metrics),
            await stack.metrics.requests(self.http),
        )


@dataclass
class Snapshot:
    at: float
    front: Series
    worker: Series
    own: Series
    server: dict[str, float]

    def counters(self) -> dict[str, Tally]:
        return {
            "front": rpcs_by_operation(self.front),
            "worker": rpcs_by_operation(self.worker),
            "benchmark": rpcs_by_operation(self.own),
            "dev server": Tally(self.server),
            "worker tasks": _worker_tasks(self.worker),
        }


@dataclass
class Counts:
    """Per unit (a task, or a read), after the idle rate is taken out."""

    rpcs: dict[str, Tally] = field(default_factory=dict[str, Tally])
    """By process (front, worker, dev server): operation -> count."""
    worker: Tally = field(default_factory=Tally)
    """Workflow tasks and activity tasks the worker ran, eager activities."""
    events: Tally = field(default_factory=Tally)
    """History events by type, per task."""


def rpcs_by_operation(series: Series) -> Tally:
    """Temporal RPCs by operation, from one process's SDK counters; long polls apart."""
    counts = by_label(series, ["temporal_request_total"], "operation")
    for operation, value in by_label(series, ["temporal_long_request_total"], "operation").items():
        counts[f"{operation} (long poll)"] += value
    return counts


def _worker_tasks(series: Series) -> Tally:
    return Tally(
        {
            "workflow tasks run": total(series, "temporal_workflow_task_execution_latency_count"),
            "activity tasks run": total(series, "temporal_activity_execution_latency_count"),
            "of which eager": total(series, "temporal_activity_task_received_total", eager="true"),
        }
    )


def difference(before: Snapshot, after: Snapshot, idle: Mapping[str, Tally], units: int) -> Counts:
    """(after - before - idle rate x elapsed) / units, for every counter."""
    elapsed = after.at - before.at
    counts = Counts()
    start, end = before.counters(), after.counters()
    for process in start:
        per_unit: Tally = Tally()
        for key in set(start[process]) | set(end[process]):
            value = (end[process][key] - start[process][key] - idle[process][key] * elapsed) / units
            if abs(value) >= 0.005:
                per_unit[key] = value
        if process == "worker tasks":
            counts.worker = per_unit
        else:
            counts.rpcs[process] = per_unit
    return counts


def idle_rates(before: Snapshot, after: Snapshot) -> dict[str, Tally]:
    elapsed = after.at - before.at
    start, end = before.counters(), after.counters()
    return {
        process: Tally({key: (end[process][key] - start[process][key]) / elapsed for key in end[process]})
        for process in start
    }


# --- the cases -------------------------------------------------------------------------------------


@dataclass
class Case:
    name: str
    unit: str
    run_one: Callable[[], Awaitable[str | None]]
    """One unit of work; the task whose history to read, if any."""
    setup: Callable[[], Awaitable[None]] | None = None
    teardown: Callable[[], Awaitable[None]] | None = None
    front_only: bool = False
    """Reads: only the front's RPCs are the read's (a working task heartbeats meanwhile)."""
    runs: Callable[[datetime], Awaitable[list[str]]] | None = None
    """The workflow IDs of the units started since then, for a case whose unit does not learn its task's ID."""
    counts: Counts | None = None


async def history(client: Client, workflow_id: str) -> Tally:
    events: Tally = Tally()
    async for event in client.get_workflow_handle(workflow_id).fetch_history_events():
        events[EventType.Name(event.event_type).removeprefix("EVENT_TYPE_")] += 1
    return events


async def measure(probe: Probe, case: Case, units: int, idle: dict[str, Tally]) -> None:
    if case.setup is not None:
        await case.setup()
    try:
        for _ in range(WARMUP):
            await case.run_one()
        before = await probe.snapshot()
        started = datetime.now(UTC)
        tasks = [await case.run_one() for _ in range(units)]
        after = await probe.snapshot()
        if case.runs is not None:
            tasks = await case.runs(started)
    finally:
        if case.teardown is not None:
            await case.teardown()
    case.counts = difference(before, after, idle, units)
    if case.front_only:
        case.counts.rpcs = {"front": case.counts.rpcs["front"]}
        case.counts.worker = Tally()
    read = [task for task in tasks if task is not None]
    for workflow_id in read:
        case.counts.events.add(await history(probe.client, workflow_id))
    for key in case.counts.events:
        case.counts.events[key] /= max(len(read), 1)
    print(f"  {case.name}: {units} {case.unit}s; load {load_average()}", flush=True)


def cases(probe: Probe, mcp: TaskCalls) -> list[Case]:
    async def task(seconds: float) -> str:
        created = (await mcp.call_tool(AS_TASK, {"seconds": seconds, "label": "trips"})).result
        if created.get("resultType") != "task":
            raise RuntimeError(f"expected a task, got {created}")
        task_id = str(created["taskId"])
        workflow_id = UNKEYED.workflow_id(task_id, None)
        with anyio.fail_after(RESULT_TIMEOUT_S):
            await probe.client.get_workflow_handle(workflow_id).result()
        done = (await mcp.get(task_id)).result
        if done.get("status") != "completed" or "result" not in done:
            raise RuntimeError(f"expected the completed task with its result, got {done}")
        return workflow_id

    async def in_the_call(seconds: float) -> str | None:
        result = (await mcp.call_tool("slow_compute", {"seconds": seconds, "label": "trips"})).result
        if result.get("resultType") != "complete" or "content" not in result:
            raise RuntimeError(f"expected the tool's result in the call, got {result}")
        return None

    async def runs_since(started: datetime) -> list[str]:
        """The runs of `slow_compute` started since then, once visibility shows them all."""
        since = started.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        query = f"McpTool = 'slow_compute' AND StartTime >= '{since}' AND ExecutionStatus = 'Completed'"
        with anyio.fail_after(RESULT_TIMEOUT_S):
            while True:
                found = [execution.id async for execution in probe.client.list_workflows(query)]
                if len(found) >= probe.units:
                    return found
                await anyio.sleep(0.5)

    async def plain(seconds: float) -> str | None:
        result = (await mcp.call_tool("slow_compute", {"seconds": seconds, "label": "trips"}, tasks=False)).result
        if result.get("resultType", "complete") != "complete" or "content" not in result:
            raise RuntimeError(f"expected the tool's result, got {result}")
        return None

    state: dict[str, str] = {}

    async def start_working() -> None:
        state["working"] = str((await mcp.call_tool(AS_TASK, LONG_TOOL)).result["taskId"])
        await mcp.wait_for(state["working"], lambda t: t["status"] == "working" and "statusMessage" in t)

    async def stop_working() -> None:
        _ = (await mcp.cancel(state.pop("working"))).result

    async def get_working() -> None:
        task_view = (await mcp.get(state["working"])).result
        if task_view.get("status") != "working":
            raise RuntimeError(f"expected a working task, got {task_view}")
        return None

    async def complete_one() -> None:
        state["done"] = (await mcp.call_tool(AS_TASK, {"seconds": 0, "label": "trips"})).result["taskId"]
        await mcp.wait_for(state["done"])

    async def get_completed() -> None:
        task_view = (await mcp.get(state["done"])).result
        if task_view.get("status") != "completed":
            raise RuntimeError(f"expected a completed task, got {task_view}")

    async def none(call: Callable[[], Awaitable[None]]) -> str | None:
        await call()
        return None

    return [
        Case("task, 0 s tool", "task", lambda: task(0)),
        Case("task, 50 ms tool, 1 status line", "task", lambda: task(0.05)),
        Case("in the call, 0 s tool", "call", lambda: in_the_call(0), runs=runs_since),
        Case("in the call, 50 ms tool, 1 status line", "call", lambda: in_the_call(0.05), runs=runs_since),
        Case("plain call, 0 s tool", "call", lambda: plain(0)),
        Case("tasks/get, working", "read", lambda: none(get_working), start_working, stop_working, front_only=True),
        Case("tasks/get, completed, again", "read", lambda: none(get_completed), complete_one, front_only=True),
    ]


# --- the report ------------------------------------------------------------------------------------


def _cell(value: float) -> str:
    return "" if abs(value) < 0.005 else f"{value:.2f}"


def report(measured: Sequence[Case], idle: Mapping[str, Tally], idle_s: float) -> str:
    header = ["per unit", *(c.name for c in measured), f"idle, per {idle_s:g} s"]
    rows: list[list[str]] = []
    counted = [c.counts for c in measured if c.counts is not None]
    for process in ("front", "worker", "benchmark", "dev server"):
        operations = sorted({op for counts in counted for op in counts.rpcs.get(process, Tally())})
        for op in operations:
            cells = [_cell(c.rpcs.get(process, Tally())[op]) for c in counted]
            rows.append([f"{process}: {op}", *cells, _cell(idle[process][op] * idle_s)])
        sums = [_cell(sum(c.rpcs.get(process, Tally()).values())) for c in counted]
        rows.append([f"**{process}: all RPCs**", *sums, _cell(sum(idle[process].values()) * idle_s)])
    rows += [
        [f"worker: {key}", *(_cell(c.worker[key]) for c in counted), _cell(idle["worker tasks"][key] * idle_s)]
        for key in ("workflow tasks run", "activity tasks run", "of which eager")
    ]
    event_types = sorted({e for c in counted for e in c.events})
    rows += [[f"history: {event}", *(_cell(c.events[event]) for c in counted), ""] for event in event_types]
    rows.append(["**history: all events**", *(_cell(sum(c.events.values())) for c in counted), ""])
    return render(header, rows)


def summary(measured: Sequence[Case]) -> str:
    """The figures the work item names, per task."""
    lines: list[str] = []
    for case in measured:
        counts = case.counts
        if counts is None or not counts.events:
            continue
        events = counts.events
        lines.append(
            f"{case.name}: front {sum(counts.rpcs['front'].values()):.1f} RPCs, worker"
            f" {sum(counts.rpcs['worker'].values()):.1f} RPCs (dev server, all clients:"
            f" {sum(counts.rpcs['dev server'].values()):.1f}, of which this benchmark's wait"
            f" {sum(counts.rpcs['benchmark'].values()):.1f}); {events['WORKFLOW_TASK_COMPLETED']:.1f} workflow tasks,"
            f" {events['ACTIVITY_TASK_SCHEDULED']:.1f} activity tasks ({counts.worker['of which eager']:.1f} eager),"
            f" {events['WORKFLOW_PROPERTIES_MODIFIED']:.1f} memo upserts,"
            f" {events['UPSERT_WORKFLOW_SEARCH_ATTRIBUTES']:.1f} search-attribute upserts,"
            f" {counts.rpcs['worker']['RecordActivityTaskHeartbeat']:.1f} heartbeats (status lines),"
            f" {sum(events.values()):.0f} history events"
        )
    return "\n".join(lines)


# --- the run ---------------------------------------------------------------------------------------


async def own_client(address: str, namespace: str) -> tuple[Client, str]:
    """A Temporal client for this process's own waits and reads, with its counters on an endpoint of its own."""
    port = free_port()
    # The product's settings (temporal/metrics.py), so the same names come out.
    config = PrometheusConfig(bind_address=f"{HOST}:{port}", counters_total_suffix=True, durations_as_seconds=True)
    runtime = Runtime(telemetry=TelemetryConfig(metrics=config))
    client = await Client.connect(address, namespace=namespace, runtime=runtime)
    return client, f"http://{HOST}:{port}/metrics"


async def run(units: int, idle_s: float, settle_s: float = SETTLE_S) -> tuple[list[Case], dict[str, Tally]]:
    stack_of = product_stack("bench-round-trips-", app=APP, metrics=True, max_inline_budget_ms=None)
    async with stack_of as stack, http_client(8) as http:
        client, own_metrics = await own_client(stack.temporal_address, stack.client.namespace)
        probe = Probe(stack, http, own_metrics, client, units, settle_s)
        mcp = TaskCalls(HttpMcp(stack.url, http))
        measured = cases(probe, mcp)
        # Every path once, so first-use costs (the processes' own start-up reads) are not counted.
        for case in measured:
            if case.setup is not None:
                await case.setup()
            await case.run_one()
            if case.teardown is not None:
                await case.teardown()
        before = await probe.snapshot()
        await anyio.sleep(idle_s)
        idle = idle_rates(before, await probe.snapshot())
        for case in measured:
            await measure(probe, case, units, idle)
        return measured, idle


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.round_trips", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("--tasks", type=positive_int, default=None, help=f"units per case (default {DEFAULT_TASKS})")
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--quick", action="store_true", help="the same as the default: counts do not need more")
    modes.add_argument("--smoke", action="store_true", help=f"{SMOKE_TASKS} per case, {SMOKE_IDLE_WINDOW_S:g} s idle")
    return parser.parse_args(argv)


async def amain(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    units = args.tasks or (SMOKE_TASKS if args.smoke else DEFAULT_TASKS)
    idle_s = SMOKE_IDLE_WINDOW_S if args.smoke else IDLE_WINDOW_S
    print("\n".join(machine()))
    print(
        "server: temporal dev server, SQLite file (WAL) in a temp dir; `mcp-tasks-temporal serve` and `worker` as"
        " subprocesses with --metrics-port (the Temporal SDK's counters); the conformance fixture app; push mode"
        f" {os.environ.get('MCP_TASKS_PUSH', 'feed (the default)')}; counts per unit, the idle rate over the same"
        " time subtracted",
        flush=True,
    )
    started = time.perf_counter()
    measured, idle = await run(units, idle_s, SMOKE_SETTLE_S if args.smoke else SETTLE_S)
    print()
    print(report(measured, idle, idle_s))
    print()
    print(summary(measured))
    print(f"\nload average at end (1/5/15 min): {load_average()}")
    print(f"total run time: {time.perf_counter() - started:.1f} s")


def main(argv: Sequence[str] | None = None) -> None:
    run_main(lambda: amain(argv))


if __name__ == "__main__":
    main()
