"""What durability costs a sub-agent per turn: the same agent run in a workflow against run in-process.

    .venv/bin/python -m benchmarks.agent_turns [--runs N] [--turns N] [--quick | --smoke]

Self-contained: its own Temporal dev server (SQLite file in a temp dir), an
in-process worker running the demo's `review_code`, and the scripted
OpenAI-compatible server of the tests on 127.0.0.1, which answers at once, so
what is measured is the loop's own cost. A turn is one model request and one
`list_files` call. The durable run records both as activities; the in-process
run is the same pydantic-ai agent called outside a workflow. Runs alternate,
so load on the machine falls on both alike.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

from temporalio.client import Client
from temporalio.worker import Worker

from mcp_tasks_temporal.contrib.pydantic_ai.sub_agent import MODEL_PREFIX, configure_model, worker_plugins
from mcp_tasks_temporal.demo.review import (
    ReviewCode,
    ReviewDeps,
    ReviewRequest,
    prepare_review,
    review_agent,
)
from mcp_tasks_temporal.ops.dev.embedded_temporal import embedded_temporal
from mcp_tasks_temporal.temporal.connection import connect_temporal
from mcp_tasks_temporal.testing.scripted_model import Reply, ScriptedModel, calls, scripted_model

from ._common import free_port, machine, render

QUEUE = "bench-agent-turns"
FINAL = calls(("final_result", {"findings": [], "summary": "nothing found"}))


def _script(turns: int) -> list[Reply]:
    return [calls(("list_files", {})) for _ in range(turns - 1)] + [FINAL]


async def durable_run(client: Client, model: ScriptedModel, tree: Path, turns: int) -> float:
    model.reset(_script(turns))
    started = time.perf_counter()
    result = await client.execute_workflow(
        ReviewCode.run,
        ReviewRequest(path=str(tree), max_turns=turns + 1),
        id=f"bench-agent-{uuid.uuid4()}",
        task_queue=QUEUE,
    )
    elapsed = time.perf_counter() - started
    assert result.complete and result.turns == turns == len(model.requests), result
    return elapsed * 1000 / turns


async def in_process_run(model: ScriptedModel, tree: Path, turns: int) -> float:
    model.reset(_script(turns))
    started = time.perf_counter()
    result = await review_agent.run(
        "Review the directory.", deps=ReviewDeps(tree=str(tree)), model=MODEL_PREFIX + "bench"
    )
    elapsed = time.perf_counter() - started
    assert result.usage.requests == turns == len(model.requests), result.usage
    return elapsed * 1000 / turns


async def run(runs: int, turns: int) -> list[list[str]]:
    with tempfile.TemporaryDirectory(prefix="mcp-tasks-agent-turns-") as state_dir:
        tree = Path(state_dir) / "tree"
        (tree / "src").mkdir(parents=True)
        (tree / "src" / "app.py").write_text("def main():\n    return 1\n")
        os.environ["MCP_TASKS_REVIEW_ROOT"] = state_dir
        configure_model("bench")
        async with (
            scripted_model([]) as model,
            embedded_temporal(state_dir=Path(state_dir), port=free_port(), ui_port=None) as server,
        ):
            os.environ["OPENAI_BASE_URL"] = model.base_url
            client = await connect_temporal(server.address, namespace=server.namespace, plugins=worker_plugins())
            async with Worker(client, task_queue=QUEUE, workflows=[ReviewCode], activities=[prepare_review]):
                await durable_run(client, model, tree, 2)  # warm-up: imports, connections, sandbox
                await in_process_run(model, tree, 2)
                durable: list[float] = []
                in_process: list[float] = []
                for _ in range(runs):
                    durable.append(await durable_run(client, model, tree, turns))
                    in_process.append(await in_process_run(model, tree, turns))
    durable_p50, in_process_p50 = statistics.median(durable), statistics.median(in_process)
    return [
        [
            str(runs),
            str(turns),
            f"{in_process_p50:.1f}",
            f"{durable_p50:.1f}",
            f"{durable_p50 - in_process_p50:.1f}",
            f"{durable_p50 / in_process_p50:.1f}",
        ]
    ]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.agent_turns", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--turns", type=int, default=None)
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--quick", action="store_true", help="2 runs of 4 turns")
    modes.add_argument("--smoke", action="store_true", help="1 run of 2 turns: proves it runs, in seconds")
    args = parser.parse_args(argv)
    runs = args.runs or (1 if args.smoke else 2 if args.quick else 6)
    turns = args.turns or (2 if args.smoke else 4 if args.quick else 10)
    print("\n".join(machine()))
    rows = asyncio.run(run(runs, turns))
    print()
    header = ["runs", "turns", "in-process ms/turn p50", "durable ms/turn p50", "difference ms", "ratio"]
    print(render(header, rows))


if __name__ == "__main__":
    main()
