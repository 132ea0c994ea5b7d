"""`TasksExtension`: the MCP Tasks extension (SEP-2663) for an `MCPServer`, backed by Temporal.

    tasks = TasksExtension()
    mcp = MCPServer("builds", extensions=[tasks])

    @tasks.tool(policy="optional")   # the one line that makes a tool task-capable
    @mcp.tool()
    async def build(ref: str) -> str: ...

On a front server the extension answers `tools/call` for such a tool with a
`CreateTaskResult` (when this request declared the extension) and serves
`tasks/get`, `tasks/update` and `tasks/cancel`; it keeps no task state of its
own. On a worker the same app runs the tool inside an activity, where the
extension steps aside.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal, TypeVar, overload

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import Context, MCPServer, require_client_extension
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.request_state import authenticated_principal
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import decode_header_value
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CallToolRequestParams,
    CallToolResult,
    InputRequiredResult,
    RequestParams,
    TextContent,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field, ValidationError

from mcp_tasks_temporal.front.call_cancels import PlainCallCancels, task_id_for
from mcp_tasks_temporal.front.errors import HeaderMismatchError
from mcp_tasks_temporal.front.gateway import TemporalTaskGateway, WorkflowTask, temporal_errors
from mcp_tasks_temporal.front.listen import TaskListen
from mcp_tasks_temporal.front.plain_calls import PlainCalls, plain_call_envelope, task_of
from mcp_tasks_temporal.front.push_mode import push_hub
from mcp_tasks_temporal.front.request_capabilities import declared_capabilities, declares_tasks, is_modern
from mcp_tasks_temporal.front.session_binding import SessionKeys
from mcp_tasks_temporal.front.task_watch import TaskWatchHub
from mcp_tasks_temporal.sdk_compat import (
    get_tool,
    has_resolvers,
    resolve_arguments,
    set_output_schema,
    validate_arguments,
)
from mcp_tasks_temporal.temporal.capabilities import Refusal, check_asks, refusal_for_revision, undeclared_asks
from mcp_tasks_temporal.temporal.contract import (
    EXTENSION_ID,
    MISSING_CAPABILITY_CODE,
    ActivityPolicy,
    ToolTaskInput,
    as_object,
)
from mcp_tasks_temporal.temporal.deployment import Versioning, check_versioning
from mcp_tasks_temporal.temporal.fairness import check_priority
from mcp_tasks_temporal.temporal.ids import new_task_id, owner_key
from mcp_tasks_temporal.temporal.nexus_tools import NexusToolOptions
from mcp_tasks_temporal.temporal.progress import current_run
from mcp_tasks_temporal.temporal.task_context import tool_call
from mcp_tasks_temporal.temporal.tracing import tag_task
from mcp_tasks_temporal.temporal.workflow_tools import WorkflowToolOptions, tool_function

DAY_MS: Final = 24 * 3600 * 1000

Asks = Literal["elicitation", "sampling", "roots"]
"""A client capability a tool's questions need (`elicitation/create`, `sampling/createMessage`, `roots/list`)."""

TaskPolicy = Literal["never", "optional", "required"]
"""`never`: always synchronous. `optional`: a task when the request declares the extension,
synchronous otherwise. `required`: a task, or -32021 for a request that did not declare it."""

_Fn = TypeVar("_Fn", bound=Callable[..., Any])
_Workflow = TypeVar("_Workflow", bound=type)


class _Inherit:
    """Marks a per-tool setting that follows the extension-wide default."""

    def __repr__(self) -> str:
        return "INHERIT"


INHERIT: Final = _Inherit()


@dataclass(frozen=True)
class ToolTaskOptions:
    """How one tool runs as a task."""

    policy: TaskPolicy = "optional"
    ttl_ms: int | None | _Inherit = INHERIT
    """Lifetime from creation; `None` is unlimited (bounded in practice by Temporal's retention)."""
    poll_interval_ms: int | _Inherit = INHERIT
    activity: ActivityPolicy | _Inherit = INHERIT
    """Timeouts, retries and task queue of the tool's activity."""
    resolve_inputs_first: bool = False
    """Ask the tool's `Resolve(...)` questions on the `tools/call` itself (MRTR rounds) and
    create the task only once they are answered, instead of asking them from the task."""
    progress_timeout: float | None = None
    """Seconds the tool may go without `set_status` or `ctx.report_progress` before its attempt
    counts as hung and is retried (waiting for an answer does not count); overrides the
    activity policy's `progress_timeout_s`. `None`: only a dead worker ends an attempt early."""
    asks: tuple[Asks, ...] = ()
    """What the tool will ask the client for; a `tools/call` from a client that did not
    declare one of these capabilities gets -32021 before anything runs."""
    versioning: Versioning = "auto-upgrade"
    """Under worker versioning, how a running task meets a deploy. `auto-upgrade`: the task
    moves to the new build (the task workflow is this package's own, every change to it
    patch-guarded), and a tool attempt that starts after the deploy runs the new tool code.
    `pinned`: the task, and every attempt and answer round of its tool, stays on the build
    it started on, so a tool whose code or questions change between releases finishes as it began."""

    priority: int | None = None
    """Temporal's task queue priority of the tool's tasks, 1 (highest) to 5 (lowest); `None` is 3.
    When workers are busy, higher-priority tasks start first, whoever asked for them."""

    def __post_init__(self) -> None:
        check_asks(self.asks)
        check_versioning(self.versioning)
        check_priority(self.priority)
        if self.policy not in ("never", "optional", "required"):
            raise ValueError(f"policy must be 'never', 'optional' or 'required', not {self.policy!r}")
        if isinstance(self.ttl_ms, int) and self.ttl_ms <= 0:
            raise ValueError("ttl_ms must be positive; use None for an unlimited lifetime")
        if isinstance(self.poll_interval_ms, int) and self.poll_interval_ms <= 0:
            raise ValueError("poll_interval_ms must be positive")
        if self.progress_timeout is not None and self.progress_timeout <= 0:
            raise ValueError("progress_timeout must be a positive number of seconds, or None")


class TaskIdParams(RequestParams):
    task_id: str


class UpdateTaskParams(RequestParams):
    task_id: str
    # Values stay raw: entries under keys that are not outstanding must be acked, whatever they hold.
    input_responses: dict[str, Any] = Field(default_factory=dict[str, Any])


PUSH_GIVE_UP_ENV = "MCP_TASKS_PUSH_GIVE_UP_S"


@dataclass
class TasksExtension(Extension):
    """Serves SEP-2663 tasks for the tools it is told about, with Temporal as the store."""

    identifier = EXTENSION_ID

    default_ttl_ms: int | None = DAY_MS
    default_poll_interval_ms: int = 1000
    default_activity: ActivityPolicy = field(default_factory=ActivityPolicy)
    require_mcp_name: bool = False
    """Reject `tasks/*` over HTTP without an `Mcp-Name` header (-32020). Off by default because
    FastMCP's and pydantic-ai's task clients send none; a header that names another task is always refused."""
    nexus_reply_endpoint: str | None = None
    """Nexus endpoint targeting this app's namespace and task queue, through which handler workflows of
    `nexus_tool`s report status (`--nexus-reply-endpoint`); `None`: their status does not cross."""
    session_keys: SessionKeys = field(default_factory=SessionKeys.process_local)
    """What tags handshake session IDs and binds anonymous tasks to them (`session_binding`); fronts
    sharing `--request-state-key` share these too."""
    _tools: dict[str, ToolTaskOptions] = field(default_factory=dict[str, ToolTaskOptions], init=False)
    _workflow_tools: dict[str, WorkflowToolOptions] = field(default_factory=dict[str, WorkflowToolOptions], init=False)
    _workflow_asks: dict[str, tuple[Asks, ...]] = field(default_factory=dict[str, tuple[Asks, ...]], init=False)
    _workflow_priorities: dict[str, int] = field(default_factory=dict[str, int], init=False)
    _gateway: TemporalTaskGateway | None = field(default=None, init=False)
    _server: MCPServer[Any] | None = field(default=None, init=False)
    _hub: TaskWatchHub | None = field(default=None, init=False)
    _plain: PlainCalls | None = field(default=None, init=False)
    _plugins: list[Any] = field(default_factory=list[Any], init=False)
    _call_checks: dict[str, Callable[[], str | None]] = field(
        default_factory=dict[str, Callable[[], "str | None"]], init=False
    )

    # -- declaring task tools -------------------------------------------------

    def tool(
        self,
        *,
        name: str | None = None,
        policy: TaskPolicy = "optional",
        ttl_ms: int | None | _Inherit = INHERIT,
        poll_interval_ms: int | _Inherit = INHERIT,
        activity: ActivityPolicy | _Inherit = INHERIT,
        resolve_inputs_first: bool = False,
        progress_timeout: float | None = None,
        asks: Sequence[Asks] = (),
        versioning: Versioning = "auto-upgrade",
        priority: int | None = None,
    ) -> Callable[[_Fn], _Fn]:
        """Decorator: run this tool as a task. Stack it on either side of `@mcp.tool()`.

        Pass `name=` when the tool was registered under a name other than the function's.
        `versioning` says how a running task meets a deploy (see `ToolTaskOptions.versioning`).
        `priority` (1 highest .. 5 lowest) orders its tasks against other tools' when workers are busy.
        """
        options = ToolTaskOptions(
            policy=policy,
            ttl_ms=ttl_ms,
            poll_interval_ms=poll_interval_ms,
            activity=activity,
            resolve_inputs_first=resolve_inputs_first,
            progress_timeout=progress_timeout,
            asks=tuple(asks),
            versioning=versioning,
            priority=priority,
        )

        def decorate(target: _Fn) -> _Fn:
            self.enable(name or target.__name__, options)
            return target

        return decorate

    def enable(self, tool_name: str, options: ToolTaskOptions | TaskPolicy = "optional") -> None:
        """Make the tool `tool_name` task-capable (the non-decorator form of `tool`)."""
        self._tools[tool_name] = options if isinstance(options, ToolTaskOptions) else ToolTaskOptions(policy=options)

    def options_for(self, tool_name: str) -> ToolTaskOptions | None:
        """The task options of a tool, with every inherited setting resolved."""
        options = self._tools.get(tool_name)
        if options is None:
            return None
        activity = self.default_activity if isinstance(options.activity, _Inherit) else options.activity
        if options.progress_timeout is not None:
            activity = replace(activity, progress_timeout_s=options.progress_timeout)
        return replace(
            options,
            ttl_ms=self.default_ttl_ms if isinstance(options.ttl_ms, _Inherit) else options.ttl_ms,
            poll_interval_ms=self.default_poll_interval_ms
            if isinstance(options.poll_interval_ms, _Inherit)
            else options.poll_interval_ms,
            activity=activity,
        )

    @property
    def task_tools(self) -> Mapping[str, ToolTaskOptions]:
        return dict(self._tools)

    @overload
    def workflow_tool(
        self,
        workflow_class: _Workflow,
        *,
        name: str | None = None,
        description: str | None = None,
        task_queue: str | None = None,
        policy: TaskPolicy = "optional",
        ttl_ms: int | None | _Inherit = INHERIT,
        poll_interval_ms: int | _Inherit = INHERIT,
        activities: Sequence[Callable[..., Any]] = (),
        asks: Sequence[Asks] = (),
        versioning: Versioning | None = None,
        priority: int | None = None,
    ) -> _Workflow: ...

    @overload
    def workflow_tool(
        self,
        workflow_class: None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        task_queue: str | None = None,
        policy: TaskPolicy = "optional",
        ttl_ms: int | None | _Inherit = INHERIT,
        poll_interval_ms: int | _Inherit = INHERIT,
        activities: Sequence[Callable[..., Any]] = (),
        asks: Sequence[Asks] = (),
        versioning: Versioning | None = None,
        priority: int | None = None,
    ) -> Callable[[_Workflow], _Workflow]: ...

    def workflow_tool(
        self,
        workflow_class: _Workflow | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        task_queue: str | None = None,
        policy: TaskPolicy = "optional",
        ttl_ms: int | None | _Inherit = INHERIT,
        poll_interval_ms: int | _Inherit = INHERIT,
        activities: Sequence[Callable[..., Any]] = (),
        asks: Sequence[Asks] = (),
        versioning: Versioning | None = None,
        priority: int | None = None,
    ) -> _Workflow | Callable[[_Workflow], _Workflow]:
        """Expose a `@workflow.defn` class as an MCP tool whose task **is** a run of that workflow.

        Usable as a call (`tasks.workflow_tool(Release, activities=[build])`) and as a
        class decorator, bare or with keywords. The tool's arguments are the fields of
        the `@workflow.run` parameter (a dataclass or pydantic model), its result the
        workflow's return value. `task_queue` defaults to the app's; `activities` are
        registered next to the workflow by `dev` and `worker` (a team running its own
        workers registers them there instead). `asks` names what the workflow will ask
        the client for (see `ToolTaskOptions.asks`), `priority` its runs' task queue priority
        (see `ToolTaskOptions.priority`), which its activities and child workflows inherit.

        `versioning` says how a running task meets a deploy under worker versioning:
        `pinned` (the default: the workflow's code is yours and changes between
        releases) finishes every task on the build it started on; `auto-upgrade` moves
        it to the new build, for a workflow whose changes are all `workflow.patched`.
        A class's own `@workflow.defn(versioning_behavior=...)` is the default instead.
        """
        checked = ToolTaskOptions(
            policy=policy, ttl_ms=ttl_ms, poll_interval_ms=poll_interval_ms, asks=tuple(asks), priority=priority
        )

        def register(target: _Workflow) -> _Workflow:
            options = WorkflowToolOptions.of(
                target,
                name=name,
                description=description,
                task_queue=task_queue,
                policy=policy,
                ttl_ms=ttl_ms,
                poll_interval_ms=poll_interval_ms,
                activities=activities,
                versioning=versioning,
            )
            if options.name in self._tools or options.name in self._workflow_tools:
                raise ValueError(f"a task tool named {options.name!r} is already registered")
            if self._server is not None:
                raise RuntimeError("register workflow tools before the extension is attached (serve/dev do that)")
            self._workflow_tools[options.name] = options
            if checked.asks:
                self._workflow_asks[options.name] = checked.asks
            if checked.priority is not None:
                self._workflow_priorities[options.name] = checked.priority
            return target

        return register if workflow_class is None else register(workflow_class)

    def nexus_tool(
        self,
        *,
        endpoint: str,
        service: str,
        operation: str,
        name: str,
        input_type: Any = None,
        output_type: Any = str,
        description: str = "",
        policy: TaskPolicy = "optional",
        ttl_ms: int | None | _Inherit = INHERIT,
        poll_interval_ms: int | _Inherit = INHERIT,
        schedule_to_close_timeout: float | None = None,
    ) -> None:
        """Expose a Nexus operation (another team's endpoint, usually a workflow in their namespace) as a task tool.

        The task is a run of this app's own `NexusToolWorkflow`, so `tasks/get`,
        `tasks/cancel`, TTL and ownership are those of any task; it starts the
        operation `service`/`operation` on `endpoint` with the tool's arguments (the
        fields of `input_type`, a dataclass or pydantic model, or one argument named
        `input`; `None`: no arguments) and its result is the tool's (`output_type`
        gives the `outputSchema`, as for `workflow_tool`). Cancelling the task cancels
        the operation; a failed operation is a tool error naming the operation and
        the handler's message. `schedule_to_close_timeout` (seconds) bounds the whole
        operation. See docs/nexus.md for what crosses namespaces and what does not.
        """
        options = NexusToolOptions.for_operation(
            endpoint=endpoint,
            service=service,
            operation=operation,
            input_type=input_type,
            output_type=output_type,
            name=name,
            description=description or f"{service}.{operation} (Nexus endpoint {endpoint})",
            policy=policy,
            ttl_ms=ttl_ms,
            poll_interval_ms=poll_interval_ms,
            schedule_to_close_s=schedule_to_close_timeout,
            reply_endpoint=lambda: self.nexus_reply_endpoint,
        )
        ToolTaskOptions(policy=policy, ttl_ms=ttl_ms, poll_interval_ms=poll_interval_ms)  # the same checks
        if options.name in self._tools or options.name in self._workflow_tools:
            raise ValueError(f"a task tool named {options.name!r} is already registered")
        if self._server is not None:
            raise RuntimeError("register Nexus tools before the extension is attached (serve/dev do that)")
        self._workflow_tools[options.name] = options

    @property
    def workflow_tools(self) -> Mapping[str, WorkflowToolOptions]:
        """The registered workflow tools, by tool name."""
        return dict(self._workflow_tools)

    def add_plugin(self, plugin: Any) -> None:
        """Use a Temporal plugin (`temporalio.plugin.SimplePlugin` or a client/worker `Plugin`) for this app.

        `serve`, `worker` and `dev` connect every Temporal client of the app with its
        plugins, so the plugins' data converter, sandbox settings and the activities and
        workflows they contribute reach every worker they build. A plugin whose name is
        already there is kept once.
        """
        if all(existing.name() != plugin.name() for existing in self._plugins):
            self._plugins.append(plugin)

    @property
    def plugins(self) -> Sequence[Any]:
        """The Temporal plugins of this app, for `Client.connect(plugins=...)` (see `add_plugin`)."""
        return tuple(self._plugins)

    def add_call_check(self, tool_name: str, check: Callable[[], str | None]) -> None:
        """Run `check` on every call of `tool_name` before anything starts.

        A message it returns is the answer to the call, as a tool error (`isError: true`),
        so a tool that cannot run in this deployment (a missing model, a missing key) says
        so at once instead of creating a task that fails later.
        """
        self._call_checks[tool_name] = check

    # -- wiring ------------------------------------------------------------------

    def attach(self, gateway: TemporalTaskGateway, server: MCPServer[Any]) -> None:
        """Connect the extension to Temporal and to its app; done by `serve`/`dev` before requests are accepted.

        The SDK never hands an extension its server, and answering `Resolve(...)`
        questions before the task exists needs the app's tool registry. Attaching
        also installs the `subscriptions/listen` middleware that pushes task changes;
        its watchers run while the server is inside `running()`.
        """
        from mcp_tasks_temporal.front.legacy_tasks import LegacyTasks
        from mcp_tasks_temporal.front.unicode_params import RejectLoneSurrogates

        if self._server is not None:
            raise RuntimeError("TasksExtension is already attached")
        self._gateway = gateway
        self._server = server
        for options in self._workflow_tools.values():
            self._add_workflow_tool(server, options)
        # How long a front retries a task's history before ending its listeners' streams (`docs/operations.md`).
        give_up = float(os.environ.get(PUSH_GIVE_UP_ENV) or 300)
        self._hub = push_hub(gateway, give_up_after_s=give_up)
        self._plain = PlainCalls(gateway, self._hub)
        server.middleware.append(RejectLoneSurrogates())
        server.middleware.append(TaskListen(server, gateway, self._hub))
        server.middleware.append(LegacyTasks(self, self._hub))
        server.middleware.append(PlainCallCancels(self))

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[None]:
        """Run the push watchers of an attached front server; leaving stops them.

        Whoever serves the app enters it around the transport (`serve` and `dev` do, in the
        Starlette lifespan and around stdio), so a stopping server stops its watchers.
        """
        if self._hub is None:
            raise RuntimeError("attach the extension before running it")
        async with self._hub.running():
            yield

    def _add_workflow_tool(self, server: MCPServer[Any], options: WorkflowToolOptions) -> None:
        """Give the app an ordinary tool with the workflow's arguments: `tools/list` and validation come from it."""
        if get_tool(server, options.name) is not None:
            raise ValueError(f"the app already has a tool named {options.name!r}")
        server.add_tool(
            tool_function(options, Context, self._run_workflow_synchronously),
            name=options.name,
            description=options.description,
            structured_output=False,
        )
        tool = get_tool(server, options.name)
        assert tool is not None
        # Published as is: the result is mapped from the decoded return value, not validated against a model.
        set_output_schema(tool, options.output_schema())

    def _plain_calls(self) -> PlainCalls:
        if self._plain is None:
            raise RuntimeError("attach the extension before serving calls")
        return self._plain

    @property
    def gateway(self) -> TemporalTaskGateway:
        if self._gateway is None:
            raise RuntimeError(
                "TasksExtension is not attached to Temporal; run the app with `mcp-tasks-temporal serve` "
                "or `dev`, or call extension.attach(TemporalTaskGateway(client, task_queue=...), app)"
            )
        return self._gateway

    def methods(self) -> Sequence[MethodBinding]:
        versions = frozenset(MODERN_PROTOCOL_VERSIONS)
        return [
            MethodBinding("tasks/get", TaskIdParams, self._tasks_get, versions),
            MethodBinding("tasks/update", UpdateTaskParams, self._tasks_update, versions),
            MethodBinding("tasks/cancel", TaskIdParams, self._tasks_cancel, versions),
        ]

    # -- tools/call ---------------------------------------------------------------

    async def intercept_tool_call(
        self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        with tool_call():  # where `set_status` outside a task is a no-op rather than a mistake
            return await self._route_tool_call(params, ctx, call_next)

    async def _route_tool_call(
        self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if current_run() is None:
            self._check_asks(params.name, ctx)
        check = self._call_checks.get(params.name)
        refusal = check() if check is not None and current_run() is None else None
        if refusal is not None:
            return CallToolResult(
                content=[TextContent(type="text", text=f"Error executing tool {params.name}: {refusal}")], is_error=True
            )
        workflow_options = self._workflow_tools.get(params.name)
        if workflow_options is not None:
            return await self._call_workflow_tool(workflow_options, params, ctx, call_next)
        options = self.options_for(params.name)
        if options is None or options.policy == "never" or current_run() is not None:
            # Not a task tool, or already running inside its task's activity.
            return await call_next(ctx)
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
        created = await self._create_tool_task(options, params, ctx, _envelope(ctx))
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
        created = await self._create_tool_task(options, params, ctx, plain_call_envelope(ctx, _envelope(ctx)))
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
        workflow_options = self._workflow_tools.get(params.name)
        if workflow_options is not None:
            if workflow_options.policy == "never":
                return None
            return await self._create_workflow_tool_task(workflow_options, params, ctx, envelope)
        options = self.options_for(params.name)
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
        principal = authenticated_principal(ctx)
        created_at_ms = int(time.time() * 1000)
        assert not isinstance(options.ttl_ms, _Inherit)
        assert not isinstance(options.poll_interval_ms, _Inherit)
        assert not isinstance(options.activity, _Inherit)
        task = ToolTaskInput(
            task_id=task_id_for(ctx),
            tool=params.name,
            arguments=dict(params.arguments or {}),
            meta=envelope,
            created_at_ms=created_at_ms,
            owner=owner_key(principal),
            ttl_ms=options.ttl_ms,
            poll_interval_ms=options.poll_interval_ms,
            activity=options.activity,
            # The answers of the MRTR rounds, and the (already unsealed) state that records them.
            input_responses=dict(params.input_responses) if params.input_responses else None,
            request_state=params.request_state,
        )
        tag_task(task.task_id)
        with temporal_errors():
            return await self.gateway.create(
                task, principal, pinned=options.versioning == "pinned", priority=options.priority
            )

    def _check_asks(self, tool_name: str, ctx: ServerRequestContext[Any, Any]) -> None:
        """-32021 for a client that cannot answer what the tool declared it asks, naming what its revision needs."""
        tool_options = self._tools.get(tool_name)
        asks = tool_options.asks if tool_options is not None else self._workflow_asks.get(tool_name, ())
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
        server = self._server
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
        created = await self._create_workflow_tool_task(options, params, ctx, _envelope(ctx))
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
        server = self._server
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
            return await self.gateway.create_workflow_task(
                self._workflow_task(options, workflow_args, envelope, task_id_for(ctx)), principal
            )

    def _workflow_task(
        self,
        options: WorkflowToolOptions,
        workflow_args: list[Any],
        envelope: dict[str, Any],
        task_id: str | None = None,
    ) -> WorkflowTask:
        ttl_ms = self.default_ttl_ms if isinstance(options.ttl_ms, _Inherit) else options.ttl_ms
        poll_ms = (
            self.default_poll_interval_ms
            if isinstance(options.poll_interval_ms, _Inherit)
            else options.poll_interval_ms
        )
        return WorkflowTask(
            task_id=task_id or new_task_id(),
            tool=options.name,
            workflow=options.workflow_name,
            args=workflow_args,
            task_queue=options.task_queue,
            envelope=envelope,
            created_at_ms=int(time.time() * 1000),
            ttl_ms=ttl_ms,
            poll_interval_ms=poll_ms,
            auto_upgrade=options.versioning == "auto-upgrade" and not options.declares_versioning,
            priority=self._workflow_priorities.get(options.name),
        )

    async def _run_workflow_synchronously(
        self, options: WorkflowToolOptions, arguments: dict[str, Any], context: Context[Any, Any]
    ) -> CallToolResult | InputRequiredResult:
        """A workflow tool called without a task: start the workflow and answer with its result.

        The run is a task like any other in Temporal (same ID scheme, memo, TTL),
        only nobody is given its ID, so it lives as long as the call (`held_calls`). A
        question it asks goes back inside the call, or, to a client that cannot answer
        it, cancels the task (`plain_calls`).
        """
        ctx = context.request_context
        envelope = plain_call_envelope(ctx, _envelope(ctx))
        task = self._workflow_task(options, options.workflow_args(arguments), envelope, task_id_for(ctx))
        principal = authenticated_principal(ctx)
        with temporal_errors():
            handle = await self.gateway.start_workflow_task(task, principal)
        started = self.gateway.as_started(task, principal, handle)
        return await self._plain_calls().hold(ctx, task.task_id, principal, started=started)

    # -- tasks/* ------------------------------------------------------------------

    async def _tasks_get(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> dict[str, Any]:
        _admit(ctx, params.task_id, require_mcp_name=self.require_mcp_name)
        with temporal_errors():
            return await self.gateway.get(params.task_id, authenticated_principal(ctx))

    async def _tasks_update(self, ctx: ServerRequestContext[Any, Any], params: UpdateTaskParams) -> dict[str, Any]:
        _admit(ctx, params.task_id, require_mcp_name=self.require_mcp_name)
        with temporal_errors():
            await self.gateway.update(params.task_id, authenticated_principal(ctx), params.input_responses)
        return {}

    async def _tasks_cancel(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> dict[str, Any]:
        _admit(ctx, params.task_id, require_mcp_name=self.require_mcp_name)
        with temporal_errors():
            await self.gateway.cancel(params.task_id, authenticated_principal(ctx))
        return {}


def _admit(ctx: ServerRequestContext[Any, Any], task_id: str, *, require_mcp_name: bool) -> None:
    """The checks every tasks/* request passes before any task is looked up.

    Routing headers first (a load balancer may already have acted on them), then
    the per-request capability gate, so a bogus ID never reaches Temporal from a
    client that could not use the answer. A missing `Mcp-Name` routes nowhere
    wrong, so it passes unless the deployment requires the header.
    """
    tag_task(task_id)
    headers = getattr(ctx.request, "headers", None)
    if headers is not None:
        name = headers.get("mcp-name")
        if (name is not None or require_mcp_name) and decode_header_value(name) != task_id:
            raise HeaderMismatchError()
    if not declares_tasks(ctx):
        require_client_extension(ctx, EXTENSION_ID)


def _envelope(ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
    """The creating request's `_meta`, kept with the task so its tool sees the same client.

    A progress token belongs to the HTTP exchange that has already ended.
    """
    raw = (ctx.params or {}).get("_meta")
    meta: dict[str, Any] = dict(raw) if isinstance(raw, Mapping) else {}  # pyright: ignore[reportUnknownArgumentType]
    meta.pop("progressToken", None)
    meta.setdefault(CLIENT_CAPABILITIES_META_KEY, {})
    return meta
