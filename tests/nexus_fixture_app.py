"""The demo's Nexus app plus a tool whose task expires while the other team's workflow still runs."""

from __future__ import annotations

import os

from mcp_tasks_temporal.demo.nexus_app import ENDPOINT_ENV, app, tasks
from mcp_tasks_temporal.demo.report_workflow import ReportRequest
from tests.nexus_hostile import PUPPET_ENDPOINT_ENV

__all__ = ["app"]

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
