"""`McpTasksPlugin` on a team's own worker: their workflow and our tasks on one queue, replayed as they ran;
nothing of the team's worker changed; the app's own plugins (a sub-agent's) given after it. Its start-up checks,
which refuse a worker before it polls, are tested in test_plugin_start_up. The team's workers and the fronts of its
apps run in the test process.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPayloadConverter
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Interceptor, Replayer, Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from mcp_tasks_temporal import McpTasksPlugin
from mcp_tasks_temporal.contrib.pydantic_ai.sub_agent import (
    AgentModel,
    agent_model_activity,
    configure_model,
)
from mcp_tasks_temporal.temporal.ids import UNKEYED
from mcp_tasks_temporal.temporal.plugin import plugin_interceptors
from mcp_tasks_temporal.temporal.sandbox import passthrough_modules
from mcp_tasks_temporal.temporal.task_interceptor import TaskInterceptor
from mcp_tasks_temporal.temporal.workflows import PinnedToolTaskWorkflow, ToolTaskWorkflow
from mcp_tasks_temporal.temporal.workflows.task_feed import TaskFeedWorkflow
from mcp_tasks_temporal.testing.scripted_model import Reply, ScriptedModel, scripted_model
from tests import team_agent_app
from tests.front_app import InProcessFront, client_for_app, fresh_app, in_process_front
from tests.team_worker_app import Tally, TeamReport, app, count_words, tasks
from tests.wire import TaskCalls

pytestmark = pytest.mark.anyio

TEAM_APP = "tests.team_worker_app:app"
AGENT_APP = "tests.team_agent_app:app"
MODEL_NAME = "team-model-scripted"


@pytest.fixture(scope="module")
def queue() -> str:
    return f"team-{uuid.uuid4()}"


@pytest.fixture(scope="module")
async def team_front(app_client: Client, queue: str) -> AsyncIterator[InProcessFront]:
    """A front of the team's app on its queue; the team's own worker runs the tasks."""
    async with in_process_front(fresh_app(TEAM_APP), app_client, task_queue=queue) as served:
        yield served


@pytest.fixture
async def team_worker(temporal_client: Client, queue: str) -> AsyncIterator[Worker]:
    """Exactly what the docs show: the team's worker, with the plugin added to it."""
    worker = Worker(
        temporal_client,
        task_queue=queue,
        workflows=[TeamReport],
        activities=[count_words],
        plugins=[McpTasksPlugin(tasks, app)],
    )
    async with worker:
        yield worker


@pytest.fixture
async def mcp(team_front: InProcessFront) -> AsyncIterator[TaskCalls]:
    async with team_front.http() as http:
        yield team_front.calls(http)


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
        plugins=[McpTasksPlugin(tasks, app)],
    )
    config = _config(worker)
    assert config["workflows"][0] is TeamReport
    assert {ToolTaskWorkflow, PinnedToolTaskWorkflow, TaskFeedWorkflow, Tally} <= set(config["workflows"])
    names = [getattr(fn, "__name__", "") for fn in config["activities"]]
    assert names[0] == "count_words" and {"run_tool", "tally_step"} <= set(names)
    assert any(isinstance(interceptor, TaskInterceptor) for interceptor in config["interceptors"])


class _TeamInterceptor(Interceptor):
    """An interceptor of the team's own: it must stay first, and stay."""


async def test_the_plugin_changes_no_setting_of_the_teams_worker(temporal_client: Client, queue: str) -> None:
    """Every setting the team chose is as they chose it; the plugin only appends, to the lists it adds to."""
    # Their sandbox passes through what their workflow's module imports (it shares it with the MCP app), and more.
    shared = SandboxRestrictions.default.with_passthrough_modules("json", *passthrough_modules())
    theirs = SandboxedWorkflowRunner(restrictions=shared)
    interceptor = _TeamInterceptor()

    def team_worker(plugins: list[Any], task_queue: str) -> Worker:
        return Worker(
            temporal_client,
            task_queue=task_queue,
            workflows=[TeamReport],
            activities=[count_words],
            interceptors=[interceptor],
            workflow_runner=theirs,
            identity="team-worker-1",
            max_concurrent_activities=7,
            max_cached_workflows=11,
            max_heartbeat_throttle_interval=timedelta(seconds=45),
            default_heartbeat_throttle_interval=timedelta(seconds=20),
            graceful_shutdown_timeout=timedelta(seconds=13),
            sticky_queue_schedule_to_start_timeout=timedelta(seconds=9),
            plugins=plugins,
        )

    # Two workers of one queue may not exist at once in a process: the same settings on two queues.
    before = _config(team_worker([], f"{queue}-without"))
    after = _config(team_worker([McpTasksPlugin(tasks, app, task_queue=f"{queue}-with")], f"{queue}-with"))
    assert (before.pop("task_queue"), after.pop("task_queue")) == (f"{queue}-without", f"{queue}-with")
    # Both runners are the team's, each wrapped to see a task's failing workflow task (failure_runner).
    added_to = {"workflows", "activities", "interceptors", "workflow_runner", "unsandboxed_workflow_runner", "plugins"}
    assert set(before) == set(after)
    for key in sorted(set(before) - added_to):
        assert after[key] == before[key], f"the plugin changed the worker's {key}"
    for key in ("workflows", "activities", "interceptors"):
        kept = list(after[key])[: len(before[key])]
        assert kept == list(before[key]), f"the plugin changed the team's {key}"
        assert len(after[key]) > len(before[key]), f"the plugin added no {key}"
    assert after["interceptors"][0] is interceptor
    assert isinstance(after["unsandboxed_workflow_runner"], type(before["unsandboxed_workflow_runner"]))
    runner = after["workflow_runner"]
    assert isinstance(runner, SandboxedWorkflowRunner)
    # Their sandbox, with passed-through modules added to theirs and nothing else of it changed.
    assert theirs.restrictions.passthrough_modules <= runner.restrictions.passthrough_modules
    assert {"mcp", "mcp_types"} <= runner.restrictions.passthrough_modules
    unchanged = dataclasses.replace(runner.restrictions, passthrough_modules=theirs.restrictions.passthrough_modules)
    assert unchanged == theirs.restrictions
    assert runner.runner_class is theirs.runner_class


@pytest.mark.parametrize("throttle_s", [60, 1])
async def test_how_late_status_lines_may_be_on_the_teams_worker_is_said_once_at_start(
    temporal_client: Client, queue: str, caplog: pytest.LogCaptureFixture, throttle_s: int
) -> None:
    """The heartbeat throttle is the team's: the plugin says what theirs means for status lines, and leaves it."""
    worker = Worker(
        temporal_client,
        task_queue=f"{queue}-throttle-{throttle_s}",
        plugins=[McpTasksPlugin(tasks, app)],
        max_heartbeat_throttle_interval=timedelta(seconds=throttle_s),
    )
    with caplog.at_level(logging.INFO, logger="mcp_tasks_temporal.temporal.plugin"):
        async with worker:
            pass
    said = [r.getMessage() for r in caplog.records if "status line" in r.getMessage()]
    if throttle_s == 1:
        assert not said, said
    else:
        # The tool activity's 30 s heartbeat timeout: Temporal sends its heartbeats every 24 s at most.
        assert len(said) == 1 and "up to 24 s" in said[0] and "max_heartbeat_throttle_interval" in said[0], said


async def test_the_interceptors_the_plugin_adds_are_one_list_it_reads(temporal_client: Client, queue: str) -> None:
    worker = Worker(temporal_client, task_queue=queue, plugins=[McpTasksPlugin(tasks, app)])
    added: list[type[Any]] = [type(i) for i in _config(worker)["interceptors"]]
    assert added == [type(i) for i in plugin_interceptors(tasks)]


async def test_on_another_queue_the_plugin_adds_only_the_workflow_tools_that_run_there(
    temporal_client: Client, queue: str
) -> None:
    worker = Worker(
        temporal_client,
        task_queue="their-other-queue",
        workflows=[TeamReport],
        activities=[count_words],
        plugins=[McpTasksPlugin(tasks, app, task_queue=queue)],
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

    result = await Replayer(workflows=[], plugins=[McpTasksPlugin(tasks, app)]).replay_workflow(
        history, raise_on_replay_failure=False
    )
    assert result.replay_failure is None, result.replay_failure


async def test_a_tool_tasks_history_replays_with_the_plugin(
    team_worker: Worker, temporal_client: Client, mcp: TaskCalls
) -> None:
    created = await mcp.start("lifespan_greeting")
    assert (await mcp.wait_for(created["taskId"]))["status"] == "completed"
    history = await temporal_client.get_workflow_handle(UNKEYED.workflow_id(created["taskId"], None)).fetch_history()

    result = await Replayer(workflows=[TeamReport], plugins=[McpTasksPlugin(tasks, app)]).replay_workflow(
        history, raise_on_replay_failure=False
    )
    assert result.replay_failure is None, result.replay_failure


async def test_on_a_client_the_plugin_sets_the_converter_and_reaches_its_workers_once(
    temporal: str, queue: str
) -> None:
    client = await Client.connect(temporal, plugins=[McpTasksPlugin(tasks, app, task_queue=queue)])
    # Pydantic models as tool and workflow inputs decode the same in every process of the namespace.
    assert client.data_converter.payload_converter_class is pydantic_data_converter.payload_converter_class
    worker = Worker(client, task_queue=queue, workflows=[TeamReport], activities=[count_words])
    config = _config(worker)
    assert config["workflows"].count(ToolTaskWorkflow) == 1
    assert sum(isinstance(i, TaskInterceptor) for i in config["interceptors"]) == 1


# -- the app's own plugins: a sub-agent on the team's worker -----------------------------------


@pytest.fixture(scope="module")
async def model() -> AsyncIterator[ScriptedModel]:
    async with scripted_model([]) as server:
        yield server


@pytest.fixture(scope="module")
def agent_queue() -> str:
    return f"team-agent-{uuid.uuid4()}"


@pytest.fixture(scope="module")
async def agent_front(app_client: Client, agent_queue: str) -> AsyncIterator[InProcessFront]:
    """A front of the team's agent app, with pydantic-ai's converter as `serve` connects for it."""
    agent_app = fresh_app(AGENT_APP)
    client = await client_for_app(app_client, agent_app)
    async with in_process_front(agent_app, client, task_queue=agent_queue) as served:
        yield served


def _with_the_apps_plugins() -> list[Any]:
    """What docs/workflows.md shows: the plugin, then the app's own plugins."""
    return [McpTasksPlugin(team_agent_app.tasks, team_agent_app.app), *team_agent_app.tasks.plugins]


def _agent_worker(client: Client, queue: str, plugins: list[Any]) -> Worker:
    return Worker(client, task_queue=queue, workflows=[TeamReport], activities=[count_words], plugins=plugins)


async def test_the_apps_plugins_given_after_the_plugin_see_the_apps_workflows(
    temporal_client: Client, agent_queue: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="mcp_tasks_temporal"):
        worker = _agent_worker(temporal_client, agent_queue, _with_the_apps_plugins())
    config = _config(worker)
    assert team_agent_app.Summarise in config["workflows"]
    # pydantic-ai's plugin found the agent on the workflow: its model-request activity is registered.
    agent_plugin: Any = AgentPlugin(team_agent_app.summary_agent)
    agent_activities: list[object] = list(agent_plugin.activities)
    assert agent_activities and all(fn in config["activities"] for fn in agent_activities)
    assert agent_model_activity in config["activities"]
    assert config["activities"][0] is count_words
    assert not caplog.records, caplog.text


async def test_on_a_client_the_plugin_and_the_apps_plugins_reach_the_client_and_its_workers(
    temporal: str, agent_queue: str
) -> None:
    plugin = McpTasksPlugin(team_agent_app.tasks, team_agent_app.app, task_queue=agent_queue)
    client = await Client.connect(temporal, plugins=[plugin, *team_agent_app.tasks.plugins])
    # pydantic-ai's client side: its payload converter, which the fronts of the app use too.
    assert client.data_converter.payload_converter_class is PydanticAIPayloadConverter
    config = _config(_agent_worker(client, agent_queue, []))
    assert team_agent_app.Summarise in config["workflows"]
    assert agent_model_activity in config["activities"]


@pytest.mark.parametrize("where", ["missing", "before", "on the client"])
async def test_the_apps_plugins_missing_or_before_the_plugin_are_named_in_a_warning(
    temporal: str, agent_queue: str, caplog: pytest.LogCaptureFixture, where: str
) -> None:
    """Out of order they configure the worker before its workflows are there: a sub-agent's activities would miss."""
    ours = McpTasksPlugin(team_agent_app.tasks, team_agent_app.app)
    theirs = list(team_agent_app.tasks.plugins)
    client = await Client.connect(temporal, plugins=theirs if where == "on the client" else [])
    plugins = {"missing": [ours], "before": [*theirs, ours], "on the client": [ours]}[where]
    with caplog.at_level(logging.WARNING, logger="mcp_tasks_temporal"):
        try:
            _agent_worker(client, agent_queue, plugins)
        except RuntimeError:
            assert where == "missing"  # pydantic-ai's sandbox pass-through is missing too: the warning came first
    named = [r.getMessage() for r in caplog.records if "PydanticAIPlugin" in r.getMessage()]
    assert named and "plugins=[McpTasksPlugin(tasks, app), *tasks.plugins]" in named[0], caplog.text


# The sub-agent's first activation imports pydantic-ai into a fresh sandbox; on a loaded machine that can pass the
# worker's 2 s deadlock bound, and the worker retries the workflow task (the test still proves the run). The
# interrupt the SDK raises into the stalled thread then lands in a weakref callback, where pytest sees it as
# unraisable.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_a_sub_agent_runs_on_a_team_worker_given_the_plugin_and_the_apps_plugins(
    temporal_client: Client, agent_front: InProcessFront, agent_queue: str, model: ScriptedModel
) -> None:
    model.reset([Reply(content="Three little words.")])
    worker = _agent_worker(temporal_client, agent_queue, _with_the_apps_plugins())
    # This process's: the front checks at call time that a model is configured, the worker's activities call it.
    configure_model(AgentModel(MODEL_NAME, base_url=model.base_url, api_key="scripted-key"))
    try:
        async with worker, agent_front.http() as http:
            mcp = agent_front.calls(http)
            created = await mcp.start("summarise", {"text": "three little words"})
            done = await mcp.wait_for(created["taskId"], timeout=30)
    finally:
        configure_model(None)

    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"] == "Three little words."
    assert [request["model"] for request in model.requests] == [MODEL_NAME]
    assert "three little words" in str(model.requests[0]["messages"])


# -- start-up checks ---------------------------------------------------------------------------
