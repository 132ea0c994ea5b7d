"""`idempotency_key()`: the same on every attempt of a step, even after its worker is killed; new for another.

Temporal runs a tool or an activity at least once: a worker killed after a side effect and
before the completion reached Temporal runs the attempt again on the next worker. The tests
kill the worker process (SIGKILL) while a step waits, and read the key each attempt recorded.
"""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

import anyio
import httpx
import pytest
from temporalio import activity
from temporalio.testing import ActivityEnvironment

from mcp_tasks_temporal import idempotency_key
from mcp_tasks_temporal.temporal.progress import TaskRun, bind_run
from mcp_tasks_temporal.temporal.task_context import tool_call
from tests.processes import Process, start_front, start_worker
from tests.wire import HttpMcp, TaskCalls

pytestmark = pytest.mark.anyio

APP = "tests.idempotency_app:app"


async def recorded(path: Path, count: int, *, timeout: float = 60) -> list[str]:
    """The keys the step's attempts recorded, once there are `count` of them."""
    with anyio.fail_after(timeout):
        while len(lines := path.read_text().split() if path.exists() else []) < count:
            await anyio.sleep(0.05)
    return lines


def restart(worker: Process, workdir: Path, temporal: str, queue: str) -> Process:
    worker.kill()  # SIGKILL: the attempt's completion never reaches Temporal
    return start_worker(workdir, temporal, queue, app=APP)


async def test_a_task_tool_sees_the_same_key_on_the_attempt_after_its_worker_is_killed(
    workdir: Path, temporal: str, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    queue = f"idempotency-{uuid.uuid4()}"
    worker = start_worker(workdir, temporal, queue, app=APP)
    front, url = start_front(workdir, temporal, queue, app=APP)
    try:
        mcp = TaskCalls(HttpMcp(url, http))
        task_id = (await mcp.start("keyed_tool", {"folder": str(tmp_path)}))["taskId"]
        [key] = await recorded(tmp_path / "tool.keys", 1)
        worker = restart(worker, workdir, temporal, queue)
        keys = await recorded(tmp_path / "tool.keys", 2)
        print(f"attempts' keys: {keys}")
        (tmp_path / "tool.release").write_text("1")
        done = await mcp.wait_for(task_id, timeout=60)
        assert keys == [key, key], "the retried attempt has the first attempt's key"
        assert len(key) == 32 and task_id not in key
        assert done["status"] == "completed" and done["result"]["content"][0]["text"] == key

        other = tmp_path / "other"
        other.mkdir()
        other_task = (await mcp.start("keyed_tool", {"folder": str(other)}))["taskId"]
        [other_key] = await recorded(other / "tool.keys", 1)
        (other / "tool.release").write_text("1")
        await mcp.wait_for(other_task, timeout=60)
        assert other_key != key, "another task, another key"
    finally:
        front.stop()
        worker.stop()


async def test_a_workflow_tools_activity_keeps_its_key_after_its_worker_is_killed_and_the_next_step_has_its_own(
    workdir: Path, temporal: str, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    queue = f"idempotency-{uuid.uuid4()}"
    worker = start_worker(workdir, temporal, queue, app=APP)
    front, url = start_front(workdir, temporal, queue, app=APP)
    try:
        mcp = TaskCalls(HttpMcp(url, http))
        task_id = (await mcp.start("keyed_steps", {"folder": str(tmp_path)}))["taskId"]
        [key] = await recorded(tmp_path / "first.keys", 1)
        worker = restart(worker, workdir, temporal, queue)
        keys = await recorded(tmp_path / "first.keys", 2)
        (tmp_path / "first.release").write_text("1")
        [next_key] = await recorded(tmp_path / "second.keys", 1)
        (tmp_path / "second.release").write_text("1")
        done = await mcp.wait_for(task_id, timeout=60)
        assert keys == [key, key], "the retried attempt has the first attempt's key"
        assert next_key != key, "the next step has a key of its own"
        assert done["status"] == "completed" and done["result"]["structuredContent"] == {"result": [key, next_key]}
    finally:
        front.stop()
        worker.stop()


async def _key_in(env: ActivityEnvironment, run: TaskRun | None = None) -> str:
    async def step() -> str:
        if run is not None:
            bind_run(run)
        return idempotency_key()

    return await env.run(step)


def _environment(**info: object) -> ActivityEnvironment:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(
        env.info, **{"workflow_id": "mcp-task/anonymous/t1", "workflow_run_id": "r1", "activity_id": "1", **info}
    )
    return env


async def test_the_key_is_one_per_step_whatever_the_attempt() -> None:
    base = await _key_in(_environment())
    assert await _key_in(_environment(attempt=7)) == base
    assert await _key_in(_environment(activity_id="2")) != base
    assert await _key_in(_environment(workflow_run_id="r2")) != base, "continue-as-new: a new run's steps are new"
    assert await _key_in(_environment(workflow_id="mcp-task/anonymous/t2")) != base
    assert await _key_in(_environment(namespace="other")) != base

    # A task tool's step is its round: the same on every attempt, whatever activity carries it.
    round_0 = await _key_in(_environment(), TaskRun(workflow_id="mcp-task/anonymous/t1", round=0))
    assert await _key_in(_environment(attempt=3, activity_id="9"), TaskRun(workflow_id="mcp-task/anonymous/t1")) == (
        round_0
    )
    assert await _key_in(_environment(), TaskRun(workflow_id="mcp-task/anonymous/t1", round=1)) != round_0
    assert round_0 != base


def test_the_key_outside_a_step_is_refused_and_a_synchronous_call_gets_a_new_one_each_time() -> None:
    with pytest.raises(RuntimeError, match="outside"):
        idempotency_key()
    with tool_call():
        assert idempotency_key() != idempotency_key()
    assert not activity.in_activity()
