"""The activity that runs a tool of the user's `MCPServer` on a worker.

The tool runs through the app's own `tools/call` handler (extension
interceptors, argument validation, resolvers, error conversion: all the SDK's),
with a `Connection` rebuilt from the creating request's `_meta`, so it sees the
same client as a synchronous call and its result is the `CallToolResult` a
synchronous `tools/call` would have put on the wire.

It runs *below* the server middleware on purpose. The front server already
passed the request through it when the task was created, and the middleware
includes the `requestState` boundary, which would seal a round's state with a
short-lived, per-process key; on the task path that state never leaves
Temporal, so it stays plaintext in the history where the next round reads it.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import AsyncGenerator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import anyio
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp.shared.transport_context import TransportContext
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    PROTOCOL_VERSION_META_KEY,
    SERVER_INFO_META_KEY,
    CallToolRequestParams,
    RequestId,
    RequestParams,
)
from mcp_types import methods as wire_methods
from mcp_types.version import LATEST_MODERN_VERSION
from pydantic import BaseModel, ValidationError
from temporalio import activity
from temporalio.exceptions import ApplicationError

from mcp_tasks_temporal.sdk_compat import get_tool, lowlevel_server, task_session
from mcp_tasks_temporal.temporal.contract import (
    ADOPT_TOOL_ACTIVITY,
    ATTEMPT_LOST,
    HANDED_OFF,
    INTERNAL_ERROR_CODE,
    JSONRPC_ERROR,
    NOT_RUN,
    PLAIN_CALL_META_KEY,
    RUN_TOOL_ACTIVITY,
    RUN_TOOL_FIRST_ACTIVITY,
    TOOL_HUNG,
    UNKNOWN_TOOL,
    Adoption,
    FirstAttempt,
    StatusDetails,
    ToolRoundInput,
    as_object,
)
from mcp_tasks_temporal.temporal.feed_status import publish_status_lines
from mcp_tasks_temporal.temporal.heartbeats import heartbeat_interval
from mcp_tasks_temporal.temporal.inputs import missing_capability_error
from mcp_tasks_temporal.temporal.payload_limits import PayloadLimits
from mcp_tasks_temporal.temporal.progress import StatusReporter, TaskRun, bind_run, progress_message
from mcp_tasks_temporal.temporal.result_text import compact
from mcp_tasks_temporal.temporal.tracing import tool_span

logger = logging.getLogger(__name__)

FEED_STATUS_PERIOD_S = 1.0
"""As the heartbeat throttle: a status line on the feed is as fresh as one `tasks/get` reads."""

_TRANSPORT = TransportContext(kind="temporal-activity", can_send_request=False)


ADOPT_WITHIN_S = 10.0
"""A handed-off first attempt nobody adopts within this long is stopped; the workflow waits longer
(`ADOPT_START_S` in the workflow) before it runs the round again elsewhere, so the two never overlap."""


@dataclass
class _HandedOff:
    """A first attempt still running after its local phase, until `adopt_tool` takes it."""

    attempt: asyncio.Future[dict[str, Any]]
    reporter: StatusReporter
    give_up: asyncio.TimerHandle


def _held(*details: Any) -> None:
    """A local activity's heartbeat: nowhere to send it, so the reporter only keeps the status for its adopter."""


async def _stopped(attempt: asyncio.Future[Any]) -> None:
    """Cancel an attempt and return once its tool has stopped, whatever it ended with."""
    attempt.cancel()
    await asyncio.gather(attempt, return_exceptions=True)


@dataclass
class _TaskDispatchContext:
    """The back-channel a tool sees while it runs as a task.

    There is no live client: server-to-client requests are refused exactly as on
    the 2026-07-28 wire, progress becomes the task's status message, and other
    notifications are dropped (the spec does not carry them for tasks).
    """

    reporter: StatusReporter
    request_id: RequestId

    @property
    def transport(self) -> TransportContext:
        return _TRANSPORT

    @property
    def can_send_request(self) -> bool:
        return False

    @property
    def message_metadata(self) -> None:
        return None

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None) -> None:
        return None

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        self.reporter.set(progress_message(progress, total, message))


class ToolActivities:
    """Activities bound to one `MCPServer` and its entered lifespan state."""

    def __init__(
        self,
        server: MCPServer[Any],
        lifespan_state: Any,
        *,
        keepalive_s: float = 2.0,
        payload_limits: PayloadLimits | None = None,
    ) -> None:
        self._server = server
        self._payload_limits = payload_limits or PayloadLimits()
        self._lowlevel = lowlevel_server(server)
        self.lifespan_state = lifespan_state
        """What the app's lifespan yielded; set by the plugin while the worker runs."""
        self._keepalive_s = keepalive_s
        self.adopt_queue: str | None = None
        """This worker's own queue for `adopt_tool`, while it polls one; a first attempt runs locally only then."""
        self._handed_off: dict[str, _HandedOff] = {}

    @classmethod
    def lifespan(cls, server: MCPServer[Any]) -> AbstractAsyncContextManager[Any]:
        """The app's own lifespan (`MCPServer(lifespan=...)`), entered once per worker like once per front server."""
        return _app_lifespan(server)

    @activity.defn(name=RUN_TOOL_ACTIVITY)
    async def run_tool(self, call: ToolRoundInput) -> dict[str, Any]:
        """Run one round of the tool and return its wire result (complete or input_required)."""
        info = activity.info()
        if get_tool(self._server, call.tool) is None:
            # An older worker on the app's queue during a rolling deploy: the task must wait for
            # a worker that has the tool, not complete with "Unknown tool" from this one.
            logger.warning(
                "task %s asks for tool %r, which this worker's app does not have: left for a worker that has it",
                call.task_id,
                call.tool,
            )
            raise ApplicationError(f"this worker has no tool {call.tool!r}", type=UNKNOWN_TOOL)
        reporter = StatusReporter()
        if info.heartbeat_details:
            # A retried attempt keeps showing the last status until the tool reports a new one.
            reporter.current = _restore_status(info.heartbeat_details[0])
        return await self._attempt(call, reporter)

    @activity.defn(name=RUN_TOOL_FIRST_ACTIVITY)
    async def run_tool_first(self, first: FirstAttempt) -> dict[str, Any]:
        """Run a task's first attempt as a local activity, in its workflow's first task, for up to `local_ms`.

        A tool that ends (or fails) within it is answered here, and its run closes in that one workflow task.
        A tool still running then, or waiting for an answer, goes on where it is: this returns where to adopt
        it (`adopt_tool`, on this worker's own queue), and the workflow's next command does. A local activity
        cannot heartbeat, so meanwhile the tool's status line is held (the adopter sends it at once) and a
        cancel waits for the phase to end.
        """
        call = first.round
        queue = self.adopt_queue
        if queue is None or get_tool(self._server, call.tool) is None:
            # Not started: the round runs as an activity, on a worker that has the tool.
            return {NOT_RUN: True}
        asked = asyncio.Event()
        reporter = StatusReporter(beat=_held, on_ask=asked.set)
        attempt = asyncio.ensure_future(self._attempt(call, reporter))
        asking = asyncio.ensure_future(asked.wait())
        try:
            await asyncio.wait({attempt, asking}, timeout=first.local_ms / 1000, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            await _stopped(attempt)
            raise
        finally:
            asking.cancel()
        if attempt.done():
            return attempt.result()
        info = activity.info()
        key = f"{info.workflow_id}/{info.workflow_run_id}/{call.round}"
        reporter.on_ask = None
        self._handed_off[key] = _HandedOff(
            attempt, reporter, asyncio.get_running_loop().call_later(ADOPT_WITHIN_S, self._give_up, key)
        )
        return {HANDED_OFF: {"queue": queue, "attempt": key}}

    @activity.defn(name=ADOPT_TOOL_ACTIVITY)
    async def adopt_tool(self, adoption: Adoption) -> dict[str, Any]:
        """Take over a first attempt this worker handed off: its heartbeats, status line, cancel and result.

        With `stop`, the task was cancelled before the adoption started: the tool is stopped, and this returns
        once it has, so `cancelled` still means the tool stopped.
        """
        handed = self._handed_off.pop(adoption.attempt, None)
        if handed is None:
            if adoption.stop:
                return {}
            raise ApplicationError("the tool's first attempt was given up", type=ATTEMPT_LOST, non_retryable=True)
        handed.give_up.cancel()
        attempt = handed.attempt
        if adoption.stop:
            await _stopped(attempt)
            return {}
        adopter = contextvars.copy_context()

        def beat(*details: Any) -> None:
            adopter.run(activity.heartbeat, *details)

        handed.reporter.beat = beat
        # Liveness from now, and the status line the tool set while it ran locally.
        handed.reporter.heartbeat()
        try:
            return await asyncio.shield(attempt)
        except asyncio.CancelledError:
            if not attempt.done():
                await _stopped(attempt)
            raise

    def _give_up(self, key: str) -> None:
        """Nobody adopted a handed-off attempt in time (its workflow task was lost): stop it, so the retry that
        follows never runs beside it."""
        handed = self._handed_off.pop(key, None)
        if handed is not None:
            logger.warning("the first attempt %s was not adopted within %g s: stopped", key, ADOPT_WITHIN_S)
            handed.attempt.cancel()

    async def _attempt(self, call: ToolRoundInput, reporter: StatusReporter) -> dict[str, Any]:
        """One attempt of one round, reporting through `reporter`: its wire result, or the failure Temporal sees."""
        info = activity.info()
        meta = dict(call.meta)
        capabilities = meta.get(CLIENT_CAPABILITIES_META_KEY)
        held = PLAIN_CALL_META_KEY in meta
        # The marker is the front's, not the client's: the tool sees the request's `_meta` as it came.
        meta.pop(PLAIN_CALL_META_KEY, None)
        bind_run(
            TaskRun(
                reporter=reporter,
                workflow_id=info.workflow_id or "",
                round=call.round,
                client_capabilities=capabilities,
                held_by_front=held,
            )
        )
        try:
            hung = anyio.Event()
            result: dict[str, Any] = {}
            failure: Exception | None = None
            async with anyio.create_task_group() as attempt:
                # A local first attempt has no heartbeat timeout of its own: its adopter's is the round's.
                timeout = info.heartbeat_timeout or _seconds(call.heartbeat_timeout_s)
                attempt.start_soon(self._keep_alive, reporter, heartbeat_interval(timeout, longest_s=self._keepalive_s))
                if call.feed_workflow_id:
                    shown = reporter.current  # the restored status, before the tool sets one
                    attempt.start_soon(
                        publish_status_lines, reporter, call.feed_workflow_id, FEED_STATUS_PERIOD_S, shown
                    )
                if call.progress_timeout_s is not None:
                    attempt.start_soon(_watch_progress, reporter, call.progress_timeout_s, attempt.cancel_scope, hung)
                request_id = f"{call.task_id}/{call.round}/{info.attempt}"
                try:
                    with tool_span(call.tool, call.task_id):
                        result = await self._call(call, meta, reporter, request_id=request_id)
                except Exception as exc:
                    # Raised out of the task group it would arrive wrapped in an ExceptionGroup.
                    failure = exc
                attempt.cancel_scope.cancel()
            if failure is not None:
                raise failure
            if hung.is_set():
                # A retryable failure: the next attempt runs the tool afresh, on any worker.
                logger.warning(
                    "tool %r of task %s went silent; attempt %d is retried", call.tool, call.task_id, info.attempt
                )
                message = f"Tool reported no status or progress for {call.progress_timeout_s:g} s"
                raise ApplicationError(message, type=TOOL_HUNG)
            if result.get("resultType") == "input_required" and not held:
                _check_requested_kinds(result.get("inputRequests") or {}, capabilities)
            else:
                result = compact(result)
            # Temporal would refuse it only after this attempt, and every retry would compute it again.
            self._payload_limits.check_result(activity.payload_converter(), result)
            return result
        except MCPError as exc:
            error = exc.error.model_dump(by_alias=True, mode="json", exclude_none=True)
            raise ApplicationError(exc.error.message, error, type=JSONRPC_ERROR, non_retryable=True) from None
        except (asyncio.CancelledError, ApplicationError):
            raise
        except Exception:
            # The SDK already turns tool exceptions into `isError` results; what lands
            # here is a server-side fault whose text may hold secrets: log it, do not ship it.
            logger.exception("tool %r of task %s crashed outside the SDK's error handling", call.tool, call.task_id)
            error = {"code": INTERNAL_ERROR_CODE, "message": "Internal error"}
            raise ApplicationError("Internal error", error, type=JSONRPC_ERROR, non_retryable=True) from None

    async def _call(
        self, call: ToolRoundInput, meta: dict[str, Any], reporter: StatusReporter, *, request_id: str
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"name": call.tool, "arguments": call.arguments, "_meta": meta}
        if call.input_responses is not None:
            params["inputResponses"] = call.input_responses
        if call.request_state is not None:
            params["requestState"] = call.request_state
        version = str(meta.get(PROTOCOL_VERSION_META_KEY, LATEST_MODERN_VERSION))
        connection = Connection.from_envelope(
            version, meta.get(CLIENT_INFO_META_KEY), meta.get(CLIENT_CAPABILITIES_META_KEY)
        )
        dctx = _TaskDispatchContext(reporter=reporter, request_id=request_id)
        try:
            request_meta = RequestParams.model_validate(params, by_name=False).meta
        except ValidationError:
            request_meta = None
        ctx: ServerRequestContext[Any, Any] = ServerRequestContext(
            session=task_session(dctx, connection, request_meta=request_meta),
            lifespan_context=self.lifespan_state,
            protocol_version=version,
            method="tools/call",
            params=params,
            request_id=request_id,
            meta=request_meta,
        )
        entry = self._lowlevel.get_request_handler("tools/call")
        assert entry is not None, "an MCPServer always serves tools/call"
        try:
            outcome = await entry.handler(ctx, CallToolRequestParams.model_validate(params, by_name=False))
        finally:
            await connection.exit_stack.aclose()
        dumped = (
            outcome.model_dump(by_alias=True, mode="json", exclude_none=True)
            if isinstance(outcome, BaseModel)
            else dict(outcome or {})
        )
        wire = wire_methods.serialize_server_result("tools/call", version, dumped)
        wire["_meta"] = {**(wire.get("_meta") or {}), SERVER_INFO_META_KEY: self._lowlevel.server_info_stamp}
        return wire

    async def _keep_alive(self, reporter: StatusReporter, period_s: float) -> None:
        """Heartbeat while the tool runs: liveness for Temporal, and the only way a cancel reaches the tool.

        Not at once: a tool that ends within the period costs no heartbeat at all, and a status line is
        sent when the tool sets it (`StatusReporter.set`), so a cancel still reaches a tool within a period.
        """
        while True:
            await anyio.sleep(period_s)
            reporter.heartbeat()


def _seconds(value: float | None) -> timedelta | None:
    return timedelta(seconds=value) if value else None


@asynccontextmanager
async def _app_lifespan(server: MCPServer[Any]) -> AsyncGenerator[Any]:
    lifespan = server.settings.lifespan
    if lifespan is None:
        yield {}  # what an app without a lifespan hands its tools, as the SDK's default lifespan does
        return
    async with lifespan(server) as state:
        yield state


async def _watch_progress(
    reporter: StatusReporter, timeout_s: float, attempt: anyio.CancelScope, hung: anyio.Event
) -> None:
    """Heartbeats prove the worker is alive, not the tool: stop an attempt whose tool has gone silent.

    Cancelling the attempt also stops its heartbeats, so even a tool that cannot
    be cancelled (blocked in a thread) loses the attempt to the heartbeat timeout.
    """
    while True:
        silent_s = reporter.silent_for()
        if silent_s >= timeout_s:
            hung.set()
            attempt.cancel()
            return
        await anyio.sleep(min(timeout_s - silent_s, 1.0))


def _check_requested_kinds(requests: Mapping[str, Any], capabilities: Any) -> None:
    """A tool may only ask for what the creating request's client declared it can answer."""
    for request in requests.values():
        error = missing_capability_error(as_object(request), capabilities)
        if error is not None:
            raise error


def _restore_status(raw: Any) -> StatusDetails | None:
    """Heartbeat details come back from Temporal as plain JSON objects."""
    details = as_object(raw)
    if not details:
        return None
    return StatusDetails(message=str(details.get("message", "")), at_ms=int(details.get("at_ms", 0)))
