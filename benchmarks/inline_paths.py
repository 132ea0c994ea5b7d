"""How a front may wait for a quick tool's outcome within a budget: update-with-start against the alternatives.

    .venv/bin/python -m benchmarks.inline_paths [--samples N] [--budget-ms B] [--quick | --smoke]

One dev server and `mcp-tasks-temporal worker` (the conformance fixture app) as a subprocess; this process is
the front: it starts `ToolTaskWorkflow` runs with the input a front gives them and waits, each way below, for
the tool's outcome or the budget, whichever comes first. Ways:

- `start` (no wait): `start_workflow` alone, what a task's create costs; the floor;
- `uws, workflow timer`: update-with-start (`ExecuteMultiOperation`: the start and the `mcp_tasks.settled`
  update in one call), the update handler waiting for the outcome with a timer of the budget;
- `uws, front's bound`: the same without a workflow timer, the front bounding its own wait; when the bound
  passes first it must still learn whether the start was taken, from the start's answer or a `describe`;
- `start + close long poll`: `start_workflow`, then `GetWorkflowExecutionHistory` long-polling the close event
  alone, bounded by the budget (no question is seen before the budget ends);
- `start + history long poll`: `start_workflow`, then long polls on the whole history until the memo leaves
  `working` or the run closes (what a plain call held by a front does).

Cases: a 0 s tool (the answer is the result), a 1 s tool (the answer is the task, after the budget), and a
tool that asks a question at once (`confirm_delete`: the answer is the task, at the question). For each: the
answer's p50 / p99, the RPCs this process made per call (the SDK's own counters), and the run's history
events. Latency samples are interleaved in a shuffled order per round.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
from temporalio.api.enums.v1 import EventType
from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowExecutionStatus,
    WorkflowHistoryEventFilterType,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy

from mcp_tasks_temporal.front.gateway.reads import now_ms
from mcp_tasks_temporal.front.gateway.views import initial_memo
from mcp_tasks_temporal.temporal.contract import SETTLED_UPDATE, TOOL_TASK_WORKFLOW, Memo, ToolTaskInput
from mcp_tasks_temporal.temporal.ids import UNKEYED, new_task_id
from tests.wire import envelope

from ._common import http_client, load_average, machine, percentile, positive_int, product_stack, render, run_main
from .round_trips import Tally, own_client, rpcs_by_operation, scrape

DEFAULT_SAMPLES = 60
QUICK_SAMPLES = 20
SMOKE_SAMPLES = 2
DEFAULT_BUDGET_MS = 200
SEED = 2663
ELICITATION: Final[dict[str, Any]] = {"elicitation": {}}


@dataclass
class Outcome:
    answered: str
    """`result` (the tool's, in time), `task` (the budget ran out or the tool asked), `started` (no wait)."""
    workflow_id: str


Way = Callable[[ToolTaskInput, str, int], Awaitable[Outcome]]


@dataclass
class Ways:
    client: Client
    task_queue: str

    def _start_args(self, task: ToolTaskInput, workflow_id: str) -> dict[str, Any]:
        memo = initial_memo(
            task.task_id, task.tool, "anonymous", task.created_at_ms, task.ttl_ms, 1000, anonymous=False
        )
        return {
            "id": workflow_id,
            "task_queue": self.task_queue,
            "memo": memo,
            "id_reuse_policy": WorkflowIDReusePolicy.REJECT_DUPLICATE,
            "static_summary": f"MCP task: {task.tool}",
        }

    async def start(self, task: ToolTaskInput, workflow_id: str, budget_ms: int) -> Outcome:
        await self.client.start_workflow(
            TOOL_TASK_WORKFLOW,
            task,
            id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
            **self._start_args(task, workflow_id),
        )
        return Outcome("started", workflow_id)

    def _operation(self, task: ToolTaskInput, workflow_id: str) -> WithStartWorkflowOperation[Any, Any]:
        return WithStartWorkflowOperation(
            TOOL_TASK_WORKFLOW,
            task,
            id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
            **self._start_args(task, workflow_id),
        )

    async def uws_timer(self, task: ToolTaskInput, workflow_id: str, budget_ms: int) -> Outcome:
        answer: dict[str, Any] = await self.client.execute_update_with_start_workflow(  # pyright: ignore[reportUnknownMemberType]
            SETTLED_UPDATE,
            budget_ms,
            start_workflow_operation=self._operation(task, workflow_id),
            result_type=dict[str, Any],
        )
        return Outcome(_answered(answer), workflow_id)

    async def uws_bound(self, task: ToolTaskInput, workflow_id: str, budget_ms: int) -> Outcome:
        operation = self._operation(task, workflow_id)
        answer: dict[str, Any] | None = None
        with anyio.move_on_after(budget_ms / 1000):
            try:
                answer = await self.client.execute_update_with_start_workflow(  # pyright: ignore[reportUnknownMemberType]
                    SETTLED_UPDATE, None, start_workflow_operation=operation, result_type=dict[str, Any]
                )
            except WorkflowUpdateRPCTimeoutOrCancelledError:
                pass
        if answer is not None:
            return Outcome(_answered(answer), workflow_id)
        # Past the bound: was the start taken? (Its answer may not have come; describe says.)
        await self.client.get_workflow_handle(workflow_id).describe()
        return Outcome("task", workflow_id)

    async def start_close_poll(self, task: ToolTaskInput, workflow_id: str, budget_ms: int) -> Outcome:
        started = time.perf_counter()
        await self.start(task, workflow_id, budget_ms)
        handle = self.client.get_workflow_handle(workflow_id)
        left = budget_ms / 1000 - (time.perf_counter() - started)
        with anyio.move_on_after(max(left, 0.0)):
            async for event in handle.fetch_history_events(
                wait_new_event=True, event_filter_type=WorkflowHistoryEventFilterType.CLOSE_EVENT
            ):
                if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
                    return Outcome("result", workflow_id)
                return Outcome("task", workflow_id)
        return Outcome("task", workflow_id)

    async def start_history_poll(self, task: ToolTaskInput, workflow_id: str, budget_ms: int) -> Outcome:
        started = time.perf_counter()
        await self.start(task, workflow_id, budget_ms)
        handle = self.client.get_workflow_handle(workflow_id)
        left = budget_ms / 1000 - (time.perf_counter() - started)
        converter = self.client.data_converter.payload_converter
        with anyio.move_on_after(max(left, 0.0)):
            async for event in handle.fetch_history_events(wait_new_event=True):
                if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
                    return Outcome("result", workflow_id)
                if event.HasField("workflow_properties_modified_event_attributes"):
                    fields = event.workflow_properties_modified_event_attributes.upserted_memo.fields
                    if Memo.STATUS in fields and converter.from_payload(fields[Memo.STATUS]) != "working":
                        return Outcome("task", workflow_id)
        return Outcome("task", workflow_id)


def _answered(answer: dict[str, Any]) -> str:
    return "result" if answer.get("status") == "completed" else "task"


@dataclass
class Sampled:
    way: str
    case: str
    times_ms: list[float] = field(default_factory=list[float])
    answers: Tally = field(default_factory=Tally)
    workflow_ids: list[str] = field(default_factory=list[str])


CASES: Final[dict[str, tuple[str, dict[str, Any], dict[str, Any]]]] = {
    "0 s tool": ("slow_compute", {"seconds": 0, "label": "inline"}, {}),
    "1 s tool": ("slow_compute", {"seconds": 1, "label": "inline"}, {}),
    "asks at once": ("confirm_delete", {"filename": "x.txt"}, ELICITATION),
}


def task_input(tool: str, arguments: dict[str, Any], capabilities: dict[str, Any]) -> ToolTaskInput:
    return ToolTaskInput(
        task_id=new_task_id(),
        tool=tool,
        arguments=arguments,
        meta=envelope(capabilities=capabilities),
        created_at_ms=now_ms(),
        ttl_ms=3_600_000,
        poll_interval_ms=1000,
    )


async def measure(ways: dict[str, Way], samples: int, budget_ms: int) -> list[Sampled]:
    rng = random.Random(SEED)
    results = {(w, c): Sampled(w, c) for w in ways for c in CASES}
    # Warm-up: each path once.
    for way in ways.values():
        for tool, arguments, capabilities in CASES.values():
            task = task_input(tool, arguments, capabilities)
            await way(task, UNKEYED.workflow_id(task.task_id, None), budget_ms)
    order = list(results)
    for _ in range(samples):
        rng.shuffle(order)
        for key in order:
            tool, arguments, capabilities = CASES[key[1]]
            task = task_input(tool, arguments, capabilities)
            wid = UNKEYED.workflow_id(task.task_id, None)
            started = time.perf_counter()
            outcome = await ways[key[0]](task, wid, budget_ms)
            sampled = results[key]
            sampled.times_ms.append((time.perf_counter() - started) * 1000)
            sampled.answers[outcome.answered] += 1
            sampled.workflow_ids.append(wid)
    return list(results.values())


async def rpcs_per_call(
    ways: dict[str, Way], budget_ms: int, rpcs: Callable[[], Awaitable[Tally]], calls: int
) -> dict[tuple[str, str], Tally]:
    per: dict[tuple[str, str], Tally] = {}
    for way_name, way in ways.items():
        for case, (tool, arguments, capabilities) in CASES.items():
            await anyio.sleep(1.2)
            before = await rpcs()
            for _ in range(calls):
                task = task_input(tool, arguments, capabilities)
                await way(task, UNKEYED.workflow_id(task.task_id, None), budget_ms)
            await anyio.sleep(1.2)  # the SDK's counters are exported on scrape; calls cut short end meanwhile
            after = await rpcs()
            per[(way_name, case)] = Tally(
                {op: (after[op] - before[op]) / calls for op in set(after) | set(before) if after[op] != before[op]}
            )
    return per


async def events_of(client: Client, workflow_ids: Sequence[str]) -> float:
    """History events per run, once the runs have ended (the 1 s and asking ones are cancelled first)."""
    total = 0
    for wid in workflow_ids:
        handle = client.get_workflow_handle(wid)
        if (await handle.describe()).status == WorkflowExecutionStatus.RUNNING:
            await handle.cancel()
        with anyio.fail_after(30):
            async for _ in handle.fetch_history_events(
                wait_new_event=True, event_filter_type=WorkflowHistoryEventFilterType.CLOSE_EVENT
            ):
                break
        total += len([e async for e in handle.fetch_history_events()])
    return total / len(workflow_ids)


async def amain(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.inline_paths")
    parser.add_argument("--samples", type=positive_int, default=None)
    parser.add_argument("--budget-ms", type=positive_int, default=DEFAULT_BUDGET_MS)
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--quick", action="store_true")
    modes.add_argument("--smoke", action="store_true")
    args = parser.parse_args(argv)
    samples = args.samples or (SMOKE_SAMPLES if args.smoke else QUICK_SAMPLES if args.quick else DEFAULT_SAMPLES)
    print("\n".join(machine()))
    print(f"{samples} samples per way and case, budget {args.budget_ms} ms", flush=True)
    async with product_stack("bench-inline-") as stack, http_client(4) as http:
        client, metrics_url = await own_client(stack.temporal_address, stack.client.namespace)

        async def rpcs() -> Tally:
            return rpcs_by_operation(await scrape(http, metrics_url))

        paths = Ways(client, stack.task_queue)
        ways: dict[str, Way] = {
            "start (no wait)": paths.start,
            "uws, workflow timer": paths.uws_timer,
            "uws, front's bound": paths.uws_bound,
            "start + close long poll": paths.start_close_poll,
            "start + history long poll": paths.start_history_poll,
        }
        measured = await measure(ways, samples, args.budget_ms)
        print(f"latency samples done; load {load_average()}", flush=True)
        per_call = await rpcs_per_call(ways, args.budget_ms, rpcs, 3 if args.smoke else 10)
        rows: list[list[str]] = []
        for sampled in measured:
            events = await events_of(client, sampled.workflow_ids[:5])
            calls = per_call[(sampled.way, sampled.case)]
            rpc_text = ", ".join(f"{op} {n:.1f}" for op, n in sorted(calls.items()) if abs(n) >= 0.05)
            rows.append(
                [
                    sampled.case,
                    sampled.way,
                    f"{percentile(sampled.times_ms, 50):.1f} / {percentile(sampled.times_ms, 99):.1f}",
                    ", ".join(f"{k} {int(v)}" for k, v in sorted(sampled.answers.items())),
                    rpc_text,
                    f"{events:.0f}",
                ]
            )
        print()
        print(render(["case", "way", "answer p50 / p99 ms", "answered", "RPCs per call", "events per run"], rows))
    print(f"\nload average at end (1/5/15 min): {load_average()}")


def main(argv: Sequence[str] | None = None) -> None:
    run_main(lambda: amain(argv))


if __name__ == "__main__":
    main()
