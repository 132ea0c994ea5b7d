"""The workflow tool of `tests.rolling_app`, once per release: one workflow type, two builds of its code."""

from __future__ import annotations

from typing import Any

from temporalio import workflow

from mcp_tasks_temporal.temporal.workflow_api import request_input

GATE = "ReleaseGate"
APPROVE: dict[str, Any] = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "Ship it?",
        "requestedSchema": {"type": "object", "properties": {"ship": {"type": "boolean"}}, "required": ["ship"]},
    },
}


@workflow.defn(name=GATE)
class ReleaseGateV1:
    """Waits for an approval; says which release's code ran it."""

    @workflow.run
    async def run(self) -> dict[str, str]:
        answer = await request_input("ship", APPROVE)
        return {"release": "1", "action": str(answer.get("action"))}


@workflow.defn(name=GATE)
class ReleaseGateV2:
    """The next release of the same workflow type: it asks a different question first."""

    @workflow.run
    async def run(self) -> dict[str, str]:
        await request_input("really", APPROVE)
        answer = await request_input("ship", APPROVE)
        return {"release": "2", "action": str(answer.get("action"))}
