"""`McpTasksPlugin` on a team's own worker: their workflow and our tasks on one queue, replayed as they ran."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer, Worker

from mcp_tasks_temporal import McpTasksPlugin
from mcp_tasks_temporal.temporal.ids import workflow_id
from mcp_tasks_temporal.temporal.task_interceptor import TaskInterceptor
from mcp_tasks_temporal.temporal.workflows import PinnedToolTaskWorkflow, ToolTaskWorkflow
from tests.processes import start_front
from tests.team_worker_app import Tally, TeamReport, app, count_words
from tests.wire import HttpMcp, TaskCalls

pytestmark = pytest.mark.anyio

TEAM_APP = "tests.team_worker_app:app"


@pytest.fixture(scope="module")
def queue() -> str:
    return f"team-{uuid.uuid4()}"


@pytest.fixture(scope="module")
def front(workdir: Path, temporal: str, queue: str) -> Iterator[str]:
    process, url = start_front(workdir, temporal, queue, app=TEAM_APP)
    yield url
    process.stop()


@pytest.fixture
async def team_worker(temporal_client: Client, queue: str) -> AsyncIterator[Worker]:
    """Exactly what the docs show: the team's worker, with the plugin added to it."""
    worker = Worker(
        temporal_client,
        task_queue=queue,
        workflows=[TeamReport],
        activities=[count_words],
        plugins=[McpTasksPlugin(app)],
    )
    async with worker:
        yield worker


@pytest.fixture
async def mcp(front: str) -> AsyncIterator[TaskCalls]:
    async with httpx.AsyncClient(timeout=30) as http:
        yield TaskCalls(HttpMcp(front, http))


def _config(worker: Worker) -> dict[str, Any]:
    return dict(worker.config(active_config=True))


async def test_the_plugin_adds_our_workflows_activities_and_interceptor_beside_the_teams(
    temporal_client: Client, queue: str
) -> None:
    worker = Worker(
        temporal_client,
        task_queue=queue,
        workflows=[TeamReport],
        activities=[count_words],
        plugins=[McpTasksPlugin(app)],
    )
    config = _config(worker)
    assert config["workflows"][0] is TeamReport
    assert {ToolTaskWorkflow, PinnedToolTaskWorkflow, Tally} <= set(config["workflows"])
    names = [getattr(fn, "__name__", "") for fn in config["activities"]]
    assert names[0] == "count_words" and {"run_tool", "tally_step"} <= set(names)
    assert any(isinstance(interceptor, TaskInterceptor) for interceptor in config["interceptors"])
    # The tool's status must reach `tasks/get` within a second, whatever Temporal's default throttle.
    assert config["max_heartbeat_throttle_interval"].total_seconds() <= 1.0


async def test_on_another_queue_the_plugin_adds_only_the_workflow_tools_that_run_there(
    temporal_client: Client, queue: str
) -> None:
    worker = Worker(
        temporal_client,
        task_queue="their-other-queue",
        workflows=[TeamReport],
        activities=[count_words],
        plugins=[McpTasksPlugin(app, task_queue=queue)],
    )
    config = _config(worker)
    assert config["workflows"] == [TeamReport]
    assert config["activities"] == [count_words]


async def test_their_workflow_and_our_tasks_run_on_one_worker(
    team_worker: Worker, temporal_client: Client, mcp: TaskCalls, queue: str
) -> None:
    report = await temporal_client.execute_workflow(
        TeamReport.run, "three little words", id=f"team-report-{uuid.uuid4()}", task_queue=queue
    )
    assert report == "report: 3 words"

    created = await mcp.start("lifespan_greeting")
    done = await mcp.wait_for(created["taskId"])
    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"] == "hello from the lifespan"

    created = await mcp.start("tally", {"steps": 3})
    done = await mcp.wait_for(created["taskId"])
    assert done["status"] == "completed", done
    assert done["result"]["structuredContent"] == {"result": 14}


async def test_a_workflow_tools_history_replays_with_the_plugin(
    team_worker: Worker, temporal_client: Client, mcp: TaskCalls
) -> None:
    created = await mcp.start("tally", {"steps": 2})
    done = await mcp.wait_for(created["taskId"])
    assert done["status"] == "completed", done
    history = await temporal_client.get_workflow_handle(workflow_id(created["taskId"], None)).fetch_history()

    result = await Replayer(workflows=[], plugins=[McpTasksPlugin(app)]).replay_workflow(
        history, raise_on_replay_failure=False
    )
    assert result.replay_failure is None, result.replay_failure


async def test_on_a_client_the_plugin_sets_the_converter_and_reaches_its_workers_once(
    temporal: str, queue: str
) -> None:
    client = await Client.connect(temporal, plugins=[McpTasksPlugin(app, task_queue=queue)])
    # Pydantic models as tool and workflow inputs decode the same in every process of the namespace.
    assert client.data_converter.payload_converter_class is pydantic_data_converter.payload_converter_class
    worker = Worker(client, task_queue=queue, workflows=[TeamReport], activities=[count_words])
    config = _config(worker)
    assert config["workflows"].count(ToolTaskWorkflow) == 1
    assert sum(isinstance(i, TaskInterceptor) for i in config["interceptors"]) == 1
