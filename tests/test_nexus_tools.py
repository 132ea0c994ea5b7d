"""Nexus-backed task tools across two namespaces of one Temporal dev server, over real processes.

The other team's side is the demo's (`mcp_tasks_temporal.demo.nexus_team`): a
worker in a namespace of its own, reached only through a Nexus endpoint. Our
side is `serve` and `worker` with the demo's Nexus app, and a reply endpoint
that targets our namespace and task queue for the handler's status.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from temporalio.client import Client, WorkflowExecutionStatus

from mcp_tasks_temporal.ops.dev.nexus_endpoints import ensure_endpoint, ensure_namespace
from mcp_tasks_temporal.ops.dev.nexus_routes import EndpointRoute
from mcp_tasks_temporal.temporal.connection import connect_temporal
from mcp_tasks_temporal.temporal.contract import as_object
from mcp_tasks_temporal.temporal.ids import workflow_id
from mcp_tasks_temporal.temporal.nexus_contract import REPLY_MEMO
from tests.cli_runs import run_in_process
from tests.conftest import Stack
from tests.processes import CLI, Process, child_env, free_port, start_front, start_worker, wait_until
from tests.wire import HttpMcp, TaskCalls

pytestmark = pytest.mark.anyio

APP = "tests.nexus_fixture_app:app"
TEAM_QUEUE = "reports"
ELICIT: dict[str, Any] = {"elicitation": {}}


@dataclass
class NexusWorld:
    stack: Stack
    team_namespace: str
    env: dict[str, str]
    """What our side's processes load the app with."""


@pytest.fixture(scope="module")
def world(workdir: Path, temporal: str) -> Iterator[NexusWorld]:
    suffix = uuid.uuid4().hex[:8]
    team_namespace = f"reports-team-{suffix}"
    stack = Stack(workdir, temporal, task_queue=f"nexus-{suffix}")
    team_endpoint = EndpointRoute(f"team-reports-{suffix}", team_namespace, TEAM_QUEUE)
    reply_endpoint = EndpointRoute(f"mcp-tasks-reply-{suffix}", "default", stack.task_queue)

    async def prepare() -> None:
        client = await Client.connect(temporal)
        await ensure_namespace(client, team_namespace)
        await ensure_endpoint(client, team_endpoint)
        await ensure_endpoint(client, reply_endpoint)
        await ensure_endpoint(client, reply_endpoint)  # a second start finds it there and keeps it

    anyio.run(prepare)
    env = {"NEXUS_DEMO_ENDPOINT": team_endpoint.name}
    team = Process(
        "nexus-team",
        [CLI[0], "-m", "mcp_tasks_temporal.demo.nexus_team", "--temporal", temporal]
        + ["--namespace", team_namespace, "--task-queue", TEAM_QUEUE],
        workdir / f"nexus-team-{suffix}.log",
    ).start()
    try:
        wait_until(lambda: "reports team worker:" in team.log(), timeout=60, what="the reports team's worker")
        stack.workers.append(start_worker(workdir, temporal, stack.task_queue, app=APP, env=env))
        stack.fronts.append(
            start_front(
                workdir,
                temporal,
                stack.task_queue,
                app=APP,
                env=env,
                extra=["--nexus-reply-endpoint", reply_endpoint.name],
            )
        )
        yield NexusWorld(stack, team_namespace, env)
    finally:
        stack.stop()
        team.stop()


@pytest.fixture
def mcp(world: NexusWorld, http: httpx.AsyncClient) -> TaskCalls:
    return TaskCalls(HttpMcp(world.stack.url, http))


async def handler_run_of(team: Client, task_id: str) -> str:
    """The ID of the workflow in the team's namespace that serves this task's operation."""
    ours = workflow_id(task_id, None)
    with anyio.fail_after(30):
        while True:
            async for execution in team.list_workflows():
                memo = await execution.memo()
                if as_object(memo.get(REPLY_MEMO)).get("task") == ours:
                    return execution.id
            await anyio.sleep(0.2)


async def test_operation_result_is_the_tool_result(mcp: TaskCalls) -> None:
    task_id = (await mcp.start("build_report", {"topic": "Q3", "sections": 2, "seconds_per_section": 0.05}))["taskId"]
    done = await mcp.wait_for(task_id, timeout=60)
    assert done["status"] == "completed", done
    assert done["result"]["isError"] is False
    assert done["result"]["content"] == [{"type": "text", "text": "Report on Q3: 2 sections"}]


async def test_status_crosses_and_cancel_ends_the_handler_workflow(world: NexusWorld, mcp: TaskCalls) -> None:
    task_id = (await mcp.start("build_report", {"topic": "slow", "sections": 1, "seconds_per_section": 600}))["taskId"]
    working = await mcp.wait_for(
        task_id, lambda task: task.get("statusMessage") == "writing section 1/1 on slow", timeout=60
    )
    assert working["status"] == "working"
    team = await connect_temporal(world.stack.temporal, namespace=world.team_namespace)
    handler = team.get_workflow_handle(await handler_run_of(team, task_id))
    assert (await handler.describe()).status == WorkflowExecutionStatus.RUNNING

    assert "error" not in (await mcp.cancel(task_id)).body
    assert (await mcp.wait_for(task_id, timeout=60))["status"] == "cancelled"
    # The task ends cancelled only once the handler side acknowledged: its workflow is already closed.
    assert (await handler.describe()).status == WorkflowExecutionStatus.CANCELED


async def test_expiry_cancels_the_handler_workflow(world: NexusWorld, mcp: TaskCalls, temporal_client: Client) -> None:
    arguments = {"topic": "late", "sections": 1, "seconds_per_section": 600}
    task_id = (await mcp.start("short_report", arguments))["taskId"]
    team = await connect_temporal(world.stack.temporal, namespace=world.team_namespace)
    handler = team.get_workflow_handle(await handler_run_of(team, task_id))
    # Past its TTL the task is gone for tasks/get (-32602); Temporal shows how both sides ended.
    with anyio.fail_after(60):
        while (await handler.describe()).status == WorkflowExecutionStatus.RUNNING:
            await anyio.sleep(0.2)
    # Temporal alone would leave it running: a timed-out caller abandons its operations.
    assert (await handler.describe()).status == WorkflowExecutionStatus.CANCELED
    ours = temporal_client.get_workflow_handle(workflow_id(task_id, None))
    with anyio.fail_after(30):
        while (await ours.describe()).status == WorkflowExecutionStatus.RUNNING:
            await anyio.sleep(0.2)
    assert (await ours.describe()).status == WorkflowExecutionStatus.FAILED  # expired on its own timer
    seen = await mcp.get(task_id)
    if "error" in seen.body:  # already past its TTL
        assert seen.error["code"] == -32602
    else:  # the run stops a margin before the TTL, so the cancel finishes inside it
        assert seen.result["status"] == "failed" and seen.result["error"]["code"] == -32603, seen.body


async def test_questions_cross_and_the_answers_come_back(world: NexusWorld, mcp: TaskCalls, temporal: str) -> None:
    arguments = {"topic": "ask", "sections": 1, "seconds_per_section": 0, "ask_before_publishing": True}
    task_id = (await mcp.start("build_report", arguments, capabilities=ELICIT))["taskId"]
    asking = await mcp.wait_for(task_id, {"input_required"}, timeout=60)
    assert set(asking["inputRequests"]) == {"publish"}
    assert asking["inputRequests"]["publish"]["method"] == "elicitation/create"
    answer = {"publish": {"action": "accept", "content": {"publish": True}}}
    assert "error" not in (await mcp.update(task_id, answer)).body
    done = await mcp.wait_for(task_id, timeout=60)
    assert done["status"] == "completed", done
    assert done["result"]["content"] == [{"type": "text", "text": "Report on ask: 1 sections, published"}]
    # Its status lines and question came over Nexus; the history replays on the code that ran it.
    audit = await run_in_process(
        ["audit", task_id, "--verify", "--app", APP, "--temporal", temporal], stdin="", env={**child_env(), **world.env}
    )
    assert audit.code == 0 and "verify: compatible" in audit.err, audit.err


async def test_a_question_the_client_cannot_answer_fails_the_task_with_32021(mcp: TaskCalls) -> None:
    arguments = {"topic": "ask", "sections": 1, "seconds_per_section": 0, "ask_before_publishing": True}
    task_id = (await mcp.start("build_report", arguments))["taskId"]  # no elicitation capability declared
    done = await mcp.wait_for(task_id, timeout=60)
    assert done["status"] == "failed" and done["error"]["code"] == -32021, done


async def test_operation_failure_is_a_tool_error_naming_the_operation(mcp: TaskCalls) -> None:
    task_id = (await mcp.start("build_report", {"topic": " ", "sections": 1}))["taskId"]
    done = await mcp.wait_for(task_id, timeout=60)
    assert done["status"] == "completed" and done["result"]["isError"] is True, done
    assert done["result"]["content"][0]["text"] == "reports.build_report failed: a report needs a topic"


async def test_schema_and_synchronous_call(mcp: TaskCalls) -> None:
    tools = (await mcp.client.request("tools/list", {})).result["tools"]
    tool = next(t for t in tools if t["name"] == "build_report")
    assert "outputSchema" not in tool  # a text result, as for a workflow tool returning str
    assert tool["inputSchema"]["required"] == ["topic"]
    assert set(tool["inputSchema"]["properties"]) == {
        "topic",
        "sections",
        "seconds_per_section",
        "ask_before_publishing",
    }

    reply = await mcp.call_tool("build_report", {"topic": "now", "sections": 1, "seconds_per_section": 0}, tasks=False)
    assert reply.result["content"] == [{"type": "text", "text": "Report on now: 1 sections"}], reply.body

    refused = await mcp.call_tool("build_report", {"sections": 1})
    assert refused.result["isError"] is True, refused.body  # no topic: no task, the synchronous answer


async def test_the_team_demo_worker_finds_temporal_through_temporal_address_and_fails_in_one_line() -> None:
    nowhere = f"127.0.0.1:{free_port()}"
    command = [CLI[0], "-m", "mcp_tasks_temporal.demo.nexus_team"]
    with anyio.fail_after(60):
        done = await anyio.run_process(command, env={**child_env(), "TEMPORAL_ADDRESS": nowhere}, check=False)
    err = done.stderr.decode()
    assert done.returncode != 0 and nowhere in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
