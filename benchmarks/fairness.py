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

Then the weights: A and B each queue `--burst / 2` tasks side by side before a
worker runs, once with equal weights and once with `--fairness-weight B=3`;
the second table gives B's share of the first half of the completions, while
both still have a backlog, against its weight's share, w / (w + 1).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
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
from mcp_tasks_temporal.temporal.ids import UNKEYED, new_task_id
from mcp_tasks_temporal.temporal.workflows import ToolTaskWorkflow

from ._common import bounded, free_port, machine, positive_int, render, run_main

TENANT_A, TENANT_B = "tenant-a@example.com", "tenant-b@example.com"
FULL = {"burst": 500, "late": 5, "slots": 2, "work_ms": 20}
QUICK = {"burst": 150, "late": 5, "slots": 2, "work_ms": 20}
SMOKE = {"burst": 20, "late": 2, "slots": 1, "work_ms": 10}
START_CONCURRENCY = 32
WEIGHTS = (1.0, 3.0)
"""Tenant B's weights in the shares runs; A keeps the default, 1."""


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
    return UNKEYED.workflow_id(task.task_id, principal)


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


async def run(burst: int, late: int, slots: int, work_ms: int) -> tuple[list[Outcome], list[Share]]:
    with tempfile.TemporaryDirectory(prefix="mcp-tasks-fairness-") as state_dir:
        async with embedded_temporal(state_dir=Path(state_dir), port=free_port(), ui_port=None) as server:
            client = await connect_temporal(server.address, namespace=server.namespace)
            outcomes = [await scenario(client, mode, burst, late, slots, work_ms) for mode in ("fair", "fifo")]
            weighted = [await shares(client, weight, max(1, burst // 2), slots, work_ms) for weight in WEIGHTS]
            return outcomes, weighted


@dataclass(frozen=True)
class Share:
    weight: float
    each: int
    b_in_first_half: int
    """Of the first `each` completions, B's."""
    b_last_rank: int


async def shares(client: Client, weight: float, each: int, slots: int, work_ms: int) -> Share:
    queue = f"bench-fairness-weight-{weight:g}"
    policy = FairnessPolicy.weighted({TENANT_B: weight})
    gateway = TemporalTaskGateway(client, task_queue=queue, fairness=policy)
    tenants = [tenant for _ in range(each) for tenant in (TENANT_A, TENANT_B)]
    jobs = [partial(start, gateway, tenant, work_ms) for tenant in tenants]
    started = await bounded(START_CONCURRENCY, jobs)
    b_ids = set(started[1::2])
    done: dict[str, float] = {}

    async def wait(workflow: str) -> None:
        await client.get_workflow_handle(workflow).result()
        done[workflow] = time.perf_counter()

    # The worker starts once both backlogs are queued: from then on, only the weights decide.
    async with Worker(
        client, task_queue=queue, workflows=[ToolTaskWorkflow], activities=[paced_tool], max_concurrent_activities=slots
    ):
        async with asyncio.timeout(120 + 2 * each * work_ms / 1000 * 4):
            await asyncio.gather(*(wait(w) for w in started))
    order = sorted(done, key=done.__getitem__)
    return Share(
        weight=weight,
        each=each,
        b_in_first_half=sum(1 for w in order[:each] if w in b_ids),
        b_last_rank=max(order.index(w) for w in b_ids),
    )


def share_row(share: Share) -> list[str]:
    return [
        f"{share.weight:g}",
        f"{share.b_in_first_half} of {share.each} ({share.b_in_first_half / share.each:.0%})",
        f"{share.weight / (share.weight + 1):.0%}",
        f"{share.b_last_rank} of {2 * share.each}",
    ]


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
    weighted: list[Share] = []

    async def amain() -> None:
        measured, measured_shares = await run(burst, late, slots, work_ms)
        outcomes.extend(measured)
        weighted.extend(measured_shares)

    run_main(amain)
    print()
    header = ["mode", "B p50 s", "B max s", "A drained s", "B max / A drained", "B's places in completion order"]
    print(render(header, [row(outcome, burst) for outcome in outcomes]))
    fair, fifo = outcomes
    print(f"\nB's slowest task, without keys / with them: {max(fifo.late_s) / max(fair.late_s):.1f}x")
    each = weighted[0].each
    print(f"\nA and B each queue {each} tasks side by side, then the worker starts:\n")
    header = ["B's weight", f"B's among the first {each} completions", "weight's share", "B's last place"]
    print(render(header, [share_row(share) for share in weighted]))


if __name__ == "__main__":
    main()
