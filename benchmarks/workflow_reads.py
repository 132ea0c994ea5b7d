"""`tasks/get` on a workflow tool's task against the same read on a tool task, as a ratio.

    .venv/bin/python -m benchmarks.workflow_reads [--samples N] [--quick | --smoke]

Self-contained: its own Temporal dev server (SQLite file in a temp dir) and an
in-process worker running `ToolTaskWorkflow` with the stand-in tool of
`benchmarks.reads` and the demo's `BuildPipeline` workflow. Both kinds of task
are created and read through `TemporalTaskGateway`, the code `tools/call` and
`tasks/get` run, in two states: waiting for an answer, and completed (which
costs a second call for the result). Reads alternate between the two kinds,
so load on the machine falls on both alike; the target for both ratios is 1.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from temporalio.worker import Worker

from mcp_tasks_temporal.demo.pipeline import BuildPipeline, BuildRequest
from mcp_tasks_temporal.demo.pipeline_steps import build_step
from mcp_tasks_temporal.front.gateway import TemporalTaskGateway, WorkflowTask, now_ms
from mcp_tasks_temporal.ops.dev.embedded_temporal import embedded_temporal
from mcp_tasks_temporal.temporal.connection import connect_temporal
from mcp_tasks_temporal.temporal.contract import CLIENT_CAPABILITIES_META_KEY, EXTENSION_ID
from mcp_tasks_temporal.temporal.ids import UNKEYED, new_task_id
from mcp_tasks_temporal.temporal.workflows import ToolTaskWorkflow

from ._common import machine, render
from .reads import Bench, Task, create, free_port, stand_in_tool, until

DEFAULT_SAMPLES = 200
QUICK_SAMPLES = 30
SMOKE_SAMPLES = 3
QUEUE = "bench-workflow-reads"
ENVELOPE: dict[str, Any] = {CLIENT_CAPABILITIES_META_KEY: {"elicitation": {}, "extensions": {EXTENSION_ID: {}}}}


async def create_pipeline(gateway: TemporalTaskGateway) -> Task:
    task = WorkflowTask(
        task_id=new_task_id(),
        tool="build_pipeline",
        workflow="demo.BuildPipeline",
        args=[BuildRequest(ref="bench", step_seconds=0)],
        task_queue=None,
        envelope=ENVELOPE,
        created_at_ms=now_ms(),
        ttl_ms=3_600_000,
        poll_interval_ms=1000,
    )
    await gateway.start_workflow_task(task, None)
    return Task(gateway, gateway.client.get_workflow_handle(UNKEYED.workflow_id(task.task_id, None)), task.task_id)


async def timed(task: Task) -> float:
    started = time.perf_counter()
    await task.get()
    return (time.perf_counter() - started) * 1000


async def compare(case: str, tool: Task, workflow: Task, samples: int) -> list[str]:
    for _ in range(3):  # warm-up: connections, caches
        await timed(tool)
        await timed(workflow)
    tool_ms: list[float] = []
    workflow_ms: list[float] = []
    for sample in range(samples):
        # Pairs back to back, in alternating order: a load spike hits both reads of a pair alike.
        if sample % 2:
            workflow_ms.append(await timed(workflow))
            tool_ms.append(await timed(tool))
        else:
            tool_ms.append(await timed(tool))
            workflow_ms.append(await timed(workflow))
    tool_p50, workflow_p50 = statistics.median(tool_ms), statistics.median(workflow_ms)
    paired = statistics.median([w / t for w, t in zip(workflow_ms, tool_ms, strict=True)])
    return [
        case,
        str(samples),
        f"{tool_p50:.2f}",
        f"{workflow_p50:.2f}",
        f"{workflow_p50 / tool_p50:.2f}",
        f"{paired:.2f}",
    ]


async def run(samples: int) -> list[list[str]]:
    with tempfile.TemporaryDirectory(prefix="mcp-tasks-workflow-reads-") as state_dir:
        async with embedded_temporal(state_dir=Path(state_dir), port=free_port(), ui_port=None) as server:
            client = await connect_temporal(server.address, namespace=server.namespace)
            bench = Bench(client, samples, 0)
            gateway = bench.gateway(QUEUE)
            async with Worker(
                client,
                task_queue=QUEUE,
                workflows=[ToolTaskWorkflow, BuildPipeline],
                activities=[stand_in_tool, build_step],
            ):
                asking_tool = await create(bench, QUEUE, "ask")
                asking_workflow = await create_pipeline(gateway)
                await until(asking_tool, "input_required")
                await until(asking_workflow, "input_required")
                rows = [await compare("input_required", asking_tool, asking_workflow, samples)]
                done_tool = await create(bench, QUEUE, "done")
                done_workflow = await create_pipeline(gateway)
                await until(done_workflow, "input_required")
                answer: dict[str, Any] = {"action": "accept", "content": {"approve": True}}
                await gateway.update(done_workflow.task_id, None, {"approve": answer})
                await until(done_tool, "completed")
                await until(done_workflow, "completed")
                rows.append(await compare("completed", done_tool, done_workflow, samples))
                return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.workflow_reads", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("--samples", type=int, default=None)
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--quick", action="store_true", help=f"{QUICK_SAMPLES} samples per read")
    modes.add_argument("--smoke", action="store_true", help=f"{SMOKE_SAMPLES} samples: proves it runs, in seconds")
    args = parser.parse_args(argv)
    samples = args.samples or (SMOKE_SAMPLES if args.smoke else QUICK_SAMPLES if args.quick else DEFAULT_SAMPLES)
    print("\n".join(machine()))
    rows = asyncio.run(run(samples))
    print()
    header = ["state", "n", "tool task p50 ms", "workflow task p50 ms", "ratio of p50s", "p50 of paired ratios"]
    print(render(header, rows))


if __name__ == "__main__":
    main()
