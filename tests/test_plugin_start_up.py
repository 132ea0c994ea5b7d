"""`McpTasksPlugin`'s start-up checks on a team's own worker: settings that disagree with a running front's, and
a namespace without the tasks' search attributes, refused before the worker polls; a team that turns the check
off, and a worker with nothing of the app's, let through. The team's workers run in the test process on the
session's Temporal; each refusal fails as soon as the worker ends without one, or polls.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import anyio
import pytest
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from temporalio.plugin import SimplePlugin
from temporalio.worker import Worker

from mcp_tasks_temporal import McpTasksPlugin
from mcp_tasks_temporal.ops.dev.embedded_temporal import temporal_cli
from mcp_tasks_temporal.ops.dev.nexus_endpoints import ensure_namespace
from mcp_tasks_temporal.temporal.codec import AesGcmCodec, new_key, parse_keys
from mcp_tasks_temporal.temporal.payload_storage import StorageSettings, open_storage
from mcp_tasks_temporal.temporal.search_attributes import NAMES, SearchAttributesMissing, missing_on
from mcp_tasks_temporal.temporal.shared_settings import (
    SettingsDisagreement,
    SharedSettings,
    announce_settings,
    running_settings,
)
from tests.app_workers import new_task_queue
from tests.team_worker_app import TeamReport, app, count_words, tasks

pytestmark = pytest.mark.anyio

REFUSED_WITHIN_S = 30


async def _pollers(client: Client, queue: str) -> int:
    count = 0
    for kind in (TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY):
        request = DescribeTaskQueueRequest(
            namespace=client.namespace, task_queue=TaskQueue(name=queue), task_queue_type=kind
        )
        count += len((await client.workflow_service.describe_task_queue(request)).pollers)
    return count


async def _refused(worker: Worker, client: Client, queue: str) -> BaseException:
    """What ended `worker` before it polled; fails as soon as the worker ends without a refusal, or polls."""

    async def never_polls() -> None:
        while not await _pollers(client, queue):
            await anyio.sleep(0.2)
        raise AssertionError(f"the worker polls {queue}: it was not refused")

    refusal: BaseException | None = None
    with anyio.fail_after(REFUSED_WITHIN_S):
        async with anyio.create_task_group() as group:
            group.start_soon(never_polls)
            try:
                await worker.run()
            except (SettingsDisagreement, SearchAttributesMissing) as refused:
                refusal = refused
            group.cancel_scope.cancel()
    if refusal is None:
        raise AssertionError("the worker ended without a refusal")
    return refusal


@pytest.fixture
async def sealed_front(temporal_client: Client, tmp_path: Path) -> AsyncIterator[tuple[str, Path, str]]:
    """What a front of the team app, with payload storage and a codec key, holds out to the processes of its queue
    (`serve` does it with `announce_settings`): (queue, payload dir, key)."""
    queue = new_task_queue("team-settings")
    key, payloads = new_key(), tmp_path / "payloads"
    storage = StorageSettings(kind="local", directory=payloads)
    front = SharedSettings.of("serve", storage, AesGcmCodec(parse_keys(key)), None)
    async with announce_settings(temporal_client, queue, front):
        with anyio.fail_after(REFUSED_WITHIN_S):
            while not await running_settings(temporal_client, queue):
                await anyio.sleep(0.1)
        yield queue, payloads, key


async def test_a_team_worker_whose_settings_disagree_with_a_running_front_is_refused_before_it_polls(
    temporal_client: Client, sealed_front: tuple[str, Path, str]
) -> None:
    queue, payloads, key = sealed_front
    refused = Worker(
        temporal_client,
        task_queue=queue,
        workflows=[TeamReport],
        activities=[count_words],
        plugins=[McpTasksPlugin(tasks, app)],
    )
    line = str(await _refused(refused, temporal_client, queue))
    assert "\n" not in line and "payload storage" in line and "serve pid" in line, line
    assert "this worker has none" in line and str(payloads.resolve()) in line, line
    assert await _pollers(temporal_client, queue) == 0

    # The same worker with the front's storage and key is accepted, on the queue the refused one left free.
    async with open_storage(StorageSettings(kind="local", directory=payloads)) as storage:
        plugin = McpTasksPlugin(tasks, app, codec=AesGcmCodec(parse_keys(key)), external_storage=storage)
        client = await Client.connect(temporal_client.service_client.config.target_host, plugins=[plugin])
        async with Worker(client, task_queue=queue, workflows=[TeamReport], activities=[count_words]):
            report = await client.execute_workflow(
                TeamReport.run, "two words", id=f"team-report-{uuid.uuid4()}", task_queue=queue
            )
            assert await _pollers(client, queue) > 0  # what the refused worker is shown never to have done
    assert report == "report: 2 words"


@pytest.fixture
async def bare_namespace(temporal_client: Client) -> Client:
    """A client of a namespace of the session's Temporal that has none of the tasks' search attributes."""
    namespace = f"bare-{uuid.uuid4().hex[:12]}"
    await ensure_namespace(temporal_client, namespace)
    client = await Client.connect(temporal_client.service_client.config.target_host, namespace=namespace)
    assert await missing_on(client, namespace=namespace) == list(NAMES)
    return client


async def test_a_team_may_run_its_worker_without_the_search_attributes(bare_namespace: Client) -> None:
    client = bare_namespace
    queue = f"team-bare-{uuid.uuid4()}"
    plugin = McpTasksPlugin(tasks, app, check_search_attributes=False)
    async with Worker(client, task_queue=queue, workflows=[TeamReport], activities=[count_words], plugins=[plugin]):
        assert (
            await client.execute_workflow(TeamReport.run, "one two", id=f"team-report-{uuid.uuid4()}", task_queue=queue)
            == "report: 2 words"
        )


class _Counting(SimplePlugin):
    """Counts the workers it wraps: a plugin the refusal must not skip when the worker is accepted."""

    def __init__(self) -> None:
        self.ran = 0
        super().__init__("tests.counting")  # pyright: ignore[reportUnknownMemberType]

    async def run_worker(self, worker: Worker, next: Callable[[Worker], Awaitable[None]]) -> None:
        self.ran += 1
        await super().run_worker(worker, next)


async def test_a_worker_of_another_queue_with_nothing_of_the_apps_is_not_checked(bare_namespace: Client) -> None:
    """No task workflow runs on it: a namespace without the attributes is no reason to refuse it."""
    client = bare_namespace
    counting = _Counting()
    plugins = [McpTasksPlugin(tasks, app, task_queue="mcp-tasks/elsewhere"), counting]
    queue = f"team-other-{uuid.uuid4()}"
    async with Worker(client, task_queue=queue, workflows=[TeamReport], activities=[count_words], plugins=plugins):
        assert (
            await client.execute_workflow(TeamReport.run, "x", id=f"team-report-{uuid.uuid4()}", task_queue=queue)
            == "report: 1 words"
        )
    assert counting.ran == 1


async def test_a_team_worker_on_a_namespace_without_the_search_attributes_is_refused_with_the_command(
    bare_namespace: Client,
) -> None:
    client = bare_namespace
    queue = f"team-bare-{uuid.uuid4()}"

    def worker(plugin: McpTasksPlugin) -> Worker:
        return Worker(client, task_queue=queue, workflows=[TeamReport], activities=[count_words], plugins=[plugin])

    refusal = await _refused(worker(McpTasksPlugin(tasks, app)), client, queue)
    line = str(refusal)
    assert isinstance(refusal, SearchAttributesMissing) and "\n" not in line, line
    assert all(name in line for name in NAMES), line
    assert await _pollers(client, queue) == 0

    # The command it names, run as printed, is what the worker needed.
    command = line.split("`")[1]
    assert command.startswith("temporal operator search-attribute create ")
    done = await anyio.run_process([temporal_cli(), *command.split()[1:]], check=False)
    assert done.returncode == 0, done.stderr.decode()
    with anyio.fail_after(REFUSED_WITHIN_S):
        while await missing_on(client, namespace=client.namespace):
            await anyio.sleep(0.2)
    async with worker(McpTasksPlugin(tasks, app)):
        assert (
            await client.execute_workflow(TeamReport.run, "one", id=f"team-report-{uuid.uuid4()}", task_queue=queue)
            == "report: 1 words"
        )
