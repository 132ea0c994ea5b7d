"""The task workflow: one MCP task is one run of `ToolTaskWorkflow`.

The workflow owns the task's state machine. It runs the tool in activities,
turns a round that needs input into `input_required`, waits durably for the
`tasks/update` signal, and closes the run so that Temporal's own status tells
the outcome: COMPLETED carries the `CallToolResult`, FAILED a JSON-RPC error,
CANCELED a cancellation. Every transition is mirrored into the memo, which the
front server reads with `describe` even while no worker is polling; the
`mcp_tasks.state` query gives the same state from the workflow itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy, VersioningBehavior
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError, FailureError
from temporalio.workflow import HandlerUnfinishedPolicy

with workflow.unsafe.imports_passed_through():
    from mcp_tasks_temporal.temporal.contract import (
        ADOPT_TOOL_ACTIVITY,
        HANDED_OFF,
        INPUT_SIGNAL,
        INTERNAL_ERROR_CODE,
        JOIN_FEED_SIGNAL,
        JSONRPC_ERROR,
        NOT_RUN,
        PINNED_TOOL_TASK_WORKFLOW,
        REQUEST_INPUT_UPDATE,
        RUN_TOOL_ACTIVITY,
        RUN_TOOL_FIRST_ACTIVITY,
        SETTLED_UPDATE,
        STATE_QUERY,
        TASK_EXPIRED,
        TOOL_TASK_WORKFLOW,
        UNKNOWN_TOOL,
        ActivityPolicy,
        Adoption,
        FirstAttempt,
        InputAsk,
        Memo,
        ToolRoundInput,
        ToolTaskInput,
        as_object,
        detailed_task,
    )
    from mcp_tasks_temporal.temporal.feed_contract import task_feed_workflow_id
    from mcp_tasks_temporal.temporal.feed_publisher import FeedOutbox
    from mcp_tasks_temporal.temporal.result_text import expand
    from mcp_tasks_temporal.temporal.search_attributes import carries_status, upsert_status


# Patch IDs: each guards a change to the commands the workflow issues, so histories
# recorded before it still replay.
WAIT_FOR_TOOL_PATCH = "wait-for-a-worker-with-the-tool"
TOOL_KEYS_PATCH = "client-sees-the-tools-input-keys"
CANCEL_REASON_PATCH = "tool-task-cancel-reason-as-status"
FEED_PATCH = "publish-transitions-to-the-task-feed"
FEED_DEADLINE_PATCH = "feed-transitions-carry-the-deadline"
FEED_ANNOUNCE_PATCH = "announce-tasks-to-the-task-feed"
DRAIN_THROUGH_CANCEL_PATCH = "feed-drain-outlives-a-late-cancel"
COMPLETION_ONCE_PATCH = "completion-written-once"
FIRST_ATTEMPT_LOCAL_PATCH = "first-attempt-in-the-first-workflow-task"
CANCEL_OVER_FAILURE_PATCH = "a-cancelled-task-never-shows-failed"
FEED_AFTER_FIRST_ATTEMPT_PATCH = "feed-starts-once-the-first-attempt-goes-on"
FEED_ON_LISTEN_PATCH = "feed-joined-when-a-listen-names-the-task"

ADOPT_START_S = 15.0
"""How long a handed-off first attempt may wait for its adoption to start (its worker polls its own queue)
before the round runs again as an ordinary activity: longer than the worker keeps it unadopted
(`activities.tool_call.ADOPT_WITHIN_S`), so the two attempts never run side by side."""

_TOOL_WAIT_MAX_S = 60.0
SETTLED_RESULT_MAX_CHARS = 64 * 1024
"""A result up to this size (as JSON) goes back in the `settled` update too; a larger one is read from the
close event alone, so a history holds a large result once."""


class _TaskExpired(Exception):
    """Raised inside the run when the TTL timer fires."""


class _FirstAttemptFailed(Exception):
    """A first attempt failed in a way that ends the task (or with no attempt left to retry it)."""

    def __init__(self, cause: BaseException | None) -> None:
        super().__init__()
        self.cause = cause


# Outside Temporal's sandbox: the sandbox runs this module again for every new run (its classes, their
# definitions and type hints), which cost a task's first workflow task most of its time (about 100 of 150 ms
# on a loaded 2-core machine). The code is the engine's own, deterministic and replayed against every
# recorded history in the tests; the user's workflow tools stay sandboxed.
@workflow.defn(name=TOOL_TASK_WORKFLOW, sandboxed=False)
class ToolTaskWorkflow:
    """Runs one tool call as a durable MCP task."""

    @workflow.init
    def __init__(self, task: ToolTaskInput) -> None:
        self._task = task
        self._status = "working"
        self._status_message: str | None = None
        self._last_updated_ms = task.created_at_ms
        self._result: dict[str, Any] | None = None
        self._error: dict[str, Any] | None = None
        # Outstanding questions under their task-level keys, and the answers that came in.
        self._input_requests: dict[str, Any] = {}
        self._answers: dict[str, Any] = {}
        # The task key each `request_input` key was published under, so a retried attempt's ask is the same question.
        self._asked: dict[str, str] = {}
        self._feed: FeedOutbox | None = None
        self._feed_id: str | None = None
        """The task's feed shard while the task is on the feed or will be once its first attempt goes on."""
        self._feed_deferred = False
        self._join_asked = False
        """A listen asked the task onto the feed (`join_feed`); before the run decided how it publishes, maybe."""
        self._joins_on_listen = False

    @workflow.run
    async def run(self, task: ToolTaskInput) -> dict[str, Any]:
        """Run the tool to its end, or until cancelled or expired."""
        if task.feed and workflow.patched(FEED_ON_LISTEN_PATCH):
            # Listened to or not, a task on the feed signals its shard at each transition, and each signal's
            # acknowledgement is a workflow task: only a task someone listens to pays for it.
            self._feed_id = task_feed_workflow_id(workflow.info().task_queue, workflow.info().workflow_id)
            self._feed_deferred = self._joins_on_listen = True
            if self._join_asked:
                self._join_feed_if_deferred()
        elif task.feed and task.first_attempt_ms and workflow.patched(FEED_AFTER_FIRST_ATTEMPT_PATCH):
            # A tool that ends in its first attempt, in this workflow task, ends before its creating call has
            # answered: no front can be following it, and it publishes nothing (the feed's signals and their
            # acknowledgements would double its history). One that goes on joins the feed then.
            self._feed_id = task_feed_workflow_id(workflow.info().task_queue, workflow.info().workflow_id)
            self._feed_deferred = True
        elif task.feed and workflow.patched(FEED_PATCH):
            self._start_feed(deadline=workflow.patched(FEED_DEADLINE_PATCH), announce=None)
        try:
            outcome = await self._run(task)
        except GeneratorExit:
            # The worker dropped the run from its cache while it waited (eviction, shutdown): its coroutine is
            # closed outside the workflow's event loop, where nothing may be awaited. The run goes on elsewhere.
            raise
        except BaseException:
            if self._feed is not None:
                await self._drain_feed(self._feed)
            raise
        if self._feed is not None:
            await self._drain_feed(self._feed)
        return outcome

    def _start_feed(self, *, deadline: bool, announce: bool | None) -> None:
        """Put the task on the feed: number 0 is its state so far, and from here on a front may follow it there.

        `deadline` and `announce` say what the code that started the run published; `announce=None`: look.
        """
        task = self._task
        if deadline:
            # The shard's index of open tasks holds the deadline, so a listen need not read the memo for it.
            self._feed = FeedOutbox(task.created_at_ms + task.ttl_ms if task.ttl_ms is not None else None)
        else:
            self._feed = FeedOutbox()
        self._feed_id = self._feed.feed_workflow_id
        workflow.upsert_memo({Memo.FEED_SEQ: 0})
        if announce or (announce is None and workflow.patched(FEED_ANNOUNCE_PATCH)):
            # The shard indexes the task now, not at its first transition: a listen on a task that has
            # not changed yet is acknowledged from the index. Number 0 notifies no front.
            self._feed.announce(self._fields())

    @workflow.signal(name=JOIN_FEED_SIGNAL)
    def join_feed(self) -> None:
        """A front in feed mode follows the task for a listen: publish from here on, the state so far first."""
        self._join_asked = True
        if self._joins_on_listen:
            self._join_feed_if_deferred()

    def _first_attempt_went_on(self) -> None:
        """The first attempt did not end the task in its workflow task: a task that joins the feed then does."""
        if not self._joins_on_listen:
            self._join_feed_if_deferred()

    def _join_feed_if_deferred(self) -> None:
        """The task joins the feed now, with everything the feed's earlier patches brought (its patches are
        younger than theirs)."""
        if self._feed_deferred:
            self._feed_deferred = False
            self._start_feed(deadline=True, announce=True)

    async def _drain_feed(self, feed: FeedOutbox) -> None:
        """Wait until the shard has every transition, the last one included.

        The outcome is decided by now and the feed carries it: a cancel that arrives while it is being delivered
        must not turn a completed tool into a cancelled task and lose its result. Histories from before the
        patch closed cancelled there, and replay so.
        """
        while True:
            try:
                await feed.drained()
                return
            except asyncio.CancelledError:
                if workflow.cancellation_reason() is None or not workflow.patched(DRAIN_THROUGH_CANCEL_PATCH):
                    raise

    async def _run(self, task: ToolTaskInput) -> dict[str, Any]:
        try:
            if task.ttl_ms is None:
                return await self._execute()
            remaining_s = (task.created_at_ms + task.ttl_ms) / 1000 - workflow.now().timestamp()
            try:
                # A durable timer: the work stops at createdAt + ttlMs even across worker restarts.
                return await asyncio.wait_for(self._execute(), timeout=max(remaining_s, 0.001))
            except TimeoutError:
                raise _TaskExpired() from None
        except _TaskExpired:
            self._error = {"code": INTERNAL_ERROR_CODE, "message": "Task expired"}
            self._transition("failed", status_message="Task expired before it finished")
            raise ApplicationError("Task expired", self._error, type=TASK_EXPIRED, non_retryable=True) from None
        except asyncio.CancelledError:
            # A front that cancels a question nobody can answer says why; the cancelled task shows it.
            reason = workflow.cancellation_reason()
            shown = reason if reason and workflow.patched(CANCEL_REASON_PATCH) else "Cancelled by request"
            self._transition("cancelled", status_message=shown)
            raise

    @workflow.query(name=STATE_QUERY)
    def state(self) -> dict[str, Any]:
        """The full task as `tasks/get` would return it, read from the workflow itself."""
        return detailed_task(
            task_id=self._task.task_id,
            status=self._status,
            created_at_ms=self._task.created_at_ms,
            last_updated_at_ms=self._last_updated_ms,
            ttl_ms=self._task.ttl_ms,
            poll_interval_ms=self._task.poll_interval_ms,
            status_message=self._status_message,
            input_requests=self._input_requests,
            result=expand(self._result) if self._result is not None else None,
            error=self._error,
        )

    @workflow.signal(name=INPUT_SIGNAL)
    def provide_input(self, responses: dict[str, Any]) -> None:
        """Record answers to outstanding questions (`tasks/update`).

        Signals are delivered at least once and clients may resend, so only keys
        that are outstanding and not yet answered count; the rest is ignored, as
        the spec asks.
        """
        accepted = {k: v for k, v in responses.items() if k in self._input_requests and k not in self._answers}
        if not accepted:
            return
        self._answers.update(accepted)
        for key in accepted:
            del self._input_requests[key]
        self._transition("input_required" if self._input_requests else "working")

    @workflow.update(name=REQUEST_INPUT_UPDATE, unfinished_policy=HandlerUnfinishedPolicy.ABANDON)
    async def request_input(self, ask: InputAsk) -> dict[str, Any]:
        """Questions asked midway by the running tool (`request_input`); returns once all are answered.

        The client sees the tool's own key unless the task already used it (then
        `ask/<key>`). A key asked again (a retried attempt) is the same question:
        its recorded answer is returned without asking the client twice.
        """
        task_keys = {self._midway_key(key): key for key in ask.requests}
        new = {
            tk: ask.requests[k]
            for tk, k in task_keys.items()
            if tk not in self._answers and tk not in self._input_requests
        }
        if new:
            self._input_requests.update(new)
            self._transition("input_required")
        await workflow.wait_condition(lambda: all(tk in self._answers for tk in task_keys))
        return {key: self._answers[tk] for tk, key in task_keys.items()}

    @workflow.update(name=SETTLED_UPDATE, unfinished_policy=HandlerUnfinishedPolicy.ABANDON)
    async def settled(self) -> dict[str, Any]:
        """The task once its tool has ended or asked something: what the creating call may answer with.

        A front sends it with the start (update-with-start) and waits for it within the tool's budget,
        a bound it keeps itself: Temporal's timers are not precise below a second. A front that stopped
        waiting leaves the update to end with the run, unread.
        """
        await workflow.wait_condition(lambda: self._status != "working")
        answer: dict[str, Any] = {"status": self._status, "lastUpdatedAt": self._last_updated_ms}
        if self._status == "completed" and self._result is not None:
            if len(json.dumps(self._result, separators=(",", ":"))) <= SETTLED_RESULT_MAX_CHARS:
                answer["result"] = self._result
        elif self._status == "failed":
            answer["error"] = self._error
        return answer

    def _midway_key(self, key: str) -> str:
        known = self._asked.get(key)
        if known is None:
            known = self._asked[key] = self._task_key(key, f"ask/{key}")
        return known

    def _task_key(self, key: str, namespaced: str) -> str:
        """The key a question is published under: the tool's own while it is unused, so the key a
        tool asks under is the key the user answers; the namespaced one otherwise, so keys stay
        unique over the task's life. Histories from before the patch keep their namespaced keys."""
        if key not in self._answers and key not in self._input_requests and workflow.patched(TOOL_KEYS_PATCH):
            return key
        return namespaced

    async def _execute(self) -> dict[str, Any]:
        task = self._task
        policy = task.activity
        responses = task.input_responses
        request_state = task.request_state
        round_number = 0
        tool_waits = 0
        first_ms = task.first_attempt_ms if self._runs_first_locally(policy) else 0
        while True:
            call = ToolRoundInput(
                task_id=task.task_id,
                tool=task.tool,
                arguments=task.arguments,
                meta=task.meta,
                round=round_number,
                input_responses=responses,
                request_state=request_state,
                progress_timeout_s=policy.progress_timeout_s,
                feed_workflow_id=self._feed_id,
                heartbeat_timeout_s=policy.heartbeat_timeout_s,
            )
            try:
                attempts = policy.maximum_attempts
                local: dict[str, Any] | None = None
                if first_ms:
                    first_ms = 0
                    local, used = await self._first_attempt(call, first_ms=task.first_attempt_ms)
                    if used and attempts:
                        attempts -= 1
                    if local is None or local.get("resultType") == "input_required":
                        self._first_attempt_went_on()
                    if used and local is None:
                        await workflow.sleep(policy.initial_retry_interval_s)
                outcome = local if local is not None else await self._tool_activity(call, policy, attempts)
            except _FirstAttemptFailed as failed:
                raise self._ended_by(failed.cause) from None
            except ActivityError as err:
                if isinstance(err.cause, CancelledError):
                    raise asyncio.CancelledError() from err
                if _no_worker_has_tool(err) and workflow.patched(WAIT_FOR_TOOL_PATCH):
                    # Only workers without the tool took the round (a rolling deploy): wait for
                    # one that has it and run the same round again, backing off to keep the history small.
                    await workflow.sleep(min(2.0 * 2 ** min(tool_waits, 5), _TOOL_WAIT_MAX_S))
                    tool_waits += 1
                    continue
                raise self._ended_by(err.cause) from None
            if outcome.get("resultType") != "input_required":
                self._result = outcome
                self._complete()
                return outcome
            if workflow.cancellation_reason() is not None:
                # The round finished although a cancel arrived: a cancel the activity swallowed
                # does not raise again, so honour it here before asking anything.
                raise asyncio.CancelledError()
            responses = await self._ask(outcome.get("inputRequests") or {}, round_number)
            request_state = outcome.get("requestState")
            round_number += 1

    def _runs_first_locally(self, policy: ActivityPolicy) -> bool:
        """Whether the first attempt runs in the first workflow task: the front asked it, and the tool's
        activities run on this workflow's own queue (a worker there has the tool)."""
        if not self._task.first_attempt_ms:
            return False
        if policy.task_queue not in (None, workflow.info().task_queue):
            return False
        return workflow.patched(FIRST_ATTEMPT_LOCAL_PATCH)

    async def _tool_activity(self, call: ToolRoundInput, policy: ActivityPolicy, attempts: int) -> dict[str, Any]:
        return await workflow.execute_activity(
            RUN_TOOL_ACTIVITY,
            call,
            result_type=dict[str, Any],
            task_queue=policy.task_queue,
            start_to_close_timeout=timedelta(seconds=policy.start_to_close_timeout_s),
            heartbeat_timeout=timedelta(seconds=policy.heartbeat_timeout_s),
            retry_policy=RetryPolicy(
                initial_interval=timedelta(seconds=policy.initial_retry_interval_s),
                maximum_attempts=attempts,
                non_retryable_error_types=[JSONRPC_ERROR],
            ),
            # "cancelled" must mean the tool really stopped, not that we stopped waiting for it.
            cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        )

    async def _first_attempt(self, call: ToolRoundInput, *, first_ms: int) -> tuple[dict[str, Any] | None, bool]:
        """The round's first attempt in this workflow task, as a local activity: a tool that ends within
        `first_ms` closes the run with no activity task and no second workflow task.

        Returns the round's outcome, or `None` when the round must run as an activity, and whether an attempt
        was used. A tool still running at `first_ms` (or waiting for an answer) goes on on its worker, which
        hands it to an `adopt_tool` activity on its own queue: heartbeats, status lines, cancel and questions
        from there on as any activity's, and the tool never runs twice for this. Raises `ActivityError` for a
        failure that ends the task (or that no attempt is left to retry).
        """
        policy = self._task.activity
        try:
            local: dict[str, Any] = await workflow.execute_local_activity(
                RUN_TOOL_FIRST_ACTIVITY,
                FirstAttempt(round=call, local_ms=first_ms),
                result_type=dict[str, Any],
                start_to_close_timeout=timedelta(seconds=first_ms / 1000 + 30),
                retry_policy=RetryPolicy(maximum_attempts=1),
                cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            )
        except (ActivityError, FailureError) as err:
            # A local activity's failure comes as its cause, an activity's wrapped in `ActivityError`.
            cause = err.cause if isinstance(err, ActivityError) else err
            if isinstance(cause, CancelledError):
                raise asyncio.CancelledError() from err
            if not _retried(cause, policy):
                raise _FirstAttemptFailed(cause) from None
            return None, True
        if local.get(NOT_RUN):
            return None, False
        handed = as_object(local.get(HANDED_OFF))
        if not handed:
            return local, True
        queue, attempt = str(handed.get("queue")), str(handed.get("attempt"))
        self._first_attempt_went_on()
        try:
            adopted: dict[str, Any] = await workflow.execute_activity(
                ADOPT_TOOL_ACTIVITY,
                Adoption(attempt=attempt),
                result_type=dict[str, Any],
                task_queue=queue,
                schedule_to_start_timeout=timedelta(seconds=ADOPT_START_S),
                start_to_close_timeout=timedelta(seconds=policy.start_to_close_timeout_s),
                heartbeat_timeout=timedelta(seconds=policy.heartbeat_timeout_s),
                retry_policy=RetryPolicy(maximum_attempts=1),
                cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            )
        except ActivityError as err:
            if isinstance(err.cause, CancelledError):
                # Cancelled before its adoption started, maybe: stop the tool where it runs, then close.
                await self._stop_handed_off(queue, attempt)
                raise asyncio.CancelledError() from err
            if not _retried(err.cause, policy):
                raise _FirstAttemptFailed(err.cause) from None
            return None, True
        return adopted, True

    async def _stop_handed_off(self, queue: str, attempt: str) -> None:
        with contextlib.suppress(ActivityError):
            await workflow.execute_activity(
                ADOPT_TOOL_ACTIVITY,
                Adoption(attempt=attempt, stop=True),
                task_queue=queue,
                schedule_to_start_timeout=timedelta(seconds=ADOPT_START_S),
                start_to_close_timeout=timedelta(seconds=60),
                retry_policy=RetryPolicy(maximum_attempts=1),
            )

    async def _ask(self, requests: dict[str, Any], round_number: int) -> dict[str, Any]:
        """Publish one round of questions and wait for every answer.

        Tool-side keys repeat across rounds (a resolver asks under the same key),
        but task keys must be unique over the task's life: a key already used
        gets the round's namespace (`r<n>/<key>`), and answers are mapped back
        before the next round.
        """
        task_keys: dict[str, str] = {}
        for key in requests:
            task_keys[self._task_key(key, f"r{round_number}/{key}")] = key
        self._input_requests.update({task_key: requests[key] for task_key, key in task_keys.items()})
        self._transition("input_required")
        await workflow.wait_condition(lambda: all(k in self._answers for k in task_keys))
        return {key: self._answers[task_key] for task_key, key in task_keys.items()}

    def _ended_by(self, cause: BaseException | None) -> BaseException:
        """What ends the task when its attempt failed: the failure, or the cancel that came first.

        An attempt being cancelled (the activity waits for its tool to stop) may still end in a failure of its
        own, such as its heartbeat lost as it stopped. The task was cancelled by then, and `cancelled` is what
        it ends as: before the patch it showed `failed` first, a terminal status it then left, and replays so.
        """
        if workflow.cancellation_reason() is not None and workflow.patched(CANCEL_OVER_FAILURE_PATCH):
            return asyncio.CancelledError()
        return self._fail(cause)

    def _fail(self, cause: BaseException | None) -> ApplicationError:
        if isinstance(cause, ApplicationError) and cause.type == JSONRPC_ERROR and cause.details:
            self._error = dict(cause.details[0])
        else:
            # Timeouts or an exhausted retry budget: the detail stays in the history, not on the wire.
            self._error = {"code": INTERNAL_ERROR_CODE, "message": "Tool execution failed"}
        self._transition("failed", status_message=f"Tool execution failed: {self._error.get('message', '')}")
        return ApplicationError(str(self._error.get("message")), self._error, type=JSONRPC_ERROR, non_retryable=True)

    def _complete(self) -> None:
        """The tool's result is in: the run closes with it next, in this workflow task.

        The close event carries the status and the result, and every reader takes a closed task's from
        there (`tasks/get`, push, `admin`), as it takes `ExecutionStatus` over `McpStatus`: the memo's and
        the attribute's `completed` said it twice more. A run that publishes to the task feed still posts
        the transition, numbered in its memo; one without `McpStatus` had only the memo to save and keeps
        it, as the patch's marker would cost more than that. Histories from before the patch replay so.
        """
        if self._feed is None and carries_status() and workflow.patched(COMPLETION_ONCE_PATCH):
            self._status = "completed"
            self._last_updated_ms = int(workflow.now().timestamp() * 1000)
            return
        self._transition("completed")

    def _transition(self, status: str, *, status_message: str | None = None) -> None:
        self._status = status
        if status_message is not None:
            self._status_message = status_message
        self._last_updated_ms = int(workflow.now().timestamp() * 1000)
        self._publish()

    def _publish(self) -> None:
        """Mirror the state into the memo so reads never need a worker, and into `McpStatus` for visibility."""
        upsert_status(self._status)
        fields = self._fields()
        if self._feed is not None:
            fields[Memo.FEED_SEQ] = self._feed.post(dict(fields))
        workflow.upsert_memo(fields)

    def _fields(self) -> dict[str, Any]:
        """The task's state as its memo and its feed items carry it."""
        return {
            Memo.STATUS: self._status,
            Memo.STATUS_MESSAGE: self._status_message,
            Memo.LAST_UPDATED_AT: self._last_updated_ms,
            # A copy: the feed sends its items after the workflow task, and a later answer in the same one
            # must not empty the questions of a transition already posted.
            Memo.INPUT_REQUESTS: dict(self._input_requests) or None,
            Memo.ERROR: self._error,
        }


def _retried(cause: BaseException | None, policy: ActivityPolicy) -> bool:
    """Whether a failed first attempt is tried again as an activity: a retryable failure, attempts left."""
    if isinstance(cause, ApplicationError) and (cause.non_retryable or cause.type == JSONRPC_ERROR):
        return False
    return policy.maximum_attempts != 1


def _no_worker_has_tool(err: ActivityError) -> bool:
    cause = err.cause
    return isinstance(cause, ApplicationError) and cause.type == UNKNOWN_TOOL


# Under worker versioning a workflow type declares how it meets a deploy, and Temporal refuses that
# declaration from an unversioned worker: a versioned worker registers these subclasses instead.


@workflow.defn(name=TOOL_TASK_WORKFLOW, versioning_behavior=VersioningBehavior.AUTO_UPGRADE, sandboxed=False)
class AutoUpgradeToolTaskWorkflow(ToolTaskWorkflow):
    """`ToolTaskWorkflow` on a versioned worker: a task moves to the current build at its next step.

    Every change to this workflow's commands is patch-guarded and its recorded histories
    replay in the tests, so a task may run its later steps on a newer build.
    """

    # Temporal wants `@workflow.run` on the class itself; the init, query, signal and update are inherited.
    @workflow.run
    async def run(self, task: ToolTaskInput) -> dict[str, Any]:
        return await super().run(task)


@workflow.defn(name=PINNED_TOOL_TASK_WORKFLOW, sandboxed=False)
class PinnedToolTaskWorkflow(ToolTaskWorkflow):
    """`ToolTaskWorkflow` for a tool declared `versioning="pinned"`: the task ends on the build it began on.

    Versioning behaviour is per workflow type, so a pinned tool task is a type of its own.
    It declares nothing: a versioned worker pins what declares nothing (`Deployment`), and
    an unversioned one runs it like any tool task.
    """

    # Temporal wants `@workflow.run` on the class itself; the init, query, signal and update are inherited.
    @workflow.run
    async def run(self, task: ToolTaskInput) -> dict[str, Any]:
        return await super().run(task)
