"""`McpTasksPlugin` on a team's own worker: their workflow and our tasks on one queue, replayed as they ran;
the app's own plugins (a sub-agent's) brought by the plugin alone; settings that disagree with the
fronts' refused before the worker polls.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPayloadConverter
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer, Worker

from mcp_tasks_temporal import McpTasksPlugin
from mcp_tasks_temporal.contrib.pydantic_ai.sub_agent import (
    AGENT_MODEL_ENV,
    AgentModel,
    agent_model_activity,
    configure_model,
)
from mcp_tasks_temporal.temporal.codec import AesGcmCodec, new_key, parse_keys
from mcp_tasks_temporal.temporal.ids import UNKEYED
from mcp_tasks_temporal.temporal.payload_storage import StorageSettings, open_storage
from mcp_tasks_temporal.temporal.shared_settings import SettingsDisagreement
from mcp_tasks_temporal.temporal.task_interceptor import TaskInterceptor
from mcp_tasks_temporal.temporal.workflows import PinnedToolTaskWorkflow, ToolTaskWorkflow
from mcp_tasks_temporal.testing.scripted_model import Reply, ScriptedModel, scripted_model
from tests import team_agent_app
from tests.processes import start_front
from tests.team_worker_app import Tally, TeamReport, app, count_words
from tests.wire import HttpMcp, TaskCalls

pytestmark = pytest.mark.anyio

TEAM_APP = "tests.team_worker_app:app"
AGENT_APP = "tests.team_agent_app:app"
MODEL_NAME = "team-model-scripted"


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
    history = await temporal_client.get_workflow_handle(UNKEYED.workflow_id(created["taskId"], None)).fetch_history()

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


# -- the app's own plugins: a sub-agent on the team's worker -----------------------------------


def _agent_env(model: ScriptedModel) -> dict[str, str]:
    """What a process running the sub-agent is configured with: the scripted model's endpoint and name."""
    return {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "scripted-key", AGENT_MODEL_ENV: MODEL_NAME}


@pytest.fixture(scope="module")
async def model() -> AsyncIterator[ScriptedModel]:
    async with scripted_model([]) as server:
        yield server


@pytest.fixture(scope="module")
def agent_queue() -> str:
    return f"team-agent-{uuid.uuid4()}"


@pytest.fixture(scope="module")
def agent_front(workdir: Path, temporal: str, agent_queue: str, model: ScriptedModel) -> Iterator[str]:
    # The front checks at call time that a model is configured; the worker's activities call it.
    process, url = start_front(workdir, temporal, agent_queue, app=AGENT_APP, env=_agent_env(model))
    yield url
    process.stop()


async def test_the_plugin_alone_brings_the_apps_plugins_after_the_apps_workflows(
    temporal_client: Client, agent_queue: str
) -> None:
    worker = Worker(
        temporal_client,
        task_queue=agent_queue,
        workflows=[TeamReport],
        activities=[count_words],
        plugins=[McpTasksPlugin(team_agent_app.app)],
    )
    config = _config(worker)
    assert team_agent_app.Summarise in config["workflows"]
    # pydantic-ai's plugin found the agent on the workflow: its model-request activity is registered.
    agent_plugin: Any = AgentPlugin(team_agent_app.summary_agent)
    agent_activities: list[object] = list(agent_plugin.activities)
    assert agent_activities and all(fn in config["activities"] for fn in agent_activities)
    assert agent_model_activity in config["activities"]
    assert config["activities"][0] is count_words


async def test_on_a_client_the_plugin_brings_the_apps_plugins_to_the_client_and_its_workers(
    temporal: str, agent_queue: str
) -> None:
    client = await Client.connect(temporal, plugins=[McpTasksPlugin(team_agent_app.app, task_queue=agent_queue)])
    # pydantic-ai's client side: its payload converter, which the fronts of the app use too.
    assert client.data_converter.payload_converter_class is PydanticAIPayloadConverter
    config = _config(Worker(client, task_queue=agent_queue, workflows=[TeamReport], activities=[count_words]))
    assert team_agent_app.Summarise in config["workflows"]
    assert agent_model_activity in config["activities"]


async def test_the_apps_plugins_given_beside_the_plugin_are_named_in_a_warning(
    temporal: str, agent_queue: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The app's plugins on the client as well configure the worker before its workflows are there."""
    client = await Client.connect(temporal, plugins=list(team_agent_app.tasks.plugins))
    with caplog.at_level(logging.WARNING, logger="mcp_tasks_temporal"):
        Worker(client, task_queue=agent_queue, workflows=[TeamReport], plugins=[McpTasksPlugin(team_agent_app.app)])
    assert any("PydanticAIPlugin" in record.getMessage() for record in caplog.records), caplog.text


async def test_a_sub_agent_runs_on_a_team_worker_built_with_the_plugin_alone(
    temporal_client: Client, agent_front: str, agent_queue: str, model: ScriptedModel, http: httpx.AsyncClient
) -> None:
    model.reset([Reply(content="Three little words.")])
    mcp = TaskCalls(HttpMcp(agent_front, http))
    worker = Worker(
        temporal_client,
        task_queue=agent_queue,
        workflows=[TeamReport],
        activities=[count_words],
        plugins=[McpTasksPlugin(team_agent_app.app)],
    )
    configure_model(AgentModel(MODEL_NAME, base_url=model.base_url, api_key="scripted-key"))
    try:
        async with worker:
            created = await mcp.start("summarise", {"text": "three little words"})
            done = await mcp.wait_for(created["taskId"], timeout=30)
    finally:
        configure_model(None)

    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"] == "Three little words."
    assert [request["model"] for request in model.requests] == [MODEL_NAME]
    assert "three little words" in str(model.requests[0]["messages"])


# -- settings agreement ---------------------------------------------------------------------


@pytest.fixture
def sealed_front(workdir: Path, temporal: str, tmp_path: Path) -> Iterator[tuple[str, Path, str]]:
    """A front of the team app on a queue of its own, with payload storage and a codec key: (queue, dir, key)."""
    queue = f"team-settings-{uuid.uuid4()}"
    key, key_file, payloads = new_key(), tmp_path / "codec-key", tmp_path / "payloads"
    key_file.write_text(key + "\n")
    extra = ["--payload-storage", "local", "--payload-dir", str(payloads), "--codec-key-file", str(key_file)]
    process, _ = start_front(workdir, temporal, queue, app=TEAM_APP, extra=extra)
    yield queue, payloads, key
    process.stop()


async def _pollers(client: Client, queue: str) -> int:
    count = 0
    for kind in (TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY):
        request = DescribeTaskQueueRequest(
            namespace=client.namespace, task_queue=TaskQueue(name=queue), task_queue_type=kind
        )
        count += len((await client.workflow_service.describe_task_queue(request)).pollers)
    return count


async def test_a_team_worker_whose_settings_disagree_with_the_fronts_is_refused_before_it_polls(
    temporal_client: Client, sealed_front: tuple[str, Path, str]
) -> None:
    queue, payloads, key = sealed_front
    refused = Worker(
        temporal_client,
        task_queue=queue,
        workflows=[TeamReport],
        activities=[count_words],
        plugins=[McpTasksPlugin(app)],
    )
    with pytest.raises(SettingsDisagreement) as refusal:
        with anyio.fail_after(30):
            async with refused:
                await anyio.Event().wait()  # the refusal ends the block
    line = str(refusal.value)
    assert "\n" not in line and "payload storage" in line and "serve pid" in line, line
    assert "this worker has none" in line and str(payloads.resolve()) in line, line
    assert await _pollers(temporal_client, queue) == 0

    # The same worker with the fronts' storage and key is accepted, on the queue the refused one left free.
    async with open_storage(StorageSettings(kind="local", directory=payloads)) as storage:
        plugin = McpTasksPlugin(app, codec=AesGcmCodec(parse_keys(key)), external_storage=storage)
        client = await Client.connect(temporal_client.service_client.config.target_host, plugins=[plugin])
        async with Worker(client, task_queue=queue, workflows=[TeamReport], activities=[count_words]):
            report = await client.execute_workflow(
                TeamReport.run, "two words", id=f"team-report-{uuid.uuid4()}", task_queue=queue
            )
            assert await _pollers(client, queue) > 0  # what the refused worker is shown never to have done
    assert report == "report: 2 words"
