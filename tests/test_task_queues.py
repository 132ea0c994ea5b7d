"""Workers run only what they know: a task queue per app, and a tool a worker lacks waits for one that has it.

The apps' fronts and workers run in the test process on their apps' default queues, as `serve` and `worker`
without `--task-queue` do.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import timedelta

import anyio
import pytest
from temporalio.client import Client
from temporalio.testing import TimeSkipper

from mcp_tasks_temporal.front.app_lookup import default_task_queue
from mcp_tasks_temporal.ops.app_loading import load_app
from mcp_tasks_temporal.temporal.ids import UNKEYED
from tests.app_workers import app_worker
from tests.front_app import fresh_app, in_process_front
from tests.wire import TaskCalls

pytestmark = pytest.mark.anyio

DEMO = "mcp_tasks_temporal.demo:app"
FIXTURE = "tests.fixture_app:app"
LACKS_THE_TOOL = "which this worker's app does not have"
"""What a worker logs when it is handed a tool its app lacks."""


def test_each_app_has_its_own_default_queue() -> None:
    assert default_task_queue(load_app(DEMO)) == "mcp-tasks/mcp-tasks-temporal-demo"
    assert default_task_queue(load_app(FIXTURE)) != default_task_queue(load_app(DEMO))
    assert default_task_queue(load_app("tests.rolling_app:v1")) == default_task_queue(load_app("tests.rolling_app:v2"))


@asynccontextmanager
async def worker_of(client: Client, spec: str) -> AsyncGenerator[None]:
    """`spec`'s workers on its app's default queue, until the block ends."""
    app = fresh_app(spec)
    async with app_worker(client, app, task_queue=default_task_queue(app)):
        yield


@asynccontextmanager
async def front_of(client: Client, spec: str) -> AsyncGenerator[TaskCalls]:
    """The task operations on a front of `spec` on its app's default queue, answering every call with its task
    (however quick its tool: the tests follow the tasks)."""
    front_of_tasks = in_process_front(fresh_app(spec), client, task_queue=None, max_inline_budget_ms=0)
    async with front_of_tasks as front, front.http() as http:
        yield front.calls(http)


def lacking_the_tool(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if LACKS_THE_TOOL in record.getMessage()]


async def test_two_apps_on_one_namespace_do_not_take_each_others_tasks(
    app_client: Client, temporal_client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    async with AsyncExitStack() as running:
        await running.enter_async_context(worker_of(app_client, FIXTURE))
        fixture = await running.enter_async_context(front_of(app_client, FIXTURE))
        demo = await running.enter_async_context(front_of(app_client, DEMO))

        searches = [
            (await demo.start("search_logs", {"pattern": "release", "seconds_per_file": 0}))["taskId"] for _ in range(6)
        ]
        # The other app's worker is polling its own queue (its task completes), yet takes none of these.
        doubled = await fixture.wait_for((await fixture.start("double", {"x": 4}))["taskId"])
        assert doubled["result"]["structuredContent"] == {"value": 8}
        for task_id in searches:
            description = await temporal_client.get_workflow_handle(UNKEYED.workflow_id(task_id, None)).describe()
            assert description.task_queue == "mcp-tasks/mcp-tasks-temporal-demo"
            assert not description.raw_description.pending_activities
            assert description.raw_description.workflow_execution_info.history_length <= 2, "a worker took it"
        assert not lacking_the_tool(caplog)

        await running.enter_async_context(worker_of(app_client, DEMO))
        for task_id in searches:
            done = await demo.wait_for(task_id)
            assert done["status"] == "completed", done
            assert not done["result"].get("isError"), done
            assert done["result"]["structuredContent"]["result"], done


async def test_a_tool_only_newer_workers_have_waits_for_one_of_them(
    app_client: Client, temporal_client: Client, time_skipper: TimeSkipper, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    async with AsyncExitStack() as running:
        old_worker = await running.enter_async_context(AsyncExitStack())
        await old_worker.enter_async_context(worker_of(app_client, "tests.rolling_app:v1"))
        mcp = await running.enter_async_context(front_of(app_client, "tests.rolling_app:v2"))

        task_id = (await mcp.start("added", {"x": 7}))["taskId"]
        # The old worker was handed the task and said so in its log, without finishing it.
        with anyio.fail_after(30):
            while not lacking_the_tool(caplog):
                await anyio.sleep(0.05)
        [warning] = lacking_the_tool(caplog)[:1]
        assert "'added'" in warning and task_id in warning
        assert (await mcp.get(task_id)).result["status"] == "working"
        old_tool = await mcp.wait_for((await mcp.start("stable", {"x": 1}))["taskId"])
        assert old_tool["result"]["structuredContent"] == {"value": 2}, "the old worker still runs what it has"

        # A client of its own, as another process has: temporalio takes one worker per queue and client.
        await running.enter_async_context(worker_of(temporal_client, "tests.rolling_app:v2"))
        # The old worker leaves, as in a rolling deploy. Each round goes to whichever worker polls first: with
        # both polling, the old one could take the next round too and double the task's wait again.
        await old_worker.aclose()
        # The task waits on a durable timer (2 s doubling to 60 s) between rounds: moved past it, not waited for.
        run = app_client.get_workflow_handle(UNKEYED.workflow_id(task_id, None))
        await time_skipper.fast_forward(run, timedelta(seconds=61))
        done = await mcp.wait_for(task_id, timeout=20)
        assert done["status"] == "completed", done
        assert not done["result"].get("isError"), done
        assert done["result"]["structuredContent"] == {"value": "v2 ran 7"}
