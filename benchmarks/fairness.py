"""One tenant's burst against another's few tasks: with fairness keys, and first-in, first-out without.

    .venv/bin/python -m benchmarks.fairness [--burst N] [--late N] [--slots N] [--work-ms MS] [--quick | --smoke]

Self-contained: its own Temporal dev server, started as `dev` starts it (fairness
enabled, one task queue partition), and an in-process worker running
`ToolTaskWorkflow` with a stand-in tool that works `--work-ms` and returns.
The worker runs at most `--slots` tools at once, so a backlog builds.

Each mode runs on its own task queue with an identical worker, one after the
other: tenant A starts `--burst` tasks through `TemporalTaskGateway.create`
(the code `tools/call` runs), then tenant B starts `--late`. `fair` is the
front's default policy (a fairness key per principal); `fifo` is
`--no-fairness-keys`. The table gives, from the moment B starts, when B's
tasks completed and when A's backlog drained; the last line the ratio of B's
slowest completion without keys to with them.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio import activity
from temporalio.client import Client
from temporalio.worker import Worker

from mcp_tasks_temporal.front.gateway import TemporalTaskGateway, now_ms
from mcp_tasks_temporal.ops.dev.embedded_temporal import embedded_temporal
from mcp_tasks_temporal.temporal.connection import connect_temporal
from mcp_tasks_temporal.temporal.contract import RUN_TOOL_ACTIVITY, ToolRoundInput, ToolTaskInput
from mcp_tasks_temporal.temporal.fairness import FairnessPolicy
from mcp_tasks_temporal.temporal.ids import new_task_id, workflow_id
from mcp_tasks_temporal.temporal.workflows import ToolTaskWorkflow

from ._common import bounded, free_port, machine, positive_int, render, run_main

TENANT_A, TENANT_B = "tenant-a@example.com", "tenant-b@example.com"
FULL = {"burst": 500, "late": 5, "slots": 2, "work_ms": 20}
QUICK = {"burst": 150, "late": 5, "slots": 2, "work_ms": 20}
SMOKE = {"burst": 20, "late": 2, "slots": 1, "work_ms": 10}
START_CONCURRENCY = 32


@activity.defn(name=RUN_TOOL_ACTIVITY)
async def paced_tool(call: ToolRoundInput) -> dict[str, Any]:
    await asyncio.sleep(call.arguments["work_ms"] / 1000)
    return {"resultType": "complete", "content": [{"type": "text", "text": "done"}], "isError": False}


@dataclass(frozen=True)
class Outcome:
    mode: str
    late_s: list[float]
    """When each of B's tasks completed, seconds after B started them."""
    drained_s: float
    """When the last of A's tasks completed, from the same moment."""
    late_ranks: list[int]
    """Each of B's tasks' place among all completions (0 first)."""


async def start(gateway: TemporalTaskGateway, principal: str, work_ms: int) -> str:
    task = ToolTaskInput(
        task_id=new_task_id(),
        tool="stand-in",
        arguments={"work_ms": work_ms},
        meta={},
        created_at_ms=now_ms(),
        ttl_ms=3_600_000,
        poll_interval_ms=1000,
    )
    await gateway.create(task, principal)
    return workflow_id(task.task_id, principal)


async def scenario(client: Client, mode: str, burst: int, late: int, slots: int, work_ms: int) -> Outcome:
    queue = f"bench-fairness-{mode}"
    gateway = TemporalTaskGateway(client, task_queue=queue, fairness=FairnessPolicy(keys=mode == "fair"))
    done: dict[str, float] = {}

    async def wait(workflow: str) -> None:
        await client.get_workflow_handle(workflow).result()
        done[workflow] = time.perf_counter()

    async with Worker(
        client,
        task_queue=queue,
        workflows=[ToolTaskWorkflow],
        activities=[paced_tool],
        max_concurrent_activities=slots,
    ):
        a_ids = await bounded(START_CONCURRENCY, [lambda: start(gateway, TENANT_A, work_ms)] * burst)
        b_started = time.perf_counter()
        b_ids = [await start(gateway, TENANT_B, work_ms) for _ in range(late)]
        async with asyncio.timeout(120 + burst * work_ms / 1000 * 4):
            await asyncio.gather(*(wait(w) for w in [*a_ids, *b_ids]))
    order = sorted(done, key=done.__getitem__)
    return Outcome(
        mode=mode,
        late_s=[done[w] - b_started for w in b_ids],
        drained_s=max(done[w] for w in a_ids) - b_started,
        late_ranks=sorted(order.index(w) for w in b_ids),
    )


async def run(burst: int, late: int, slots: int, work_ms: int) -> list[Outcome]:
    with tempfile.TemporaryDirectory(prefix="mcp-tasks-fairness-") as state_dir:
        async with embedded_temporal(state_dir=Path(state_dir), port=free_port(), ui_port=None) as server:
            client = await connect_temporal(server.address, namespace=server.namespace)
            return [await scenario(client, mode, burst, late, slots, work_ms) for mode in ("fair", "fifo")]


def row(outcome: Outcome, burst: int) -> list[str]:
    return [
        outcome.mode,
        f"{statistics.median(outcome.late_s):.2f}",
        f"{max(outcome.late_s):.2f}",
        f"{outcome.drained_s:.2f}",
        f"{max(outcome.late_s) / outcome.drained_s:.2f}",
        " ".join(str(rank) for rank in outcome.late_ranks) + f" of {burst + len(outcome.late_ranks)}",
    ]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fairness", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--burst", type=positive_int, default=None, help=f"tenant A's tasks ({FULL['burst']})")
    parser.add_argument("--late", type=positive_int, default=None, help=f"tenant B's tasks ({FULL['late']})")
    parser.add_argument(
        "--slots", type=positive_int, default=None, help=f"tools the worker runs at once ({FULL['slots']})"
    )
    parser.add_argument("--work-ms", type=positive_int, default=None, help=f"each tool's work ({FULL['work_ms']} ms)")
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--quick", action="store_true", help=f"{QUICK['burst']} tasks of A")
    modes.add_argument("--smoke", action="store_true", help=f"{SMOKE['burst']} tasks of A: proves it runs, in seconds")
    args = parser.parse_args(argv)
    preset = SMOKE if args.smoke else QUICK if args.quick else FULL
    burst, late = args.burst or preset["burst"], args.late or preset["late"]
    slots, work_ms = args.slots or preset["slots"], args.work_ms or preset["work_ms"]
    print("\n".join(machine()))
    print(f"tenant A: {burst} tasks, then tenant B: {late}; worker: {slots} tool slots, {work_ms} ms per tool")
    outcomes: list[Outcome] = []

    async def amain() -> None:
        outcomes.extend(await run(burst, late, slots, work_ms))

    run_main(amain)
    print()
    header = ["mode", "B p50 s", "B max s", "A drained s", "B max / A drained", "B's places in completion order"]
    print(render(header, [row(outcome, burst) for outcome in outcomes]))
    fair, fifo = outcomes
    print(f"\nB's slowest task, without keys / with them: {max(fifo.late_s) / max(fair.late_s):.1f}x")


if __name__ == "__main__":
    main()
