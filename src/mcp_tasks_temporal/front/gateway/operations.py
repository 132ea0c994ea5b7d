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

import contextlib
import logging
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

import anyio
from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.common import AutoUpgradeVersioningOverride, WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.runtime import Runtime
from temporalio.service import RPCError, RPCStatusCode

from mcp_tasks_temporal.front.errors import (
    AnswerNotTakenError,
    InvalidInputResponseError,
    TaskExpiredError,
    TaskNotFoundError,
)
from mcp_tasks_temporal.front.gateway.closed_tasks import ClosedTaskCache
from mcp_tasks_temporal.front.gateway.failing_workflows import FailingWorkflows, WorkflowTaskFailure
from mcp_tasks_temporal.front.gateway.queue_watch import QueueWatch, waiting_for_a_worker
from mcp_tasks_temporal.front.gateway.reads import (
    LISTED_IDS_PER_QUERY,
    ListedTask,
    OwnedPage,
    Snapshot,
    WorkflowTask,
    described,
    list_owned,
    listed_owned,
    listed_tasks,
    now_ms,
    owned_count,
    unready_reason,
)
from mcp_tasks_temporal.front.gateway.views import (
    created_task,
    initial_memo,
    task_view,
    unreadable,
    workflow_task_memo,
)
from mcp_tasks_temporal.front.gateway.watchers import WatcherReads
from mcp_tasks_temporal.front.settings import FrontSettings
from mcp_tasks_temporal.temporal.codec import CodecError
from mcp_tasks_temporal.temporal.contract import (
    FEED_JOINS_ON_LISTEN,
    INPUT_SIGNAL,
    PINNED_TOOL_TASK_WORKFLOW,
    SETTLED_UPDATE,
    TERMINAL_STATUSES,
    TOOL_TASK_WORKFLOW,
    WEB_UI_META,
    WORKFLOW_KIND,
    Memo,
    ToolTaskInput,
    as_object,
)
from mcp_tasks_temporal.temporal.fairness import FairnessPolicy
from mcp_tasks_temporal.temporal.ids import UNKEYED, WORKFLOW_ID_PREFIX, OwnerKeying, is_task_id, task_workflow_id
from mcp_tasks_temporal.temporal.inputs import response_problem
from mcp_tasks_temporal.temporal.metrics import FrontMetrics, RequestMetrics
from mcp_tasks_temporal.temporal.nexus_contract import NEXUS_EXPIRY_GRACE_S, NEXUS_TOOL_WORKFLOW
from mcp_tasks_temporal.temporal.payload_limits import PayloadLimits, namespace_blob_limit
from mcp_tasks_temporal.temporal.payload_storage import StoredPayloadError
from mcp_tasks_temporal.temporal.result_text import expand
from mcp_tasks_temporal.temporal.search_attributes import start_attributes
from mcp_tasks_temporal.temporal.shared_settings import SharedSettings, announce_settings
from mcp_tasks_temporal.temporal.tool_results import call_tool_result, failure_outcome
from mcp_tasks_temporal.temporal.web_ui import web_ui_link

__all__ = ["Settled", "TemporalTaskGateway"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Settled:
    """How a task's call is answered (`create_settled`): with exactly one of these."""

    result: dict[str, Any] | None = None
    """The tool's `CallToolResult` (wire form), as a synchronous call returns it."""
    error: dict[str, Any] | None = None
    """The JSON-RPC error the tool ended with, as a synchronous call returns it."""
    task: dict[str, Any] | None = None
    """The task's `CreateTaskResult` fields: the tool is still working, or asked something."""


@dataclass(frozen=True)
class _Start:
    workflow: str
    task: ToolTaskInput
    options: dict[str, Any]


class TemporalTaskGateway(WatcherReads):
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
        owner_keying: OwnerKeying = UNKEYED,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.client = client
        self.now_ms = clock
        self.owner_keying = owner_keying
        """How principals become the owner keys in workflow IDs: the deployment's, shared by every process."""
        self.task_queue = task_queue
        self.feed_runs: Callable[[str], bool] | None = None
        """Whether the feed shard of a task's workflow ID runs, for a gateway whose tasks publish to the task feed
        (`None`: they do not). A task started before its shard runs would not publish, yet its memo would say it
        does until its next transition: a front that follows the feed says which shards it has seen running
        (`FeedWatchHub.follows_shard_of`, set by `front.push_mode`), and a task it starts before then is followed
        through its history."""
        self.answer_visibility_timeout_s = answer_visibility_timeout_s
        self.metrics = metrics or FrontMetrics()
        self.closed_tasks = closed_tasks if closed_tasks is not None else ClosedTaskCache()
        self.search_attributes = search_attributes
        """Start tasks with McpTool/McpOwner/McpStatus; only where the namespace has them registered."""
        self.web_ui = web_ui
        """Temporal Web UI address: `tasks/get` then links the task's page in its `_meta`."""
        self.payload_limits = payload_limits or PayloadLimits()
        """How large arguments and answers may be: refused here, not after Temporal has taken the task."""
        self.fairness = fairness or FairnessPolicy(keying=owner_keying)
        """Each task's priority: its tool's, and its principal's fairness key and weight."""
        self.failing_workflows = FailingWorkflows()
        self.queue_watch = QueueWatch(client, task_queue)
        """Whether a worker polls each queue this front starts tasks on (`serving`)."""

    @classmethod
    def for_front(cls, client: Client, settings: FrontSettings, *, task_queue: str) -> TemporalTaskGateway:
        """The gateway a front serves with: `settings` applied, its metrics on the client's runtime."""
        runtime = client.service_client.config.runtime or Runtime.default()
        return cls(
            client,
            task_queue=task_queue,
            metrics=FrontMetrics(runtime.metric_meter),
            closed_tasks=ClosedTaskCache(max_entries=settings.closed_task_cache),
            search_attributes=settings.search_attributes,
            web_ui=settings.web_ui,
            payload_limits=PayloadLimits(storage=settings.payload_storage),
            fairness=FairnessPolicy.weighted(
                settings.fairness_weights, keys=settings.fairness_keys, keying=settings.owner_keying
            ),
            owner_keying=settings.owner_keying,
        )

    def request_metrics(self) -> RequestMetrics:
        """Server middleware counting every request this front answers, on the gateway's metrics."""
        return RequestMetrics(self.metrics)

    async def unready_reason(self) -> str | None:
        """Why this front cannot serve tasks now, or `None` when it can.

        Temporal or the namespace unreachable, or a queue it starts tasks on that no worker polls
        (as the last background check found it: `serving`).
        """
        unreachable = await unready_reason(self.client)
        if unreachable is not None:
            return unreachable
        await self.queue_watch.recheck_unpolled()
        return self.queue_watch.unready_reason()

    @asynccontextmanager
    async def serving(self) -> AsyncGenerator[None]:
        """While a front serves: its queues checked for workers, and it held out to the processes of its queue.

        The queues are checked once before the block starts (a front that starts with no worker says so at
        once) and every `queue_watch.CHECK_EVERY_S` after. The front's settings go out as the other processes'
        do (`temporal/shared_settings.py`): a worker learns a front uses its queue, and a process that starts
        later compares its own with them, the owner keying among them.
        """
        held = SharedSettings.of_converter(
            "front", self.client.data_converter, None, owner_keys=self.owner_keying.fingerprint(), front=True
        )
        await self.queue_watch.check()
        async with announce_settings(self.client, self.task_queue, held), anyio.create_task_group() as group:
            group.start_soon(self.queue_watch.run)
            try:
                yield
            finally:
                group.cancel_scope.cancel()

    def no_worker(self, task_queue: str, *, worked_at_ms: float | None = None) -> str | None:
        """The `statusMessage` of a waiting task on `task_queue` while no worker polls it, else `None`.

        `worked_at_ms`: when a worker last moved the task (a status line, a memo write), if one has.
        """
        unpolled = self.queue_watch.unpolled(task_queue, worked_at_ms=worked_at_ms)
        return waiting_for_a_worker(task_queue) if unpolled else None

    async def read_namespace_limits(self) -> None:
        """Take the namespace's own payload limit, as its server reports it, over Temporal's default."""
        self.payload_limits = replace(self.payload_limits, blob_limit=await namespace_blob_limit(self.client))

    async def create(
        self, task: ToolTaskInput, principal: str | None, *, pinned: bool = False, priority: int | None = None
    ) -> dict[str, Any]:
        """Start the task's workflow; returns once Temporal has persisted it.

        `pinned`: under worker versioning the task stays on the build it started on. `priority` is
        the tool's (1 highest .. 5); the run's activities inherit it with the fairness key.
        """
        start = self._tool_task_start(task, principal, pinned=pinned, priority=priority)
        # Eager: a worker in this process on the queue (`dev --in-process-worker`, a team's own) takes the
        # first workflow task in the start's answer, one matching round trip fewer; elsewhere a no-op.
        await self.client.start_workflow(start.workflow, start.task, **start.options, request_eager_start=True)
        self.metrics.task_created(task.tool)
        return created_task(
            task.task_id,
            task.created_at_ms,
            task.ttl_ms,
            task.poll_interval_ms,
            status_message=self.no_worker(self.task_queue),
        )

    async def create_settled(
        self,
        task: ToolTaskInput,
        principal: str | None,
        *,
        within_ms: int,
        pinned: bool = False,
        priority: int | None = None,
    ) -> Settled:
        """Start the task's workflow and wait up to `within_ms` for its tool to end or ask; one Temporal call.

        The start and the run's `settled` update go together (update-with-start), so the answer comes
        with the outcome: the tool's result or error when it ended in time, else the task, persisted
        (the start's own answer or a read says so before the task is handed out). A call cancelled
        meanwhile (the client left) must `abandon` the task: it may have started.
        """
        start = self._tool_task_start(task, principal, pinned=pinned, priority=priority)
        operation: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
            start.workflow, start.task, **start.options
        )
        answer: dict[str, Any] | None = None
        with anyio.move_on_after(within_ms / 1000):
            try:
                answer = await self.client.execute_update_with_start_workflow(  # pyright: ignore[reportUnknownMemberType]
                    SETTLED_UPDATE, start_workflow_operation=operation, result_type=dict[str, Any]
                )
            except WorkflowUpdateFailedError:
                # Taken, then refused by a worker from before the update (or the run ended under it): the task stands.
                answer = {"status": "working", "lastUpdatedAt": task.created_at_ms}
            except WorkflowUpdateRPCTimeoutOrCancelledError:
                # The SDK's name for its call cancelled by the bound above, or by the request's own end, which
                # the next await raises again.
                pass
        # Settled by now, either way: read, so asyncio does not report a start refused or cut short as never read.
        with anyio.move_on_after(0), contextlib.suppress(Exception):
            await operation.workflow_handle()
        if answer is None:
            await self._until_started(start)
            answer = {"status": "working", "lastUpdatedAt": task.created_at_ms}
        status = str(answer.get("status", "working"))
        self.metrics.task_created(task.tool, answered="result" if status in ("completed", "failed") else "task")
        if status == "completed":
            result = as_object(answer.get("result"))
            if not result:
                # Too large to come twice: read from the close event, once.
                result = as_object(await self.client.get_workflow_handle(start.options["id"]).result())
            return Settled(result=expand(dict(result)))
        if status == "failed":
            return Settled(error=dict(as_object(answer.get("error"))))
        last_updated_ms = max(int(answer.get("lastUpdatedAt") or 0), task.created_at_ms)
        created = created_task(
            task.task_id,
            task.created_at_ms,
            task.ttl_ms,
            task.poll_interval_ms,
            status=status,
            last_updated_at_ms=last_updated_ms,
            status_message=self.no_worker(self.task_queue) if status == "working" else None,
        )
        return Settled(task=created)

    async def abandon(self, task: ToolTaskInput, principal: str | None, *, pinned: bool = False) -> None:
        """Cancel the task of a call `create_settled` was serving when the call ended without its answer.

        Its start may not have been answered, or even taken, yet: starting it again (which Temporal refuses
        for a task that exists) makes sure there is a run, so the cancel reaches it and no tool goes on
        for a call nobody waits on.
        """
        await self._until_started(self._tool_task_start(task, principal, pinned=pinned, priority=None))
        await self.cancel(task.task_id, principal)

    async def _until_started(self, start: _Start) -> None:
        """Return once the task's run exists: started now, or found started."""
        try:
            await self.client.start_workflow(start.workflow, start.task, **start.options)
        except WorkflowAlreadyStartedError:
            pass

    def _tool_task_start(
        self, task: ToolTaskInput, principal: str | None, *, pinned: bool, priority: int | None
    ) -> _Start:
        """What starts a tool task's run: its workflow type, input and start options, one task one run."""
        self._check_input(task.arguments, "The tool's arguments")
        workflow_id = self.owner_keying.workflow_id(task.task_id, principal)
        if self.feed_runs is not None and self.feed_runs(workflow_id):
            task = replace(task, feed=True)
        owner = self.owner_keying.owner_key(principal)
        memo = initial_memo(
            task.task_id,
            task.tool,
            owner,
            task.created_at_ms,
            task.ttl_ms,
            task.poll_interval_ms,
            anonymous=principal is None,
        )
        if task.feed:
            # Read by the fronts' listens: the task joins the feed when one first names it.
            memo[Memo.FEED_SEQ] = FEED_JOINS_ON_LISTEN
        options: dict[str, Any] = {
            "id": workflow_id,
            "task_queue": self.task_queue,
            "memo": memo,
            # One task ID is one run, ever: a closed task's ID must not start a fresh run.
            "id_reuse_policy": WorkflowIDReusePolicy.REJECT_DUPLICATE,
            "id_conflict_policy": WorkflowIDConflictPolicy.FAIL,
            "static_summary": f"MCP task: {task.tool}",
            "search_attributes": start_attributes(tool=task.tool, owner=owner) if self.search_attributes else None,
            "priority": self.fairness.priority(principal, priority),
        }
        return _Start(PINNED_TOOL_TASK_WORKFLOW if pinned else TOOL_TASK_WORKFLOW, task, options)

    async def start_workflow_task(self, task: WorkflowTask, principal: str | None) -> Snapshot:
        """Start a workflow tool's task: the user's own workflow, under the task's workflow ID and memo.

        Returns the task as its start left it, before any event after the start: following the
        task from there (`TaskWatchHub.subscribe(seen=...)`) replays every status it has set since,
        in order, however soon after the start it set them. The TTL is also the workflow's execution
        timeout, which covers its whole continue-as-new chain, so Temporal itself stops an expired task
        (a Nexus tool's run ends itself at its TTL, and Temporal only past `NEXUS_EXPIRY_GRACE_S`).
        """
        self._check_input(task.args, "The tool's arguments")
        memo = workflow_task_memo(task, self.owner_keying.owner_key(principal), anonymous=principal is None)
        handle = await self.client.start_workflow(
            task.workflow,
            args=task.args,
            id=self.owner_keying.workflow_id(task.task_id, principal),
            task_queue=task.task_queue or self.task_queue,
            memo=memo,
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
            execution_timeout=_execution_timeout(task),
            versioning_override=AutoUpgradeVersioningOverride() if task.auto_upgrade else None,
            static_summary=f"MCP task: {task.tool}",
            search_attributes=start_attributes(tool=task.tool, owner=self.owner_keying.owner_key(principal))
            if self.search_attributes
            else None,
            # Its activities and child workflows inherit it, as the user's workflow wrote them.
            priority=self.fairness.priority(principal, task.priority),
        )
        return Snapshot(
            namespace=self.client.namespace,
            workflow_id=handle.id,
            run_id=handle.result_run_id or "",
            status=WorkflowExecutionStatus.RUNNING,
            start_time_ms=task.created_at_ms,
            history_length=0,
            memo=memo,
            pending_activities=(),
            task_queue=task.task_queue or self.task_queue,
        )

    async def create_workflow_task(self, task: WorkflowTask, principal: str | None) -> dict[str, Any]:
        """Start a workflow tool's task; returns its `CreateTaskResult` fields once Temporal has persisted it."""
        started = await self.start_workflow_task(task, principal)
        self.metrics.task_created(task.tool)
        return created_task(
            task.task_id,
            task.created_at_ms,
            task.ttl_ms,
            task.poll_interval_ms,
            status_message=self.no_worker(started.task_queue),
        )

    async def get(self, task_id: str, principal: str | None) -> dict[str, Any]:
        """The task's `DetailedTask`, as `tasks/get` returns it."""
        closed = self._closed(task_id, principal)
        if closed is not None:
            return closed
        observed = await self.observe(task_id, principal)
        task = await self.view(task_id, observed)
        if self.web_ui:
            seen = observed
            link = web_ui_link(self.web_ui, seen.namespace, seen.workflow_id, seen.run_id)
            task["_meta"] = {WEB_UI_META: link}
        if task["status"] in TERMINAL_STATUSES:
            self.closed_tasks.put(
                observed.workflow_id,
                task,
                created_at_ms=int(observed.memo[Memo.CREATED_AT]),
                ttl_ms=observed.memo.get(Memo.TTL_MS),
            )
        return task

    def _closed(self, task_id: str, principal: str | None) -> dict[str, Any] | None:
        """The task from this front's memory of closed tasks, if it is there (and not expired)."""
        if not is_task_id(task_id):
            raise TaskNotFoundError()
        return self.closed_tasks.get(self.owner_keying.workflow_id(task_id, principal), self.now_ms())

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
            await self._handle(observed).signal(INPUT_SIGNAL, accepted)
        except RPCError as err:
            # It closed since we looked: no key is outstanding any more, which the spec says to ignore.
            if err.status != RPCStatusCode.NOT_FOUND:
                raise
            return
        await self._until_answered(observed, set(accepted))

    def _check_input(self, value: Any, what: str) -> None:
        self.payload_limits.check_input(self.client.data_converter.payload_converter, value, what)

    async def _until_answered(self, observed: Snapshot, keys: set[str]) -> None:
        delay = 0.01
        with anyio.move_on_after(self.answer_visibility_timeout_s):
            while True:
                seen = await described(self.client, observed.workflow_id)
                if seen.status != WorkflowExecutionStatus.RUNNING:
                    return
                if await self.failing(seen) is not None:
                    raise AnswerNotTakenError(recorded=True)
                pending = as_object(seen.memo.get(Memo.INPUT_REQUESTS))
                if not keys & set(pending):
                    return
                await anyio.sleep(delay)
                # The answer usually lands within a workflow task (~40 ms), read at 10, 25 and 50 ms; a worker
                # that is busy or gone is read a few times a second, not fifty, until the bound.
                delay = min(delay * 1.5, 0.25)

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
            await self._handle(observed).cancel(reason=reason)
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:
                raise

    def _handle(self, seen: Snapshot) -> WorkflowHandle[Any, Any]:
        """The handle of a task's workflow, whichever run is the latest."""
        return self.client.get_workflow_handle(seen.workflow_id)

    async def observe(self, task_id: str, principal: str | None) -> Snapshot:
        """The task as `describe` shows it now, once its ID, owner and TTL check for this caller.

        Raises:
            TaskNotFoundError: No such task for this caller (never created, another's, or gone).
            TaskExpiredError: Its TTL has passed.
        """
        if not is_task_id(task_id):
            raise TaskNotFoundError()
        # The current owner key first; during a migration window also the legacy one (ids.owner_keys).
        for candidate, key in self.owner_keying.workflow_ids(task_id, principal):
            try:
                seen = await described(self.client, candidate)
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
        if ttl_ms is not None and self.now_ms() >= int(memo[Memo.CREATED_AT]) + int(ttl_ms):
            raise TaskExpiredError()
        return seen

    async def list_owned(self, owner: str, *, page_token: bytes, page_size: int) -> OwnedPage:
        """A page of the tasks stored under the owner key `owner`, newest first, from Temporal visibility."""
        return await list_owned(self.client, owner, page_token=page_token, page_size=page_size)

    async def observe_listed(self, task_ids: Sequence[str], principal: str | None) -> dict[str, ListedTask]:
        """The tasks among `task_ids` this caller may see, as visibility shows them: a few calls for all.

        Held to what `observe` checks (the ID's shape, the owner in the memo, the TTL); a task left out
        here may still exist (visibility lags its start), so the caller `observe`s the rest. A task's
        read may be behind the task, and has no pending activities (`Snapshot.listed`); its memo stays
        packed until the caller follows the task (`ListedTask.snapshot`).
        """
        key = self.owner_keying.owner_key(principal)
        wanted = {
            self.owner_keying.workflow_id(task_id, principal): task_id for task_id in task_ids if is_task_id(task_id)
        }
        found: dict[str, ListedTask] = {}
        now = self.now_ms()
        listed: dict[str, ListedTask] | None = None
        if len(wanted) > LISTED_IDS_PER_QUERY:
            # An owner with fewer tasks than the IDs named (IDs nobody issued, say) is read by its own tasks:
            # a count and a page or two, however many IDs were named.
            prefix = task_workflow_id(key, "")
            owned = await owned_count(self.client, prefix)
            if owned is not None and owned <= len(wanted):
                listed = await listed_owned(self.client, prefix, wanted.keys())
        if listed is None:
            listed = await listed_tasks(self.client, list(wanted))
        for wid, seen in listed.items():
            task_id = wanted.get(wid)
            memo = seen.memo
            if task_id is None or memo.get(Memo.OWNER) != key:
                continue
            ttl_ms = memo.get(Memo.TTL_MS)
            created_at_ms = memo.get(Memo.CREATED_AT, seen.start_time_ms)
            if ttl_ms is not None and now >= int(created_at_ms) + int(ttl_ms):
                continue
            found[task_id] = seen
        return found

    async def failing(self, seen: Snapshot) -> WorkflowTaskFailure | None:
        """Why the task's workflow code keeps failing, if it does; logged once per failure (workers count it)."""
        observed = seen
        if seen.status != WorkflowExecutionStatus.RUNNING:
            return None
        failure = await self.failing_workflows.failure(
            self.client, seen.workflow_id, seen.run_id, seen.pending_workflow_task
        )
        if failure is not None and failure.first_report:
            tool = str(observed.memo.get(Memo.TOOL) or "")
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
                    await self.failing(seen)
            except RPCError as err:
                logger.debug("looking for failing tasks: %s", err.message)
            await anyio.sleep(every_s)

    async def view(self, task_id: str, observed: Snapshot) -> dict[str, Any]:
        """The `DetailedTask` of an observed workflow, tool task or workflow tool alike."""
        try:
            return await self._view(task_id, observed)
        except (StoredPayloadError, CodecError) as err:
            raise unreadable(task_id, err) from None

    async def _view(self, task_id: str, observed: Snapshot) -> dict[str, Any]:
        memo, status = observed.memo, observed.status
        failure = await self.failing(observed)
        if failure is not None:
            return task_view(task_id, memo, status, failing=failure.status_message)
        if memo.get(Memo.KIND) == WORKFLOW_KIND:
            return await self._workflow_task_view(task_id, observed)
        heartbeat = None
        result: dict[str, Any] | None = None
        if status == WorkflowExecutionStatus.RUNNING and memo.get(Memo.STATUS, "working") == "working":
            heartbeat = await self.latest_status(observed.pending_activities)
        elif status == WorkflowExecutionStatus.COMPLETED:
            result = await self._handle(observed).result()
        closed_at = observed.close_time_ms
        error = await self.ended_with(observed)
        return task_view(
            task_id,
            memo,
            status,
            heartbeat=heartbeat,
            result=result,
            error=error,
            closed_at_ms=closed_at,
            no_worker=self._no_worker_for(observed, heartbeat[1] if heartbeat is not None else None),
        )

    def _no_worker_for(self, observed: Snapshot, status_line_at_ms: float | None = None) -> str | None:
        """Why a running task waits, when no worker polls the queue its workflow runs on."""
        if not observed.running or not observed.task_queue:
            return None
        memo = observed.memo
        created, updated = memo.get(Memo.CREATED_AT), memo.get(Memo.LAST_UPDATED_AT)
        # The front writes both at the start; a later update is the workflow's, so a worker ran it then.
        memo_worked = float(updated) if updated is not None and updated != created else None
        worked = max((t for t in (memo_worked, status_line_at_ms) if t is not None), default=None)
        return self.no_worker(observed.task_queue, worked_at_ms=worked)

    async def _workflow_task_view(self, task_id: str, observed: Snapshot) -> dict[str, Any]:
        """A workflow tool's task: its status lives in the memo, its outcome in the close event.

        Its activities are the user's, whose heartbeat details are not status
        lines, so they are never read as one. The result is decoded with no type
        hint: the front server does not know the workflow class.
        """
        status = observed.status
        closed_at = observed.close_time_ms
        if status not in (WorkflowExecutionStatus.COMPLETED, WorkflowExecutionStatus.FAILED):
            error = await self.ended_with(observed)
            no_worker = self._no_worker_for(observed)
            return task_view(task_id, observed.memo, status, error=error, closed_at_ms=closed_at, no_worker=no_worker)
        try:
            value = await self._handle(observed).result()
        except WorkflowFailureError as failure:
            outcome = failure_outcome(failure.cause)
            closed = WorkflowExecutionStatus.COMPLETED if outcome.status == "completed" else status
            return task_view(
                task_id, observed.memo, closed, result=outcome.result, error=outcome.error, closed_at_ms=closed_at
            )
        return task_view(task_id, observed.memo, status, result=call_tool_result(value), closed_at_ms=closed_at)


def _execution_timeout(task: WorkflowTask) -> timedelta | None:
    if task.ttl_ms is None:
        return None
    grace_s = NEXUS_EXPIRY_GRACE_S if task.workflow == NEXUS_TOOL_WORKFLOW else 0.0
    return timedelta(milliseconds=task.ttl_ms, seconds=grace_s)
