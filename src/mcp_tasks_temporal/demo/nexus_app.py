"""The MCP side of the Nexus demo: another team's `reports.build_report` operation as a task tool.

    mcp-tasks-temporal dev --app mcp_tasks_temporal.demo.nexus_app:app \\
        --nexus-namespace reports-team --nexus-endpoint team-reports=reports-team/reports \\
        --nexus-reply-endpoint mcp-tasks-reply

`NEXUS_DEMO_ENDPOINT` names another endpoint than `team-reports`.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from mcp_tasks_temporal.demo.report_workflow import ReportRequest
from mcp_tasks_temporal.front.extension import TasksExtension
from mcp_tasks_temporal.ops.settings import variable

ENDPOINT_ENV = "NEXUS_DEMO_ENDPOINT"

tasks = TasksExtension(default_poll_interval_ms=500)
app = MCPServer("mcp-tasks-temporal-nexus-demo", version="0.1.0", extensions=[tasks])

tasks.nexus_tool(
    endpoint=variable(ENDPOINT_ENV) or "team-reports",
    service="reports",
    operation="build_report",
    name="build_report",
    description="Have the reports team write a report (their workflow, in their namespace, through Nexus)",
    input_type=ReportRequest,
    output_type=str,
)
