"""The servers of the interop suite: the tool fixture app, the workflow fixture app and the demo.

The Python clients run in the test process against fronts served over real HTTP from this process
(`front_url`, `wf_url`, `demo_url`), their tasks on workers in this process. The Node and mcp 1.x
clients are processes of their own, against front and worker processes (`stack`, `wf_stack`, `demo_stack`).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from temporalio.client import Client

from mcp_tasks_temporal.ops.app_loading import DEMO_APP
from tests.conftest import Stack
from tests.front_app import DEMO_SERVER, in_process_app
from tests.interop.mcp1_venv import Mcp1Clients, mcp1_clients
from tests.interop.node import NodeClients, node_clients
from tests.processes import start_front, start_worker

WORKFLOW_APP = "tests.workflow_fixture_app:app"
YES: dict[str, str | int | float | bool | list[str] | None] = {"approve": True}
"""The content every question of the fixture apps accepts (their schemas ask for `approve`)."""
WAIT = 20
"""A cancel reaches a running tool through its heartbeat (every 2 s): well within this."""
PIPELINE_STATUS = [
    "checkout (v1) (1/6)",
    "resolve dependencies (v1) (2/6)",
    "compile (v1) (3/6)",
    "unit tests (v1) (4/6)",
    "package (v1) (5/6)",
    "waiting for approval to publish v1 (5/6)",
    "publish (v1) (6/6)",
]
"""The demo's `build_pipeline` of `v1`, line by line, as a client following it sees its status."""
MATCHES = ["audit.log: user alice approved release 1.4", "audit.log: user bob rolled back release 1.3"]
"""What the demo's `search_logs` finds for `release`."""


@pytest.fixture(scope="session")
def wf_stack(workdir: Path, temporal: str) -> Iterator[Stack]:
    """Front and worker of the workflow fixture app, shared by every client of the suite."""
    shared = Stack(workdir, temporal, task_queue=f"interop-wf-{uuid.uuid4()}")
    try:
        shared.workers.append(start_worker(workdir, temporal, shared.task_queue, app=WORKFLOW_APP))
        shared.fronts.append(start_front(workdir, temporal, shared.task_queue, app=WORKFLOW_APP))
        yield shared
    finally:
        shared.stop()


@pytest.fixture(scope="session")
def demo_stack(workdir: Path, temporal: str) -> Iterator[Stack]:
    """Front and worker of the demo `dev` serves (`build_pipeline`, `search_logs`), for the agent frameworks."""
    shared = Stack(workdir, temporal, task_queue=f"interop-demo-{uuid.uuid4()}")
    try:
        shared.workers.append(start_worker(workdir, temporal, shared.task_queue, app=DEMO_APP))
        shared.fronts.append(start_front(workdir, temporal, shared.task_queue, app=DEMO_APP))
        yield shared
    finally:
        shared.stop()


@pytest.fixture(scope="module")
async def wf_url(app_client: Client) -> AsyncIterator[str]:
    """The workflow fixture app in this process, its front on a loopback port: its URL."""
    async with in_process_app(app_client, WORKFLOW_APP) as front, front.listening() as url:
        yield url


@pytest.fixture(scope="module")
async def demo_url(app_client: Client) -> AsyncIterator[str]:
    """The demo `dev` serves (`build_pipeline`, `search_logs`), in this process, its front on a loopback port."""
    async with in_process_app(app_client, DEMO_SERVER) as front, front.listening() as url:
        yield url


@pytest.fixture(scope="session")
def mcp1() -> Mcp1Clients:
    """mcp 1.x and langchain-mcp-adapters in their own venv, installed on first use."""
    return mcp1_clients()


@pytest.fixture(scope="session")
def node() -> NodeClients:
    """The pinned JavaScript clients, installed with npm on first use."""
    return node_clients()
