"""The demo's Nexus app plus a tool whose task expires while the other team's workflow still runs."""

from __future__ import annotations

import importlib
import os

from mcp_tasks_temporal.demo import nexus_app
from mcp_tasks_temporal.demo.nexus_app import ENDPOINT_ENV
from mcp_tasks_temporal.demo.report_workflow import ReportRequest
from tests.nexus_hostile import PUPPET_ENDPOINT_ENV

__all__ = ["app"]

# The demo's app built anew with each load of this module, tools added below included: a process loads it once,
# a test builds a front and a worker of their own from it in one process (`tests.front_app.fresh_app`).
demo = importlib.reload(nexus_app)
app, tasks = demo.app, demo.tasks

SHORT_TTL_MS = 10_000

tasks.nexus_tool(
    endpoint=os.environ[ENDPOINT_ENV],
    service="reports",
    operation="build_report",
    name="short_report",
    input_type=ReportRequest,
    ttl_ms=SHORT_TTL_MS,
)

if os.environ.get(PUPPET_ENDPOINT_ENV):
    # A handler the reply path's tests drive by signals (tests/nexus_hostile.py).
    tasks.nexus_tool(
        endpoint=os.environ[PUPPET_ENDPOINT_ENV],
        service="hostile",
        operation="puppet",
        name="puppet",
        input_type=str,
        output_type=str,
    )
