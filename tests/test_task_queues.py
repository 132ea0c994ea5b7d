"""Workers run only what they know: a task queue per app, and a tool a worker lacks waits for one that has it."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import anyio
import httpx
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client

from mcp_tasks_temporal.front.app_lookup import default_task_queue
from mcp_tasks_temporal.ops.app_loading import load_app
from mcp_tasks_temporal.temporal.ids import UNKEYED
from tests.conftest import TEARDOWN_GRACE_S
from tests.processes import CLI, Process, free_port, wait_until
from tests.wire import HttpMcp, TaskCalls

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

DEMO = "mcp_tasks_temporal.demo:app"
FIXTURE = "tests.fixture_app:app"


def _worker(workdir: Path, temporal: str, app: str) -> Process:
    """A worker with no --task-queue: the app's default queue."""
    name = f"worker-{free_port()}"
    process = Process(name, [*CLI, "worker", "--temporal", temporal, "--app", app], workdir / f"{name}.log").start()
    wait_until(lambda: "mcp-tasks-temporal worker:" in process.log() or not process.alive, timeout=60, what=name)
    assert process.alive, process.log()
    return process


def _front(workdir: Path, temporal: str, app: str) -> tuple[Process, str]:
    port = free_port()
    command = [*CLI, "serve", "--temporal", temporal, "--app", app, "--port", str(port)]
    command += ["--max-inline-budget-ms", "0"]  # tasks, however quick their tools: the test follows them
    process = Process(f"front-{port}", command, workdir / f"front-{port}.log").start()
    wait_until(lambda: "mcp-tasks-temporal serve:" in process.log() or not process.alive, timeout=60, what="front")
    assert process.alive, process.log()
    return process, f"http://127.0.0.1:{port}/mcp"


async def _start(mcp: TaskCalls, tool: str, arguments: dict[str, object]) -> str:
    with anyio.fail_after(30):
        while True:
            try:
                return (await mcp.start(tool, arguments))["taskId"]
            except httpx.TransportError:  # the banner goes out just before uvicorn binds
                await anyio.sleep(0.1)


def test_each_app_has_its_own_default_queue() -> None:
    assert default_task_queue(load_app(DEMO)) == "mcp-tasks/mcp-tasks-temporal-demo"
    assert default_task_queue(load_app(FIXTURE)) != default_task_queue(load_app(DEMO))
    assert default_task_queue(load_app("tests.rolling_app:v1")) == default_task_queue(load_app("tests.rolling_app:v2"))


async def test_two_apps_on_one_namespace_do_not_take_each_others_tasks(
    tmp_path: Path, temporal: str, temporal_client: Client, http: httpx.AsyncClient
) -> None:
    processes: list[Process] = []
    try:
        fixture_worker = _worker(tmp_path, temporal, FIXTURE)
        processes.append(fixture_worker)
        fixture_front, fixture_url = _front(tmp_path, temporal, FIXTURE)
        demo_front, demo_url = _front(tmp_path, temporal, DEMO)
        processes += [fixture_front, demo_front]
        demo = TaskCalls(HttpMcp(demo_url, http))
        fixture = TaskCalls(HttpMcp(fixture_url, http))

        searches = [await _start(demo, "search_logs", {"pattern": "release", "seconds_per_file": 0}) for _ in range(6)]
        # The other app's worker is polling its own queue (its task completes), yet takes none of these.
        doubled = await fixture.wait_for(await _start(fixture, "double", {"x": 4}), timeout=30)
        assert doubled["result"]["structuredContent"] == {"value": 8}
        for task_id in searches:
            description = await temporal_client.get_workflow_handle(UNKEYED.workflow_id(task_id, None)).describe()
            assert description.task_queue == "mcp-tasks/mcp-tasks-temporal-demo"
            assert not description.raw_description.pending_activities
            assert description.raw_description.workflow_execution_info.history_length <= 2, "a worker took it"
        assert "does not have" not in fixture_worker.log()

        processes.append(_worker(tmp_path, temporal, DEMO))
        for task_id in searches:
            done = await demo.wait_for(task_id, timeout=30)
            assert done["status"] == "completed", done
            assert not done["result"].get("isError"), done
            assert done["result"]["structuredContent"]["result"], done
    finally:
        for process in processes:
            process.stop(timeout=TEARDOWN_GRACE_S)


async def _until_next_round(client: Client, task_id: str) -> float:
    """Seconds left on the last timer the task's workflow started (the wait before its next round)."""
    handle = client.get_workflow_handle(UNKEYED.workflow_id(task_id, None))
    last: HistoryEvent | None = None
    async for event in handle.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_TIMER_STARTED:
            last = event
    if last is None:
        return 0.0
    fires_at = last.event_time.ToDatetime(UTC) + last.timer_started_event_attributes.start_to_fire_timeout.ToTimedelta()
    return max(0.0, (fires_at - datetime.now(UTC)).total_seconds())


async def test_a_tool_only_newer_workers_have_waits_for_one_of_them(
    tmp_path: Path, temporal: str, http: httpx.AsyncClient, temporal_client: Client
) -> None:
    processes: list[Process] = []
    try:
        old_worker = _worker(tmp_path, temporal, "tests.rolling_app:v1")
        processes.append(old_worker)
        front, url = _front(tmp_path, temporal, "tests.rolling_app:v2")
        processes.append(front)
        mcp = TaskCalls(HttpMcp(url, http))

        task_id = await _start(mcp, "added", {"x": 7})
        # The old worker was handed the task and said so in its log, without finishing it.
        wait_until(lambda: "does not have" in old_worker.log(), timeout=30, what="the old worker's warning")
        assert "'added'" in old_worker.log() and task_id in old_worker.log()
        assert (await mcp.get(task_id)).result["status"] == "working"
        old_tool = await mcp.wait_for(await _start(mcp, "stable", {"x": 1}), timeout=30)
        assert old_tool["result"]["structuredContent"] == {"value": 2}, "the old worker still runs what it has"

        processes.append(_worker(tmp_path, temporal, "tests.rolling_app:v2"))
        # The old worker leaves, as in a rolling deploy. Each round goes to whichever worker polls first: with
        # both polling, the old one could take the next round too and double the task's wait again.
        old_worker.stop(timeout=TEARDOWN_GRACE_S)
        # The task waits on a durable timer (2 s doubling to 60 s) between rounds: bounded by the one now running.
        done = await mcp.wait_for(task_id, timeout=await _until_next_round(temporal_client, task_id) + 20)
        assert done["status"] == "completed", done
        assert not done["result"].get("isError"), done
        assert done["result"]["structuredContent"] == {"value": "v2 ran 7"}
    finally:
        for process in processes:
            process.stop(timeout=TEARDOWN_GRACE_S)
