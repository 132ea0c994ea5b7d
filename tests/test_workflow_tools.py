"""Workflow tools: the user's own workflows as MCP tasks, through the front and its workers.

The fixture workflows (`tests/workflow_fixture_workflows.py`) run sandboxed on workers in the test
process, as `worker` runs them, behind the in-process front; their activities leave a line in a file
per run, so a test counts what ran. A kill -9 of a `worker` process, the stdio transport and `dev`
are about processes, and run as processes.
"""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from temporalio.client import Client, WorkflowExecutionStatus

from mcp_tasks_temporal import BearerAuth
from mcp_tasks_temporal.front.gateway.queue_watch import waiting_for_a_worker
from mcp_tasks_temporal.front.http.auth import StaticTokenVerifier
from mcp_tasks_temporal.temporal.connection import connect_temporal
from mcp_tasks_temporal.temporal.contract import CLIENT_CAPABILITIES_META_KEY, WORKFLOW_KIND, Memo
from mcp_tasks_temporal.temporal.ids import UNKEYED
from tests.app_workers import app_worker, new_task_queue
from tests.clock import ManualClock
from tests.conftest import OpenFront, Stack
from tests.direct_signals import signal_answers
from tests.front_app import InProcessFront, fresh_app
from tests.processes import CLI, REPO_ROOT, Process, child_env, free_port, start_front, start_worker, wait_until
from tests.test_auth import ALICE, BOB, BearerMcp
from tests.test_push import http_listen, listen_message
from tests.wire import TERMINAL, HttpMcp, StdioMcp, TaskCalls
from tests.workflow_fixture_app import OWN_QUEUE_ENV
from tests.workflow_fixture_workflows import APPROVE

pytestmark = pytest.mark.anyio

APP = "tests.workflow_fixture_app:app"
ELICIT: dict[str, Any] = {"elicitation": {}}
YES = {"action": "accept", "content": {"approve": True}}
PIPELINE = ["checkout", "compile", "test", "deploy"]


def start_stack(stack: Stack) -> Stack:
    """A `worker` and a front process of the app, for the tests that kill the worker."""
    try:
        stack.workers.append(start_worker(stack.workdir, stack.temporal, stack.task_queue, app=APP))
        stack.fronts.append(start_front(stack.workdir, stack.temporal, stack.task_queue, app=APP))
    except BaseException:
        stack.stop()  # a worker that started must not outlive a front that did not
        raise
    return stack


@pytest.fixture(scope="module")
def own_queue() -> Iterator[str]:
    # The app reads its second queue from the environment the worker and front inherit.
    queue = f"wf-own-{uuid.uuid4()}"
    previous = os.environ.get(OWN_QUEUE_ENV)
    os.environ[OWN_QUEUE_ENV] = queue
    yield queue
    if previous is None:
        del os.environ[OWN_QUEUE_ENV]
    else:
        os.environ[OWN_QUEUE_ENV] = previous


@pytest.fixture(scope="module")
def app_spec(own_queue: str) -> str:
    """The workflow fixture app, loaded once its second queue is in the environment."""
    return APP


@pytest.fixture
def effects(tmp_path: Path) -> Path:
    folder = tmp_path / f"effects-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    return folder


def runs(effects: Path, step: str) -> int:
    marks = effects / f"ran-{step}"
    return len(marks.read_text().splitlines()) if marks.exists() else 0


async def until_file(path: Path, *, timeout: float = 30) -> None:
    with anyio.fail_after(timeout):
        while not path.exists():
            await anyio.sleep(0.05)


def release(effects: Path, step: str) -> None:
    (effects / f"release-{step}").write_text("1")


# -- tools/list and results ------------------------------------------------------------------


async def test_tools_list_shows_workflow_tools_with_schemas_from_the_run_method(front_mcp: TaskCalls) -> None:
    tools = {tool["name"]: tool for tool in (await front_mcp.client.request("tools/list", {})).result["tools"]}
    greet = tools["greet"]
    assert greet["description"].startswith("Greets someone")
    assert set(greet["inputSchema"]["properties"]) == {"name", "punctuation"}
    assert greet["inputSchema"]["required"] == ["name"]
    assert "outputSchema" not in greet  # a str result is unstructured
    release_tool = tools["release"]
    assert release_tool["inputSchema"]["properties"]["ref"]["description"] == "the git ref to build"
    assert set(release_tool["outputSchema"]["properties"]) == {"ref", "steps", "deployed"}
    assert tools["nothing"]["inputSchema"].get("properties", {}) == {}
    assert set(tools["wait_days"]["inputSchema"]["properties"]) == {"days"}
    assert tools["loop"]["outputSchema"]["type"] == "object"


async def test_unchanged_workflow_runs_as_a_task_and_its_result_is_mapped(front_mcp: TaskCalls) -> None:
    created = await front_mcp.start("greet", {"name": "Ada"})
    assert created["status"] == "working" and created["pollIntervalMs"] == 200
    task = await front_mcp.wait_for(created["taskId"])
    assert task["status"] == "completed", task
    assert task["result"]["content"] == [{"type": "text", "text": "Hello, Ada!"}]
    assert task["result"]["isError"] is False and "structuredContent" not in task["result"]


async def test_client_without_the_extension_gets_the_result_synchronously(front_mcp: TaskCalls) -> None:
    reply = await front_mcp.call_tool("greet", {"name": "Bo", "punctuation": "?"}, tasks=False)
    assert reply.result["content"] == [{"type": "text", "text": "Hello, Bo?"}]
    structured = await front_mcp.call_tool("loop", {"round": 1, "until": 2}, tasks=False)
    assert structured.result["structuredContent"] == {"rounds": 2, "continued": True, "answer": None}
    assert json.loads(structured.result["content"][0]["text"]) == structured.result["structuredContent"]


async def test_bad_arguments_get_the_synchronous_answer_and_no_task(front_mcp: TaskCalls) -> None:
    for tasks in (True, False):
        reply = await front_mcp.call_tool("greet", {"punctuation": "!"}, tasks=tasks)
        assert reply.result["isError"] is True, reply.body
        assert reply.result.get("resultType", "complete") == "complete"
        assert "name" in reply.result["content"][0]["text"]


async def test_required_policy_refuses_a_client_without_the_extension(front_mcp: TaskCalls) -> None:
    refused = await front_mcp.call_tool("nothing", {}, tasks=False)
    assert refused.error["code"] == -32021
    task = await front_mcp.wait_for((await front_mcp.start("nothing", {}))["taskId"])
    assert task["status"] == "completed" and task["result"]["content"] == []
    assert "statusMessage" not in task, "a completed task shows no step"


# -- status and questions --------------------------------------------------------------------


async def test_pipeline_reports_each_step_asks_before_deploying_and_returns_its_model(
    front_mcp: TaskCalls, effects: Path
) -> None:
    created = await front_mcp.start(
        "release",
        {"ref": "v1.4", "effects": str(effects), "approve_before": "deploy"},
        capabilities=ELICIT,
    )
    task_id = created["taskId"]
    asking = await front_mcp.wait_for(task_id, {"input_required"})
    assert asking["inputRequests"] == {"approve": APPROVE}
    assert asking["statusMessage"] == "test (3/4)"
    invalid = await front_mcp.update(task_id, {"approve": {"action": "maybe"}})
    assert invalid.error["code"] == -32602
    assert "error" not in (await front_mcp.update(task_id, {"approve": YES, "unknown": {"x": 1}})).body
    done = await front_mcp.wait_for(task_id)
    assert done["status"] == "completed", done
    assert done["result"]["structuredContent"] == {"ref": "v1.4", "steps": PIPELINE, "deployed": True}
    assert "statusMessage" not in done
    assert [runs(effects, step) for step in PIPELINE] == [1, 1, 1, 1]


async def test_declined_approval_means_not_deployed(front_mcp: TaskCalls, effects: Path) -> None:
    task_id = (
        await front_mcp.start(
            "release", {"ref": "v2", "effects": str(effects), "approve_before": "deploy"}, capabilities=ELICIT
        )
    )["taskId"]
    await front_mcp.wait_for(task_id, {"input_required"})
    await front_mcp.update(task_id, {"approve": {"action": "decline"}})
    done = await front_mcp.wait_for(task_id)
    assert done["result"]["structuredContent"]["deployed"] is False
    assert runs(effects, "deploy") == 0


async def test_an_approval_signalled_to_temporal_before_the_question_deploys_nothing(
    front_mcp: TaskCalls, effects: Path, temporal_client: Client
) -> None:
    request = {"ref": "v3", "effects": str(effects), "gate_step": "test", "approve_before": "deploy"}
    task_id = (await front_mcp.start("release", request, capabilities=ELICIT))["taskId"]
    await until_file(effects / "ran-test")  # held in its third step, before it asks
    handle = temporal_client.get_workflow_handle(UNKEYED.workflow_id(task_id, None))
    await signal_answers(handle, {"approve": YES, "never-asked": YES})
    release(effects, "test")
    asked = await front_mcp.wait_for(task_id, lambda t: t["status"] != "working")
    assert asked["status"] == "input_required", asked
    assert asked["inputRequests"] == {"approve": APPROVE}
    assert asked["statusMessage"] == "test (3/4)", "the pipeline went on past its question"
    assert runs(effects, "deploy") == 0
    await front_mcp.update(task_id, {"approve": {"action": "decline"}})
    done = await front_mcp.wait_for(task_id)
    assert done["result"]["structuredContent"] == {"ref": "v3", "steps": PIPELINE[:3], "deployed": False}
    assert runs(effects, "deploy") == 0


async def test_several_questions_answered_one_at_a_time(front_mcp: TaskCalls) -> None:
    caps: dict[str, Any] = {"elicitation": {}, "sampling": {}}
    task_id = (await front_mcp.start("questions", {"kinds": ["elicitation", "sampling"]}, capabilities=caps))["taskId"]
    asking = await front_mcp.wait_for(task_id, {"input_required"})
    assert set(asking["inputRequests"]) == {"approve", "reviewer", "summary"}
    await front_mcp.update(task_id, {"reviewer": {"action": "accept", "content": {}}})
    partial = (await front_mcp.get(task_id)).result
    assert partial["status"] == "input_required" and set(partial["inputRequests"]) == {"approve", "summary"}
    sampled = {"role": "assistant", "content": {"type": "text", "text": "fine"}, "model": "m"}
    await front_mcp.update(task_id, {"approve": YES, "summary": sampled, "reviewer": {"action": "decline"}})
    done = await front_mcp.wait_for(task_id)
    assert "statusMessage" not in done
    assert done["result"]["structuredContent"] == {
        "approve": YES,
        "reviewer": {"action": "accept", "content": {}},
        "summary": sampled,
    }


async def test_question_the_client_cannot_answer_fails_the_task_with_32021(front_mcp: TaskCalls) -> None:
    task_id = (await front_mcp.start("questions", {"kinds": ["sampling"]}, capabilities=ELICIT))["taskId"]
    done = await front_mcp.wait_for(task_id)
    assert done["status"] == "failed"
    assert done["error"]["code"] == -32021
    assert done["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}


async def test_a_workflow_tool_on_its_own_queue_runs_on_the_worker_for_that_queue(
    front_mcp: TaskCalls, own_queue: str, temporal_client: Client
) -> None:
    task_id = (await front_mcp.start("wait_days", {"days": 0}, capabilities=ELICIT))["taskId"]
    description = await temporal_client.get_workflow_handle(UNKEYED.workflow_id(task_id, None)).describe()
    assert description.task_queue == own_queue
    await front_mcp.wait_for(task_id, {"input_required"})
    await front_mcp.update(task_id, {"go": YES})
    done = await front_mcp.wait_for(task_id)
    assert done["result"]["structuredContent"] == {"result": ["waited", "accept"]}


# -- failures, cancellation, TTL ------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "status", "expected"),
    [
        ("application-error", "completed", "disk full on builder-3"),
        ("activity-crash", "completed", "compiler crashed on main.c"),
        ("task-error", "failed", {"code": -32050, "message": "Release window closed", "data": {"opensAt": "09:00"}}),
        (
            "activity-json-rpc",
            "failed",
            {"code": -32051, "message": "Builder quota exhausted", "data": {"retryAfterS": 60}},
        ),
    ],
)
async def test_failure_mapping(front_mcp: TaskCalls, mode: str, status: str, expected: Any) -> None:
    done = await front_mcp.wait_for((await front_mcp.start("fail", {"mode": mode}))["taskId"])
    assert done["status"] == status, done
    if status == "completed":
        assert done["result"]["isError"] is True
        assert done["result"]["content"] == [{"type": "text", "text": expected}]
    else:
        assert done["error"] == expected


async def test_failures_of_a_synchronous_call(front_mcp: TaskCalls) -> None:
    tool_error = await front_mcp.call_tool("fail", {"mode": "application-error"}, tasks=False)
    assert tool_error.result["isError"] is True
    json_rpc = await front_mcp.call_tool("fail", {"mode": "task-error"}, tasks=False)
    assert json_rpc.error["code"] == -32050


async def test_cancel_mid_step_reaches_the_running_activity(front_mcp: TaskCalls, effects: Path) -> None:
    task_id = (await front_mcp.start("fail", {"mode": "hang", "effects": str(effects)}))["taskId"]
    await until_file(effects / "ran-hang")
    assert (await front_mcp.get(task_id)).result["statusMessage"] == "hanging"
    assert "error" not in (await front_mcp.cancel(task_id)).body
    done = await front_mcp.wait_for(task_id)
    assert done["status"] == "cancelled"
    await until_file(effects / "cancelled-hang")


async def test_terminated_and_timed_out_workflows_fail_with_32603(
    front_mcp: TaskCalls, app_queue: str, effects: Path, temporal_client: Client
) -> None:
    task_id = (await front_mcp.start("fail", {"mode": "hang", "effects": str(effects)}))["taskId"]
    await until_file(effects / "ran-hang")
    await temporal_client.get_workflow_handle(UNKEYED.workflow_id(task_id, None)).terminate("operator")
    done = await front_mcp.wait_for(task_id)
    assert done["status"] == "failed" and done["error"]["code"] == -32603

    # An operator-set execution timeout (the task's own TTL is unlimited here).
    timed_out = str(uuid.uuid4())
    now_ms = int(time.time() * 1000)
    handle = await temporal_client.start_workflow(
        "FailingWorkflow",
        {"mode": "hang", "effects": str(effects)},
        id=UNKEYED.workflow_id(timed_out, None),
        task_queue=app_queue,
        execution_timeout=timedelta(seconds=1),
        memo={
            Memo.TASK_ID: timed_out,
            Memo.TOOL: "fail",
            Memo.OWNER: UNKEYED.owner_key(None),
            Memo.CREATED_AT: now_ms,
            Memo.TTL_MS: None,
            Memo.POLL_INTERVAL_MS: 200,
            Memo.STATUS: "working",
            Memo.KIND: WORKFLOW_KIND,
            Memo.ENVELOPE: {CLIENT_CAPABILITIES_META_KEY: {}},
        },
    )
    with anyio.fail_after(30):
        while (await handle.describe()).status == WorkflowExecutionStatus.RUNNING:
            await anyio.sleep(0.1)
    done = await front_mcp.wait_for(timed_out)
    assert done["status"] == "failed" and done["error"]["code"] == -32603


async def test_ttl_expires_the_task_and_temporal_stops_the_workflow(
    open_front: OpenFront, effects: Path, temporal_client: Client
) -> None:
    clock = ManualClock()
    front = await open_front(clock=clock)
    async with front.http() as http:
        mcp = front.calls(http)
        created = await mcp.start("short_lived", {"mode": "hang", "effects": str(effects)})
        ttl = timedelta(milliseconds=created["ttlMs"])
        assert ttl == timedelta(seconds=2)
        await until_file(effects / "ran-hang")
        clock.advance(ttl - timedelta(milliseconds=1))
        assert (await mcp.get(created["taskId"])).result["status"] == "working", "gone before its TTL ran out"
        clock.advance(timedelta(milliseconds=1))
        assert (await mcp.get(created["taskId"])).error["code"] == -32602
    # The workflow's own execution timeout (Temporal's clock, two seconds of it) stops the work.
    handle = temporal_client.get_workflow_handle(UNKEYED.workflow_id(created["taskId"], None))
    with anyio.fail_after(30):
        while (await handle.describe()).status == WorkflowExecutionStatus.RUNNING:
            await anyio.sleep(0.1)
    assert (await handle.describe()).status == WorkflowExecutionStatus.TIMED_OUT


# -- continue-as-new, push -------------------------------------------------------------------


async def test_continue_as_new_is_one_task_that_ends_with_the_last_run(front_mcp: TaskCalls) -> None:
    task_id = (await front_mcp.start("loop", {"round": 1, "until": 3, "ask_at_end": True}, capabilities=ELICIT))[
        "taskId"
    ]
    asking = await front_mcp.wait_for(task_id, {"input_required"})
    assert asking["statusMessage"] == "round 3 of 3"
    assert asking["inputRequests"] == {"confirm-3": APPROVE}
    await front_mcp.update(task_id, {"confirm-3": YES})
    done = await front_mcp.wait_for(task_id)
    assert done["result"]["structuredContent"] == {"rounds": 3, "continued": True, "answer": YES}


def task_fields(task: dict[str, Any]) -> dict[str, Any]:
    """The task itself, without the envelope of the message that carried it."""
    return {key: value for key, value in task.items() if key not in ("_meta", "resultType")}


async def collect(frames: AsyncIterator[dict[str, Any]], task_id: str, into: list[dict[str, Any]]) -> None:
    async for frame in frames:
        params = frame.get("params", {})
        if frame.get("method") == "notifications/tasks" and params.get("taskId") == task_id:
            into.append(params)
            if params["status"] in TERMINAL:
                return


async def test_push_carries_each_status_in_order_across_continue_as_new(
    front_mcp: TaskCalls, front: InProcessFront, front_http: httpx.AsyncClient, effects: Path
) -> None:
    task_id = (await front_mcp.start("loop", {"round": 1, "until": 3, "effects": str(effects)}))["taskId"]
    await until_file(effects / "ran-round-1")
    seen: list[dict[str, Any]] = []
    async with http_listen(front.url, front_http, listen_message([task_id])) as frames:
        assert (await anext(frames))["method"] == "notifications/subscriptions/acknowledged"
        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                group.start_soon(collect, frames, task_id, seen)
                for number in (1, 2, 3):
                    with anyio.fail_after(30):
                        while not seen or seen[-1].get("statusMessage") != f"round {number} of 3":
                            await anyio.sleep(0.05)
                    release(effects, f"round-{number}")
    messages = [task.get("statusMessage") for task in seen if task["status"] != "completed"]
    assert [m for i, m in enumerate(messages) if i == 0 or m != messages[i - 1]] == [
        "round 1 of 3",
        "round 2 of 3",
        "round 3 of 3",
    ]
    assert seen[-1]["status"] == "completed"
    assert task_fields(seen[-1]) == task_fields((await front_mcp.get(task_id)).result)


async def test_push_shows_a_mapped_failure_as_tasks_get_does(
    front_mcp: TaskCalls, front: InProcessFront, front_http: httpx.AsyncClient
) -> None:
    caps: dict[str, Any] = {"elicitation": {}}
    task_id = (await front_mcp.start("questions", {"kinds": ["elicitation"]}, capabilities=caps))["taskId"]
    await front_mcp.wait_for(task_id, {"input_required"})
    seen: list[dict[str, Any]] = []
    async with http_listen(front.url, front_http, listen_message([task_id])) as frames:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                group.start_soon(collect, frames, task_id, seen)
                await front_mcp.update(task_id, {"approve": YES, "reviewer": YES})
    assert seen[-1]["status"] == "completed"
    assert task_fields(seen[-1]) == task_fields((await front_mcp.get(task_id)).result)


# -- isolation, no worker --------------------------------------------------------------------


async def test_isolation_between_two_principals(open_front: OpenFront, effects: Path) -> None:
    tokens = StaticTokenVerifier({ALICE: "alice@example.com", BOB: "bob@example.com"})
    secured = await open_front(auth=BearerAuth(tokens))
    async with secured.http() as http:
        await _each_sees_only_their_own(
            TaskCalls(BearerMcp(secured.url, http, ALICE)), TaskCalls(BearerMcp(secured.url, http, BOB)), effects
        )


async def _each_sees_only_their_own(alice: TaskCalls, bob: TaskCalls, effects: Path) -> None:
    task_id = (
        await alice.start(
            "release", {"ref": "a", "effects": str(effects), "approve_before": "deploy"}, capabilities=ELICIT
        )
    )["taskId"]
    await alice.wait_for(task_id, {"input_required"})
    assert (await bob.get(task_id)).error["code"] == -32602
    assert (await bob.update(task_id, {"approve": YES})).error["code"] == -32602
    assert (await bob.cancel(task_id)).error["code"] == -32602
    assert (await alice.get(task_id)).result["status"] == "input_required"
    await alice.update(task_id, {"approve": {"action": "decline"}})
    assert (await alice.wait_for(task_id))["status"] == "completed"


async def test_tasks_get_works_with_no_worker_running(open_front: OpenFront, temporal_client: Client) -> None:
    queue = new_task_queue("wf-no-worker")
    frontonly = await open_front(task_queue=queue)
    async with frontonly.http() as http:
        calls = frontonly.calls(http)
        task_id = (await calls.start("greet", {"name": "Nobody"}))["taskId"]
        task = (await calls.get(task_id)).result
        assert task["status"] == "working"
        # Its own client: the module's workers hold the app's second queue on theirs.
        async with app_worker(temporal_client, fresh_app(APP), task_queue=queue):
            assert (await calls.wait_for(task_id))["result"]["content"][0]["text"] == "Hello, Nobody!"


# -- durability -------------------------------------------------------------------------------


@pytest.mark.slow
async def test_kill_9_of_the_worker_mid_pipeline_never_repeats_a_finished_step(
    stack_factory: Any, http: httpx.AsyncClient, effects: Path, own_queue: str
) -> None:
    private: Stack = start_stack(stack_factory())
    calls = TaskCalls(HttpMcp(private.url, http))
    task_id = (await calls.start("release", {"ref": "v9", "effects": str(effects), "gate_step": "compile"}))["taskId"]
    await until_file(effects / "ran-compile")
    private.workers[0].kill()
    private.workers.append(start_worker(private.workdir, private.temporal, private.task_queue, app=APP))
    release(effects, "compile")
    done = await calls.wait_for(task_id, timeout=30)
    assert done["result"]["structuredContent"]["steps"] == PIPELINE
    assert runs(effects, "checkout") == 1
    assert 1 <= runs(effects, "compile") <= 2
    assert runs(effects, "test") == 1 and runs(effects, "deploy") == 1


@pytest.mark.slow
async def test_question_answered_after_a_worker_restart(
    stack_factory: Any, http: httpx.AsyncClient, effects: Path, own_queue: str
) -> None:
    private: Stack = start_stack(stack_factory())
    calls = TaskCalls(HttpMcp(private.url, http))
    task_id = (
        await calls.start(
            "release", {"ref": "v3", "effects": str(effects), "approve_before": "deploy"}, capabilities=ELICIT
        )
    )["taskId"]
    await calls.wait_for(task_id, {"input_required"})
    private.workers[0].kill()
    private.workers.append(start_worker(private.workdir, private.temporal, private.task_queue, app=APP))
    await calls.update(task_id, {"approve": YES})
    done = await calls.wait_for(task_id, timeout=30)
    assert done["result"]["structuredContent"]["deployed"] is True
    assert [runs(effects, step) for step in PIPELINE] == [1, 1, 1, 1]


# -- stdio ------------------------------------------------------------------------------------


async def test_workflow_tools_over_stdio(temporal: str, app_queue: str, tmp_path: Path) -> None:
    # A `serve --transport stdio` process; the module's workers in the test process run its tasks.
    command = [*CLI, "serve", "--transport", "stdio", "--temporal", temporal]
    command += ["--task-queue", app_queue, "--app", APP]
    with (tmp_path / "stdio-front.log").open("wb") as stderr_log:
        process = await anyio.open_process(command, cwd=REPO_ROOT, env=child_env(), stderr=stderr_log)
        try:
            calls = TaskCalls(StdioMcp(process))
            tools = (await calls.client.request("tools/list", {})).result["tools"]
            assert {"greet", "release", "loop"} <= {tool["name"] for tool in tools}
            task = await calls.wait_for((await calls.start("greet", {"name": "Stdio"}))["taskId"])
            assert task["result"]["content"] == [{"type": "text", "text": "Hello, Stdio!"}]
        finally:
            if process.stdin is not None:
                await process.stdin.aclose()
            with anyio.move_on_after(10):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()
            await process.aclose()


# -- the demo under `dev` -----------------------------------------------------------------------


def step_of(task: dict[str, Any]) -> int:
    """The step number in a demo pipeline status line such as `compile (v1) (3/6)`."""
    message = task.get("statusMessage") or ""
    return int(message.rsplit("(", 1)[1].split("/")[0]) if message.endswith("/6)") else 0


def waits_for_a_worker(task: dict[str, Any]) -> bool:
    said = waiting_for_a_worker("{queue}").split("{queue}")[0]
    return (task.get("statusMessage") or "").startswith(said)


@pytest.mark.slow
async def test_ctrl_c_on_dev_mid_pipeline_resumes_at_the_step_it_was_in(
    tmp_path: Path, http: httpx.AsyncClient
) -> None:
    state, port, temporal_port = tmp_path / "state", free_port(), free_port()
    command = [*CLI, "dev", "--state-dir", str(state), "--port", str(port)]
    command += ["--temporal-port", str(temporal_port), "--ui-port", "0"]

    def start_dev() -> Process:
        process = Process(f"dev-{port}", command, tmp_path / f"dev-{port}-{free_port()}.log").start()
        wait_until(lambda: "Press Ctrl-C to stop." in process.log() or not process.alive, timeout=60, what="dev")
        assert process.alive, process.log()
        return process

    async def until_served(call: Any) -> Any:
        with anyio.fail_after(30):
            while True:
                try:
                    return await call()
                except httpx.TransportError:  # the banner is printed just before uvicorn binds
                    await anyio.sleep(0.1)

    dev = start_dev()
    calls = TaskCalls(HttpMcp(f"http://127.0.0.1:{port}/mcp", http))
    try:
        created = await until_served(
            lambda: calls.start("build_pipeline", {"ref": "v7", "step_seconds": 1.5}, capabilities=ELICIT)
        )
        task_id = created["taskId"]
        await calls.wait_for(task_id, lambda task: step_of(task) >= 3, timeout=30)
    finally:
        dev.stop(signal.SIGINT, timeout=30)
    assert dev.popen.returncode == 0, dev.log()

    dev = start_dev()
    try:
        await until_served(lambda: calls.get(task_id))
        # Until the new dev's worker polls, the front says the task waits for one; then the step it was in shows.
        first = await calls.wait_for(task_id, lambda task: not waits_for_a_worker(task), timeout=30)
        assert first["status"] == "input_required" or step_of(first) >= 3, first
        asking = await calls.wait_for(task_id, {"input_required"}, timeout=30)
        assert asking["inputRequests"]["approve"]["params"]["requestedSchema"]["properties"]["approve"]["type"] == (
            "boolean"
        )
        await calls.update(task_id, {"approve": YES})
        done = await calls.wait_for(task_id, timeout=30)
        assert done["result"]["content"][0]["text"].startswith("Built and published v7")
        client = await connect_temporal(f"127.0.0.1:{temporal_port}")
        history = await client.get_workflow_handle(UNKEYED.workflow_id(task_id, None)).fetch_history()
        scheduled = [e for e in history.events if e.HasField("activity_task_scheduled_event_attributes")]
        assert len(scheduled) == 6  # one activity per step, none scheduled again after the restart
    finally:
        dev.stop(signal.SIGINT, timeout=30)
