"""Questions inside plain `tools/call`s of workflow tools, and refusals before any step.

A client that did not declare the tasks extension gets the task's question inside
the call (`input_required` + a sealed `requestState`) when its revision and
capabilities allow; its retry with the answers may reach any front. A client that
cannot answer is refused before the first step when the tool declared what it asks,
and otherwise its task is cancelled at the question, with the reason as its status.
Over two in-process fronts sharing a request-state key, with the app's workers in the test process.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from temporalio.client import Client as TemporalClient
from temporalio.client import WorkflowExecutionStatus, WorkflowHandle
from temporalio.testing import TimeSkipper

from mcp_tasks_temporal.ops.app_loading import DEMO_APP
from tests.bearer import bearer, token_auth
from tests.clock import ManualClock
from tests.conftest import OpenApp, OpenFront
from tests.front_app import FRONT_URL, InProcessFront
from tests.legacy_wire import LegacyMcp
from tests.wire import TASKS_EXTENSION, HttpMcp, Reply
from tests.workflow_fixture_app import STEPS

pytestmark = pytest.mark.anyio

WF_APP = "tests.workflow_fixture_app:app"
ALICE, BOB = "alice-plain-3f1b", "bob-plain-8c2d"
ELICIT: dict[str, Any] = {"elicitation": {}}
YES = {"action": "accept", "content": {"approve": True}}
MISSING_CAPABILITY = -32021
INVALID_PARAMS = -32602
WAIT = 30
_STATUSES = {"Canceled": WorkflowExecutionStatus.CANCELED, "TimedOut": WorkflowExecutionStatus.TIMED_OUT}


@pytest.fixture(scope="module")
def app_spec() -> str:
    return WF_APP


@pytest.fixture(scope="module")
def front_settings() -> dict[str, Any]:
    """A request-state key every front shares, and bearer tokens for two principals."""
    principals = {ALICE: "alice@example.com", BOB: "bob@example.com"}
    return {"auth": token_auth(principals), "request_state_keys": ("p" * 43,)}


@pytest.fixture
async def http(front_http: httpx.AsyncClient) -> httpx.AsyncClient:
    """The module's front: every call below goes to it unless it names the second one."""
    return front_http


@pytest.fixture
async def second_front(open_front: OpenFront) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client of a second front sharing the first one's key."""
    other = await open_front()
    async with other.http() as http:
        yield http


@pytest.fixture
def effects(tmp_path: Path) -> Path:
    folder = tmp_path / f"effects-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    return folder


async def call(
    http: httpx.AsyncClient,
    params: dict[str, Any],
    *,
    token: str = ALICE,
    capabilities: dict[str, Any] | None = None,
) -> Reply:
    """A plain 2026-07-28 `tools/call` (no tasks extension)."""
    return await HttpMcp(FRONT_URL, http).request(
        "tools/call", params, tasks=False, capabilities=capabilities, headers=bearer(token)
    )


def pipeline(effects: Path, **extra: Any) -> dict[str, Any]:
    return {"ref": "v2", "effects": str(effects), "approve_before": "deploy", **extra}


def steps_run(effects: Path) -> list[str]:
    return sorted(path.name for path in effects.glob("ran-*"))


# -- answered inside the call -------------------------------------------------------------------


async def test_the_sdk_client_without_the_tasks_extension_answers_the_pipelines_question_itself(
    front: InProcessFront, effects: Path
) -> None:
    asked: list[str] = []

    async def approve(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})

    async with front.http2(headers=bearer(ALICE), timeout=WAIT) as http:
        transport = streamable_http_client(front.url, http_client=http)
        async with Client(transport, elicitation_callback=approve) as client:
            with anyio.fail_after(WAIT):
                result = await client.call_tool("release", pipeline(effects))
    assert result.structured_content == {
        "ref": "v2",
        "steps": ["checkout", "compile", "test", "deploy"],
        "deployed": True,
    }
    assert asked == ["Deploy?"]
    assert steps_run(effects) == ["ran-checkout", "ran-compile", "ran-deploy", "ran-test"]


async def test_the_sdk_client_answers_the_demos_build_pipeline_and_a_client_without_elicitation_is_refused(
    open_app: OpenApp,
) -> None:
    """The demo app `dev` serves, on workers and a front of its own (no tokens)."""
    demo = await open_app(DEMO_APP)
    asked: list[str] = []

    async def approve(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})

    arguments = {"ref": "v9", "step_seconds": 0}
    async with demo.http2() as http:
        transport = streamable_http_client(demo.url, http_client=http)
        async with Client(transport, elicitation_callback=approve) as client:
            with anyio.fail_after(WAIT):
                result = await client.call_tool("build_pipeline", arguments)
        assert result.is_error is False
        assert asked == ["Publish v9?"]
        async with Client(streamable_http_client(demo.url, http_client=http)) as client:
            with pytest.raises(MCPError) as refused:
                await client.call_tool("build_pipeline", arguments)
    assert refused.value.error.code == MISSING_CAPABILITY
    assert refused.value.error.data["requiredCapabilities"] == {"elicitation": {}}


async def test_the_retry_with_the_answer_goes_on_at_another_front(
    http: httpx.AsyncClient, second_front: httpx.AsyncClient, effects: Path
) -> None:
    params = {"name": "release", "arguments": pipeline(effects)}
    asking = (await call(http, params, capabilities=ELICIT)).result
    assert asking["resultType"] == "input_required"
    assert list(asking["inputRequests"]) == ["approve"]
    assert asking["inputRequests"]["approve"]["method"] == "elicitation/create"
    assert steps_run(effects) == ["ran-checkout", "ran-compile", "ran-test"], "the steps before the question ran"
    assert TASKS_EXTENSION not in asking["requestState"], "the state is sealed, not readable"
    retry = {**params, "inputResponses": {"approve": YES}, "requestState": asking["requestState"]}
    done = (await call(second_front, retry, capabilities=ELICIT)).result
    assert done.get("resultType", "complete") == "complete"
    assert done["structuredContent"]["deployed"] is True
    assert steps_run(effects) == ["ran-checkout", "ran-compile", "ran-deploy", "ran-test"]


async def test_a_declined_question_ends_the_call_with_the_tools_own_answer(
    http: httpx.AsyncClient, effects: Path
) -> None:
    params = {"name": "release", "arguments": pipeline(effects)}
    asking = (await call(http, params, capabilities=ELICIT)).result
    retry = {**params, "inputResponses": {"approve": {"action": "decline"}}, "requestState": asking["requestState"]}
    done = (await call(http, retry, capabilities=ELICIT)).result
    assert done["structuredContent"] == {"ref": "v2", "steps": ["checkout", "compile", "test"], "deployed": False}


async def test_questions_answered_one_at_a_time_come_back_until_all_are_answered(http: httpx.AsyncClient) -> None:
    params = {"name": "questions", "arguments": {"kinds": ["elicitation"]}}
    asking = (await call(http, params, capabilities=ELICIT)).result
    assert set(asking["inputRequests"]) == {"approve", "reviewer"}
    first = {**params, "inputResponses": {"approve": YES}, "requestState": asking["requestState"]}
    still = (await call(http, first, capabilities=ELICIT)).result
    assert still["resultType"] == "input_required"
    assert set(still["inputRequests"]) == {"reviewer"}, "an answered question is never asked again"
    second = {**params, "inputResponses": {"reviewer": {"action": "decline"}}, "requestState": still["requestState"]}
    done = (await call(http, second, capabilities=ELICIT)).result
    assert done["structuredContent"] == {"approve": YES, "reviewer": {"action": "decline"}}


async def test_a_tampered_or_foreign_request_state_is_refused_and_the_owner_still_answers(
    http: httpx.AsyncClient, effects: Path
) -> None:
    params = {"name": "release", "arguments": pipeline(effects)}
    state = (await call(http, params, capabilities=ELICIT)).result["requestState"]
    answers = {"inputResponses": {"approve": YES}}
    tampered = state[:-4] + ("AAAA" if not state.endswith("AAAA") else "BBBB")
    refused = await call(http, {**params, **answers, "requestState": tampered}, capabilities=ELICIT)
    assert refused.error["code"] == INVALID_PARAMS
    stolen = await call(http, {**params, **answers, "requestState": state}, token=BOB, capabilities=ELICIT)
    assert stolen.error["code"] == INVALID_PARAMS
    other_arguments = {"name": "release", "arguments": pipeline(effects, ref="v3"), **answers, "requestState": state}
    assert (await call(http, other_arguments, capabilities=ELICIT)).error["code"] == INVALID_PARAMS
    assert "ran-deploy" not in steps_run(effects), "no refused retry reached the workflow"
    done = (await call(http, {**params, **answers, "requestState": state}, capabilities=ELICIT)).result
    assert done["structuredContent"]["deployed"] is True


async def test_an_invalid_answer_is_refused_and_the_question_stays_open(http: httpx.AsyncClient, effects: Path) -> None:
    params = {"name": "release", "arguments": pipeline(effects)}
    state = (await call(http, params, capabilities=ELICIT)).result["requestState"]
    wrong = {**params, "inputResponses": {"approve": {"action": "maybe"}}, "requestState": state}
    assert (await call(http, wrong, capabilities=ELICIT)).error["code"] == INVALID_PARAMS
    right = {**params, "inputResponses": {"approve": YES}, "requestState": state}
    assert (await call(http, right, capabilities=ELICIT)).result["structuredContent"]["deployed"] is True


# -- refused before any step --------------------------------------------------------------------


async def test_a_plain_2026_client_without_elicitation_is_refused_before_any_step(
    http: httpx.AsyncClient, effects: Path
) -> None:
    reply = await call(http, {"name": "release_asking", "arguments": pipeline(effects)})
    error = reply.error
    assert error["code"] == MISSING_CAPABILITY, reply.body
    assert error["data"]["requiredCapabilities"] == {"elicitation": {}}
    assert error["data"]["alternativeCapabilities"] == {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}
    assert steps_run(effects) == []


@pytest.mark.parametrize("tool", ["release_asking", "release"])
async def test_a_2025_client_without_elicitation_is_told_only_elicitation(
    http: httpx.AsyncClient, effects: Path, tool: str
) -> None:
    """Refused before any step by a tool that declares it asks; at the question by one that does not."""
    host = await LegacyMcp(FRONT_URL, http, headers=bearer(ALICE)).handshake({"sampling": {}})
    reply = await host.request("tools/call", {"name": tool, "arguments": pipeline(effects)})
    error = reply.error
    assert error["code"] == MISSING_CAPABILITY, reply.body
    assert error["data"] == {"requiredCapabilities": {"elicitation": {}}}, "a 2025 client cannot declare extensions"
    assert steps_run(effects) == ([] if tool == "release_asking" else ["ran-checkout", "ran-compile", "ran-test"])


# -- a question nobody can answer ----------------------------------------------------------------


async def test_an_undeclared_question_to_a_client_that_cannot_answer_cancels_the_task_with_the_reason(
    http: httpx.AsyncClient, effects: Path, app_client: TemporalClient, app_queue: str
) -> None:
    reply = await call(http, {"name": "release", "arguments": pipeline(effects)})
    error = reply.error
    assert error["code"] == MISSING_CAPABILITY, reply.body
    assert error["data"]["requiredCapabilities"] == {"elicitation": {}}
    assert steps_run(effects) == ["ran-checkout", "ran-compile", "ran-test"]
    task = await _closed_run_of(app_client, app_queue, "Canceled", str(effects))
    assert "elicitation" in task["statusMessage"]


async def test_an_unanswered_question_expires_with_the_task_and_a_late_retry_is_told_so(
    open_front: OpenFront, app_client: TemporalClient, app_queue: str, time_skipper: TimeSkipper
) -> None:
    clock = ManualClock()
    front = await open_front(clock=clock)
    marker = f"expiry-{uuid.uuid4()}"  # an ignored kind, to find this test's run
    params = {"name": "questions_short_lived", "arguments": {"kinds": ["elicitation", marker]}}
    async with front.http() as http:
        asking = (await call(http, params, capabilities=ELICIT)).result
        assert asking["resultType"] == "input_required"
        # Its TTL of 3 s, moved on rather than waited for: on the run's clock, and on the front's.
        await time_skipper.fast_forward(await _run_of(app_client, app_queue, marker), timedelta(seconds=4))
        await _closed_run_of(app_client, app_queue, "TimedOut", marker)
        clock.advance(timedelta(seconds=4))
        answers = {"approve": YES, "reviewer": {"action": "decline"}}
        late = await call(http, {**params, "inputResponses": answers, "requestState": asking["requestState"]})
    assert late.error["code"] == INVALID_PARAMS, late.body
    assert late.error.get("data") != {"reason": "invalid_request_state"}, "the state is good; the task has expired"


async def _run_of(client: TemporalClient, task_queue: str, marker: str) -> WorkflowHandle[Any, Any]:
    """The run whose arguments hold `marker` (a test's own effects folder or tag), once visibility lists it."""
    with anyio.fail_after(WAIT):
        while True:
            async for execution in client.list_workflows(f'TaskQueue = "{task_queue}"'):
                handle = client.get_workflow_handle(execution.id, run_id=execution.run_id)
                history = await handle.fetch_history()
                started = history.events[0].workflow_execution_started_event_attributes
                if marker.encode() in started.input.payloads[0].data:
                    return handle
            await anyio.sleep(0.2)


async def _closed_run_of(client: TemporalClient, task_queue: str, status: str, marker: str) -> dict[str, Any]:
    """The memo of the run whose arguments hold `marker`, once closed; it must have closed as `status`."""
    handle = await _run_of(client, task_queue, marker)
    with anyio.fail_after(WAIT):
        while (description := await handle.describe()).close_time is None:
            await anyio.sleep(0.1)
    assert description.status == _STATUSES[status], f"the run closed {description.status}, not {status}"
    return dict(await description.memo())


async def test_a_question_the_client_lacks_one_capability_for_cancels_the_task_and_names_it(
    http: httpx.AsyncClient,
) -> None:
    questions = {"name": "questions", "arguments": {"kinds": ["elicitation", "sampling"]}}
    error = (await call(http, questions, capabilities=ELICIT)).error
    assert error["code"] == MISSING_CAPABILITY
    assert error["data"]["requiredCapabilities"] == {"sampling": {}}


NONE: dict[str, Any] = {}


@pytest.mark.parametrize(
    ("tasks", "capabilities", "asks"),
    [(False, NONE, False), (False, ELICIT, True), (True, NONE, False), (True, ELICIT, True)],
)
async def test_a_workflow_asks_only_a_client_that_can_answer(
    http: httpx.AsyncClient, tasks: bool, capabilities: dict[str, Any], asks: bool
) -> None:
    reply = await HttpMcp(FRONT_URL, http).request(
        "tools/call",
        {"name": "maybe_ask", "arguments": {}},
        tasks=tasks,
        capabilities=capabilities,
        headers=bearer(ALICE),
    )
    result = reply.result
    if tasks:
        task = await _task_when_settled(http, result["taskId"])
        assert (task["status"] == "input_required") is asks, task
        if not asks:
            assert task["result"]["content"][0]["text"] == "decided alone"
    elif asks:
        assert result["resultType"] == "input_required"
    else:
        assert result["content"][0]["text"] == "decided alone"


async def _task_when_settled(http: httpx.AsyncClient, task_id: str) -> dict[str, Any]:
    client = HttpMcp(FRONT_URL, http)
    with anyio.fail_after(WAIT):
        while True:
            task = (await client.request("tasks/get", {"taskId": task_id}, headers=bearer(ALICE))).result
            if task["status"] != "working":
                return task
            await anyio.sleep(0.1)


# -- a task tool's plain call: held as a task, like a workflow tool's ------------------------------


@asynccontextmanager
async def sdk_client(front: InProcessFront, **callbacks: Any) -> AsyncGenerator[Client]:
    """The mcp 2.3 `Client` as an agent framework uses it: no tasks extension, Alice's bearer token."""
    async with front.http2(headers=bearer(ALICE), timeout=WAIT) as http:
        async with Client(streamable_http_client(front.url, http_client=http), **callbacks) as client:
            yield client


async def test_a_plain_call_of_a_task_tool_reports_its_status_lines_and_asks_inside_the_call(
    front: InProcessFront,
) -> None:
    tag = f"v-{uuid.uuid4().hex[:8]}"
    asked: list[str] = []
    updates: list[tuple[float, str | None]] = []

    async def approve(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, message))

    async with sdk_client(front, elicitation_callback=approve) as client:
        with anyio.fail_after(WAIT):
            result = await client.call_tool("steps_then_ask", {"tag": tag}, progress_callback=on_progress)
    assert result.is_error is False
    assert result.content == [types.TextContent(type="text", text=f"shipped {tag}")]
    assert asked == [f"Ship {tag}?"]
    lines = [f"{step} {tag}" for step in STEPS]
    assert updates[:3] == [(1, lines[0]), (2, lines[1]), (3, lines[2])], updates


async def test_a_plain_client_without_elicitation_gets_the_task_tools_question_refused_and_its_task_cancelled(
    front: InProcessFront, app_client: TemporalClient, app_queue: str
) -> None:
    tag = f"refused-{uuid.uuid4().hex[:8]}"
    async with sdk_client(front) as client:
        with anyio.fail_after(WAIT), pytest.raises(MCPError) as refused:
            await client.call_tool("steps_then_ask", {"tag": tag, "step_seconds": 0})
    assert refused.value.error.code == MISSING_CAPABILITY
    data = refused.value.error.data
    assert data["requiredCapabilities"] == {"elicitation": {}}
    assert data["alternativeCapabilities"] == {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}
    task = await _closed_run_of(app_client, app_queue, "Canceled", tag)
    assert task["status"] == "cancelled"
    assert "elicitation" in task["statusMessage"]


async def test_a_plain_client_leaving_a_task_tools_call_cancels_its_task(
    front: InProcessFront, app_client: TemporalClient, app_queue: str
) -> None:
    tag = f"left-{uuid.uuid4().hex[:8]}"
    first_line = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        first_line.set()

    async def call_and_wait(client: Client) -> None:
        await client.call_tool("steps_then_ask", {"tag": tag, "step_seconds": 600}, progress_callback=on_progress)

    async with sdk_client(front, elicitation_callback=_never_asked) as client:
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as group:
                group.start_soon(call_and_wait, client)
                await first_line.wait()  # the tool is running: its first status line came
                group.cancel_scope.cancel()
    await _closed_run_of(app_client, app_queue, "Canceled", tag)


async def _never_asked(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
    raise AssertionError("the call was left before its question")
