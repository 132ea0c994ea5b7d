"""The server of docs/workflows.md's pipeline: the workflow tool and its activities."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from mcp_tasks_temporal import TasksExtension
from tests.docs_release_activities import build, deploy
from tests.docs_release_workflow import ReleaseWorkflow

tasks = TasksExtension(default_poll_interval_ms=200)
app = MCPServer("releases", version="0.0.1", extensions=[tasks])
tasks.workflow_tool(ReleaseWorkflow, name="release", activities=[build, deploy])
