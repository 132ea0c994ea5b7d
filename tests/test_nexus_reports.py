"""A Nexus tool's task workflow on its own: status reports sent straight to it, and a cancel without a TTL.

One in-process worker on the session's dev server hosts both sides (the task
workflow, the reply service, and a stand-in for the other team's handler
workflow behind an endpoint of its own), so each check takes a second or two.
The reports are signals, as the reply service delivers them, sent the way any
Temporal client could: the task workflow's own handler is what must refuse a
forged nonce, an out-of-date sequence or a caller that is not the handler (by its
namespace and workflow ID both). A forger that goes through the reply service
itself is stamped there with its real caller, whatever its report claims. The
end-to-end path across two namespaces is test_nexus_tools.py's.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import CancelledError
from temporalio.worker import Worker

from mcp_tasks_temporal.ops.dev.nexus_endpoints import ensure_endpoint
from mcp_tasks_temporal.ops.dev.nexus_routes import EndpointRoute
from mcp_tasks_temporal.temporal.contract import WORKFLOW_KIND, Memo
from mcp_tasks_temporal.temporal.nexus_contract import (
    NEXUS_TOOL_WORKFLOW,
    ROUTE_SIGNAL,
    STATUS_SIGNAL,
    Caller,
    NexusCall,
    StatusReport,
)
from mcp_tasks_temporal.temporal.nexus_reply import ReplyService
from mcp_tasks_temporal.temporal.sandbox import workflow_runner
from mcp_tasks_temporal.temporal.workflows.nexus_question import NexusQuestionWorkflow
from mcp_tasks_temporal.temporal.workflows.nexus_tool import NexusToolWorkflow
from tests.direct_signals import signal_handled
from tests.nexus_hostile import ForgedReport, Forgery
from tests.nexus_report_handler import FINISH_SIGNAL, OPERATION, SERVICE, ReportingHandler, ReportingService
from tests.polling import pauses

pytestmark = pytest.mark.anyio

WAIT_S = 10


@dataclass
class Side:
    client: Client
    worker: Worker
    endpoint: str


@pytest.fixture
async def side(temporal_client: Client) -> AsyncIterator[Side]:
    queue = f"nexus-reports-{uuid.uuid4()}"
    # One endpoint serves both directions here: it targets the queue where the handler and the reply service run.
    endpoint = f"nexus-reports-{uuid.uuid4().hex[:12]}"
    await ensure_endpoint(temporal_client, EndpointRoute(endpoint, temporal_client.namespace, queue))
    worker = Worker(
        temporal_client,
        task_queue=queue,
        workflows=[NexusToolWorkflow, NexusQuestionWorkflow, ReportingHandler, ForgedReport],
        nexus_service_handlers=[ReportingService(), ReplyService()],
        workflow_runner=workflow_runner(),
    )
    async with worker:
        yield Side(temporal_client, worker, endpoint)


async def start_task(side: Side, statuses: list[str] = []) -> tuple[WorkflowHandle[Any, Any], WorkflowHandle[Any, Any]]:  # noqa: B006
    """A task workflow with no TTL whose operation is running; (task workflow, handler workflow)."""
    handler_id = f"reporting-handler-{uuid.uuid4()}"
    call = NexusCall(
        endpoint=side.endpoint,
        service=SERVICE,
        operation=OPERATION,
        input={"handler_id": handler_id, "statuses": statuses},
        reply_endpoint=side.endpoint,
    )
    task = await side.client.start_workflow(
        NEXUS_TOOL_WORKFLOW,
        call,
        id=f"nexus-report-task/{uuid.uuid4()}",
        task_queue=side.worker.task_queue,
        memo={Memo.KIND: WORKFLOW_KIND, Memo.STATUS: "working"},
    )
    handler = side.client.get_workflow_handle(handler_id)
    await until(lambda: running(handler), what="the handler workflow to run")
    # The handler's workflow runs a little before the caller records the start; a cancel in between
    # finds an operation that has not started, which Temporal cancels without its handler.
    await until(lambda: operation_started(task), what="the task to record its operation's start")
    return task, handler


async def operation_started(task: WorkflowHandle[Any, Any]) -> bool:
    events = [event.event_type async for event in task.fetch_history_events()]
    return EventType.EVENT_TYPE_NEXUS_OPERATION_STARTED in events


async def running(handle: WorkflowHandle[Any, Any]) -> bool:
    try:
        return (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
    except Exception:  # not started yet
        return False


async def closed(handle: WorkflowHandle[Any, Any]) -> bool:
    return (await handle.describe()).status != WorkflowExecutionStatus.RUNNING


async def until(check: Callable[[], Awaitable[bool]], *, what: str) -> None:
    wait = pauses()
    with anyio.fail_after(WAIT_S):
        while not await check():
            await anyio.sleep(next(wait))


async def status_line(task: WorkflowHandle[Any, Any]) -> str | None:
    memo = await (await task.describe()).memo()
    line = memo.get(Memo.STATUS_MESSAGE)
    return line if isinstance(line, str) else None


async def reports_handled(task: WorkflowHandle[Any, Any], count: int) -> bool:
    """`count` status reports were signalled to the task workflow, and a workflow task completed after the last."""
    events = [event async for event in task.fetch_history_events()]
    reports = [
        at
        for at, event in enumerate(events)
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
        and event.workflow_execution_signaled_event_attributes.signal_name == STATUS_SIGNAL
    ]
    if len(reports) < count:
        return False
    after = events[reports[-1] + 1 :]
    return any(event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED for event in after)


async def nonce_of(handler: WorkflowHandle[Any, Any]) -> str:
    """The nonce the task drew for its operation, as the handler workflow received it (its route signal)."""
    with anyio.fail_after(WAIT_S):
        while True:
            async for event in handler.fetch_history_events():
                attributes = event.workflow_execution_signaled_event_attributes
                if event.HasField("workflow_execution_signaled_event_attributes") and (
                    attributes.signal_name == ROUTE_SIGNAL
                ):
                    return str(json.loads(attributes.input.payloads[0].data)["nonce"])
            await anyio.sleep(0.05)


async def report(
    task: WorkflowHandle[Any, Any], handler: WorkflowHandle[Any, Any], *, nonce: str, sequence: int, text: str
) -> None:
    """A report as the reply service hands it on: stamped with the handler workflow as its caller."""
    caller = Caller("default", handler.id, "any-run")  # both sides run in the session's namespace here
    await signal_handled(task, STATUS_SIGNAL, StatusReport(task.id, nonce, sequence, text, caller), timeout=WAIT_S)


async def test_the_handlers_status_lines_cross_in_order(side: Side) -> None:
    task, handler = await start_task(side, ["drafting", "reviewing"])
    # Both reports reached the task workflow and it handled them: its line must be the later one by then.
    await until(lambda: reports_handled(task, 2), what="both reports to reach the task workflow")
    assert await status_line(task) == "reviewing"
    await handler.signal(FINISH_SIGNAL)
    with anyio.fail_after(WAIT_S):
        assert await task.result() == "finished"


async def test_a_report_with_a_forged_nonce_never_becomes_the_status_line(side: Side) -> None:
    task, handler = await start_task(side)
    nonce = await nonce_of(handler)
    await report(task, handler, nonce=nonce, sequence=1, text="genuine")
    assert await status_line(task) == "genuine", "a report with the operation's nonce is shown"
    await report(task, handler, nonce=str(uuid.uuid4()), sequence=2, text="forged")
    await report(task, handler, nonce="", sequence=3, text="forged without a nonce")
    assert await status_line(task) == "genuine"
    await task.cancel()


async def test_an_older_report_never_overwrites_a_newer_one(side: Side) -> None:
    task, handler = await start_task(side)
    nonce = await nonce_of(handler)
    await report(task, handler, nonce=nonce, sequence=100, text="step 100")
    assert await status_line(task) == "step 100"
    await report(task, handler, nonce=nonce, sequence=50, text="step 50")
    await report(task, handler, nonce=nonce, sequence=100, text="step 100 again")
    assert await status_line(task) == "step 100"
    await report(task, handler, nonce=nonce, sequence=101, text="step 101")
    assert await status_line(task) == "step 101"
    await task.cancel()


async def test_a_cancelled_task_without_a_ttl_ends_cancelled_with_its_handler(side: Side) -> None:
    task, handler = await start_task(side)
    await task.cancel()
    with anyio.fail_after(WAIT_S), pytest.raises(WorkflowFailureError) as ended:
        await task.result()
    assert isinstance(ended.value.cause, CancelledError), ended.value.cause
    assert (await task.describe()).status == WorkflowExecutionStatus.CANCELED
    # The task ends once the handler side acknowledged, and its workflow ends cancelled: in one loaded CI run it
    # still showed running when the task had ended, so this waits for it (a wrong end fails at once).
    await until(lambda: closed(handler), what="the handler workflow to end")
    assert (await handler.describe()).status == WorkflowExecutionStatus.CANCELED


async def test_a_report_naming_the_handlers_workflow_id_in_another_namespace_never_becomes_the_status_line(
    side: Side,
) -> None:
    """The handler is its namespace and workflow ID together: another namespace may hold a workflow of that ID."""
    task, handler = await start_task(side)
    nonce = await nonce_of(handler)
    await report(task, handler, nonce=nonce, sequence=1, text="genuine")
    assert await status_line(task) == "genuine"
    elsewhere = Caller(f"not-{side.client.namespace}", handler.id, "any-run")
    forged = StatusReport(task.id, nonce, 2, "from a namesake in another namespace", elsewhere)
    await signal_handled(task, STATUS_SIGNAL, forged, timeout=WAIT_S)
    assert await status_line(task) == "genuine"
    await task.cancel()


async def test_a_report_through_the_reply_service_is_stamped_with_its_real_caller_whatever_it_claims(
    side: Side,
) -> None:
    """A workflow that holds the nonce but is not the handler claims the handler's identity in the report's body."""
    task, handler = await start_task(side)
    nonce = await nonce_of(handler)
    await report(task, handler, nonce=nonce, sequence=1, text="genuine")
    claimed = Caller(side.client.namespace, handler.id, "any-run")
    forgery = Forgery(side.endpoint, task.id, nonce, claimed, sequence=2, text="forged through the reply service")
    with anyio.fail_after(WAIT_S):
        await side.client.execute_workflow(
            ForgedReport.run, forgery, id=f"forger-{uuid.uuid4()}", task_queue=side.worker.task_queue
        )
    await until(lambda: reports_handled(task, 2), what="the forged report to reach the task workflow")
    assert await status_line(task) == "genuine"
    await task.cancel()
