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
from typing import Any

import anyio
import pytest
from temporalio.client import Client, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from mcp_tasks_temporal.contrib.pydantic_ai.sub_agent import worker_plugins
from mcp_tasks_temporal.demo.review import ReviewCode
from mcp_tasks_temporal.temporal.sandbox import workflow_runner
from mcp_tasks_temporal.temporal.task_interceptor import TaskInterceptor
from mcp_tasks_temporal.temporal.worker import WORKFLOWS
from mcp_tasks_temporal.temporal.workflow_tools import workflow_definition
from mcp_tasks_temporal.temporal.workflows.nexus_question import NexusQuestionWorkflow
from mcp_tasks_temporal.temporal.workflows.nexus_tool import NexusToolWorkflow
from mcp_tasks_temporal.temporal.workflows.task_feed import TaskFeedWorkflow
from tests.histories import record
from tests.test_workflow_helpers import FIXTURE_WORKFLOWS

pytestmark = pytest.mark.anyio

HISTORIES = Path(record.__file__).parent
COMMITTED = sorted(HISTORIES.rglob("*.json"))


REPLAY_OPTIONS: dict[str, Any] = {"debug_mode": True}
"""Replay checks that the code issues the recorded commands, not how fast it runs: Temporal's
deadlock detector (a workflow task that has not yielded after 2 s, TMPRL1101) would make the
verdict depend on the machine's load, and the sub-agent's first turn imports large modules
(pydantic-ai's price table, openai's resources) on first use. `debug_mode` is the SDK's one
switch that turns the detector off; the sandbox stays on. Live workers keep the detector."""


def replayer_for(folder: str) -> Replayer:
    """The workflow code each folder's tasks run on: tool tasks, the workflow-tool fixtures, the sub-agent."""
    if folder == "workflow_tools":
        # As `dev` and `worker` run them: with the workflow-tool interceptor, in the project's sandbox.
        interceptor = TaskInterceptor([workflow_definition(w).name for w in FIXTURE_WORKFLOWS], [])
        return Replayer(
            workflows=FIXTURE_WORKFLOWS,
            data_converter=pydantic_data_converter,
            interceptors=[interceptor],
            workflow_runner=workflow_runner(),
            **REPLAY_OPTIONS,
        )
    if folder == "nexus":
        # Nexus tools (docs/nexus.md): the task workflow and the relay of a question, as `worker` runs them.
        nexus = [NexusToolWorkflow, NexusQuestionWorkflow]
        return Replayer(
            workflows=nexus,
            data_converter=pydantic_data_converter,
            interceptors=[TaskInterceptor([workflow_definition(w).name for w in nexus], [])],
            workflow_runner=workflow_runner(),
            **REPLAY_OPTIONS,
        )
    if folder == "sub_agent":
        return Replayer(workflows=[ReviewCode], plugins=worker_plugins(), **REPLAY_OPTIONS)
    assert folder == ".", f"no workflow code known for histories in {folder}/: add it here"
    return Replayer(
        workflows=[*WORKFLOWS, TaskFeedWorkflow],
        data_converter=pydantic_data_converter,
        workflow_runner=workflow_runner(),
        **REPLAY_OPTIONS,
    )


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: str(p.relative_to(HISTORIES).with_suffix("")))
async def test_committed_history_replays_on_current_code(path: Path) -> None:
    history = WorkflowHistory.from_json(f"history/{path.stem}", path.read_text())
    await replayer_for(str(path.parent.relative_to(HISTORIES))).replay_workflow(history)


def test_every_task_path_has_a_committed_history() -> None:
    committed = {str(p.relative_to(HISTORIES).with_suffix("")) for p in COMMITTED}
    assert {*record.PATHS, *record.SHARD_PATHS} <= committed
    # Workflow tools: a question between activities, and a continue-as-new chain.
    assert {"workflow_tools/workflow_tool_question", "workflow_tools/workflow_tool_continued_last_run"} <= committed
    # Nexus tools: status and a question across namespaces (with its relay), and a cancel.
    assert {"nexus/nexus_tool_status_question", "nexus/nexus_tool_cancelled", "nexus/nexus_question_relay"} <= committed
    # ... and with the reply's caller checked: forged reports ignored, an answer whose relay its handler cancelled,
    # and a question its handler withdrew (task and relay).
    assert {
        "nexus/nexus_tool_caller_checked",
        "nexus/nexus_question_relay_caller",
        "nexus/nexus_tool_answer_to_cancelled_relay",
        "nexus/nexus_tool_question_withdrawn",
        "nexus/nexus_question_relay_withdrawn",
    } <= committed


async def test_the_recorder_still_records_every_path(temporal_client: Client) -> None:
    task_queue = f"histories-{uuid.uuid4()}"
    histories: dict[str, WorkflowHistory] = {}
    shards: list[WorkflowHistory] = []

    async def record_path(name: str) -> None:
        histories[name] = await record.record(temporal_client, name, task_queue)

    # The paths are independent tasks: recorded side by side, the test lasts as long as the longest one.
    async def record_ticks(name: str) -> None:
        shards.append(await record.record_shard_ticks(temporal_client, task_queue, name))

    async with record.worker(temporal_client, task_queue), anyio.create_task_group() as group:
        for name in record.PATHS:
            group.start_soon(record_path, name)
        for name in (record.SHARD_UNUSED_PATH, record.SHARD_AGED_PATH):
            group.start_soon(record_ticks, name)
        shards.append(await record.record_shard(temporal_client, task_queue))
    assert len(shards) == 3
    assert set(histories) == set(record.PATHS)
    for history in histories.values():
        await Replayer(workflows=list(WORKFLOWS), workflow_runner=workflow_runner(), **REPLAY_OPTIONS).replay_workflow(
            history
        )
    for shard in shards:
        await Replayer(
            workflows=[TaskFeedWorkflow], workflow_runner=workflow_runner(), **REPLAY_OPTIONS
        ).replay_workflow(shard)
