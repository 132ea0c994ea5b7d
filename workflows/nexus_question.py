"""The relay of one `request_input` from a handler workflow in another namespace to its MCP task.

Nexus cannot signal a workflow in another namespace, but an operation can be
a workflow run whose result is the answer. The reply service starts this
workflow in our namespace for each `ask`; it hands the questions to the task
workflow, which asks the client as for any workflow tool, and returns what the
task workflow sends back. Cancelling the handler's operation cancels it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio import workflow
from temporalio.exceptions import FailureError

from mcp_tasks_temporal.temporal.nexus_contract import (
    ANSWER_SIGNAL,
    ASK_SIGNAL,
    NEXUS_QUESTION_WORKFLOW,
    WITHDRAW_SIGNAL,
    Answers,
    Ask,
    AskRequest,
)
from mcp_tasks_temporal.temporal.workflow_api import task_error

CALLER_PATCH = "nexus-question-caller"
WITHDRAW_PATCH = "nexus-question-withdraw"
"""A question its handler cancelled is taken back from the client, not left shown."""


@workflow.defn(name=NEXUS_QUESTION_WORKFLOW)
class NexusQuestionWorkflow:
    def __init__(self) -> None:
        self._reply: Answers | None = None

    @workflow.run
    async def run(self, request: AskRequest) -> dict[str, dict[str, Any]]:
        task = workflow.get_external_workflow_handle(request.task_workflow_id)
        # The caller the reply service stamped: the task takes questions only from its operation's handler.
        caller = request.caller if workflow.patched(CALLER_PATCH) else None
        await task.signal(ASK_SIGNAL, Ask(request.nonce, request.questions, workflow.info().workflow_id, caller))
        try:
            await workflow.wait_condition(lambda: self._reply is not None)
        except asyncio.CancelledError:
            if workflow.patched(WITHDRAW_PATCH):
                await _withdraw(task)
            raise
        assert self._reply is not None
        if self._reply.error is not None:
            error = self._reply.error
            raise task_error(int(error.get("code", -32603)), str(error.get("message", "")), error.get("data"))
        return dict(self._reply.answers or {})

    @workflow.signal(name=ANSWER_SIGNAL)
    def answer(self, reply: Answers) -> None:
        if self._reply is None:
            self._reply = reply


async def _withdraw(task: workflow.ExternalWorkflowHandle[Any]) -> None:
    try:
        await task.signal(WITHDRAW_SIGNAL, workflow.info().workflow_id)
    except FailureError as err:  # the task already ended: nothing is shown any more
        workflow.logger.info("a withdrawn question's task has ended: %s", err.message)
