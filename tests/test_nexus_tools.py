"""Nexus-backed task tools across two namespaces of the session's Temporal dev server.

The other team's side is the demo's (`mcp_tasks_temporal.demo.nexus_team`): its
service and workflow on a worker in a namespace of its own, reached only through a
Nexus endpoint. Our side is the demo's Nexus app on a front and workers, and a reply
endpoint that targets our namespace and task queue for the handler's status. All of
them run in the test process; the team's worker command is a process of its own.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.worker import Worker

from mcp_tasks_temporal.demo.nexus_app import ENDPOINT_ENV
from mcp_tasks_temporal.demo.nexus_team import ReportsService
from mcp_tasks_temporal.demo.report_workflow import BuildReportWorkflow
from mcp_tasks_temporal.ops.dev.nexus_endpoints import ensure_endpoint, ensure_namespace
from mcp_tasks_temporal.ops.dev.nexus_routes import EndpointRoute
from mcp_tasks_temporal.temporal.connection import connect_temporal
from mcp_tasks_temporal.temporal.ids import UNKEYED
from mcp_tasks_temporal.temporal.nexus_contract import (
    ASK_SIGNAL,
    ASKED_BY_META,
    ROUTE_SIGNAL,
    STATUS_SIGNAL,
    Ask,
    Caller,
    ReplyRoute,
    StatusReport,
    handler_of_token,
)
from tests.cli_runs import run_in_process
from tests.front_app import InProcessFront, fresh_app, in_process_front
from tests.nexus_hostile import (
    FINISHED,
    PUPPET_ENDPOINT_ENV,
    PUPPET_QUEUE,
    ForgedQuestion,
    ForgedReport,
    Forgery,
    Puppet,
    PuppetService,
)
from tests.processes import CLI, child_env, free_port
from tests.wire import TaskCalls

pytestmark = pytest.mark.anyio

APP = "tests.nexus_fixture_app:app"
TEAM_QUEUE = "reports"
ELICIT: dict[str, Any] = {"elicitation": {}}


@dataclass
class NexusWorld:
    temporal: str
    team_namespace: str
    third_namespace: str
    """A namespace of neither side, where a forger runs its workflows."""
    env: dict[str, str]
    """What our side loads the app with."""


@pytest.fixture(scope="module")
async def world(temporal: str) -> AsyncIterator[NexusWorld]:
    """The other team's namespace, its endpoints and its worker (the demo's `nexus_team`, in this process), and the
    environment our app reads them from."""
    suffix = uuid.uuid4().hex[:8]
    team_namespace = f"reports-team-{suffix}"
    third_namespace = f"third-party-{suffix}"
    team_endpoint = EndpointRoute(f"team-reports-{suffix}", team_namespace, TEAM_QUEUE)
    puppet_endpoint = EndpointRoute(f"team-puppets-{suffix}", team_namespace, PUPPET_QUEUE)

    client = await connect_temporal(temporal)
    await ensure_namespace(client, team_namespace)
    await ensure_namespace(client, third_namespace)
    await ensure_endpoint(client, team_endpoint)
    await ensure_endpoint(client, puppet_endpoint)
    env = {ENDPOINT_ENV: team_endpoint.name, PUPPET_ENDPOINT_ENV: puppet_endpoint.name}
    team = await connect_temporal(temporal, namespace=team_namespace)
    reports = Worker(
        team, task_queue=TEAM_QUEUE, workflows=[BuildReportWorkflow], nexus_service_handlers=[ReportsService()]
    )
    with pytest.MonkeyPatch.context() as environment:
        for name, value in env.items():
            environment.setenv(name, value)
        async with reports:
            yield NexusWorld(temporal, team_namespace, third_namespace, env)


@pytest.fixture(scope="module")
def app_spec(world: NexusWorld) -> str:
    """The demo's Nexus app, loaded once the endpoints are in the environment."""
    return APP


@pytest.fixture(scope="module")
async def reply_endpoint(app_client: Client, app_queue: str) -> str:
    """The endpoint the handlers report through: our namespace, the queue of the module's workers."""
    route = EndpointRoute(f"mcp-tasks-reply-{uuid.uuid4().hex[:8]}", app_client.namespace, app_queue)
    await ensure_endpoint(app_client, route)
    await ensure_endpoint(app_client, route)  # a second start finds it there and keeps it
    return route.name


@pytest.fixture(scope="module")
async def front(
    app_client: Client, app_spec: str, app_queue: str, reply_endpoint: str
) -> AsyncIterator[InProcessFront]:
    """The app's front, as `serve --nexus-reply-endpoint` runs it."""
    app = fresh_app(app_spec)
    async with in_process_front(app, app_client, task_queue=app_queue, nexus_reply_endpoint=reply_endpoint) as served:
        yield served


async def handler_run_of(ours: Client, task_id: str) -> str:
    """The ID of the workflow in the team's namespace that serves this task's operation, as its token names it."""
    task = ours.get_workflow_handle(UNKEYED.workflow_id(task_id, None))
    with anyio.fail_after(30):
        while True:
            for operation in (await task.describe()).raw_description.pending_nexus_operations:
                handler = handler_of_token(operation.operation_token)
                if handler is not None:
                    return handler.workflow_id
            await anyio.sleep(0.2)


async def test_operation_result_is_the_tool_result(front_mcp: TaskCalls) -> None:
    arguments = {"topic": "Q3", "sections": 2, "seconds_per_section": 0.05}
    task_id = (await front_mcp.start("build_report", arguments))["taskId"]
    done = await front_mcp.wait_for(task_id, timeout=30)
    assert done["status"] == "completed", done
    assert done["result"]["isError"] is False
    assert done["result"]["content"] == [{"type": "text", "text": "Report on Q3: 2 sections"}]


async def test_status_crosses_and_cancel_ends_the_handler_workflow(
    world: NexusWorld, front_mcp: TaskCalls, temporal_client: Client
) -> None:
    arguments = {"topic": "slow", "sections": 1, "seconds_per_section": 600}
    task_id = (await front_mcp.start("build_report", arguments))["taskId"]
    working = await front_mcp.wait_for(
        task_id, lambda task: task.get("statusMessage") == "writing section 1/1 on slow", timeout=30
    )
    assert working["status"] == "working"
    team = await connect_temporal(world.temporal, namespace=world.team_namespace)
    handler = team.get_workflow_handle(await handler_run_of(temporal_client, task_id))
    assert (await handler.describe()).status == WorkflowExecutionStatus.RUNNING

    assert "error" not in (await front_mcp.cancel(task_id)).body
    assert (await front_mcp.wait_for(task_id, timeout=30))["status"] == "cancelled"
    # The task ends cancelled only once the handler side acknowledged: its workflow is already closed.
    assert (await handler.describe()).status == WorkflowExecutionStatus.CANCELED


async def test_expiry_cancels_the_handler_workflow(
    world: NexusWorld, front_mcp: TaskCalls, temporal_client: Client
) -> None:
    arguments = {"topic": "late", "sections": 1, "seconds_per_section": 600}
    task_id = (await front_mcp.start("short_report", arguments))["taskId"]
    team = await connect_temporal(world.temporal, namespace=world.team_namespace)
    handler = team.get_workflow_handle(await handler_run_of(temporal_client, task_id))
    # Past its TTL the task is gone for tasks/get (-32602); Temporal shows how both sides ended. The cancel
    # crosses to the team's namespace as a Nexus task, which Temporal retries with backoff when a loaded
    # handler worker is slow to take it: the bound is the TTL and a few of those retries.
    with anyio.fail_after(60):
        while (await handler.describe()).status == WorkflowExecutionStatus.RUNNING:
            await anyio.sleep(0.2)
    # Temporal alone would leave it running: a timed-out caller abandons its operations.
    assert (await handler.describe()).status == WorkflowExecutionStatus.CANCELED
    ours = temporal_client.get_workflow_handle(UNKEYED.workflow_id(task_id, None))
    with anyio.fail_after(30):
        while (await ours.describe()).status == WorkflowExecutionStatus.RUNNING:
            await anyio.sleep(0.2)
    assert (await ours.describe()).status == WorkflowExecutionStatus.FAILED  # expired on its own timer
    seen = await front_mcp.get(task_id)
    if "error" in seen.body:  # already past its TTL
        assert seen.error["code"] == -32602
    else:  # the run stops a margin before the TTL, so the cancel finishes inside it
        assert seen.result["status"] == "failed" and seen.result["error"]["code"] == -32603, seen.body


async def test_questions_cross_and_the_answers_come_back(
    world: NexusWorld, front_mcp: TaskCalls, temporal: str
) -> None:
    arguments = {"topic": "ask", "sections": 1, "seconds_per_section": 0, "ask_before_publishing": True}
    task_id = (await front_mcp.start("build_report", arguments, capabilities=ELICIT))["taskId"]
    asking = await front_mcp.wait_for(task_id, {"input_required"}, timeout=30)
    assert set(asking["inputRequests"]) == {"publish"}
    question = asking["inputRequests"]["publish"]
    assert question["method"] == "elicitation/create"
    # Shown as the other team's question, not this server's own.
    assert question["params"]["message"] == "[reports.build_report] Publish the report on ask?"
    assert question["params"]["_meta"][ASKED_BY_META] == {
        "endpoint": question["params"]["_meta"][ASKED_BY_META]["endpoint"],
        "service": "reports",
        "operation": "build_report",
    }
    answer = {"publish": {"action": "accept", "content": {"publish": True}}}
    assert "error" not in (await front_mcp.update(task_id, answer)).body
    done = await front_mcp.wait_for(task_id, timeout=30)
    assert done["status"] == "completed", done
    assert done["result"]["content"] == [{"type": "text", "text": "Report on ask: 1 sections, published"}]
    # Its status lines and question came over Nexus; the history replays on the code that ran it.
    audit = await run_in_process(
        ["audit", task_id, "--verify", "--app", APP, "--temporal", temporal], stdin="", env={**child_env(), **world.env}
    )
    assert audit.code == 0 and "verify: compatible" in audit.err, audit.err


async def test_a_question_the_client_cannot_answer_fails_the_task_with_32021(front_mcp: TaskCalls) -> None:
    arguments = {"topic": "ask", "sections": 1, "seconds_per_section": 0, "ask_before_publishing": True}
    task_id = (await front_mcp.start("build_report", arguments))["taskId"]  # no elicitation capability declared
    done = await front_mcp.wait_for(task_id, timeout=30)
    assert done["status"] == "failed" and done["error"]["code"] == -32021, done


async def test_operation_failure_is_a_tool_error_naming_the_operation(front_mcp: TaskCalls) -> None:
    task_id = (await front_mcp.start("build_report", {"topic": " ", "sections": 1}))["taskId"]
    done = await front_mcp.wait_for(task_id, timeout=30)
    assert done["status"] == "completed" and done["result"]["isError"] is True, done
    assert done["result"]["content"][0]["text"] == "reports.build_report failed: a report needs a topic"


async def test_schema_and_synchronous_call(front_mcp: TaskCalls) -> None:
    tools = (await front_mcp.client.request("tools/list", {})).result["tools"]
    tool = next(t for t in tools if t["name"] == "build_report")
    assert "outputSchema" not in tool  # a text result, as for a workflow tool returning str
    assert tool["inputSchema"]["required"] == ["topic"]
    assert set(tool["inputSchema"]["properties"]) == {
        "topic",
        "sections",
        "seconds_per_section",
        "ask_before_publishing",
    }

    now = {"topic": "now", "sections": 1, "seconds_per_section": 0}
    reply = await front_mcp.call_tool("build_report", now, tasks=False)
    assert reply.result["content"] == [{"type": "text", "text": "Report on now: 1 sections"}], reply.body

    refused = await front_mcp.call_tool("build_report", {"sections": 1})
    assert refused.result["isError"] is True, refused.body  # no topic: no task, the synchronous answer


# -- the reply path takes reports and questions only from the handler our operation started ----------------


@asynccontextmanager
async def puppet_task(world: NexusWorld, mcp: TaskCalls, temporal_client: Client) -> AsyncGenerator[Puppeteer]:
    """A running `puppet` task, the worker of its handler in the team's namespace, and the handler's route."""
    team = await connect_temporal(world.temporal, namespace=world.team_namespace)
    worker = Worker(team, task_queue=PUPPET_QUEUE, workflows=[Puppet], nexus_service_handlers=[PuppetService()])
    async with worker:
        task_id = (await mcp.start("puppet", {"input": "p"}, capabilities=ELICIT))["taskId"]
        handler = team.get_workflow_handle(await handler_run_of(temporal_client, task_id))
        ours = temporal_client.get_workflow_handle(UNKEYED.workflow_id(task_id, None))
        puppeteer = Puppeteer(mcp, task_id, ours, handler, await stolen_route(handler))
        await puppeteer.order("step 1")
        await mcp.wait_for(task_id, lambda task: task.get("statusMessage") == "step 1", timeout=30)
        try:
            yield puppeteer
        finally:
            if (await handler.describe()).status == WorkflowExecutionStatus.RUNNING:
                await handler.terminate("test over")


@dataclass
class Puppeteer:
    mcp: TaskCalls
    task_id: str
    ours: WorkflowHandle[Any, Any]
    handler: WorkflowHandle[Any, Any]
    route: ReplyRoute

    async def order(self, text: str) -> None:
        await self.handler.signal("order", text)

    @property
    def caller(self) -> Caller:
        return Caller(self.handler_namespace, self.handler.id, "any-run")

    @property
    def handler_namespace(self) -> str:
        return self.handler._client.namespace  # pyright: ignore[reportPrivateUsage]

    async def status(self) -> str | None:
        reply = await self.mcp.get(self.task_id)
        return reply.result.get("statusMessage")


async def stolen_route(handler: WorkflowHandle[Any, Any]) -> ReplyRoute:
    """What a reader of the team's histories learns: the route signal's input (no codec on that namespace)."""
    with anyio.fail_after(30):
        while True:
            async for event in handler.fetch_history_events():
                attributes = event.workflow_execution_signaled_event_attributes
                if event.HasField("workflow_execution_signaled_event_attributes") and (
                    attributes.signal_name == ROUTE_SIGNAL
                ):
                    return ReplyRoute(**json.loads(attributes.input.payloads[0].data))
            await anyio.sleep(0.2)


def signal_named(signal: str) -> Callable[[HistoryEvent], bool]:
    def matches(event: HistoryEvent) -> bool:
        return (
            event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
            and event.workflow_execution_signaled_event_attributes.signal_name == signal
        )

    return matches


async def taken_in(
    ours: WorkflowHandle[Any, Any], signal: str | Callable[[HistoryEvent], bool], count: int = 1
) -> None:
    """Until `count` matching events are in the task's history and a workflow task has run after the last."""
    matches = signal_named(signal) if isinstance(signal, str) else signal
    with anyio.fail_after(30):
        while True:
            events = [event async for event in ours.fetch_history_events()]
            matched = [event.event_id for event in events if matches(event)]
            if len(matched) >= count and any(
                event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED and event.event_id > matched[-1]
                for event in events
            ):
                return
            await anyio.sleep(0.2)


async def signals_named(ours: WorkflowHandle[Any, Any], signal: str) -> int:
    matches = signal_named(signal)
    return len([event async for event in ours.fetch_history_events() if matches(event)])


async def test_a_forged_report_sent_straight_to_the_task_is_ignored(
    world: NexusWorld, front_mcp: TaskCalls, temporal_client: Client
) -> None:
    async with puppet_task(world, front_mcp, temporal_client) as puppet:
        before = await signals_named(puppet.ours, STATUS_SIGNAL)
        forged = [
            # the handler's identity, without the nonce
            StatusReport(puppet.ours.id, "guessed-nonce", 2, "forged: no nonce", puppet.caller),
            # the nonce, from a workflow that is not the handler
            StatusReport(puppet.ours.id, puppet.route.nonce, 2, "forged: other caller", Caller("x", "y", "z")),
            # the nonce and no caller at all (as a report from before callers were stamped)
            StatusReport(puppet.ours.id, puppet.route.nonce, 2, "forged: no caller"),
        ]
        for report in forged:
            await puppet.ours.signal(STATUS_SIGNAL, report)
        await taken_in(puppet.ours, STATUS_SIGNAL, before + len(forged))
        assert await puppet.status() == "step 1"


async def test_a_replayed_or_far_ahead_report_does_not_pin_the_status_line(
    world: NexusWorld, front_mcp: TaskCalls, temporal_client: Client
) -> None:
    async with puppet_task(world, front_mcp, temporal_client) as puppet:
        await puppet.order("step 2")
        await front_mcp.wait_for(puppet.task_id, lambda task: task.get("statusMessage") == "step 2", timeout=30)
        before = await signals_named(puppet.ours, STATUS_SIGNAL)
        replayed = StatusReport(puppet.ours.id, puppet.route.nonce, 1, "step 1", puppet.caller)
        pinned = StatusReport(puppet.ours.id, puppet.route.nonce, 2**62, "pinned for good", puppet.caller)
        await puppet.ours.signal(STATUS_SIGNAL, replayed)
        await puppet.ours.signal(STATUS_SIGNAL, pinned)
        await taken_in(puppet.ours, STATUS_SIGNAL, before + 2)
        assert await puppet.status() == "step 2"
        # The handler's own next report still shows: nothing pinned the line.
        await puppet.order("step 3")
        await front_mcp.wait_for(puppet.task_id, lambda task: task.get("statusMessage") == "step 3", timeout=30)


async def test_a_forged_question_sent_straight_to_the_task_is_not_asked(
    world: NexusWorld, front_mcp: TaskCalls, temporal_client: Client
) -> None:
    async with puppet_task(world, front_mcp, temporal_client) as puppet:
        before = await signals_named(puppet.ours, ASK_SIGNAL)
        question = {"sso": {"method": "elicitation/create", "params": {"message": "Your SSO password?"}}}
        await puppet.ours.signal(ASK_SIGNAL, Ask(puppet.route.nonce, question, "mcp-tasks-nexus-question/x", None))
        await puppet.ours.signal(
            ASK_SIGNAL, Ask(puppet.route.nonce, question, "mcp-tasks-nexus-question/y", Caller("x", "y", "z"))
        )
        await taken_in(puppet.ours, ASK_SIGNAL, before + 2)
        seen = (await front_mcp.get(puppet.task_id)).result
        assert seen["status"] == "working" and "inputRequests" not in seen, seen


async def test_a_third_namespace_holding_the_nonce_can_neither_report_nor_ask(
    world: NexusWorld, front_mcp: TaskCalls, temporal_client: Client, reply_endpoint: str
) -> None:
    third = await connect_temporal(world.temporal, namespace=world.third_namespace)
    async with (
        puppet_task(world, front_mcp, temporal_client) as puppet,
        Worker(third, task_queue="forgers", workflows=[ForgedReport, ForgedQuestion]),
    ):
        # Everything a reader of the team's namespace can learn, and the handler's identity claimed outright.
        forgery = Forgery(reply_endpoint, puppet.ours.id, puppet.route.nonce, puppet.caller, sequence=2**62)
        before = await signals_named(puppet.ours, STATUS_SIGNAL)
        await third.execute_workflow(ForgedReport.run, forgery, id=f"forge-{uuid.uuid4()}", task_queue="forgers")
        await taken_in(puppet.ours, STATUS_SIGNAL, before + 1)  # it reached the task, stamped with its real caller
        assert await puppet.status() == "step 1"

        asks = await signals_named(puppet.ours, ASK_SIGNAL)
        asker = await third.start_workflow(
            ForgedQuestion.run, forgery, id=f"forge-{uuid.uuid4()}", task_queue="forgers"
        )
        await taken_in(puppet.ours, ASK_SIGNAL, asks + 1)
        seen = (await front_mcp.get(puppet.task_id)).result
        assert seen["status"] == "working" and "inputRequests" not in seen, seen
        await asker.cancel()
        # The handler itself still reports.
        await puppet.order("step 2")
        await front_mcp.wait_for(puppet.task_id, lambda task: task.get("statusMessage") == "step 2", timeout=30)


async def test_a_handler_that_withdraws_its_question_does_not_end_the_task(
    world: NexusWorld, front_mcp: TaskCalls, temporal_client: Client
) -> None:
    async with puppet_task(world, front_mcp, temporal_client) as puppet:
        await puppet.order("ask")
        asking = await front_mcp.wait_for(puppet.task_id, {"input_required"}, timeout=30)
        assert asking["inputRequests"]["go"]["params"]["message"] == "[hostile.puppet] Go on?"
        await puppet.order("withdraw")
        # Taken back from the client: the task works on, showing no question.
        withdrawn = await front_mcp.wait_for(
            puppet.task_id,
            lambda task: task.get("statusMessage") == "withdrew the question" and "inputRequests" not in task,
            timeout=30,
        )
        assert withdrawn["status"] == "working", withdrawn
        # A client that answers anyway (it polled before) is ignored, as for any key no longer outstanding.
        assert "error" not in (await front_mcp.update(puppet.task_id, {"go": {"action": "accept", "content": {}}})).body
        assert (await front_mcp.get(puppet.task_id)).result["status"] == "working"
        await puppet.order("finish")
        done = await front_mcp.wait_for(puppet.task_id, timeout=30)
        assert done["status"] == "completed" and done["result"]["isError"] is False, done
        assert done["result"]["content"] == [{"type": "text", "text": FINISHED}]


async def test_the_team_demo_worker_finds_temporal_through_temporal_address_and_fails_in_one_line() -> None:
    nowhere = f"127.0.0.1:{free_port()}"
    command = [CLI[0], "-m", "mcp_tasks_temporal.demo.nexus_team"]
    with anyio.fail_after(60):
        done = await anyio.run_process(command, env={**child_env(), "TEMPORAL_ADDRESS": nowhere}, check=False)
    err = done.stderr.decode()
    assert done.returncode != 0 and nowhere in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
