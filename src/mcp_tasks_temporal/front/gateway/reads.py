"""What the gateway reads of Temporal, and the values it answers with.

`describe` and visibility snapshots of a task, the tasks a principal owns, the server's readiness, and the
failure a watcher's call reports (which never names the workflow, whose ID can name the principal).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Generator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import anyio
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST
from temporalio.api.common.v1 import Payload, WorkflowExecution
from temporalio.api.workflow.v1 import PendingActivityInfo, PendingWorkflowTaskInfo, WorkflowExecutionInfo
from temporalio.api.workflowservice.v1 import (
    DescribeNamespaceRequest,
    DescribeWorkflowExecutionRequest,
    ListWorkflowExecutionsRequest,
)
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
)
from temporalio.contrib.pydantic import PydanticPayloadConverter
from temporalio.converter import DefaultPayloadConverter, WorkflowSerializationContext
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from mcp_tasks_temporal.temporal.codec import CodecError
from mcp_tasks_temporal.temporal.contract import Memo
from mcp_tasks_temporal.temporal.ids import WORKFLOW_ID_PREFIX
from mcp_tasks_temporal.temporal.payload_storage import StoredPayloadError

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
    task_queue: str = ""
    """The queue its workflow runs on, as `describe` shows it ("" where not read)."""

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
        task_queue=response.execution_config.task_queue.name,
    )


LISTED_IDS_PER_QUERY = 500
"""Workflow IDs per visibility query: about 40 kB of query text, and one page of results (at most 1,000)."""
_LISTED_QUERIES_AT_ONCE = 4


@dataclass(frozen=True, slots=True)
class ListedTask:
    """A workflow as visibility lists it, its memo packed as JSON.

    A listen holds thousands of these between its visibility reads and following each task; decoded, each memo
    is a tree of dicts and strings several times the size, and thousands of them at once leave the front's
    heap that much larger for good.
    """

    namespace: str
    workflow_id: str
    run_id: str
    status: WorkflowExecutionStatus | None
    start_time_ms: int
    packed_memo: bytes

    @property
    def running(self) -> bool:
        return self.status == WorkflowExecutionStatus.RUNNING

    @property
    def listed(self) -> bool:
        """Read from visibility, as a `Snapshot` made from it says."""
        return True

    @property
    def memo(self) -> dict[str, Any]:
        """Decoded anew on each read."""
        return json.loads(self.packed_memo)

    def snapshot(self) -> Snapshot:
        """As a `Snapshot`: possibly behind the task, without its activities (`Snapshot.listed`)."""
        memo = self.memo
        memo.setdefault(Memo.CREATED_AT, self.start_time_ms)
        return Snapshot(
            namespace=self.namespace,
            workflow_id=self.workflow_id,
            run_id=self.run_id,
            status=self.status,
            start_time_ms=self.start_time_ms,
            history_length=0,
            memo=memo,
            pending_activities=(),
            listed=True,
        )


async def listed_tasks(client: Client, workflow_ids: Sequence[str]) -> dict[str, ListedTask]:
    """The workflows among `workflow_ids` as visibility shows them, a few list calls for all of them.

    Visibility is written after the workflow's own state, so a workflow may be missing here or its
    memo behind; a memo this front cannot decode is left out too. The caller reads what is missing
    by `describe`, and covers what may be behind by other means (front/feed_watch.py).
    """
    found: dict[str, ListedTask] = {}
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
            read = await _listed_task(client, info)
            if read is not None:
                found[read.workflow_id] = read

    async with anyio.create_task_group() as group:
        for start in range(0, len(workflow_ids), LISTED_IDS_PER_QUERY):
            group.start_soon(page, workflow_ids[start : start + LISTED_IDS_PER_QUERY])
    return found


async def _listed_task(client: Client, info: WorkflowExecutionInfo) -> ListedTask | None:
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
        packed = json.dumps(memo, separators=(",", ":")).encode()
    except Exception:
        return None  # `describe` reads it again and says why, as for any single read (or a memo not JSON)
    return ListedTask(
        namespace=client.namespace,
        workflow_id=wid,
        run_id=info.execution.run_id,
        status=WorkflowExecutionStatus(info.status) if info.status else None,
        start_time_ms=info.start_time.ToMilliseconds(),
        packed_memo=packed,
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
    # A namespace just registered is found by `describe_namespace` while the history service's
    # namespace cache may still answer "namespace not found" to workflow calls for about a second.
    try:
        await client.workflow_service.describe_workflow_execution(
            DescribeWorkflowExecutionRequest(
                namespace=client.namespace, execution=WorkflowExecution(workflow_id=READINESS_PROBE_ID)
            ),
            retry=False,
            timeout=timedelta(seconds=timeout_s),
        )
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:
            logger.warning("readiness: Temporal call failed: %s", err.status.name if err.status else "?")
            return "Temporal unreachable"
        if _names_a_missing_namespace(err):
            return "namespace not found"
    return None


READINESS_PROBE_ID = "mcp-task-readiness-probe"
"""A workflow ID no task has (task IDs start with `WORKFLOW_ID_PREFIX`): its NOT_FOUND proves workflow calls work."""


def _names_a_missing_namespace(err: RPCError) -> bool:
    details = err.grpc_status.details
    return not details or any(d.type_url.endswith("NamespaceNotFoundFailure") for d in details)


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
    packed: bytes
    """The item's payload, serialized: a few hundred bytes, a third of what the decoded message holds."""
