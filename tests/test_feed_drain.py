"""A cancel that arrives while a finished feed task delivers its last transition does not undo the outcome.

A feed task's run stays open after its tool completed, until the shard has the `completed` transition. A
`tasks/cancel` then (the client did not see the completion yet) used to interrupt that wait and close the run
cancelled: the tool's result was lost although the feed had already announced it. Here the worker holds the
last transition's signal until the cancel has arrived (a workflow interceptor of this test), so the cancel
lands in that window every time.
"""

from __future__ import annotations

import gc
import sys
import uuid
from typing import Any

import anyio
import pytest
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.contrib.workflow_streams import PublishInput
from temporalio.worker import (
    Interceptor,
    Replayer,
    SignalExternalWorkflowInput,
    Worker,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)

from mcp_tasks_temporal.temporal.contract import (
    RUN_TOOL_ACTIVITY,
    TERMINAL_STATUSES,
    Memo,
    ToolRoundInput,
)
from mcp_tasks_temporal.temporal.feed_contract import STREAM_PUBLISH_SIGNAL
from mcp_tasks_temporal.temporal.sandbox import workflow_runner
from mcp_tasks_temporal.temporal.worker import WORKFLOWS
from mcp_tasks_temporal.temporal.workflows.task_feed import TaskFeedWorkflow
from tests.histories.record import memo_status, published_transitions, start_task

pytestmark = pytest.mark.anyio

BOUND_S = 30


@activity.defn(name=RUN_TOOL_ACTIVITY)
async def answer_at_once(call: ToolRoundInput) -> dict[str, Any]:
    return {"resultType": "complete", "content": [{"type": "text", "text": "done"}], "isError": False}


def _terminal(input: SignalExternalWorkflowInput) -> bool:
    if input.signal != STREAM_PUBLISH_SIGNAL:
        return False
    (sent,) = input.args
    assert isinstance(sent, PublishInput)
    items = published_transitions(sent, workflow.payload_converter())
    return any(item["m"].get(Memo.STATUS) in TERMINAL_STATUSES for item in items)


class _HoldLastTransition(WorkflowOutboundInterceptor):
    async def signal_external_workflow(self, input: SignalExternalWorkflowInput) -> None:
        if _terminal(input):
            await workflow.wait_condition(lambda: workflow.cancellation_reason() is not None)
        await super().signal_external_workflow(input)


class _Inbound(WorkflowInboundInterceptor):
    def init(self, outbound: WorkflowOutboundInterceptor) -> None:
        super().init(_HoldLastTransition(outbound))


class HoldLastTransitionUntilCancelled(Interceptor):
    def workflow_interceptor_class(self, input: WorkflowInterceptorClassInput) -> type[WorkflowInboundInterceptor]:
        return _Inbound


async def test_a_cancel_while_the_completed_transition_is_delivered_leaves_the_task_completed(
    temporal_client: Client,
) -> None:
    task_queue = f"feed-drain-{uuid.uuid4()}"
    handle = await start_task(
        temporal_client, task_queue, "answer_at_once", id_prefix="feed-drain", feed=True, joined=True
    )
    workflows = [*WORKFLOWS, TaskFeedWorkflow]
    interceptors = [HoldLastTransitionUntilCancelled()]
    async with Worker(
        temporal_client,
        task_queue=task_queue,
        workflows=workflows,
        activities=[answer_at_once],
        workflow_runner=workflow_runner(),
        interceptors=interceptors,
    ):
        await memo_status(handle, "completed", BOUND_S)
        await handle.cancel()
        with anyio.fail_after(BOUND_S):
            result = await handle.result()
    assert result["content"] == [{"type": "text", "text": "done"}]
    # The new path replays on the code that made it.
    replayer = Replayer(workflows=workflows, interceptors=interceptors, workflow_runner=workflow_runner())
    await replayer.replay_workflow(await handle.fetch_history())


@activity.defn(name=RUN_TOOL_ACTIVITY)
async def ask_once(call: ToolRoundInput) -> dict[str, Any]:
    question = {"method": "elicitation/create", "params": {"message": "Go?", "requestedSchema": {"type": "object"}}}
    return {"resultType": "input_required", "inputRequests": {"go": question}, "requestState": "r0"}


async def test_a_feed_task_its_worker_drops_while_it_waits_closes_without_awaiting_its_drain(
    temporal_client: Client,
) -> None:
    """A worker that stops drops the runs it holds, and their coroutines are closed outside the workflow's event
    loop: a run that awaited its feed drain then raised there (reported as unraisable, in whatever ran next)."""
    task_queue = f"feed-dropped-{uuid.uuid4()}"
    handle = await start_task(temporal_client, task_queue, "ask_once", id_prefix="feed-dropped", feed=True, joined=True)
    unraisable: list[Any] = []
    previous = sys.unraisablehook
    sys.unraisablehook = unraisable.append
    try:
        async with Worker(
            temporal_client,
            task_queue=task_queue,
            workflows=[*WORKFLOWS, TaskFeedWorkflow],
            activities=[ask_once],
            workflow_runner=workflow_runner(),
        ):
            await memo_status(handle, "input_required", BOUND_S)
        gc.collect()
    finally:
        sys.unraisablehook = previous
        await handle.terminate()
    assert not unraisable, [str(u.exc_value) for u in unraisable]
