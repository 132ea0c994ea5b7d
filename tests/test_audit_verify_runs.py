"""`audit --verify` replays every run of a task that continued as new, the first as well as the last.

A change that breaks only a chain's first run must still be found: the run still replays whenever a worker
picks it up again. The chain runs on the session's dev server with a worker in the test process; the replays
are `audit`'s own (`load_runs`, `verify`), run here without the command line around them.
"""

from __future__ import annotations

import uuid

import anyio
import pytest
from temporalio.client import Client
from temporalio.worker import Worker

from mcp_tasks_temporal.ops.audit import load_runs, verify
from mcp_tasks_temporal.temporal.sandbox import workflow_runner
from tests.app_workers import new_task_queue
from tests.chain_workflows import Chain, ChainChangedFirst

pytestmark = pytest.mark.anyio

WAIT_S = 10


async def test_verify_replays_each_run_of_a_chain_and_names_the_run_that_diverges(temporal_client: Client) -> None:
    queue = new_task_queue("chain")
    workflow_id = f"chain-{uuid.uuid4()}"
    async with Worker(temporal_client, task_queue=queue, workflows=[Chain], workflow_runner=workflow_runner()):
        with anyio.fail_after(WAIT_S):
            ended = await temporal_client.execute_workflow(Chain.run, 1, id=workflow_id, task_queue=queue)
    assert ended == "ended in run 2"

    runs = await load_runs(temporal_client, workflow_id)
    assert len(runs.histories) == 2, "the chain is read back to its first run"
    converter = temporal_client.data_converter
    same = await verify(runs, [Chain], converter)
    assert (same.verdict, same.runs_replayed) == ("compatible", 2), same

    changed = await verify(runs, [ChainChangedFirst], converter)
    assert changed.verdict == "incompatible", f"a change to the first run went unnoticed: {changed}"
    assert changed.divergence is not None and changed.divergence.run_id == runs.histories[0].run_id, changed
    assert changed.runs_replayed == 0, changed
