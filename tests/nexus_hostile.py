"""Workflows for the Nexus reply path's tests: a handler the test drives, and a third namespace's forgeries.

`Puppet` runs in the other team's namespace behind `hostile.puppet` (started with
`start_task_workflow`, as a real handler is) and does what its signals order:
set a status line, ask a question, withdraw it, finish. `ForgedReport` and
`ForgedQuestion` run in a namespace of their own and call our reply endpoint
with a nonce stolen from the handler's history and a caller they claim.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import nexusrpc.handler
from temporalio import nexus, workflow
from temporalio.exceptions import NexusOperationError

from mcp_tasks_temporal.temporal.nexus_contract import (
    REPLY_ASK_OPERATION,
    REPLY_SERVICE,
    REPLY_STATUS_OPERATION,
    AskRequest,
    Caller,
    StatusReport,
)
from mcp_tasks_temporal.temporal.nexus_handler import start_task_workflow
from mcp_tasks_temporal.temporal.workflow_api import request_input, set_status

PUPPET_QUEUE = "puppets"
PUPPET_ENDPOINT_ENV = "NEXUS_PUPPET_ENDPOINT"
FINISHED = "finished after its orders"
QUESTION: dict[str, Any] = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "Go on?",
        "requestedSchema": {"type": "object", "properties": {"go": {"type": "boolean"}}},
    },
}


@workflow.defn(name="hostile.Puppet")
class Puppet:
    def __init__(self) -> None:
        self._orders: list[str] = []

    @workflow.run
    async def run(self, name: str) -> str:
        asking: asyncio.Task[dict[str, Any]] | None = None
        while True:
            await workflow.wait_condition(lambda: bool(self._orders))
            order = self._orders.pop(0)
            if order == "finish":
                return FINISHED
            if order == "ask":
                asking = asyncio.create_task(request_input("go", QUESTION))
            elif order == "withdraw" and asking is not None:
                asking.cancel()
                try:
                    await asking
                except (asyncio.CancelledError, NexusOperationError):
                    pass  # the withdrawn question's operation ends cancelled
                set_status("withdrew the question")
            else:
                set_status(order)

    @workflow.signal(name="order")
    def order(self, text: str) -> None:
        self._orders.append(text)


@nexusrpc.handler.service_handler(name="hostile")
class PuppetService:
    @nexus.workflow_run_operation(name="puppet")
    async def puppet(self, ctx: nexus.WorkflowRunOperationContext, name: str) -> nexus.WorkflowHandle[str]:
        return await start_task_workflow(ctx, Puppet.run, name, id=f"puppet-{ctx.request_id}")


@dataclass
class Forgery:
    reply_endpoint: str
    task_workflow_id: str
    nonce: str
    claimed: Caller
    """The handler the forger claims to be (the reply service replaces it with the real caller)."""
    sequence: int = 1
    text: str = "forged status"


@workflow.defn(name="hostile.ForgedReport")
class ForgedReport:
    @workflow.run
    async def run(self, forgery: Forgery) -> None:
        client = workflow.create_nexus_client(endpoint=forgery.reply_endpoint, service=REPLY_SERVICE)
        report = StatusReport(
            task_workflow_id=forgery.task_workflow_id,
            nonce=forgery.nonce,
            sequence=forgery.sequence,
            text=forgery.text,
            caller=forgery.claimed,
        )
        await client.execute_operation(REPLY_STATUS_OPERATION, report)


@workflow.defn(name="hostile.ForgedQuestion")
class ForgedQuestion:
    @workflow.run
    async def run(self, forgery: Forgery) -> dict[str, dict[str, Any]]:
        client = workflow.create_nexus_client(endpoint=forgery.reply_endpoint, service=REPLY_SERVICE)
        request = AskRequest(
            task_workflow_id=forgery.task_workflow_id,
            nonce=forgery.nonce,
            questions={"sso": QUESTION},
            caller=forgery.claimed,
        )
        answers: dict[str, dict[str, Any]] = await client.execute_operation(
            REPLY_ASK_OPERATION, request, output_type=dict[str, dict[str, Any]]
        )
        return answers
