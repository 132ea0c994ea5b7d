"""A plain 2026-07-28 call's retry with the answers, held until the task moves past the questions it answered.

The retry delivers its answers as `tasks/update` does, and the front's wait for the workflow to take them
is bounded: with no worker running, the bound passes and the front holds the retry on the task. The task
still lists the answered questions then, and will until a worker takes the answers; the retry must not
hand those back as if they were new, but wait for what comes next. The front and the workers run in the
test process; the worker is stopped while the retry arrives, so the workflow cannot take the answers
before the front reads the task.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest
from temporalio.client import Client

from tests.app_workers import app_worker, new_task_queue
from tests.front_app import InProcessFront, fresh_app, in_process_front
from tests.wire import base_headers, envelope, sse_frames

pytestmark = pytest.mark.anyio

APP = "tests.workflow_fixture_app:app"
ELICIT: dict[str, Any] = {"elicitation": {}}
ANSWERS: dict[str, dict[str, Any]] = {
    "approve": {"action": "accept", "content": {"approve": True}},
    "reviewer": {"action": "accept", "content": {}},
}
ANSWER_WAIT_S = 0.1
"""The front's bound on waiting for the workflow to take answers (5 s by default): passed at once with no worker."""
WAIT_S = 10


def plain_call(request_id: int, **params: Any) -> dict[str, Any]:
    """The `questions` workflow tool called plainly at 2026-07-28, by a client that can answer elicitations."""
    meta = {**envelope(tasks=False, capabilities=ELICIT), "progressToken": f"call-{request_id}"}
    body = {"name": "questions", "arguments": {"kinds": ["elicitation"]}, "_meta": meta, **params}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": body}


async def frames_of(http: httpx.AsyncClient, url: str, message: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
    async with http.stream("POST", url, json=message, headers=base_headers("tools/call", "questions")) as response:
        assert response.status_code == 200, await response.aread()
        async for frame in sse_frames(response):
            yield frame


async def answer_of(frames: AsyncIterator[dict[str, Any]]) -> dict[str, Any]:
    with anyio.fail_after(WAIT_S):
        async for frame in frames:
            if "result" in frame or "error" in frame:
                return frame
    raise AssertionError("the call's stream ended without its answer")


@pytest.fixture
async def front(app_client: Client) -> AsyncIterator[InProcessFront]:
    """A front of the workflow fixture app on a queue of its own, whose workers the test starts and stops."""
    async with in_process_front(fresh_app(APP), app_client, task_queue=new_task_queue("resume")) as served:
        served.gateway.answer_visibility_timeout_s = ANSWER_WAIT_S
        yield served


async def test_a_retry_sent_before_the_workflow_took_its_answers_waits_for_the_tasks_end(
    front: InProcessFront, app_client: Client
) -> None:
    queue = front.gateway.task_queue
    async with front.http() as http:
        async with app_worker(app_client, fresh_app(APP), task_queue=queue):
            asked = (await answer_of(frames_of(http, front.url, plain_call(1))))["result"]
        assert asked["resultType"] == "input_required", asked
        assert set(asked["inputRequests"]) == set(ANSWERS), asked

        # No worker now: the answers are signalled, and nothing takes them until one is back.
        retry = frames_of(http, front.url, plain_call(2, inputResponses=ANSWERS, requestState=asked["requestState"]))
        with anyio.fail_after(WAIT_S):
            first = await anext(retry)
        # The front follows the task for the retry (its status line, as progress): what it says next, it says
        # of the task as it is now, its answered questions still listed.
        assert first.get("method") == "notifications/progress", first
        with anyio.fail_after(WAIT_S):
            async with app_worker(app_client, fresh_app(APP), task_queue=queue):
                done = await answer_of(retry)
    assert "error" not in done, done
    assert done["result"].get("resultType", "complete") == "complete", f"the answered questions came back: {done}"
    assert done["result"]["structuredContent"] == ANSWERS, done
