"""The other team's workflow in the Nexus demo: writes a report section by section, in their namespace.

It knows nothing of MCP but `set_status` and `request_input`, which reach the
MCP task that called it through Nexus when the operation was started with
`start_task_workflow`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ApplicationError

from mcp_tasks_temporal.temporal.workflow_api import request_input, set_status

REPORT_WORKFLOW = "reports.BuildReport"


@dataclass
class ReportRequest:
    topic: str
    """What the report is about."""
    sections: int = 3
    """How many sections to write."""
    seconds_per_section: float = 1.0
    """How long each (simulated) section takes."""
    ask_before_publishing: bool = False
    """Ask the MCP client whether to publish the finished report."""


def publish_question(topic: str) -> dict[str, object]:
    return {
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": f"Publish the report on {topic}?",
            "requestedSchema": {
                "type": "object",
                "properties": {"publish": {"type": "boolean"}},
                "required": ["publish"],
            },
        },
    }


@workflow.defn(name=REPORT_WORKFLOW)
class BuildReportWorkflow:
    @workflow.run
    async def run(self, request: ReportRequest) -> str:
        if not request.topic.strip():
            raise ApplicationError("a report needs a topic", type="InvalidReport", non_retryable=True)
        for section in range(1, request.sections + 1):
            set_status(f"writing section {section}/{request.sections} on {request.topic}")
            await workflow.sleep(timedelta(seconds=request.seconds_per_section))
        report = f"Report on {request.topic}: {request.sections} sections"
        if request.ask_before_publishing:
            answer = await request_input("publish", publish_question(request.topic))
            if answer.get("action") != "accept" or not answer.get("content", {}).get("publish"):
                return f"{report}, not published"
            return f"{report}, published"
        return report
