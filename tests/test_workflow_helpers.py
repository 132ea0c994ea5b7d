"""Workflow tools in-process: days-long waits under time skipping, replay of committed histories, pure mapping.

The front-side code here is the real `TemporalTaskGateway` (what `tasks/get`,
`tasks/update` and `tools/call` run), against a real Temporal dev server.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel
from temporalio import workflow
from temporalio.client import Client, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import ActivityError, ApplicationError, RetryState
from temporalio.testing import TimeSkipper
from temporalio.worker import Replayer, Worker

from mcp_tasks_temporal import TasksExtension
from mcp_tasks_temporal.front.gateway import TemporalTaskGateway, WorkflowTask
from mcp_tasks_temporal.temporal.connection import connect_temporal
from mcp_tasks_temporal.temporal.contract import (
    CLIENT_CAPABILITIES_META_KEY,
    EXTENSION_ID,
    PLAIN_CALL_META_KEY,
    TERMINAL_STATUSES,
)
from mcp_tasks_temporal.temporal.sandbox import workflow_runner
from mcp_tasks_temporal.temporal.tool_results import call_tool_result, failure_outcome
from mcp_tasks_temporal.temporal.workflow_api import task_error
from mcp_tasks_temporal.temporal.workflows import ToolTaskWorkflow
from tests.polling import pauses
from tests.workflow_fixture_activities import refuse, run_step
from tests.workflow_fixture_models import LoopState, PipelineRequest
from tests.workflow_fixture_workflows import (
    APPROVE,
    FailingWorkflow,
    GreetingWorkflow,
    LoopingWorkflow,
    PipelineWorkflow,
    QuestionsWorkflow,
    WaitingWorkflow,
)

pytestmark = pytest.mark.anyio

# Their own folder: `test_histories.py` replays every history in `histories/` and its folders.
HISTORIES = Path(__file__).parent / "histories"
WORKFLOW_TOOL_HISTORIES = HISTORIES / "workflow_tools"
FIXTURE_WORKFLOWS = [
    GreetingWorkflow,
    PipelineWorkflow,
    FailingWorkflow,
    LoopingWorkflow,
    QuestionsWorkflow,
    WaitingWorkflow,
]
ENVELOPE: dict[str, Any] = {CLIENT_CAPABILITIES_META_KEY: {"elicitation": {}, "extensions": {EXTENSION_ID: {}}}}
PLAIN_ENVELOPE: dict[str, Any] = {CLIENT_CAPABILITIES_META_KEY: {}, PLAIN_CALL_META_KEY: {"answerable": {}}}
YES = {"action": "accept", "content": {"approve": True}}


def workflow_task(workflow_name: str, args: list[Any], *, ttl_ms: int | None = 60_000) -> WorkflowTask:
    return WorkflowTask(
        task_id=str(uuid.uuid4()),
        tool=workflow_name,
        workflow=workflow_name,
        args=args,
        task_queue=None,
        envelope=ENVELOPE,
        created_at_ms=int(time.time() * 1000),
        ttl_ms=ttl_ms,
        poll_interval_ms=100,
    )


async def until_status(gateway: TemporalTaskGateway, task_id: str, wanted: set[str]) -> dict[str, Any]:
    """The task once its status is one of `wanted`; fails at once if it ends otherwise (an end never changes)."""
    wait = pauses()
    with anyio.fail_after(30):
        while (task := await gateway.get(task_id, None))["status"] not in wanted:
            if task["status"] in TERMINAL_STATUSES:
                raise AssertionError(f"task {task_id} ended {task['status']} before reaching {sorted(wanted)}: {task}")
            await anyio.sleep(next(wait))
    return task


# -- multi-day wait -----------------------------------------------------------------------------


async def test_a_question_then_a_wait_of_days_under_time_skipping(time_skipper: TimeSkipper) -> None:
    queue = f"skip-{uuid.uuid4()}"
    gateway = TemporalTaskGateway(time_skipper.client, task_queue=queue)
    # No TTL: its execution timeout is a timer too, and the skipping clock would jump to it while we answer.
    task = workflow_task("WaitingWorkflow", [3], ttl_ms=None)
    async with Worker(
        time_skipper.client, task_queue=queue, workflows=[WaitingWorkflow], workflow_runner=workflow_runner()
    ):
        await gateway.create_workflow_task(task, None)
        asking = await until_status(gateway, task.task_id, {"input_required"})
        assert asking["inputRequests"] == {"go": APPROVE}
        await gateway.update(task.task_id, None, {"go": YES})
        started = time.monotonic()
        done = await until_status(gateway, task.task_id, {"completed", "failed"})
    assert done["status"] == "completed", done
    assert done["result"]["structuredContent"] == {"result": ["waited", "accept"]}
    assert time.monotonic() - started < 60  # three days of workflow time, far less of ours


# -- histories ----------------------------------------------------------------------------------


@pytest.fixture
async def fixture_worker(temporal: str, tmp_path: Path) -> AsyncIterator[tuple[Client, Worker]]:
    client = await connect_temporal(temporal)
    async with Worker(
        client,
        task_queue=f"hist-{uuid.uuid4()}",
        workflows=FIXTURE_WORKFLOWS,
        activities=[run_step, refuse],
        max_cached_workflows=0,  # every workflow task replays the whole history
        workflow_runner=workflow_runner(),
    ) as worker:
        yield client, worker


async def test_fresh_workflow_tool_histories_replay_and_can_be_recorded(
    fixture_worker: tuple[Client, Worker], tmp_path: Path
) -> None:
    client, worker = fixture_worker
    gateway = TemporalTaskGateway(client, task_queue=worker.task_queue)
    request = PipelineRequest(ref="h1", effects=str(tmp_path), approve_before="deploy")
    pipeline = workflow_task("ReleasePipeline", [request])
    handle = client.get_workflow_handle((await gateway.start_workflow_task(pipeline, None)).workflow_id)
    loop = workflow_task("LoopingWorkflow", [LoopState(1, 2)])
    # Two independent tasks: the loop runs its rounds while the pipeline waits for its answer.
    loop_started = await gateway.start_workflow_task(loop, None)
    loop_handle = client.get_workflow_handle(loop_started.workflow_id)
    await until_status(gateway, pipeline.task_id, {"input_required"})
    await gateway.update(pipeline.task_id, None, {"approve": YES})
    await until_status(gateway, pipeline.task_id, {"completed"})
    done = await until_status(gateway, loop.task_id, {"completed"})
    assert done["result"]["structuredContent"]["rounds"] == 2

    first_run = client.get_workflow_handle(loop_started.workflow_id, run_id=loop_started.run_id)
    histories = {
        "workflow_tool_question": await handle.fetch_history(),
        "workflow_tool_continued_first_run": await first_run.fetch_history(),
        "workflow_tool_continued_last_run": await loop_handle.fetch_history(),
    }
    replayer = Replayer(
        workflows=FIXTURE_WORKFLOWS, data_converter=pydantic_data_converter, workflow_runner=workflow_runner()
    )
    for history in histories.values():
        await replayer.replay_workflow(history)
    if os.environ.get("MCP_TASKS_WRITE_HISTORIES"):
        for name, history in histories.items():
            (WORKFLOW_TOOL_HISTORIES / f"{name}.json").write_text(history.to_json())


async def test_a_plain_calls_question_is_published_and_a_cancel_keeps_its_reason_and_replays(
    fixture_worker: tuple[Client, Worker], tmp_path: Path
) -> None:
    client, worker = fixture_worker
    gateway = TemporalTaskGateway(client, task_queue=worker.task_queue)
    request = PipelineRequest(ref="h2", effects=str(tmp_path), approve_before="deploy")
    # A plain call from a client without elicitation: the workflow still publishes, the front decides.
    plain = replace(workflow_task("ReleasePipeline", [request]), envelope=PLAIN_ENVELOPE)
    handle = client.get_workflow_handle((await gateway.start_workflow_task(plain, None)).workflow_id)
    asking = await until_status(gateway, plain.task_id, {"input_required"})
    assert asking["inputRequests"] == {"approve": APPROVE}
    await gateway.cancel(plain.task_id, None, reason="Cancelled: nobody can answer")
    done = await until_status(gateway, plain.task_id, {"cancelled"})
    assert done["statusMessage"] == "Cancelled: nobody can answer"
    history = await handle.fetch_history()
    await Replayer(
        workflows=FIXTURE_WORKFLOWS, data_converter=pydantic_data_converter, workflow_runner=workflow_runner()
    ).replay_workflow(history)
    if os.environ.get("MCP_TASKS_WRITE_HISTORIES"):
        (WORKFLOW_TOOL_HISTORIES / "workflow_tool_plain_call_cancelled.json").write_text(history.to_json())


@pytest.mark.parametrize("path", sorted(WORKFLOW_TOOL_HISTORIES.glob("*.json")), ids=lambda p: p.stem)
async def test_committed_workflow_tool_histories_still_replay(path: Path) -> None:
    history = WorkflowHistory.from_json(f"wf-history/{path.stem}", path.read_text())
    await Replayer(
        workflows=FIXTURE_WORKFLOWS, data_converter=pydantic_data_converter, workflow_runner=workflow_runner()
    ).replay_workflow(history)


@pytest.mark.parametrize("path", sorted(HISTORIES.glob("input_round*.json")), ids=lambda p: p.stem)
async def test_tool_task_histories_replay_with_the_pydantic_converter(path: Path) -> None:
    history = WorkflowHistory.from_json(f"wf-test/{path.stem}", path.read_text())
    await Replayer(
        workflows=[ToolTaskWorkflow], data_converter=pydantic_data_converter, workflow_runner=workflow_runner()
    ).replay_workflow(history)


# -- pure mapping and registration -----------------------------------------------------------


class Report(BaseModel):
    ok: bool


def test_return_values_map_like_an_mcp_tool_result() -> None:
    assert call_tool_result(None) == {"resultType": "complete", "content": [], "isError": False}
    assert call_tool_result("done")["content"] == [{"type": "text", "text": "done"}]
    mapped = call_tool_result({"ok": True})
    assert mapped["structuredContent"] == {"ok": True} and mapped["content"][0]["text"] == '{\n  "ok": true\n}'
    assert call_tool_result([1, 2])["structuredContent"] == {"result": [1, 2]}
    assert call_tool_result(7)["structuredContent"] == {"result": 7}


def activity_failure(retry_state: RetryState, cause: BaseException) -> ActivityError:
    """What a workflow sees when its activity failed with `cause` and will not be retried."""
    failure = ActivityError(
        "Activity task failed",
        scheduled_event_id=1,
        started_event_id=2,
        identity="w",
        activity_type="refuse",
        activity_id="1",
        retry_state=retry_state,
    )
    failure.__cause__ = cause
    return failure


def test_failures_map_to_a_tool_error_unless_they_carry_a_json_rpc_error() -> None:
    plain = failure_outcome(ApplicationError("out of disk"))
    assert plain.status == "completed" and plain.result is not None
    assert plain.result["isError"] is True and plain.result["content"][0]["text"] == "out of disk"
    rpc = failure_outcome(task_error(-32050, "closed", {"a": 1}))
    assert rpc.status == "failed" and rpc.error == {"code": -32050, "message": "closed", "data": {"a": 1}}
    wrapped = activity_failure(RetryState.NON_RETRYABLE_FAILURE, task_error(-32051, "quota"))
    assert failure_outcome(wrapped).error == {"code": -32051, "message": "quota"}
    compiler_crash = ApplicationError("compiler crashed", type="ValueError")
    crashed = activity_failure(RetryState.MAXIMUM_ATTEMPTS_REACHED, compiler_crash)
    outcome = failure_outcome(crashed)
    assert outcome.result is not None and outcome.result["content"][0]["text"] == "compiler crashed"


@dataclass
class Args:
    ref: str
    retries: int = 2


@workflow.defn(name="tests.Decorated")
class Decorated:
    @workflow.run
    async def run(self, args: Args) -> list[Report]:
        return [Report(ok=bool(args.ref))]


@workflow.defn(name="tests.Greeting")
class Greeting:
    """Says hello."""

    @workflow.run
    async def run(self, name: str) -> str:
        return name


def test_workflow_tool_registers_as_a_call_and_as_a_decorator() -> None:
    tasks = TasksExtension()
    assert tasks.workflow_tool(Decorated, name="decorated") is Decorated

    assert tasks.workflow_tool(name="greeting", policy="required", ttl_ms=5000)(Greeting) is Greeting
    assert tasks.workflow_tool(GreetingWorkflow) is GreetingWorkflow
    options = tasks.workflow_tools
    assert set(options) == {"decorated", "greeting", "GreetingWorkflow"}
    assert options["greeting"].policy == "required" and options["greeting"].description == "Says hello."
    assert options["greeting"].workflow_args({"name": "Ada"}) == ["Ada"]
    assert options["decorated"].workflow_args({"ref": "x", "retries": 1}) == [Args("x", 1)]
    schema = options["decorated"].output_schema()
    assert schema is not None and schema["properties"]["result"]["type"] == "array" and "$defs" in schema
    assert options["greeting"].output_schema() is None
    assert replace(options["greeting"], return_type=Report | None).output_schema() is None
    assert replace(options["greeting"], return_type=int).output_schema() == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }
    with pytest.raises(ValueError, match="already registered"):
        tasks.workflow_tool(Decorated, name="decorated")
    with pytest.raises(ValueError, match="not a @workflow.defn"):
        tasks.workflow_tool(Args)
    with pytest.raises(ValueError, match="policy"):
        tasks.workflow_tool(Decorated, name="other", policy="sometimes")  # type: ignore[arg-type]


def test_workers_get_each_workflow_tool_on_its_queue_once() -> None:
    from mcp_tasks_temporal.temporal.worker import workflow_tools_on

    tasks = TasksExtension()
    tasks.workflow_tool(GreetingWorkflow, activities=[run_step])
    tasks.workflow_tool(PipelineWorkflow, name="release", task_queue="app-queue", activities=[run_step])
    tasks.workflow_tool(WaitingWorkflow, name="waits", task_queue="long-waits", activities=[refuse])
    assert workflow_tools_on(tasks, "app-queue", default_queue="app-queue") == (
        [GreetingWorkflow, PipelineWorkflow],
        [run_step],
    )
    assert workflow_tools_on(tasks, "long-waits", default_queue="app-queue") == ([WaitingWorkflow], [refuse])


def test_questions_in_wire_form_or_as_mcp_types_models_are_the_same_question() -> None:
    from mcp_types import ElicitRequest, ElicitRequestFormParams

    from mcp_tasks_temporal.temporal.workflow_api import INVALID_INPUT_REQUEST, _wire_request  # pyright: ignore[reportPrivateUsage]

    schema: Any = APPROVE["params"]["requestedSchema"]  # pyright: ignore[reportArgumentType, reportCallIssue, reportIndexIssue]
    model = ElicitRequest(params=ElicitRequestFormParams(message="Deploy?", requested_schema=schema))
    assert _wire_request("approve", model) == APPROVE
    assert _wire_request("approve", APPROVE) == APPROVE
    with pytest.raises(ApplicationError) as refused:
        _wire_request("approve", {"params": {}})
    assert refused.value.type == INVALID_INPUT_REQUEST and refused.value.non_retryable
