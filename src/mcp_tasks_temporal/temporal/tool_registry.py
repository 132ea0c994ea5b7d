"""The app's task tools and workflow tools: what `TasksExtension` is told, readable on both sides.

    tasks = TasksExtension()            # a TaskToolRegistry with the front's handlers on top

    @tasks.tool(policy="optional")
    @mcp.tool()
    async def build(ref: str) -> str: ...

The front reads it to decide how a `tools/call` runs; a worker reads it for the
workflow tools, Temporal plugins and activities it must register. It imports
nothing of the front (tests/test_boundaries.py checks it), so a worker that loads
the app loads no front server code through it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal, TypeVar, overload

from mcp_tasks_temporal.temporal.capabilities import check_asks
from mcp_tasks_temporal.temporal.contract import ActivityPolicy
from mcp_tasks_temporal.temporal.deployment import Versioning, check_versioning
from mcp_tasks_temporal.temporal.failing_policy import FailingWorkflowPolicy
from mcp_tasks_temporal.temporal.fairness import check_priority
from mcp_tasks_temporal.temporal.nexus_tools import NexusToolOptions
from mcp_tasks_temporal.temporal.workflow_tools import WorkflowToolOptions

DAY_MS: Final = 24 * 3600 * 1000
DEFAULT_INLINE_BUDGET_MS: Final = 1000
"""How long a front holds a task-capable call for its tool's outcome before it answers with the task:
measured in docs/performance.md ("Results in the call")."""

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
    failing_workflow: FailingWorkflowPolicy | None | _Inherit = INHERIT
    """When a task whose workflow task keeps failing is ended `failed` (`failing_policy`);
    `None` keeps retrying until fixed code runs, Temporal's default."""
    inline_budget_ms: int | _Inherit = INHERIT
    """How long a task-capable call waits for the tool: one that ends within it is answered with its
    `CallToolResult`, as a synchronous call would be (its task stays in Temporal's history); past it, or
    at the tool's first question, the call is answered with the task. `0`: always the task at once.

    Within the budget (at most its first second) the tool's first attempt runs as a local activity in the
    task's first workflow task, so a quick tool's run is one workflow task; a tool still running then goes on
    where it runs, adopted by an ordinary activity on the same worker, and is never started twice for it.
    During that phase a status line is held and a cancel waits for the phase to end (docs/design.md,
    "The first attempt in the first workflow task")."""

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
        if isinstance(self.inline_budget_ms, int) and self.inline_budget_ms < 0:
            raise ValueError("inline_budget_ms must be 0 (always a task) or more")


@dataclass
class TaskToolRegistry:
    """The tools that run as tasks and the workflows exposed as tools, with the app-wide defaults they inherit."""

    default_ttl_ms: int | None = DAY_MS
    default_poll_interval_ms: int = 1000
    default_inline_budget_ms: int = DEFAULT_INLINE_BUDGET_MS
    """The tools' `inline_budget_ms` unless they say otherwise; `0` answers every task-capable call with its task."""
    default_activity: ActivityPolicy = field(default_factory=ActivityPolicy)
    default_failing_workflow: FailingWorkflowPolicy | None = None
    """The tools' `failing_workflow` unless they say otherwise; `None` keeps a failing workflow
    retrying until fixed code runs (Temporal's default, docs/operations.md says why)."""
    _tools: dict[str, ToolTaskOptions] = field(default_factory=dict[str, ToolTaskOptions], init=False)
    _workflow_tools: dict[str, WorkflowToolOptions] = field(default_factory=dict[str, WorkflowToolOptions], init=False)
    _workflow_asks: dict[str, tuple[Asks, ...]] = field(default_factory=dict[str, tuple[Asks, ...]], init=False)
    _workflow_priorities: dict[str, int] = field(default_factory=dict[str, int], init=False)
    _workflow_failing: dict[str, FailingWorkflowPolicy | None] = field(
        default_factory=dict[str, "FailingWorkflowPolicy | None"], init=False
    )
    _plugins: list[Any] = field(default_factory=list[Any], init=False)
    _call_checks: dict[str, Callable[[], str | None]] = field(
        default_factory=dict[str, Callable[[], "str | None"]], init=False
    )
    _sealed: bool = field(default=False, init=False)

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
        failing_workflow: FailingWorkflowPolicy | None | _Inherit = INHERIT,
        inline_budget_ms: int | _Inherit = INHERIT,
    ) -> Callable[[_Fn], _Fn]:
        """Decorator: run this tool as a task. Stack it on either side of `@mcp.tool()`.

        Pass `name=` when the tool was registered under a name other than the function's.
        `versioning` says how a running task meets a deploy (see `ToolTaskOptions.versioning`).
        `priority` (1 highest .. 5 lowest) orders its tasks against other tools' when workers are busy.
        `failing_workflow` ends its tasks `failed` when their workflow keeps failing (`FailingWorkflowPolicy`).
        `inline_budget_ms` is how long a task-capable call waits for the tool before it gets the task
        (`ToolTaskOptions.inline_budget_ms`); `0` for a tool whose callers must always get a task. Within it
        (at most its first second) the tool's first attempt runs in the task's first workflow task, as a
        local activity, and a tool still running then is adopted by an activity on the same worker.
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
            failing_workflow=failing_workflow,
            inline_budget_ms=inline_budget_ms,
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
            inline_budget_ms=self.default_inline_budget_ms
            if isinstance(options.inline_budget_ms, _Inherit)
            else options.inline_budget_ms,
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
        failing_workflow: FailingWorkflowPolicy | None | _Inherit = INHERIT,
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
        failing_workflow: FailingWorkflowPolicy | None | _Inherit = INHERIT,
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
        failing_workflow: FailingWorkflowPolicy | None | _Inherit = INHERIT,
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

        `failing_workflow` ends its tasks `failed` when the workflow's code keeps failing
        (a bug, a sandbox violation, non-determinism) instead of waiting for a fix
        (`FailingWorkflowPolicy`; `None` waits, whatever the app-wide default says).
        """
        checked = ToolTaskOptions(
            policy=policy,
            ttl_ms=ttl_ms,
            poll_interval_ms=poll_interval_ms,
            asks=tuple(asks),
            priority=priority,
            failing_workflow=failing_workflow,
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
            if self._sealed:
                raise RuntimeError("register workflow tools before the extension is attached (serve/dev do that)")
            self._workflow_tools[options.name] = options
            if checked.asks:
                self._workflow_asks[options.name] = checked.asks
            if checked.priority is not None:
                self._workflow_priorities[options.name] = checked.priority
            if not isinstance(failing_workflow, _Inherit):
                self._workflow_failing[options.name] = failing_workflow
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
            reply_endpoint=self.nexus_reply_to,
        )
        ToolTaskOptions(policy=policy, ttl_ms=ttl_ms, poll_interval_ms=poll_interval_ms)  # the same checks
        if options.name in self._tools or options.name in self._workflow_tools:
            raise ValueError(f"a task tool named {options.name!r} is already registered")
        if self._sealed:
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

    # -- read by whoever serves the tools -------------------------------------------

    def nexus_reply_to(self) -> str | None:
        """The Nexus endpoint through which `nexus_tool` handler workflows report status; `None`: none."""
        return None

    def seal(self) -> None:
        """No more workflow or Nexus tools: the app's tool list is being served (done when a front attaches)."""
        self._sealed = True

    def workflow_options_for(self, tool_name: str) -> WorkflowToolOptions | None:
        return self._workflow_tools.get(tool_name)

    def workflow_priority(self, tool_name: str) -> int | None:
        return self._workflow_priorities.get(tool_name)

    def failing_workflow_for(self, tool_name: str) -> FailingWorkflowPolicy | None:
        """When the tasks of `tool_name` are ended because their workflow keeps failing; `None`: never."""
        tool_options = self._tools.get(tool_name)
        if tool_options is not None:
            chosen = tool_options.failing_workflow
        else:
            chosen = self._workflow_failing.get(tool_name, INHERIT)
        return self.default_failing_workflow if isinstance(chosen, _Inherit) else chosen

    def asks_of(self, tool_name: str) -> tuple[Asks, ...]:
        """What the tool declared it will ask the client for."""
        tool_options = self._tools.get(tool_name)
        return tool_options.asks if tool_options is not None else self._workflow_asks.get(tool_name, ())

    def call_check(self, tool_name: str) -> Callable[[], str | None] | None:
        return self._call_checks.get(tool_name)

    def workflow_lifetime(self, options: WorkflowToolOptions) -> tuple[int | None, int]:
        """A workflow tool's `ttl_ms` and `poll_interval_ms`, inherited settings resolved."""
        ttl_ms = self.default_ttl_ms if isinstance(options.ttl_ms, _Inherit) else options.ttl_ms
        poll_ms = (
            self.default_poll_interval_ms
            if isinstance(options.poll_interval_ms, _Inherit)
            else options.poll_interval_ms
        )
        return ttl_ms, poll_ms
