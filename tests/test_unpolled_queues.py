"""A task queue nobody polls is told, from both sides, within 30 s, and no longer once a worker polls it.

A front on a queue no worker polls: `/readyz` answers 503 naming the queue and the fix, the log says so at
start and while it lasts, a task created meanwhile stays `working` with a `statusMessage` that says why, and
it runs once a worker comes. A worker on a queue no front uses says so in its log. In-process fronts and
workers on the session's Temporal, each test on queues of its own.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest
from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from mcp_tasks_temporal.front.gateway.queue_watch import (
    CHECK_EVERY_S,
    LIVE_POLL_S,
    STALLED_BACKLOG_S,
    QueueWatch,
    describe_pollers,
    is_polled,
)
from mcp_tasks_temporal.temporal.queue_fronts import fronts_watched, running_fronts
from tests.app_workers import app_worker, new_task_queue
from tests.front_app import InProcessFront, fresh_app, in_process_front

pytestmark = pytest.mark.anyio

TOLD_WITHIN_S = 30
"""How soon a queue nobody polls must be told: one check, and the backlog's signal, well within it."""
QUEUE_WATCH_LOG = "mcp_tasks_temporal.front.gateway.queue_watch"
QUEUE_FRONTS_LOG = "mcp_tasks_temporal.temporal.queue_fronts"


@asynccontextmanager
async def front_on(client: Client, queue: str) -> AsyncGenerator[tuple[InProcessFront, httpx.AsyncClient]]:
    async with in_process_front(fresh_app(), client, task_queue=queue) as front, front.http() as http:
        yield front, http


async def readiness(http: httpx.AsyncClient) -> tuple[int, dict[str, Any]]:
    response = await http.get("http://127.0.0.1:8000/readyz")
    return response.status_code, response.json()


async def until_readiness(http: httpx.AsyncClient, status: int) -> dict[str, Any]:
    with anyio.fail_after(TOLD_WITHIN_S):
        while True:
            code, body = await readiness(http)
            if code == status:
                return body
            await anyio.sleep(0.5)


def warnings(caplog: pytest.LogCaptureFixture, logger: str) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == logger]


async def test_a_front_on_a_queue_no_worker_polls_says_so_and_its_task_runs_once_one_does(
    app_client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    queue = new_task_queue("unpolled")
    caplog.set_level(logging.WARNING, logger=QUEUE_WATCH_LOG)
    async with front_on(app_client, queue) as (front, http):
        code, body = await readiness(http)
        assert code == 503 and body["status"] == "unready", body
        assert f"no worker polls task queue {queue}" in body["reason"], body
        assert f"--task-queue {queue}" in body["reason"] and "FrontSettings(task_queue=...)" in body["reason"]
        [said] = warnings(caplog, QUEUE_WATCH_LOG)  # at start, before any request
        assert f"no worker polls task queue {queue} (namespace default)" in said, said
        assert f"start a worker with --task-queue {queue}" in said, said

        calls = front.calls(http)
        created = await calls.start("double", {"x": 21})
        assert created["status"] == "working", created
        assert created["statusMessage"] == (
            f"Waiting for a worker: none polls task queue {queue}; the task runs once one does "
            "(the server's operator starts one on that queue)"
        )
        task = (await calls.get(created["taskId"])).result
        assert (task["status"], task["statusMessage"]) == ("working", created["statusMessage"])

        async with app_worker(app_client, fresh_app(), task_queue=queue):
            body = await until_readiness(http, 200)  # the next background check sees the worker
            assert body == {"status": "ready", "namespace": "default"}
            done = await calls.wait_for(created["taskId"])
            assert done["status"] == "completed" and done["result"]["structuredContent"] == {"value": 42}, done
            assert "statusMessage" not in done
    assert f"a worker polls task queue {queue} again: its tasks run" in warnings(caplog, QUEUE_WATCH_LOG)


async def test_a_task_created_after_the_last_worker_stopped_says_so_within_seconds(app_client: Client) -> None:
    """Temporal lists a stopped worker for five more minutes, its last poll up to a minute old like a live
    idle one's: it is the task left waiting, with no poll begun since, that tells them apart."""
    queue = new_task_queue("stopped")
    async with front_on(app_client, queue) as (front, http):
        async with app_worker(app_client, fresh_app(), task_queue=queue):
            await until_readiness(http, 200)
        pollers = await describe_pollers(app_client, queue)
        assert pollers.last_poll_age_s is not None and pollers.last_poll_age_s < LIVE_POLL_S, "still listed"
        calls = front.calls(http)
        created = await calls.start("double", {"x": 2})
        started = anyio.current_time()
        waiting = await calls.wait_for(
            created["taskId"], lambda t: "Waiting for a worker" in (t.get("statusMessage") or "")
        )
        assert waiting["status"] == "working", waiting
        took = anyio.current_time() - started
        print(f"a task created after the last worker stopped said so {took:.1f} s later")
        assert took < STALLED_BACKLOG_S + CHECK_EVERY_S + 10, took
        code, body = await readiness(http)
        assert code == 503 and queue in body["reason"], body
        async with app_worker(app_client, fresh_app(), task_queue=queue):
            done = await calls.wait_for(created["taskId"], timeout=TOLD_WITHIN_S)
            assert done["status"] == "completed", done


@workflow.defn(name="unpolled-queues-idle")
class Idle:
    @workflow.run
    async def run(self) -> None:
        await workflow.wait_condition(lambda: False)


async def test_a_workflow_tools_own_queue_is_watched_and_named_with_its_tools(temporal_client: Client) -> None:
    own, theirs = new_task_queue("front"), new_task_queue("tools")
    watch = QueueWatch(temporal_client, own)
    watch.watch_workflow_tools(theirs, ["review"])
    watch.watch_workflow_tools(theirs, ["summarize"])
    # Never started: the worker is there to poll, so the sandbox (which would import this module) is not.
    async with Worker(temporal_client, task_queue=own, workflows=[Idle], workflow_runner=UnsandboxedWorkflowRunner()):
        with anyio.fail_after(TOLD_WITHIN_S):
            while (await describe_pollers(temporal_client, own)).last_poll_age_s is None:
                await anyio.sleep(0.2)
        await watch.check()
    assert not watch.unpolled(own) and watch.unpolled(theirs)
    reason = watch.unready_reason()
    assert reason is not None and own not in reason, reason
    assert reason.startswith(f"no worker polls task queue {theirs}: start a worker of the app"), reason
    assert "workflow tools review, summarize" in reason, reason


def test_which_queues_count_as_polled() -> None:
    assert not is_polled(None, 0), "no worker listed"
    assert is_polled(55, 0), "an idle worker in its minute-long poll"
    assert not is_polled(LIVE_POLL_S + 1, 0), "no poll begun for longer than a long poll lasts"
    assert is_polled(2, 30), "a task waits, but a worker began polling since: busy, not gone"
    assert is_polled(30, STALLED_BACKLOG_S - 1), "a task that has just come"
    assert not is_polled(40, STALLED_BACKLOG_S + 5), "a task waiting, and no poll begun since it came"


async def test_a_worker_on_a_queue_no_front_uses_says_so_until_one_does(
    app_client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    queue = f"lonely-{uuid.uuid4()}"
    caplog.set_level(logging.WARNING, logger=QUEUE_FRONTS_LOG)

    async def logged(text: str) -> None:
        with anyio.fail_after(TOLD_WITHIN_S):
            while not any(text in line for line in warnings(caplog, QUEUE_FRONTS_LOG)):
                await anyio.sleep(0.1)

    async with fronts_watched(app_client, queue, every_s=0.2):
        await logged(f"no front uses task queue {queue} (namespace default)")
        [said] = warnings(caplog, QUEUE_FRONTS_LOG)
        assert f"give the fronts this queue (serve --task-queue {queue}" in said, said
        async with front_on(app_client, queue):
            with anyio.fail_after(TOLD_WITHIN_S):
                while not (fronts := await running_fronts(app_client, queue)):
                    await anyio.sleep(0.1)
            [front] = fronts
            assert front.front and front.writer.startswith("front pid "), front
            await logged(f"a front uses task queue {queue} again")
    assert len(warnings(caplog, QUEUE_FRONTS_LOG)) == 2, "once when alone, once when joined: not every check"
