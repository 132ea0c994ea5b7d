"""How a front answers `tools/call` for the app's task tools and workflow tools.

A client that declared the extension gets a `CreateTaskResult`, or the tool's result when its tool
ended within its budget (`settled_calls`); a plain call of a
task tool is a task nobody is told about, held open as the call (`plain_calls`); a
workflow tool's plain call starts its workflow and answers with its result. The
tool's policy, the questions it declared and the app's call checks are applied
here, once, before anything starts: the worker that runs the task's rounds runs
the tool only (`temporal/tool_execution.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer, require_client_extension
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.request_state import authenticated_principal
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CallToolRequestParams,
    CallToolResult,
    InputRequiredResult,
    TextContent,
)
from pydantic import ValidationError

from mcp_tasks_temporal.front.calls.plain_calls import PlainCalls, plain_call_envelope, task_of
from mcp_tasks_temporal.front.calls.settled_calls import answer_within, budget_of
from mcp_tasks_temporal.front.gateway import TemporalTaskGateway, WorkflowTask, temporal_errors
from mcp_tasks_temporal.front.request_capabilities import (
    declared_capabilities,
    declares_tasks,
    echoed_session_id,
    is_modern,
)
from mcp_tasks_temporal.front.spans import tag_task
from mcp_tasks_temporal.sdk_compat import get_tool, has_resolvers, resolve_arguments, validate_arguments
from mcp_tasks_temporal.temporal.capabilities import Refusal, refusal_for_revision, undeclared_asks
from mcp_tasks_temporal.temporal.contract import (
    EXTENSION_ID,
    MISSING_CAPABILITY_CODE,
    ActivityPolicy,
    ToolTaskInput,
    as_object,
)
from mcp_tasks_temporal.temporal.ids import new_task_id, plain_call_task_id

if TYPE_CHECKING:
    from mcp_tasks_temporal.temporal.tool_registry import TaskToolRegistry, ToolTaskOptions
    from mcp_tasks_temporal.temporal.workflow_tools import WorkflowToolOptions

NOT_ATTACHED = (
    "TasksExtension is not attached to Temporal; serve the app with `mcp_endpoint(app, client)`, "
    "`mcp-tasks-temporal serve` or `dev`"
)


@dataclass(frozen=True)
class Serving:
    """What an attached front serves calls with: its app, its door to Temporal, its held plain calls."""

    server: MCPServer[Any]
    gateway: TemporalTaskGateway
    plain: PlainCalls
    max_inline_budget_ms: int | None = None
    """The front's cap on each tool's `inline_budget_ms` (`FrontSettings.max_inline_budget_ms`)."""


class ToolCalls:
    """The `tools/call` side of one app's tools, attached to Temporal or (serving plain calls only) not yet."""

    def __init__(self, registry: TaskToolRegistry, serving: Serving | None) -> None:
        self._registry = registry
        self._serving = serving

    def _server(self) -> MCPServer[Any] | None:
        return self._serving.server if self._serving is not None else None

    def _attached(self) -> Serving:
        if self._serving is None:
            raise RuntimeError(NOT_ATTACHED)
        return self._serving

    def _plain_calls(self) -> PlainCalls:
        return self._attached().plain

    async def route(
        self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Answer a client's `tools/call`: a task, a call held open as a task, or the tool run right here."""
        self._check_asks(params.name, ctx)
        check = self._registry.call_check(params.name)
        refusal = check() if check is not None else None
        if refusal is not None:
            return CallToolResult(
                content=[TextContent(type="text", text=f"Error executing tool {params.name}: {refusal}")], is_error=True
            )
        workflow_options = self._registry.workflow_options_for(params.name)
        if workflow_options is not None:
            return await self._call_workflow_tool(workflow_options, params, ctx, call_next)
        options = self._registry.options_for(params.name)
        if options is None or options.policy == "never":
            return await call_next(ctx)  # not a task tool
        if not declares_tasks(ctx):
            if options.policy == "required":
                require_client_extension(ctx, EXTENSION_ID)
            if is_modern(ctx):
                return await self._call_tool_held(options, params, ctx)
            try:
                return await call_next(ctx)
            except MCPError as err:
                data = as_object(err.error.data)
                if err.error.code != MISSING_CAPABILITY_CODE or not data:
                    raise
                # A handshake client can never declare the extension: tell it what its revision lacks.
                refusal = refusal_for_revision(Refusal(err.error.code, err.error.message, dict(data)), modern=False)
                raise MCPError(code=refusal.code, message=refusal.message, data=refusal.data) from None
        if options.resolve_inputs_first:
            answered_now = await self._resolve_before_task(params, ctx)
            if answered_now is not None:
                return answered_now
        serving = self._attached()
        budget_ms = budget_of(options.inline_budget_ms, serving.max_inline_budget_ms)
        if budget_ms > 0:
            task = self._tool_task(options, params, ctx, envelope_of(ctx))
            with temporal_errors():
                return await answer_within(
                    serving.gateway,
                    task,
                    authenticated_principal(ctx),
                    budget_ms=budget_ms,
                    pinned=options.versioning == "pinned",
                    priority=options.priority,
                )
        created = await self._create_tool_task(options, params, ctx, envelope_of(ctx))
        return {"resultType": "task", **created}

    async def _call_tool_held(
        self, options: ToolTaskOptions, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any]
    ) -> HandlerResult:
        """A plain 2026-07-28 call of a task tool: a task nobody is told about, held open as the call.

        Served as a workflow tool's plain call is (`plain_calls`): its status lines go out as
        progress, a client that leaves cancels it, and a question midway comes back inside the
        call, or cancels the task for a client that cannot answer it. The tool's `Resolve`
        questions are asked first, on the call itself, as they always were.
        """
        if task_of(params.request_state) is not None:
            # The retry carrying the answers to a held call's question.
            return await self._plain_calls().resume(params, ctx)
        answered_now = await self._resolve_before_task(params, ctx)
        if answered_now is not None:
            return answered_now
        created = await self._create_tool_task(options, params, ctx, plain_call_envelope(ctx, envelope_of(ctx)))
        return await self._plain_calls().hold(ctx, str(created["taskId"]), authenticated_principal(ctx))

    async def create_task(
        self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any], envelope: dict[str, Any]
    ) -> dict[str, Any] | CallToolResult | None:
        """Start the task of a task tool's call, whatever the request's revision declared.

        Returns the created task's fields, the tool error a call with bad arguments
        gets, or `None` when `params` names no tool that may run as a task.
        `envelope` is the `_meta` the tool will see (its client and capabilities).
        """
        self._check_asks(params.name, ctx)
        workflow_options = self._registry.workflow_options_for(params.name)
        if workflow_options is not None:
            if workflow_options.policy == "never":
                return None
            return await self._create_workflow_tool_task(workflow_options, params, ctx, envelope)
        options = self._registry.options_for(params.name)
        if options is None or options.policy == "never":
            return None
        return await self._create_tool_task(options, params, ctx, envelope)

    async def _create_tool_task(
        self,
        options: ToolTaskOptions,
        params: CallToolRequestParams,
        ctx: ServerRequestContext[Any, Any],
        envelope: dict[str, Any],
    ) -> dict[str, Any]:
        task = self._tool_task(options, params, ctx, envelope)
        with temporal_errors():
            return await self._attached().gateway.create(
                task, authenticated_principal(ctx), pinned=options.versioning == "pinned", priority=options.priority
            )

    def _tool_task(
        self,
        options: ToolTaskOptions,
        params: CallToolRequestParams,
        ctx: ServerRequestContext[Any, Any],
        envelope: dict[str, Any],
    ) -> ToolTaskInput:
        """The input of the task a call of a task tool starts."""
        gateway = self._attached().gateway
        # `options_for` resolved every inherited setting.
        assert options.ttl_ms is None or isinstance(options.ttl_ms, int)
        assert isinstance(options.poll_interval_ms, int)
        assert isinstance(options.activity, ActivityPolicy)
        task = ToolTaskInput(
            task_id=task_id_for(ctx),
            tool=params.name,
            arguments=dict(params.arguments or {}),
            meta=envelope,
            created_at_ms=gateway.now_ms(),
            owner=gateway.owner_keying.owner_key(authenticated_principal(ctx)),
            ttl_ms=options.ttl_ms,
            poll_interval_ms=options.poll_interval_ms,
            activity=options.activity,
            # The answers of the MRTR rounds, and the (already unsealed) state that records them.
            input_responses=dict(params.input_responses) if params.input_responses else None,
            request_state=params.request_state,
        )
        tag_task(task.task_id)
        return task

    def _check_asks(self, tool_name: str, ctx: ServerRequestContext[Any, Any]) -> None:
        """-32021 for a client that cannot answer what the tool declared it asks, naming what its revision needs."""
        asks = self._registry.asks_of(tool_name)
        capabilities = declared_capabilities(ctx) if asks else None
        if capabilities is None:
            return  # nothing declared, or a handshake client that echoes no handshake
        refusal = undeclared_asks(asks, capabilities)
        if refusal is None:
            return
        if not declares_tasks(ctx):
            refusal = refusal_for_revision(refusal, modern=is_modern(ctx))
        raise MCPError(code=refusal.code, message=refusal.message, data=refusal.data)

    async def _resolve_before_task(
        self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any]
    ) -> HandlerResult | None:
        """Run the tool's resolvers here; their questions go back as an `InputRequiredResult`.

        `None` means every question is answered (or there are none) and the task
        may start: its first round replays the recorded answers and runs the body.
        """
        server = self._server()
        tool = get_tool(server, params.name) if server is not None else None
        if server is None or tool is None or not has_resolvers(tool):
            return None
        context = Context(request_context=ctx, mcp_server=server, input_params=params)
        try:
            validated = validate_arguments(tool, params.arguments or {})
            resolved = await resolve_arguments(tool, validated, context)
        except MCPError:
            raise
        except (ValidationError, ToolError) as exc:
            # Bad arguments or a declined question: the answer a synchronous call gives.
            return CallToolResult(
                content=[TextContent(type="text", text=f"Error executing tool {params.name}: {exc}")], is_error=True
            )
        return resolved if isinstance(resolved, InputRequiredResult) else None

    async def _call_workflow_tool(
        self,
        options: WorkflowToolOptions,
        params: CallToolRequestParams,
        ctx: ServerRequestContext[Any, Any],
        call_next: CallNext,
    ) -> HandlerResult:
        if options.policy == "never" or not declares_tasks(ctx):
            if options.policy == "required":
                require_client_extension(ctx, EXTENSION_ID)
            if task_of(params.request_state) is not None:
                # The retry carrying the answers to a held plain call's question (`front/plain_calls.py`).
                return await self._plain_calls().resume(params, ctx)
            return await call_next(ctx)  # the app's tool: validates, then `_run_workflow_synchronously`
        created = await self._create_workflow_tool_task(options, params, ctx, envelope_of(ctx))
        if created is None:
            return await call_next(ctx)
        if isinstance(created, CallToolResult):
            return created
        return {"resultType": "task", **created}

    async def _create_workflow_tool_task(
        self,
        options: WorkflowToolOptions,
        params: CallToolRequestParams,
        ctx: ServerRequestContext[Any, Any],
        envelope: dict[str, Any],
    ) -> dict[str, Any] | CallToolResult | None:
        server = self._server()
        tool = get_tool(server, params.name) if server is not None else None
        if tool is None:
            return None
        try:
            arguments = validate_arguments(tool, params.arguments or {})
            workflow_args = options.workflow_args(arguments)
        except ValidationError as exc:
            # No task for bad arguments: the answer a synchronous call gives them.
            return CallToolResult(
                content=[TextContent(type="text", text=f"Error executing tool {params.name}: {exc}")], is_error=True
            )
        principal = authenticated_principal(ctx)
        with temporal_errors():
            return await self._attached().gateway.create_workflow_task(
                self._workflow_task(options, workflow_args, envelope, task_id_for(ctx)), principal
            )

    def _workflow_task(
        self,
        options: WorkflowToolOptions,
        workflow_args: list[Any],
        envelope: dict[str, Any],
        task_id: str | None = None,
    ) -> WorkflowTask:
        ttl_ms, poll_ms = self._registry.workflow_lifetime(options)
        return WorkflowTask(
            task_id=task_id or new_task_id(),
            tool=options.name,
            workflow=options.workflow_name,
            args=workflow_args,
            task_queue=options.task_queue,
            envelope=envelope,
            created_at_ms=self._attached().gateway.now_ms(),
            ttl_ms=ttl_ms,
            poll_interval_ms=poll_ms,
            auto_upgrade=options.versioning == "auto-upgrade" and not options.declares_versioning,
            priority=self._registry.workflow_priority(options.name),
        )

    async def run_workflow_synchronously(
        self, options: WorkflowToolOptions, arguments: dict[str, Any], context: Context[Any, Any]
    ) -> CallToolResult | InputRequiredResult:
        """A workflow tool called without a task: start the workflow and answer with its result.

        The run is a task like any other in Temporal (same ID scheme, memo, TTL),
        only nobody is given its ID, so it lives as long as the call (`held_calls`). A
        question it asks goes back inside the call, or, to a client that cannot answer
        it, cancels the task (`plain_calls`).
        """
        ctx = context.request_context
        envelope = plain_call_envelope(ctx, envelope_of(ctx))
        task = self._workflow_task(options, options.workflow_args(arguments), envelope, task_id_for(ctx))
        principal = authenticated_principal(ctx)
        with temporal_errors():
            started = await self._attached().gateway.start_workflow_task(task, principal)
        return await self._plain_calls().hold(ctx, task.task_id, principal, started=started)


def envelope_of(ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
    """The creating request's `_meta`, kept with the task so its tool sees the same client.

    A progress token belongs to the HTTP exchange that has already ended.
    """
    raw = (ctx.params or {}).get("_meta")
    meta: dict[str, Any] = dict(raw) if isinstance(raw, Mapping) else {}  # pyright: ignore[reportUnknownArgumentType]
    meta.pop("progressToken", None)
    meta.setdefault(CLIENT_CAPABILITIES_META_KEY, {})
    return meta


def task_id_for(ctx: ServerRequestContext[Any, Any]) -> str:
    """The ID of the task a `tools/call` creates: named by its session and request for a plain call, else random.

    A plain call's client never learns its task's ID, and cancels it with `notifications/cancelled`
    naming its request, posted to any front: that front derives the same ID (`call_cancels`).
    """
    params = ctx.params or {}
    plain = ctx.method == "tools/call" and not isinstance(params.get("task"), Mapping)
    session_id = echoed_session_id(ctx) if plain else None
    if session_id is None or ctx.request_id is None:
        return new_task_id()
    return plain_call_task_id(session_id, ctx.request_id)
