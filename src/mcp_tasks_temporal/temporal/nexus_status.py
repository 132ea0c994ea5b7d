"""`set_status` in a workflow that another team runs behind a Nexus operation: the report back.

Nexus carries an operation's start, result, failure and cancellation, nothing
in between: a query or signal cannot reach the caller's workflow across
namespaces. So the caller's task workflow sends, with the operation's start,
a reply endpoint (targeting its own namespace), its workflow ID and a nonce;
`start_task_workflow` keeps them in the handler workflow's memo; and each
`set_status` there starts one small Nexus operation back through that
endpoint. Workflow code: deterministic, no I/O, nothing kept in this module.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, Final, cast

from temporalio import workflow

from mcp_tasks_temporal.temporal.nexus_contract import REPLY_MEMO, REPLY_SERVICE, REPLY_STATUS_OPERATION, StatusReport

_SENDER_ATTRIBUTE: Final = "_mcp_tasks_nexus_status"
REPORT_TIMEOUT: Final = timedelta(minutes=5)
"""How long one report may take to reach the task; a later report supersedes it anyway."""


class _Sender:
    """Per-run state, held by the workflow instance: the sequence and the reports still in flight."""

    def __init__(self, reply: Mapping[str, Any]) -> None:
        self.reply = reply
        self.sequence = 0
        self.in_flight: set[asyncio.Task[None]] = set()

    async def send(self, report: StatusReport) -> None:
        client = workflow.create_nexus_client(endpoint=str(self.reply["endpoint"]), service=REPLY_SERVICE)
        try:
            await client.execute_operation(REPLY_STATUS_OPERATION, report, schedule_to_close_timeout=REPORT_TIMEOUT)
        except Exception as err:  # a status line is best effort; it must never fail the other team's workflow
            workflow.logger.warning("status report did not reach the MCP task: %s", err)


def forward_status(text: str) -> None:
    """Report `text` to the MCP task that started this workflow over Nexus; nothing when none did."""
    sender = _sender()
    if sender is None:
        return
    sender.sequence += 1
    report = StatusReport(
        task_workflow_id=str(sender.reply["task"]),
        nonce=str(sender.reply["nonce"]),
        sequence=sender.sequence,
        text=text,
    )
    task = asyncio.get_running_loop().create_task(sender.send(report))
    sender.in_flight.add(task)
    task.add_done_callback(sender.in_flight.discard)


def _sender() -> _Sender | None:
    instance = workflow.instance()
    sender = getattr(instance, _SENDER_ATTRIBUTE, None)
    if isinstance(sender, _Sender):
        return sender
    reply = workflow.memo_value(REPLY_MEMO, None)
    if not isinstance(reply, Mapping) or not all(key in reply for key in ("endpoint", "task", "nonce")):
        return None
    sender = _Sender(cast(Mapping[str, Any], reply))
    setattr(instance, _SENDER_ATTRIBUTE, sender)
    return sender
