"""The front server's only door to Temporal: create, read, answer and cancel tasks.

Reads use `describe` (mutable state: strongly consistent, milliseconds, and
served with every worker down) plus the memo the workflow keeps in step with
its state; only a completed task costs a second call, for the close event that
holds its `CallToolResult`. The workflow's `mcp_tasks.state` query gives the
same answer, but it needs a polling worker and replays the history of closed
or evicted runs, so it is the tool for operators, not the hot path
(`docs/design.md` has the measurements).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Generator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

import anyio
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST
from temporalio.api.common.v1 import Payload, WorkflowExecution
from temporalio.api.history.v1 import HistoryEvent
from temporalio.api.workflow.v1 import PendingActivityInfo, PendingWorkflowTaskInfo, WorkflowExecutionInfo
from temporalio.api.workflowservice.v1 import (
    DescribeNamespaceRequest,
    DescribeWorkflowExecutionRequest,
    ListWorkflowExecutionsRequest,
)
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowHistoryEventFilterType,
    WorkflowQueryFailedError,
    WorkflowQueryRejectedError,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.common import AutoUpgradeVersioningOverride, RawValue, WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.contrib.pydantic import PydanticPayloadConverter
from temporalio.contrib.workflow_streams import WorkflowStreamClient
from temporalio.converter import DefaultPayloadConverter, WorkflowSerializationContext
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from mcp_tasks_temporal.front.closed_tasks import ClosedTaskCache
from mcp_tasks_temporal.front.errors import (
    AnswerNotTakenError,
    InvalidInputResponseError,
    TaskExpiredError,
    TaskNotFoundError,
)
from mcp_tasks_temporal.front.failing_workflows import FailingWorkflows, WorkflowTaskFailure
from mcp_tasks_temporal.front.session_binding import creating_binding
from mcp_tasks_temporal.task_wire import DetailedTask
from mcp_tasks_temporal.temporal.codec import CodecError
from mcp_tasks_temporal.temporal.contract import (
    INPUT_SIGNAL,
    INTERNAL_ERROR_CODE,
    PINNED_TOOL_TASK_WORKFLOW,
    TERMINAL_STATUSES,
    TOOL_TASK_WORKFLOW,
    WEB_UI_META,
    WORKFLOW_KIND,
    Memo,
    ToolTaskInput,
    as_object,
)
from mcp_tasks_temporal.temporal.fairness import FairnessPolicy
from mcp_tasks_temporal.temporal.feed_contract import FEED_SHARDS, TASK_FEED_WORKFLOW, TaskFeedInput, feed_workflow_id
from mcp_tasks_temporal.temporal.ids import WORKFLOW_ID_PREFIX, is_task_id, owner_key, workflow_id, workflow_ids
from mcp_tasks_temporal.temporal.inputs import response_problem
from mcp_tasks_temporal.temporal.metrics import FrontMetrics
from mcp_tasks_temporal.temporal.payload_limits import PayloadLimits
from mcp_tasks_temporal.temporal.payload_storage import StoredPayloadError
from mcp_tasks_temporal.temporal.result_text import expand
from mcp_tasks_temporal.temporal.search_attributes import start_attributes
from mcp_tasks_temporal.temporal.tool_results import call_tool_result, failure_outcome
from mcp_tasks_temporal.temporal.web_ui import web_ui_link

logger = logging.getLogger(__name__)


def now_ms() -> int:
    return int(time.time() * 1000)


@contextmanager
def temporal_errors() -> Generator[None]:
    """Turn a failed Temporal call into a JSON-RPC error the client can act on.

    The front server has nothing to retry with and must not answer 500; the
    Temporal detail goes to the log, where operators look, not to the client.
    """
    try:
        yield
    except WorkflowAlreadyStartedError:
        # Random task IDs never collide: this is a plain call's ID, named by its session and request ID.
        raise MCPError(code=INVALID_REQUEST, message="Request ID already used in this session") from None
    except CodecError as err:
        # A front server without the key that sealed the task: an operator's fix, never the client's.
        logger.error("cannot decrypt a task's payloads: %s", err)
        raise MCPError(code=INTERNAL_ERROR, message="Task service misconfigured") from None
    except StoredPayloadError as err:
        # Outside a task's view (a synchronous call's result): no task to name, and never the storage's details.
        logger.error("cannot read a stored payload: %s", err)
        raise MCPError(code=INTERNAL_ERROR, message="A stored payload is missing or fails verification") from None
    except RPCError as err:
        if err.status == RPCStatusCode.INVALID_ARGUMENT:
            logger.warning("Temporal refused a task request: %s", err.message)
            raise MCPError(code=INVALID_PARAMS, message="Task request refused: too large or malformed") from None
        logger.warning("Temporal call failed: %s %s", err.status.name if err.status else "?", err.message)
        # A client waiting on the task retries what Temporal only dropped (a cancelled long poll, a restart).
        data = {RETRYABLE: True} if err.status in TRANSIENT_STATUSES else None
        raise MCPError(code=INTERNAL_ERROR, message="Task service unavailable, try again", data=data) from None


TRANSIENT_STATUSES = frozenset(
    {RPCStatusCode.CANCELLED, RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.UNKNOWN}
)
"""A call Temporal dropped rather than refused (a cancelled long poll, a restart, a broken connection, which
the SDK reports as UNKNOWN "transport error"): the same call may well succeed next time."""
RETRYABLE = "retryable"
"""Key of a -32603 error's `data` that tells the client the same request may succeed if sent again."""
_DESCRIBE_RETRIES_S = (0.1, 0.3, 0.6)


async def described(client: Client, workflow_id: str) -> Snapshot:
    """`snapshot`, retried for about a second when Temporal drops the call instead of answering it."""
    for delay in (*_DESCRIBE_RETRIES_S, None):
        try:
            return await snapshot(client, workflow_id)
        except RPCError as err:
            if err.status not in TRANSIENT_STATUSES or delay is None:
                raise
            await anyio.sleep(delay)
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class WorkflowTask:
    """A workflow tool's call, ready to start: which workflow, with what, for whom and for how long."""

    task_id: str
    tool: str
    workflow: str
    args: list[Any]
    task_queue: str | None
    envelope: dict[str, Any]
    """The creating request's `_meta` (protocol version, client info and capabilities)."""
    created_at_ms: int
    ttl_ms: int | None
    poll_interval_ms: int
    auto_upgrade: bool = False
    """Start it auto-upgrade under worker versioning, where its class declares no behaviour (workers pin those)."""
    priority: int | None = None
    """The tool's priority, 1 (highest) to 5; `None` is the queue's default, 3."""


@dataclass(frozen=True)
class Snapshot:
    """One `describe` of a task's workflow, decoded only as far as a task's view needs."""

    namespace: str
    workflow_id: str
    run_id: str
    status: WorkflowExecutionStatus | None
    start_time_ms: int
    history_length: int
    memo: dict[str, Any]
    pending_activities: Sequence[PendingActivityInfo]
    close_time_ms: int | None = None
    """When the run closed, if it has."""
    pending_workflow_task: PendingWorkflowTaskInfo | None = None
    """Past its first attempt when the workflow code keeps failing (front/failing_workflows.py)."""
    listed: bool = False
    """Read from visibility (`listed`), not `describe`: possibly behind the task, and without its activities."""

    @property
    def running(self) -> bool:
        return self.status == WorkflowExecutionStatus.RUNNING


async def snapshot(client: Client, workflow_id: str) -> Snapshot:
    """The workflow's latest run as `tasks/get` reads it: one strongly consistent `describe`.

    The SDK's `WorkflowHandle.describe()` also decodes every search attribute
    (twice: typed and untyped) and the user metadata on each call, 10-30 % of the
    front's CPU per read (docs/performance.md), for a read that needs none of them;
    this decodes the memo alone, through the client's data converter, so a codec
    applies as before.

    Raises:
        RPCError: As `describe()` does (NOT_FOUND for an unknown workflow).
    """
    request = DescribeWorkflowExecutionRequest(
        namespace=client.namespace, execution=WorkflowExecution(workflow_id=workflow_id)
    )
    response = await client.workflow_service.describe_workflow_execution(request)
    info = response.workflow_execution_info
    fields = info.memo.fields
    # In this workflow's context: a codec that seals payloads for their workflow refuses another task's memo.
    converter = client.data_converter.with_context(
        WorkflowSerializationContext(namespace=client.namespace, workflow_id=workflow_id)
    )
    values = await converter.decode(list(fields.values())) if fields else []
    return Snapshot(
        namespace=client.namespace,
        workflow_id=info.execution.workflow_id,
        run_id=info.execution.run_id,
        status=WorkflowExecutionStatus(info.status) if info.status else None,
        start_time_ms=info.start_time.ToMilliseconds(),
        history_length=info.history_length,
        memo=dict(zip(fields.keys(), values, strict=True)),
        pending_activities=response.pending_activities,
        close_time_ms=info.close_time.ToMilliseconds() if info.HasField("close_time") else None,
        pending_workflow_task=response.pending_workflow_task if response.HasField("pending_workflow_task") else None,
    )


LISTED_IDS_PER_QUERY = 500
"""Workflow IDs per visibility query: about 40 kB of query text, and one page of results (at most 1,000)."""
_LISTED_QUERIES_AT_ONCE = 4


async def listed(client: Client, workflow_ids: Sequence[str]) -> dict[str, Snapshot]:
    """The workflows among `workflow_ids` as visibility shows them, a few list calls for all of them.

    Visibility is written after the workflow's own state, so a workflow may be missing here or its
    memo behind; a memo this front cannot decode is left out too. The caller reads what is missing
    by `describe`, and covers what may be behind by other means (front/feed_watch.py).
    """
    found: dict[str, Snapshot] = {}
    limiter = anyio.CapacityLimiter(_LISTED_QUERIES_AT_ONCE)

    async def page(chunk: Sequence[str]) -> None:
        quoted = ",".join(f'"{wid}"' for wid in chunk)
        # One page for the chunk, so no second call; running or not, the caller decides what it takes.
        request = ListWorkflowExecutionsRequest(
            namespace=client.namespace, page_size=len(chunk) + 1, query=f"WorkflowId IN ({quoted})"
        )
        async with limiter:
            try:
                response = await client.workflow_service.list_workflow_executions(request)
            except RPCError as err:
                # Visibility slow or down: these are read one by one instead, as before there was this.
                logger.warning("visibility read of %d tasks failed: %s", len(chunk), rpc_reason(err))
                return
        for info in response.executions:
            read = await _listed_snapshot(client, info)
            if read is not None:
                found[read.workflow_id] = read

    async with anyio.create_task_group() as group:
        for start in range(0, len(workflow_ids), LISTED_IDS_PER_QUERY):
            group.start_soon(page, workflow_ids[start : start + LISTED_IDS_PER_QUERY])
    return found


async def _listed_snapshot(client: Client, info: WorkflowExecutionInfo) -> Snapshot | None:
    wid = info.execution.workflow_id
    fields = info.memo.fields
    try:
        memo = _plain_memo(client, fields)
        if memo is None:
            converter = client.data_converter.with_context(
                WorkflowSerializationContext(namespace=client.namespace, workflow_id=wid)
            )
            values = await converter.decode(list(fields.values())) if fields else []
            memo = dict(zip(fields.keys(), values, strict=True))
    except Exception:
        return None  # `describe` reads it again and says why, as for any single read
    return Snapshot(
        namespace=client.namespace,
        workflow_id=wid,
        run_id=info.execution.run_id,
        status=WorkflowExecutionStatus(info.status) if info.status else None,
        start_time_ms=info.start_time.ToMilliseconds(),
        history_length=0,
        memo=memo,
        pending_activities=(),
        listed=True,
    )


_JSON_PLAIN = b"json/plain"
_PLAIN_JSON_CONVERTERS = (DefaultPayloadConverter, PydanticPayloadConverter)
"""Converters that decode a `json/plain` payload with no type given to what `json.loads` returns."""


def _plain_memo(client: Client, fields: Mapping[str, Payload]) -> dict[str, Any] | None:
    """The memo as the default converter would decode it, or `None` where only the client's converter can.

    A listen decodes thousands of memos; the converter's own path costs several times `json.loads`.
    """
    converter = client.data_converter
    if (
        converter.payload_codec is not None
        or converter.external_storage is not None
        or converter.payload_converter_class not in _PLAIN_JSON_CONVERTERS
    ):
        return None
    memo: dict[str, Any] = {}
    for name, payload in fields.items():
        if payload.metadata.get("encoding") != _JSON_PLAIN or len(payload.metadata) != 1:
            return None
        memo[name] = json.loads(payload.data)
    return memo


@dataclass(frozen=True)
class OwnedTask:
    """One of a principal's tasks as Temporal visibility lists it."""

    task_id: str
    memo: dict[str, Any]
    status: WorkflowExecutionStatus | None


@dataclass(frozen=True)
class OwnedPage:
    tasks: list[OwnedTask]
    next_page_token: bytes


async def list_owned(client: Client, owner: str, *, page_token: bytes, page_size: int) -> OwnedPage:
    """A page of the tasks whose workflow IDs name `owner`, newest first, from Temporal visibility.

    A task whose memo this server cannot decode (written through another codec) is left out:
    it can be neither read nor shown to be the owner's.
    """
    request = ListWorkflowExecutionsRequest(
        namespace=client.namespace,
        page_size=page_size,
        next_page_token=page_token,
        query=f'WorkflowId STARTS_WITH "{WORKFLOW_ID_PREFIX}/{owner}/"',
    )
    response = await client.workflow_service.list_workflow_executions(request)
    tasks: list[OwnedTask] = []
    for info in response.executions:
        fields = info.memo.fields
        try:
            values = await client.data_converter.decode(list(fields.values())) if fields else []
        except Exception:
            logger.warning("tasks/list: left out %s, whose memo this server cannot decode", info.execution.workflow_id)
            continue
        memo = dict(zip(fields.keys(), values, strict=True))
        task_id = memo.get("taskId")
        if memo.get("owner") != owner or not isinstance(task_id, str):
            continue
        memo.setdefault("createdAt", info.start_time.ToMilliseconds())
        status = WorkflowExecutionStatus(info.status) if info.status else None
        tasks.append(OwnedTask(task_id, memo, status))
    return OwnedPage(tasks, response.next_page_token)


async def unready_reason(client: Client, *, timeout_s: float = 2.0) -> str | None:
    """Why this front cannot serve tasks now (Temporal or the namespace unreachable), or `None` when it can."""
    try:
        await client.workflow_service.describe_namespace(
            DescribeNamespaceRequest(namespace=client.namespace),
            # A probe must answer within its own deadline, not wait out the client's retries.
            retry=False,
            timeout=timedelta(seconds=timeout_s),
        )
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return "namespace not found"
        logger.warning("readiness: Temporal call failed: %s", err.status.name if err.status else "?")
        return "Temporal unreachable"
    return None


class TemporalCallFailed(Exception):
    """A Temporal call of a watcher failed; the message names no workflow (whose ID can name the principal)."""

    def __init__(self, reason: str, *, lasting: bool = False) -> None:
        super().__init__(reason)
        self.lasting = lasting
        """Trying again cannot help (the task is gone)."""


def call_failed(err: RPCError) -> TemporalCallFailed:
    return TemporalCallFailed(rpc_reason(err), lasting=err.status == RPCStatusCode.NOT_FOUND)


def rpc_reason(err: RPCError) -> str:
    """Why a Temporal call failed, without its message (which can name the workflow, so the principal)."""
    if err.status == RPCStatusCode.NOT_FOUND:
        return "the task no longer exists"
    return f"Temporal answered {err.status.name}"


@dataclass(frozen=True)
class FeedItem:
    offset: int
    topic: str
    payload: Payload


@dataclass(frozen=True)
class Observed:
    handle: WorkflowHandle[Any, Any]
    snapshot: Snapshot

    @property
    def memo(self) -> dict[str, Any]:
        return self.snapshot.memo

    @property
    def status(self) -> WorkflowExecutionStatus | None:
        return self.snapshot.status


class TemporalTaskGateway:
    """Maps the task operations onto one Temporal namespace and task queue."""

    def __init__(
        self,
        client: Client,
        *,
        task_queue: str,
        answer_visibility_timeout_s: float = 5.0,
        metrics: FrontMetrics | None = None,
        closed_tasks: ClosedTaskCache | None = None,
        search_attributes: bool = False,
        web_ui: str | None = None,
        payload_limits: PayloadLimits | None = None,
        fairness: FairnessPolicy | None = None,
    ) -> None:
        self.client = client
        self.task_queue = task_queue
        self.feed_tasks = False
        """Tasks started here publish to the task feed: set by a front that follows it (`front.push_mode`)."""
        self.answer_visibility_timeout_s = answer_visibility_timeout_s
        self.metrics = metrics or FrontMetrics()
        self.closed_tasks = closed_tasks if closed_tasks is not None else ClosedTaskCache()
        self.search_attributes = search_attributes
        """Start tasks with McpTool/McpOwner/McpStatus; only where the namespace has them registered."""
        self.web_ui = web_ui
        """Temporal Web UI address: `tasks/get` then links the task's page in its `_meta`."""
        self.payload_limits = payload_limits or PayloadLimits()
        """How large arguments and answers may be: refused here, not after Temporal has taken the task."""
        self.fairness = fairness or FairnessPolicy()
        """Each task's priority: its tool's, and its principal's fairness key and weight."""
        self.failing_workflows = FailingWorkflows()

    async def create(
        self, task: ToolTaskInput, principal: str | None, *, pinned: bool = False, priority: int | None = None
    ) -> dict[str, Any]:
        """Start the task's workflow; returns once Temporal has persisted it.

        `pinned`: under worker versioning the task stays on the build it started on. `priority` is
        the tool's (1 highest .. 5); the run's activities inherit it with the fairness key.
        """
        self._check_input(task.arguments, "The tool's arguments")
        if self.feed_tasks:
            task = replace(task, feed=True)
        memo = _initial_memo(task.task_id, task.tool, principal, task.created_at_ms, task.ttl_ms, task.poll_interval_ms)
        await self.client.start_workflow(
            PINNED_TOOL_TASK_WORKFLOW if pinned else TOOL_TASK_WORKFLOW,
            task,
            id=workflow_id(task.task_id, principal),
            task_queue=self.task_queue,
            memo=memo,
            # One task ID is one run, ever: a closed task's ID must not start a fresh run.
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
            static_summary=f"MCP task: {task.tool}",
            search_attributes=start_attributes(tool=task.tool, owner=owner_key(principal))
            if self.search_attributes
            else None,
            priority=self.fairness.priority(principal, priority),
        )
        self.metrics.task_created(task.tool)
        return _created(task.task_id, task.created_at_ms, task.ttl_ms, task.poll_interval_ms)

    async def start_workflow_task(self, task: WorkflowTask, principal: str | None) -> WorkflowHandle[Any, Any]:
        """Start a workflow tool's task: the user's own workflow, under the task's workflow ID and memo.

        The TTL is also the workflow's execution timeout, which covers its whole
        continue-as-new chain, so Temporal itself stops an expired task.
        """
        self._check_input(task.args, "The tool's arguments")
        memo = _workflow_task_memo(task, principal)
        return await self.client.start_workflow(
            task.workflow,
            args=task.args,
            id=workflow_id(task.task_id, principal),
            task_queue=task.task_queue or self.task_queue,
            memo=memo,
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
            execution_timeout=timedelta(milliseconds=task.ttl_ms) if task.ttl_ms is not None else None,
            versioning_override=AutoUpgradeVersioningOverride() if task.auto_upgrade else None,
            static_summary=f"MCP task: {task.tool}",
            search_attributes=start_attributes(tool=task.tool, owner=owner_key(principal))
            if self.search_attributes
            else None,
            # Its activities and child workflows inherit it, as the user's workflow wrote them.
            priority=self.fairness.priority(principal, task.priority),
        )

    def as_started(self, task: WorkflowTask, principal: str | None, handle: WorkflowHandle[Any, Any]) -> Snapshot:
        """The workflow tool's task as its start left it, before any event after the start.

        Following the task from here (`TaskWatchHub.subscribe(seen=...)`) replays every
        status it has set since, in order, however soon after the start it set them.
        """
        return Snapshot(
            namespace=self.client.namespace,
            workflow_id=handle.id,
            run_id=handle.result_run_id or "",
            status=WorkflowExecutionStatus.RUNNING,
            start_time_ms=task.created_at_ms,
            history_length=0,
            memo=_workflow_task_memo(task, principal),
            pending_activities=(),
        )

    async def create_workflow_task(self, task: WorkflowTask, principal: str | None) -> dict[str, Any]:
        """Start a workflow tool's task; returns its `CreateTaskResult` fields once Temporal has persisted it."""
        await self.start_workflow_task(task, principal)
        self.metrics.task_created(task.tool)
        return _created(task.task_id, task.created_at_ms, task.ttl_ms, task.poll_interval_ms)

    async def get(self, task_id: str, principal: str | None) -> dict[str, Any]:
        """The task's `DetailedTask`, as `tasks/get` returns it."""
        closed = self._closed(task_id, principal)
        if closed is not None:
            return closed
        observed = await self.observe(task_id, principal)
        task = await self.view(task_id, observed)
        if self.web_ui:
            seen = observed.snapshot
            link = web_ui_link(self.web_ui, seen.namespace, seen.workflow_id, seen.run_id)
            task["_meta"] = {WEB_UI_META: link}
        if task["status"] in TERMINAL_STATUSES:
            self.closed_tasks.put(
                observed.handle.id,
                task,
                created_at_ms=int(observed.memo[Memo.CREATED_AT]),
                ttl_ms=observed.memo.get(Memo.TTL_MS),
            )
        return task

    def _closed(self, task_id: str, principal: str | None) -> dict[str, Any] | None:
        """The task from this front's memory of closed tasks, if it is there (and not expired)."""
        if not is_task_id(task_id):
            raise TaskNotFoundError()
        return self.closed_tasks.get(workflow_id(task_id, principal), now_ms())

    async def update(self, task_id: str, principal: str | None, responses: Mapping[str, Any]) -> None:
        """Deliver answers to outstanding questions, and return once the task shows them.

        Entries under keys that are not outstanding are ignored, as the spec asks;
        an answer to an outstanding question that is not its result type, or an
        accepted form whose content does not match the `requestedSchema`, is
        refused with -32602 before anything is delivered. The spec allows the ack to run ahead of
        `tasks/get`, but a client that answered one of two questions should not
        see the answered one again on its next poll, so the ack waits (bounded)
        until the workflow has taken the answers in. With no worker running the
        bound expires and the ack goes out anyway: the signal is durable.
        """
        if self._closed(task_id, principal) is not None:
            return
        observed = await self.observe(task_id, principal)
        if observed.status != WorkflowExecutionStatus.RUNNING:
            return
        outstanding = as_object(observed.memo.get(Memo.INPUT_REQUESTS))
        accepted = {key: value for key, value in responses.items() if key in outstanding}
        if not accepted:
            return
        if await self.failing(observed) is not None:
            raise AnswerNotTakenError()
        for key, value in accepted.items():
            problem = response_problem(outstanding[key], value)
            if problem is not None:
                raise InvalidInputResponseError(key, problem)
        self._check_input(accepted, "The input responses")
        try:
            await observed.handle.signal(INPUT_SIGNAL, accepted)
        except RPCError as err:
            # It closed since we looked: no key is outstanding any more, which the spec says to ignore.
            if err.status != RPCStatusCode.NOT_FOUND:
                raise
            return
        await self._until_answered(observed, set(accepted))

    def _check_input(self, value: Any, what: str) -> None:
        self.payload_limits.check_input(self.client.data_converter.payload_converter, value, what)

    async def _until_answered(self, observed: Observed, keys: set[str]) -> None:
        delay = 0.01
        with anyio.move_on_after(self.answer_visibility_timeout_s):
            while True:
                seen = await described(self.client, observed.handle.id)
                if seen.status != WorkflowExecutionStatus.RUNNING:
                    return
                if await self.failing(Observed(observed.handle, seen)) is not None:
                    raise AnswerNotTakenError(recorded=True)
                pending = as_object(seen.memo.get(Memo.INPUT_REQUESTS))
                if not keys & set(pending):
                    return
                await anyio.sleep(delay)
                delay = min(delay * 2, 0.02)  # the answer usually lands within a workflow task (~40 ms)

    async def cancel(self, task_id: str, principal: str | None, *, reason: str = "") -> None:
        """Request cooperative cancellation; a task that already ended keeps its outcome.

        `reason` is recorded with the request; a workflow tool waiting for an answer shows it as its status.
        """
        if self._closed(task_id, principal) is not None:
            return
        observed = await self.observe(task_id, principal)
        if observed.status != WorkflowExecutionStatus.RUNNING:
            return
        try:
            await observed.handle.cancel(reason=reason)
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:
                raise

    async def observe(self, task_id: str, principal: str | None) -> Observed:
        if not is_task_id(task_id):
            raise TaskNotFoundError()
        # The current owner key first; during a migration window also the legacy one (ids.owner_keys).
        for candidate, key in workflow_ids(task_id, principal):
            handle = self.client.get_workflow_handle(candidate)
            try:
                seen = await described(self.client, handle.id)
            except RPCError as err:
                if err.status == RPCStatusCode.NOT_FOUND:
                    continue
                raise
            except CodecError as err:
                raise unreadable(task_id, err) from None
            if seen.memo.get(Memo.OWNER) != key:
                # The workflow ID already names the owner; the memo is what audits read, and a workflow
                # started under a task's ID by anything else (an operator, another tool) is not a task.
                raise TaskNotFoundError()
            break
        else:
            raise TaskNotFoundError()
        memo = seen.memo
        memo.setdefault(Memo.CREATED_AT, seen.start_time_ms)
        ttl_ms = memo.get(Memo.TTL_MS)
        if ttl_ms is not None and now_ms() >= int(memo[Memo.CREATED_AT]) + int(ttl_ms):
            raise TaskExpiredError()
        return Observed(handle, seen)

    async def observe_listed(self, task_ids: Sequence[str], principal: str | None) -> dict[str, Snapshot]:
        """The tasks among `task_ids` this caller may see, as visibility shows them: a few calls for all.

        Held to what `observe` checks (the ID's shape, the owner in the memo, the TTL); a task left out
        here may still exist (visibility lags its start), so the caller `observe`s the rest. A snapshot
        may be behind the task, and has no pending activities (`Snapshot.listed`).
        """
        key = owner_key(principal)
        wanted = {workflow_id(task_id, principal): task_id for task_id in task_ids if is_task_id(task_id)}
        found: dict[str, Snapshot] = {}
        now = now_ms()
        for wid, seen in (await listed(self.client, list(wanted))).items():
            task_id = wanted.get(wid)
            if task_id is None or seen.memo.get(Memo.OWNER) != key:
                continue
            memo = seen.memo
            memo.setdefault(Memo.CREATED_AT, seen.start_time_ms)
            ttl_ms = memo.get(Memo.TTL_MS)
            if ttl_ms is not None and now >= int(memo[Memo.CREATED_AT]) + int(ttl_ms):
                continue
            found[task_id] = seen
        return found

    # -- the task feed (front/feed_watch.py) -------------------------------------------------------

    async def start_feed_shards(self) -> None:
        """Start the task feed's shard workflows of this queue, or find them running."""
        for shard in range(FEED_SHARDS):
            await self.client.start_workflow(
                TASK_FEED_WORKFLOW,
                TaskFeedInput(shard=shard),
                id=feed_workflow_id(self.task_queue, shard),
                task_queue=self.task_queue,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                static_summary="MCP task feed shard",
            )

    async def feed_items(self, shard: int, from_offset: int, cooldown: timedelta) -> AsyncIterator[FeedItem]:
        """The items of a feed shard from `from_offset` (0: all it keeps), as they come; ends if the shard closes.

        Undecoded: a front decodes an item to route it, and keeps the few of the last minutes compact.

        Raises:
            TemporalCallFailed: The shard's long poll failed.
        """
        stream = WorkflowStreamClient.create(self.client, feed_workflow_id(self.task_queue, shard))
        try:
            async for item in stream.subscribe(from_offset=from_offset, result_type=RawValue, poll_cooldown=cooldown):
                yield FeedItem(item.offset, item.topic, item.data.payload)
        except RPCError as err:
            raise TemporalCallFailed(rpc_reason(err)) from None
        except (WorkflowUpdateRPCTimeoutOrCancelledError, WorkflowUpdateFailedError) as err:
            # A poll's update times out on a busy or restarting server as any other call fails.
            raise TemporalCallFailed(type(err).__name__) from None

    async def feed_offset(self, shard: int) -> int:
        """A feed shard's next offset: a query, so answered only once a worker runs the shard.

        Raises:
            TemporalCallFailed: No worker answered, or the call failed.
        """
        stream = WorkflowStreamClient.create(self.client, feed_workflow_id(self.task_queue, shard))
        try:
            return await stream.get_offset()
        except RPCError as err:
            raise TemporalCallFailed(rpc_reason(err)) from None
        except (WorkflowQueryFailedError, WorkflowQueryRejectedError) as err:
            raise TemporalCallFailed(type(err).__name__) from None

    def feed_value(self, payload: Payload) -> Any:
        """A feed item's content (a JSON object, as the task published it)."""
        return self.client.data_converter.payload_converter.from_payload(payload)

    async def read(self, workflow_id: str) -> Snapshot:
        """`snapshot` of a task a watcher follows.

        Raises:
            TemporalCallFailed: The read failed (the task is gone, Temporal unreachable).
        """
        try:
            return await snapshot(self.client, workflow_id)
        except RPCError as err:
            raise call_failed(err) from None

    async def close_event(self, workflow_id: str) -> HistoryEvent | None:
        """The run's close event once it is written (a long poll for that event alone), which holds the result.

        Raises:
            TemporalCallFailed: The long poll failed.
        """
        handle = self.client.get_workflow_handle(workflow_id)
        try:
            async for event in handle.fetch_history_events(
                wait_new_event=True, event_filter_type=WorkflowHistoryEventFilterType.CLOSE_EVENT
            ):
                return event
        except RPCError as err:
            raise call_failed(err) from None
        return None

    def observed(self, seen: Snapshot) -> Observed:
        return Observed(self.client.get_workflow_handle(seen.workflow_id), seen)

    async def failing(self, observed: Observed) -> WorkflowTaskFailure | None:
        """Why the task's workflow code keeps failing, if it does; counted and logged once per failure."""
        seen = observed.snapshot
        if seen.status != WorkflowExecutionStatus.RUNNING:
            return None
        failure = await self.failing_workflows.failure(
            self.client, seen.workflow_id, seen.run_id, seen.pending_workflow_task
        )
        if failure is not None and failure.first_report:
            tool = str(observed.memo.get(Memo.TOOL) or "")
            self.metrics.workflow_failing(tool, failure.kind)
            task_id = observed.memo.get(Memo.TASK_ID) or seen.workflow_id.rsplit("/", 1)[-1]
            logger.warning("task %s (%s): workflow failing: %s", task_id, tool, failure.cause)
        return failure

    async def watch_failing(self, *, every_s: float = 2.0) -> None:
        """Look at every running task now and then, so a failing one is logged (once) before anyone reads it.

        For `dev`, whose console is where a developer looks; one describe per running task per
        round, which a production front with thousands of tasks leaves to `tasks/get` and `admin tasks`.
        """
        query = f"WorkflowId STARTS_WITH '{WORKFLOW_ID_PREFIX}/' AND ExecutionStatus = 'Running'"
        while True:
            try:
                async for execution in self.client.list_workflows(query):
                    seen = await described(self.client, execution.id)
                    await self.failing(Observed(self.client.get_workflow_handle(execution.id), seen))
            except RPCError as err:
                logger.debug("looking for failing tasks: %s", err.message)
            await anyio.sleep(every_s)

    async def view(self, task_id: str, observed: Observed) -> dict[str, Any]:
        """The `DetailedTask` of an observed workflow, tool task or workflow tool alike."""
        try:
            return await self._view(task_id, observed)
        except (StoredPayloadError, CodecError) as err:
            raise unreadable(task_id, err) from None

    async def _view(self, task_id: str, observed: Observed) -> dict[str, Any]:
        memo, status = observed.memo, observed.status
        failure = await self.failing(observed)
        if failure is not None:
            return task_view(task_id, memo, status, failing=failure.status_message)
        if memo.get(Memo.KIND) == WORKFLOW_KIND:
            return await self._workflow_task_view(task_id, observed)
        heartbeat = None
        result: dict[str, Any] | None = None
        if status == WorkflowExecutionStatus.RUNNING and memo.get(Memo.STATUS, "working") == "working":
            heartbeat = await self.latest_status(observed.snapshot.pending_activities)
        elif status == WorkflowExecutionStatus.COMPLETED:
            result = await observed.handle.result()
        closed_at = observed.snapshot.close_time_ms
        return task_view(task_id, memo, status, heartbeat=heartbeat, result=result, closed_at_ms=closed_at)

    async def _workflow_task_view(self, task_id: str, observed: Observed) -> dict[str, Any]:
        """A workflow tool's task: its status lives in the memo, its outcome in the close event.

        Its activities are the user's, whose heartbeat details are not status
        lines, so they are never read as one. The result is decoded with no type
        hint: the front server does not know the workflow class.
        """
        status = observed.status
        closed_at = observed.snapshot.close_time_ms
        if status not in (WorkflowExecutionStatus.COMPLETED, WorkflowExecutionStatus.FAILED):
            return task_view(task_id, observed.memo, status, closed_at_ms=closed_at)
        try:
            value = await observed.handle.result()
        except WorkflowFailureError as failure:
            outcome = failure_outcome(failure.cause)
            closed = WorkflowExecutionStatus.COMPLETED if outcome.status == "completed" else status
            return task_view(
                task_id, observed.memo, closed, result=outcome.result, error=outcome.error, closed_at_ms=closed_at
            )
        return task_view(task_id, observed.memo, status, result=call_tool_result(value), closed_at_ms=closed_at)

    async def latest_status(self, pending_activities: Sequence[PendingActivityInfo]) -> tuple[str, int] | None:
        """The newest `set_status` of the running tool, from its heartbeat details."""
        for pending in pending_activities:
            payloads = pending.heartbeat_details.payloads
            if not payloads:
                continue
            decoded = await self.client.data_converter.decode(payloads)
            details = decoded[0] if decoded else None
            status = as_object(details)
            if status.get("message"):
                return str(status["message"]), int(status.get("at_ms", 0))
        return None


def unreadable(task_id: str, err: Exception) -> MCPError:
    """A task whose payloads are gone, altered, sealed for another task or under a key this front lacks.

    Refused and said of this task, never served as its own; the detail (a digest, a key ID) goes to the log.
    """
    logger.error("task %s: cannot decrypt or read its payloads: %s", task_id, err)
    return MCPError(
        code=INTERNAL_ERROR,
        message=f"Task {task_id}: its payloads cannot be read (missing, altered, or under a key this server lacks)",
    )


def _task(**fields: Any) -> dict[str, Any]:
    """A `DetailedTask` on the wire, built and checked by the model the client reads it with."""
    return DetailedTask.build(**fields).wire()


def _initial_memo(
    task_id: str, tool: str, principal: str | None, created_at_ms: int, ttl_ms: int | None, poll_interval_ms: int
) -> dict[str, Any]:
    memo: dict[str, Any] = {
        Memo.TASK_ID: task_id,
        Memo.TOOL: tool,
        Memo.OWNER: owner_key(principal),
        Memo.CREATED_AT: created_at_ms,
        Memo.TTL_MS: ttl_ms,
        Memo.POLL_INTERVAL_MS: poll_interval_ms,
        Memo.STATUS: "working",
        Memo.LAST_UPDATED_AT: created_at_ms,
    }
    session = creating_binding()
    if principal is None and session is not None:
        memo[Memo.SESSION] = session
    return memo


def _workflow_task_memo(task: WorkflowTask, principal: str | None) -> dict[str, Any]:
    memo = _initial_memo(task.task_id, task.tool, principal, task.created_at_ms, task.ttl_ms, task.poll_interval_ms)
    memo[Memo.KIND] = WORKFLOW_KIND
    memo[Memo.ENVELOPE] = task.envelope
    return memo


def _created(task_id: str, created_at_ms: int, ttl_ms: int | None, poll_interval_ms: int) -> dict[str, Any]:
    return _task(
        task_id=task_id,
        status="working",
        created_at_ms=created_at_ms,
        last_updated_at_ms=created_at_ms,
        ttl_ms=ttl_ms,
        poll_interval_ms=poll_interval_ms,
    )


def task_view(
    task_id: str,
    memo: Mapping[str, Any],
    status: WorkflowExecutionStatus | None,
    *,
    heartbeat: tuple[str, int] | None = None,
    result: dict[str, Any] | None = None,
    error: dict[str, Any] | None = None,
    closed_at_ms: int | None = None,
    failing: str | None = None,
) -> dict[str, Any]:
    """The `DetailedTask` of a workflow, from its memo, its Temporal status and what only a read can add.

    `tasks/get` and push notifications both go through here, so a notification
    is exactly what a `tasks/get` at that moment returns. A closed task was last
    updated when its run closed (`closed_at_ms`), whatever its memo last said;
    a completed one has no status line left: the last one described a step.
    A result whose text the worker stored once is shown whole again here, so
    every reader (get, push, 2025-11-25 tasks/result) sees what the tool returned.
    """
    result = expand(result) if result is not None else None
    created_at_ms = int(memo.get(Memo.CREATED_AT) or 0)
    fields: dict[str, Any] = {
        "task_id": task_id,
        "created_at_ms": created_at_ms,
        "last_updated_at_ms": int(memo.get(Memo.LAST_UPDATED_AT) or created_at_ms),
        "ttl_ms": memo.get(Memo.TTL_MS),
        "poll_interval_ms": memo.get(Memo.POLL_INTERVAL_MS),
        "status_message": memo.get(Memo.STATUS_MESSAGE),
    }
    if status in (None, WorkflowExecutionStatus.RUNNING):
        memo_status = str(memo.get(Memo.STATUS) or "working")
        if memo_status == "working" and heartbeat is not None:
            fields["status_message"] = heartbeat[0]
            fields["last_updated_at_ms"] = max(fields["last_updated_at_ms"], heartbeat[1])
        if failing is not None:
            fields["status_message"] = failing
        return _task(
            status=memo_status, input_requests=memo.get(Memo.INPUT_REQUESTS), error=memo.get(Memo.ERROR), **fields
        )
    if closed_at_ms is not None:
        fields["last_updated_at_ms"] = max(fields["last_updated_at_ms"], closed_at_ms)
    if status == WorkflowExecutionStatus.COMPLETED:
        fields["status_message"] = None
        return _task(status="completed", result=result, **fields)
    if status == WorkflowExecutionStatus.CANCELED:
        return _task(status="cancelled", **fields)
    if status == WorkflowExecutionStatus.FAILED and (error or memo.get(Memo.ERROR)):
        return _task(status="failed", error=error or memo[Memo.ERROR], **fields)
    # Terminated or timed out by an operator or a backstop: no workflow code ran to say why.
    fields["status_message"] = "Task stopped by the Temporal service"
    return _task(status="failed", error={"code": INTERNAL_ERROR_CODE, "message": "Task stopped"}, **fields)
