"""The Nexus service our worker hosts so a handler workflow in another namespace can report status and ask.

The reply endpoint (`--nexus-reply-endpoint`) targets our namespace and the
app's task queue; the handler workflow calls `status` through it (see
`workflow_api.set_status`), and this handler hands the report to the task
workflow as a signal. Each report and question is stamped here with its
caller, the workflow Temporal's link names; the task workflow keeps only those
of the workflow its operation started that also carry the nonce it sent with
the operation. `ask` is a workflow run (`NexusQuestionWorkflow`) whose result
is the client's answers.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import nexusrpc
import nexusrpc.handler
from temporalio import nexus

from mcp_tasks_temporal.temporal.nexus_contract import (
    REPLY_ASK_OPERATION,
    REPLY_SERVICE,
    REPLY_STATUS_OPERATION,
    STATUS_SIGNAL,
    AskRequest,
    Caller,
    StatusReport,
    caller_of_links,
)
from mcp_tasks_temporal.temporal.workflows.nexus_question import NexusQuestionWorkflow

QUESTION_ID_PREFIX = "mcp-tasks-nexus-question"
"""Not `mcp-task/`: a relay is no task, and nothing that lists tasks may take it for one."""


@nexusrpc.handler.service_handler(name=REPLY_SERVICE)
class ReplyService:
    @nexusrpc.handler.sync_operation(name=REPLY_STATUS_OPERATION)
    async def status(self, ctx: nexusrpc.handler.StartOperationContext, report: StatusReport) -> None:
        report = dataclasses.replace(report, caller=_caller(ctx))
        handle = nexus.client().get_workflow_handle(report.task_workflow_id)
        try:
            await handle.signal(STATUS_SIGNAL, report)
        except Exception as err:
            # A finished task (or a forged ID) has no use for the report; retrying it would not help.
            raise nexusrpc.HandlerError(
                "the task is no longer running", type=nexusrpc.HandlerErrorType.NOT_FOUND, retryable_override=False
            ) from err

    @nexus.workflow_run_operation(name=REPLY_ASK_OPERATION)
    async def ask(
        self, ctx: nexus.WorkflowRunOperationContext, request: AskRequest
    ) -> nexus.WorkflowHandle[dict[str, dict[str, Any]]]:
        request = dataclasses.replace(request, caller=_caller(ctx))
        # The request ID is the same on every retry of this start, so a retry finds the relay it started.
        return await ctx.start_workflow(NexusQuestionWorkflow.run, request, id=f"{QUESTION_ID_PREFIX}/{ctx.request_id}")


def _caller(ctx: nexusrpc.handler.StartOperationContext) -> Caller:
    """The workflow that sent this request, or a refusal: only a handler workflow may report or ask."""
    caller = caller_of_links([link.url for link in ctx.inbound_links])
    if caller is None:
        raise nexusrpc.HandlerError(
            "only a workflow may report to an MCP task", type=nexusrpc.HandlerErrorType.BAD_REQUEST
        )
    return caller
