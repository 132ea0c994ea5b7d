"""The owner key in each task's memo: written at creation, checked on every read."""

from __future__ import annotations

import uuid

import httpx
import pytest
from temporalio.client import Client, WorkflowExecutionStatus

from mcp_tasks_temporal.temporal.contract import TOOL_TASK_WORKFLOW, Memo, ToolTaskInput
from mcp_tasks_temporal.temporal.ids import ANONYMOUS_OWNER, owner_key, workflow_id
from tests.inprocess import InProcessStack
from tests.wire import TaskCalls, envelope

pytestmark = pytest.mark.anyio


@pytest.fixture
def stack(inprocess: InProcessStack) -> InProcessStack:
    """The `mcp` fixture's front and its worker run in this process (tests/inprocess.py)."""
    return inprocess


@pytest.fixture
def http(inprocess: InProcessStack) -> httpx.AsyncClient:
    return inprocess.http


async def test_every_task_records_its_owner_key_in_the_memo(mcp: TaskCalls, temporal_client: Client) -> None:
    created = await mcp.start("double", {"x": 1})
    description = await temporal_client.get_workflow_handle(workflow_id(created["taskId"], None)).describe()
    assert (await description.memo())[Memo.OWNER] == ANONYMOUS_OWNER


async def test_a_workflow_under_a_task_id_whose_memo_names_another_owner_is_not_a_task(
    mcp: TaskCalls, temporal_client: Client
) -> None:
    task_id = str(uuid.uuid4())
    task = ToolTaskInput(
        task_id=task_id,
        tool="double",
        arguments={"x": 1},
        meta=envelope(),
        created_at_ms=0,
        ttl_ms=None,
        poll_interval_ms=1000,
    )
    # Started by hand (as an operator or another tool could), on a queue no worker polls.
    handle = await temporal_client.start_workflow(
        TOOL_TASK_WORKFLOW,
        task,
        id=workflow_id(task_id, None),
        task_queue=f"nobody-{task_id}",
        memo={Memo.TASK_ID: task_id, Memo.OWNER: owner_key("mallory"), Memo.STATUS: "working"},
    )
    try:
        for reply in (await mcp.get(task_id), await mcp.cancel(task_id)):
            assert reply.error["code"] == -32602
        assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING, "the refused cancel did nothing"
    finally:
        await handle.terminate()
