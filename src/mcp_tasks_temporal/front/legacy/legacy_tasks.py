"""2025-11-25 tasks (SEP-1686) for clients of the `initialize` handshake, served from the same workflows.

That revision put tasks in the core protocol: the server advertises a `tasks`
capability, each tool says whether it runs as a task (`execution.taskSupport`),
a `tools/call` carrying `task: {ttl}` answers with `{task: {...}}`, and the
client reads the task with `tasks/get`, `tasks/result` (which waits for the
end and returns the tool's `CallToolResult`), `tasks/list` and `tasks/cancel`.
A question the task asks reaches the client while it waits on `tasks/result`,
as an ordinary `elicitation/create` (or sampling, roots) request carrying the
`io.modelcontextprotocol/related-task` metadata on that request's stream; the
answer reaches the workflow through the signal `tasks/update` uses
(`legacy_answers`). Every task is the workflow a 2026-07-28 client would have
got: this module only translates.

A server middleware, because 2026-07-28 serves `tasks/get` and `tasks/cancel`
through the extension and must keep answering `tasks/list` and `tasks/result`
with -32601: only requests of the 2025-11-25 revision are taken here.
"""

from __future__ import annotations

import base64
import logging
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, TypeVar

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.request_state import authenticated_principal
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    PROTOCOL_VERSION_META_KEY,
    CallToolRequestParams,
    CallToolResult,
    RequestParams,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_MODERN_VERSION
from pydantic import BaseModel, ValidationError

from mcp_tasks_temporal.front.calls.held_calls import follow_call
from mcp_tasks_temporal.front.gateway import task_view, temporal_errors
from mcp_tasks_temporal.front.legacy.handshake_echo import SESSION_HEADER, Handshake
from mcp_tasks_temporal.front.legacy.handshake_echo import decode as decode_handshake
from mcp_tasks_temporal.front.legacy.outbound_requests import send_request_on_stream
from mcp_tasks_temporal.front.session_binding import creating_under
from mcp_tasks_temporal.front.spans import tag_task
from mcp_tasks_temporal.sdk_compat import request_outbound
from mcp_tasks_temporal.temporal.contract import EXTENSION_ID, TERMINAL_STATUSES, Memo, as_object

if TYPE_CHECKING:
    from mcp_tasks_temporal.front.calls.tool_calls import ToolCalls
    from mcp_tasks_temporal.front.gateway import TemporalTaskGateway
    from mcp_tasks_temporal.front.push.task_watch import TaskWatchHub
    from mcp_tasks_temporal.front.session_binding import SessionKeys
    from mcp_tasks_temporal.temporal.tool_registry import TaskToolRegistry

logger = logging.getLogger(__name__)

_P = TypeVar("_P", bound=BaseModel)

LEGACY_TASKS_VERSION: Final = "2025-11-25"
RELATED_TASK_META_KEY: Final = "io.modelcontextprotocol/related-task"
TASKS_CAPABILITY: Final[dict[str, Any]] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
TASK_SUPPORT: Final = {"never": "forbidden", "optional": "optional", "required": "required"}
"""A tool's policy as that revision's `execution.taskSupport` names it."""
LIST_PAGE_SIZE: Final = 50

ANSWER_ID_PREFIX: Final = "mcp-tasks-temporal/answer/"
"""JSON-RPC ID prefix of the questions this server asks: the reply names its task and question by itself,
so whichever front server it reaches can hand it to the workflow."""

ASKED_CAPABILITIES: Final[dict[str, Any]] = {"elicitation": {"form": {}}, "sampling": {}, "roots": {}}
"""What a 2025-11-25 tasks client that does not echo its handshake is taken to be able to answer;
a question it cannot answer comes back as an error, which ends the task (`legacy_answers`)."""


class _TaskIdParams(RequestParams):
    task_id: str


class _ListParams(RequestParams):
    cursor: str | None = None


def answer_id(task_id: str, key: str) -> str:
    """The JSON-RPC ID of question `key` of a task, as sent to the client."""
    encoded = base64.urlsafe_b64encode(key.encode()).decode().rstrip("=")
    return f"{ANSWER_ID_PREFIX}{task_id}/{encoded}"


def parse_answer_id(value: object) -> tuple[str, str] | None:
    """`(task_id, key)` of an ID made by `answer_id`; `None` for any other ID."""
    if not isinstance(value, str) or not value.startswith(ANSWER_ID_PREFIX):
        return None
    task_id, _, encoded = value[len(ANSWER_ID_PREFIX) :].partition("/")
    try:
        key = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    except (ValueError, UnicodeDecodeError):
        return None
    return (task_id, key) if task_id and key else None


def legacy_task(task: Mapping[str, Any]) -> dict[str, Any]:
    """A 2026-07-28 `DetailedTask` in the 2025-11-25 `Task` shape (no result, error or questions inline)."""
    out: dict[str, Any] = {
        "taskId": task["taskId"],
        "status": task["status"],
        "createdAt": task["createdAt"],
        "lastUpdatedAt": task["lastUpdatedAt"],
        "ttl": task.get("ttlMs"),
    }
    if task.get("pollIntervalMs") is not None:
        out["pollInterval"] = task["pollIntervalMs"]
    message = task.get("statusMessage")
    if not message and task["status"] == "failed":
        message = as_object(task.get("error")).get("message")
    if message:
        out["statusMessage"] = message
    return out


def handshake(ctx: ServerRequestContext[Any, Any]) -> Handshake | None:
    """What the client declared at its `initialize`, from the session ID it echoes (see `handshake_echo`)."""
    headers = getattr(ctx.request, "headers", None)
    return decode_handshake(headers.get(SESSION_HEADER)) if headers is not None else None


def legacy_envelope(ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
    """The `_meta` a handshake-revision client's task runs with: a tasks client of the current revision.

    The tool then asks its questions as task questions (they wait in the workflow),
    whichever revision will relay them, and only those the client declared it can answer.
    """
    raw = as_object((ctx.params or {}).get("_meta"))
    meta = {key: value for key, value in raw.items() if key != "progressToken"}
    declared = handshake(ctx)
    capabilities = dict(declared.capabilities) if declared is not None else dict(ASKED_CAPABILITIES)
    capabilities.pop("tasks", None)
    capabilities.pop("experimental", None)
    meta[PROTOCOL_VERSION_META_KEY] = LATEST_MODERN_VERSION
    client_info = dict(declared.client_info) if declared is not None else {}
    meta[CLIENT_INFO_META_KEY] = client_info or {"name": "handshake-revision client", "version": "0"}
    meta[CLIENT_CAPABILITIES_META_KEY] = {**capabilities, "extensions": {EXTENSION_ID: {}}}
    return meta


class LegacyTasks:
    """Server middleware: the 2025-11-25 face of the tasks the extension serves."""

    def __init__(
        self,
        registry: TaskToolRegistry,
        calls: ToolCalls,
        gateway: TemporalTaskGateway,
        hub: TaskWatchHub,
        session_keys: SessionKeys,
    ) -> None:
        self._registry = registry
        self._calls = calls
        self._gateway = gateway
        self._hub = hub
        self._session_keys = session_keys

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "initialize":
            return _with_tasks_capability(await call_next(ctx))
        if ctx.method == "tools/call" and ctx.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS:
            params = ctx.params or {}
            if not isinstance(params.get("task"), Mapping) and self._held(ctx):
                return await self._held_call(ctx)
        if ctx.protocol_version != LEGACY_TASKS_VERSION:
            return await call_next(ctx)
        if ctx.method == "tools/list":
            return self._with_task_support(await call_next(ctx))
        if ctx.method == "tools/call" and isinstance((ctx.params or {}).get("task"), Mapping):
            return await self._create(ctx)
        if ctx.method == "tasks/get":
            return await self._get(ctx)
        if ctx.method == "tasks/result":
            return await self._result(ctx)
        if ctx.method == "tasks/list":
            return await self._list(ctx)
        if ctx.method == "tasks/cancel":
            return await self._cancel(ctx)
        return await call_next(ctx)

    def _with_task_support(self, result: HandlerResult) -> HandlerResult:
        wire = _wire(result)
        if wire is None:
            return result
        policies = {name: options.policy for name, options in self._registry.task_tools.items()}
        policies.update({name: options.policy for name, options in self._registry.workflow_tools.items()})
        tools: list[dict[str, Any]] = []
        listed: list[Any] = list(wire.get("tools") or [])
        for entry in listed:
            tool = dict(as_object(entry))
            policy = policies.get(str(tool.get("name", "")))
            if policy is not None:
                tool["execution"] = {**as_object(tool.get("execution")), "taskSupport": TASK_SUPPORT[policy]}
            tools.append(tool)
        return {**wire, "tools": tools}

    async def _create(self, ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
        params = _params(CallToolRequestParams, ctx)
        tool = self._registry.options_for(params.name)
        workflow_tool = self._registry.workflow_tools.get(params.name)
        policy = workflow_tool.policy if workflow_tool is not None else tool.policy if tool is not None else None
        if policy is None or policy == "never":
            # The tool's `taskSupport` is "forbidden": nothing to make a task of.
            raise MCPError(code=METHOD_NOT_FOUND, message=f"Tool {params.name!r} does not run as a task")
        with creating_under(self._session_binding(ctx)):
            created = await self._calls.create_task(params, ctx, legacy_envelope(ctx))
        if created is None:
            raise MCPError(code=METHOD_NOT_FOUND, message=f"Tool {params.name!r} does not run as a task")
        if isinstance(created, CallToolResult):
            # Bad arguments: no task, the tool error a plain call gets.
            raise MCPError(code=INVALID_PARAMS, message=_text(created))
        return {"task": legacy_task(created)}

    def _held(self, ctx: ServerRequestContext[Any, Any]) -> bool:
        """Whether a plain call runs as a task held open on its own stream.

        That takes a task tool the client may call without a task, an HTTP request (whose
        response stream carries the task's questions and progress) and a client whose
        handshake this front can read (its session ID, which with the request's ID names
        the task for a `notifications/cancelled` posted to any front). Otherwise the call
        runs on this front, as a tool without a task does.
        """
        name = (ctx.params or {}).get("name")
        if not isinstance(name, str) or ctx.request is None:
            return False
        workflow_tool = self._registry.workflow_tools.get(name)
        tool = self._registry.options_for(name)
        policy = workflow_tool.policy if workflow_tool is not None else tool.policy if tool is not None else None
        declared = handshake(ctx)
        return policy == "optional" and declared is not None

    async def _held_call(self, ctx: ServerRequestContext[Any, Any]) -> HandlerResult:
        """A plain `tools/call` served by a task: its questions go out on this call's stream, the result ends it.

        The client has no task ID, so a call it abandons cancels the task (`held_calls`).
        """
        params = _params(CallToolRequestParams, ctx)
        with creating_under(self._session_binding(ctx)):
            created = await self._calls.create_task(params, ctx, legacy_envelope(ctx))
        if created is None:
            raise MCPError(code=METHOD_NOT_FOUND, message=f"Tool {params.name!r} does not run as a task")
        if isinstance(created, CallToolResult):
            return created
        task_id = str(created["taskId"])
        principal = authenticated_principal(ctx)
        relay = TaskRelay(ctx, task_id, related=False)
        task = await follow_call(ctx, self._hub, self._gateway, task_id, principal, on_task=relay)
        payload = task_payload(task)
        meta = dict(as_object(payload.get("_meta")))
        meta.pop(RELATED_TASK_META_KEY, None)
        payload["_meta"] = meta
        return payload

    async def _get(self, ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
        params = _params(_TaskIdParams, ctx)
        tag_task(params.task_id)
        with temporal_errors():
            task = await self._gateway.get(params.task_id, authenticated_principal(ctx))
        return legacy_task(task)

    async def _cancel(self, ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
        params = _params(_TaskIdParams, ctx)
        tag_task(params.task_id)
        principal = authenticated_principal(ctx)
        gateway = self._gateway
        with temporal_errors():
            task = await gateway.get(params.task_id, principal)
            if task["status"] in TERMINAL_STATUSES:
                raise MCPError(
                    code=INVALID_PARAMS, message=f"Cannot cancel task: already in terminal status {task['status']!r}"
                )
            await gateway.cancel(params.task_id, principal)
            # The cancellation is cooperative; the answer shows its outcome once the workflow has taken it.
            with anyio.move_on_after(gateway.answer_visibility_timeout_s):
                delay = 0.02
                while task["status"] not in TERMINAL_STATUSES:
                    await anyio.sleep(delay)
                    delay = min(delay * 2, 0.25)
                    task = await gateway.get(params.task_id, principal)
        return legacy_task(task)

    def _session_bindings(self, ctx: ServerRequestContext[Any, Any]) -> list[str]:
        """The bindings of the caller's tagged session ID under each shared key; none without one."""
        headers = getattr(ctx.request, "headers", None)
        return self._session_keys.bindings(headers.get(SESSION_HEADER) if headers is not None else None)

    def _session_binding(self, ctx: ServerRequestContext[Any, Any]) -> str | None:
        """What an anonymous caller's new task records: its session under the current key."""
        if authenticated_principal(ctx) is not None:
            return None
        bindings = self._session_bindings(ctx)
        return bindings[0] if bindings else None

    async def _list(self, ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
        """The caller's own tasks, newest first, from Temporal visibility (its workflow IDs name the owner).

        Every anonymous caller is the same principal, so an anonymous caller's own tasks are those its
        session created (`session_binding`); a caller without a session this front can check has none.
        """
        params = _params(_ListParams, ctx)
        principal = authenticated_principal(ctx)
        sessions: list[str] | None = None
        if principal is None:
            sessions = self._session_bindings(ctx)
            if not sessions:
                if params.cursor:
                    raise MCPError(code=INVALID_PARAMS, message="Invalid cursor")  # none was ever given to it
                return {"tasks": []}
        keys = self._session_keys
        # A cursor is good for the caller it was given to: its principal, or its session.
        owner = self._gateway.owner_keying.owner_key(principal)
        caller = sessions[0] if sessions else owner
        token = keys.open_cursor(params.cursor, caller) if params.cursor else b""
        if token is None:
            raise MCPError(code=INVALID_PARAMS, message="Invalid cursor")
        with temporal_errors():
            page = await self._gateway.list_owned(owner, page_token=token, page_size=LIST_PAGE_SIZE)
        tasks = [
            legacy_task(task_view(owned.task_id, owned.memo, owned.status))
            for owned in page.tasks
            if sessions is None or owned.memo.get(Memo.SESSION) in sessions
        ]
        result: dict[str, Any] = {"tasks": tasks}
        if page.next_page_token:
            result["nextCursor"] = keys.seal_cursor(page.next_page_token, caller)
        return result

    async def _result(self, ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
        params = _params(_TaskIdParams, ctx)
        tag_task(params.task_id)
        principal = authenticated_principal(ctx)
        with temporal_errors():
            task = await self._gateway.get(params.task_id, principal)
        if task["status"] not in TERMINAL_STATUSES:
            task = await follow_task(ctx, self._hub, params.task_id, principal, related=True)
        return task_payload(task)


async def follow_task(
    ctx: ServerRequestContext[Any, Any],
    hub: TaskWatchHub,
    task_id: str,
    principal: str | None,
    *,
    related: bool,
) -> dict[str, Any]:
    """Wait for the task's end on this request's stream; returns its final `DetailedTask`.

    Each change goes out as `notifications/tasks/status` (when `related`: the
    client knows the task), and each question the task asks goes out once, as a
    request whose reply any front server routes to the workflow.
    """
    send, receive = anyio.create_memory_object_stream[dict[str, Any]](math.inf)
    unsubscribe = hub.subscribe(task_id, principal, send.send_nowait)
    relay = TaskRelay(ctx, task_id, related=related)
    try:
        async with receive:
            async for task in receive:
                await relay(task)
                if str(task["status"]) in TERMINAL_STATUSES:
                    return task
    finally:
        unsubscribe()
        send.close()
    raise MCPError(code=INTERNAL_ERROR, message="Task service unavailable, try again")


class TaskRelay:
    """Carries a followed task to the client on the stream of the request `ctx` serves."""

    def __init__(self, ctx: ServerRequestContext[Any, Any], task_id: str, *, related: bool) -> None:
        self._outbound = request_outbound(ctx.session)
        self._task_id = task_id
        self._related = related
        self._asked: set[str] = set()
        self._shown: tuple[str, str | None] | None = None

    async def __call__(self, task: dict[str, Any]) -> None:
        status = str(task["status"])
        if self._related and self._shown != (status, task.get("statusMessage")):
            self._shown = (status, task.get("statusMessage"))
            await self._outbound.notify("notifications/tasks/status", legacy_task(task))
        if status in TERMINAL_STATUSES:
            return
        for key, question in as_object(task.get("inputRequests")).items():
            if key in self._asked:
                continue
            self._asked.add(key)
            request = as_object(question)
            request_params = dict(as_object(request.get("params")))
            if self._related:
                meta = as_object(request_params.get("_meta"))
                request_params["_meta"] = {**meta, RELATED_TASK_META_KEY: {"taskId": self._task_id}}
            await send_request_on_stream(
                self._outbound, answer_id(self._task_id, key), str(request.get("method")), request_params
            )


def task_payload(task: Mapping[str, Any]) -> dict[str, Any]:
    """What `tasks/result` answers for a finished task: the `CallToolResult`, or the JSON-RPC error."""
    task_id = str(task["taskId"])
    if task["status"] == "completed":
        result = dict(as_object(task.get("result")))
        result["_meta"] = {**as_object(result.get("_meta")), RELATED_TASK_META_KEY: {"taskId": task_id}}
        return result
    if task["status"] == "failed":
        error = as_object(task.get("error"))
        raise MCPError(
            code=int(error.get("code", INTERNAL_ERROR)),
            message=str(error.get("message", "Task failed")),
            data=error.get("data"),
        )
    raise MCPError(code=INTERNAL_ERROR, message=f"Task {task_id} was cancelled")


def _with_tasks_capability(result: HandlerResult) -> HandlerResult:
    wire = _wire(result)
    if wire is None or wire.get("protocolVersion") != LEGACY_TASKS_VERSION:
        return result
    capabilities = as_object(wire.get("capabilities"))
    return {**wire, "capabilities": {**capabilities, "tasks": TASKS_CAPABILITY}}


def _wire(result: HandlerResult) -> dict[str, Any] | None:
    if isinstance(result, BaseModel):
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)
    if isinstance(result, Mapping):
        return dict(as_object(result))
    return None


def _params(model: type[_P], ctx: ServerRequestContext[Any, Any]) -> _P:
    try:
        return model.model_validate(ctx.params or {}, by_name=False)
    except ValidationError as exc:
        raise MCPError(code=INVALID_PARAMS, message=f"Invalid params for {ctx.method}", data=str(exc)) from None


def _text(result: CallToolResult) -> str:
    texts = [getattr(block, "text", "") for block in result.content]
    return " ".join(text for text in texts if text) or "Invalid arguments"
