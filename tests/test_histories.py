"""Safe upgrades: every committed history must still replay against the workflow code checked out here.

A history is a task that some earlier version of the code started; if a change
to a workflow would make one of them fail to replay, tasks already waiting in
production (for an answer, for days) would break on the next deploy. Change
workflow code under `workflow.patched` (docs/operations.md) and record the new
path next to the old one: `python -m tests.histories.record NAME`.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Replayer

from mcp_tasks_temporal.worker import WORKFLOWS
from tests.histories import record

pytestmark = pytest.mark.anyio

HISTORIES = Path(record.__file__).parent
COMMITTED = sorted(HISTORIES.glob("*.json"))


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.stem)
async def test_committed_history_replays_on_current_code(path: Path) -> None:
    history = WorkflowHistory.from_json(f"history/{path.stem}", path.read_text())
    await Replayer(workflows=list(WORKFLOWS)).replay_workflow(history)


def test_every_task_path_has_a_committed_history() -> None:
    assert set(record.PATHS) <= {p.stem for p in COMMITTED}


async def test_the_recorder_still_records_every_path(temporal_client: Client) -> None:
    task_queue = f"histories-{uuid.uuid4()}"
    async with record.worker(temporal_client, task_queue):
        for name in record.PATHS:
            history = await record.record(temporal_client, name, task_queue)
            await Replayer(workflows=list(WORKFLOWS)).replay_workflow(history)
