"""`McpTasksPlugin`: an MCP app's tasks served by a Temporal worker its team already runs.

    client = await Client.connect("localhost:7233", plugins=[McpTasksPlugin(app, task_queue="mcp-tasks/my-app")])
    worker = Worker(client, task_queue="mcp-tasks/my-app", workflows=[TheirOwn], activities=[their_activity])

or, with the plugin on one worker only, `Worker(client, ..., plugins=[McpTasksPlugin(app)])`.

The app's own Temporal plugins (`TasksExtension.add_plugin`: pydantic-ai's, for a sub-agent) come
with it: they configure the worker after the app's workflows are on it, since some register each
workflow's own activities, and wrap its run inside the app's lifespan. Before a worker polls, its
settings are compared with those the task queue's other processes recorded (`shared_settings`),
and a worker that disagrees is refused with the one line that says why.

On the queue the fronts start tasks on, the plugin adds the tool-task workflows, the tool activity
(entering the app's lifespan while the worker runs) and, when the app has Nexus tools, the reply
service. On every queue it adds the app's workflow tools that run there with their activities, the
interceptor that heartbeats their activities and relays their status lines, and the sandbox
pass-through that lets a workflow share a module with the server. On the client and the replayer it
sets the data converter (pydantic JSON, the codec and external storage when given), so `audit
--verify` replays with exactly what the worker ran.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import timedelta
from typing import Any, cast

import temporalio.client
import temporalio.worker
from mcp.server.mcpserver import MCPServer
from temporalio.client import ClientConfig, WorkflowHistory
from temporalio.converter import DataConverter, ExternalStorage, PayloadCodec
from temporalio.plugin import SimplePlugin
from temporalio.service import ConnectConfig, ServiceClient
from temporalio.worker import (
    Replayer,
    ReplayerConfig,
    Worker,
    WorkerConfig,
    WorkerDeploymentConfig,
    WorkflowReplayResult,
)
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from mcp_tasks_temporal.sdk_compat import activity_name, end_unstarted_worker, server_extensions
from mcp_tasks_temporal.temporal.activities import ToolActivities
from mcp_tasks_temporal.temporal.app_plugins import app_plugins
from mcp_tasks_temporal.temporal.connection import data_converter
from mcp_tasks_temporal.temporal.contract import RUN_TOOL_ACTIVITY
from mcp_tasks_temporal.temporal.failure_watch import watch_failing_workflows
from mcp_tasks_temporal.temporal.nexus_reply import ReplyService
from mcp_tasks_temporal.temporal.nexus_tools import NexusToolOptions
from mcp_tasks_temporal.temporal.payload_limits import PayloadLimits
from mcp_tasks_temporal.temporal.sandbox import app_module_passthrough, passthrough_modules
from mcp_tasks_temporal.temporal.shared_settings import SharedSettings, check_shared_settings
from mcp_tasks_temporal.temporal.task_interceptor import TaskInterceptor
from mcp_tasks_temporal.temporal.workflow_tools import WorkflowToolOptions, WorkflowToolRegistry, workflow_definition
from mcp_tasks_temporal.temporal.workflows import (
    AutoUpgradeToolTaskWorkflow,
    PinnedToolTaskWorkflow,
    ToolTaskWorkflow,
)
from mcp_tasks_temporal.temporal.workflows.nexus_question import NexusQuestionWorkflow
from mcp_tasks_temporal.temporal.workflows.task_feed import AutoUpgradeTaskFeedWorkflow, TaskFeedWorkflow

logger = logging.getLogger(__name__)

PLUGIN_NAME = "mcp_tasks_temporal.McpTasksPlugin"

TOOL_TASK_WORKFLOWS: Sequence[type] = (ToolTaskWorkflow, PinnedToolTaskWorkflow)
VERSIONED_TOOL_TASK_WORKFLOWS: Sequence[type] = (AutoUpgradeToolTaskWorkflow, PinnedToolTaskWorkflow)
"""The same workflow types for a worker under worker versioning, each declaring its behaviour."""
ENGINE_WORKFLOWS: frozenset[type] = frozenset(
    {*TOOL_TASK_WORKFLOWS, *VERSIONED_TOOL_TASK_WORKFLOWS, NexusQuestionWorkflow, TaskFeedWorkflow}
)

_RunReplayer = Callable[
    [Replayer, AsyncIterator[WorkflowHistory]], AbstractAsyncContextManager[AsyncIterator[WorkflowReplayResult]]
]


class McpTasksPlugin(SimplePlugin):
    """Serves `app`'s tasks from any worker it is given to, beside the worker's own workflows.

    Args:
        app: The `MCPServer` whose tools and workflow tools the fronts expose as tasks.
        task_queue: The queue the fronts start tool tasks on. Tool tasks, the tool activity and the
            Nexus reply service go only on a worker of this queue; workflow tools go on the queue they
            name (this one by default). None: every worker the plugin configures is that queue's.
        codec: The payload codec every process of the namespace shares (`--codec-key`).
        external_storage: Where payloads over the storage threshold go (`--payload-storage`).
        payload_limits: How large a tool's result may be (Temporal's default limit if None).
        keepalive_s: Heartbeat period of a running tool; a cancel reaches it within about this long.
        status_freshness_s: How stale a status line may be when `tasks/get` reads it: the worker's
            heartbeat throttle is lowered to this, never raised.
        check_settings: Compare the worker's payload storage, codec keys and versioning with the
            task queue's record before it polls (`shared_settings`), and refuse it when they
            disagree. False where the process compared them itself (the `worker` and `dev` commands).
    """

    def __init__(
        self,
        app: MCPServer[Any],
        *,
        task_queue: str | None = None,
        codec: PayloadCodec | None = None,
        external_storage: ExternalStorage | None = None,
        payload_limits: PayloadLimits | None = None,
        keepalive_s: float = 2.0,
        status_freshness_s: float = 1.0,
        check_settings: bool = True,
    ) -> None:
        self.app = app
        self.task_queue = task_queue
        self.codec = codec
        self.external_storage = external_storage
        self.payload_limits = payload_limits
        self.keepalive_s = keepalive_s
        self.status_freshness = timedelta(seconds=status_freshness_s)
        self.check_settings = check_settings
        super().__init__(PLUGIN_NAME, data_converter=self._data_converter)  # pyright: ignore[reportUnknownMemberType]

    def configure_client(self, config: ClientConfig) -> ClientConfig:
        config = super().configure_client(config)
        # One the client was given itself (by name, as `ClientPart` too) configures it already.
        present = {plugin.name() for plugin in config.get("plugins", []) if plugin is not self}
        for plugin in app_plugins(self.app):
            if isinstance(plugin, temporalio.client.Plugin) and plugin.name() not in present:
                config = plugin.configure_client(config)
        return config

    async def connect_service_client(
        self, config: ConnectConfig, next: Callable[[ConnectConfig], Awaitable[ServiceClient]]
    ) -> ServiceClient:
        chained = next
        for plugin in reversed(app_plugins(self.app)):
            if isinstance(plugin, temporalio.client.Plugin):
                chained = _chain_connect(plugin, chained)
        return await chained(config)

    def configure_worker(self, config: WorkerConfig) -> WorkerConfig:
        config = super().configure_worker(config)
        values = cast("dict[str, Any]", config)
        queue: str = values.get("task_queue") or ""
        tools, own_activities = workflow_tools_on(self.app, queue, default_queue=self.task_queue or queue)
        workflows: list[type] = list(tools)
        activities: list[Callable[..., Any]] = list(own_activities)
        if self._serves_tool_tasks(queue):
            deployment = values.get("deployment_config")
            versioned = deployment is not None and deployment.use_worker_versioning
            workflows[:0] = VERSIONED_TOOL_TASK_WORKFLOWS if versioned else TOOL_TASK_WORKFLOWS
            # The task feed's shards run beside the tasks that publish to them.
            workflows.append(AutoUpgradeTaskFeedWorkflow if versioned else TaskFeedWorkflow)
            tool_activities = ToolActivities(
                self.app, None, keepalive_s=self.keepalive_s, payload_limits=self.payload_limits
            )
            activities.insert(0, tool_activities.run_tool)
            if self._has_nexus_tools():
                # Handler workflows of Nexus tools report status and ask through the reply endpoint,
                # which targets this queue.
                workflows.append(NexusQuestionWorkflow)
                values["nexus_service_handlers"] = [*(values.get("nexus_service_handlers") or []), ReplyService()]
            for key in ("max_heartbeat_throttle_interval", "default_heartbeat_throttle_interval"):
                current: timedelta | None = values.get(key)
                values[key] = self.status_freshness if current is None else min(current, self.status_freshness)
        _extend(values, "workflows", workflows)
        _extend(values, "activities", activities)
        values["interceptors"] = [*(values.get("interceptors") or []), _interceptor(tools, own_activities)]
        values["workflow_runner"] = _with_passthrough(values.get("workflow_runner"), tools)
        watch_failing_workflows(values, self.app)
        # Last, so that they see the app's workflows: pydantic-ai's registers the activities of the
        # agents a workflow declares.
        for plugin in self._app_worker_plugins(values, warn=True):
            config = plugin.configure_worker(config)
        return config

    def configure_replayer(self, config: ReplayerConfig) -> ReplayerConfig:
        config = super().configure_replayer(config)
        values = cast("dict[str, Any]", config)
        options = workflow_tool_options(self.app)
        tools = list(dict.fromkeys(option.workflow_class for option in options))
        activities = _distinct(fn for option in options for fn in option.activities)
        # A versioned type replays as its unversioned twin: versioning changes routing, not commands.
        _extend(values, "workflows", [*TOOL_TASK_WORKFLOWS, NexusQuestionWorkflow, TaskFeedWorkflow, *tools])
        values["interceptors"] = [*(values.get("interceptors") or []), _interceptor(tools, activities)]
        values["workflow_runner"] = _with_passthrough(values.get("workflow_runner"), tools)
        for plugin in app_plugins(self.app):
            if isinstance(plugin, temporalio.worker.Plugin):
                config = plugin.configure_replayer(config)
        return config

    async def run_worker(self, worker: Worker, next: Callable[[Worker], Awaitable[None]]) -> None:
        """Refuse a worker whose settings disagree; else run it under the app's lifespan and plugins.

        The app's lifespan is entered once per worker that runs its tools, as once per front.
        """
        active = cast("dict[str, Any]", worker.config(active_config=True))
        if self.check_settings and self._serves_anything(active):
            try:
                await self._agree_on_settings(active)
            except BaseException:
                # Nothing polled yet: the worker ends here, as if it had run and stopped.
                await end_unstarted_worker(worker)
                raise
        chained = next
        for plugin in reversed(self._app_worker_plugins(active)):
            chained = _chain_run(plugin, chained)
        tool_activities = _tool_activities(active.get("activities") or [])
        if tool_activities is None:
            await chained(worker)
            return
        async with ToolActivities.lifespan(self.app) as state:
            tool_activities.lifespan_state = state
            await chained(worker)

    @asynccontextmanager
    async def run_replayer(
        self,
        replayer: Replayer,
        histories: AsyncIterator[WorkflowHistory],
        next: _RunReplayer,
    ) -> AsyncGenerator[AsyncIterator[WorkflowReplayResult]]:
        chained = next
        for plugin in reversed(app_plugins(self.app)):
            if isinstance(plugin, temporalio.worker.Plugin):
                chained = _chain_replay(plugin, chained)
        async with chained(replayer, histories) as results:
            yield results

    def _app_worker_plugins(self, config: dict[str, Any], *, warn: bool = False) -> list[temporalio.worker.Plugin]:
        """The app's plugins this worker does not already have from its client or its own list."""
        client: temporalio.client.Client | None = config.get("client")
        from_client: Sequence[object] = client.config().get("plugins", []) if client is not None else []
        own: Sequence[object] = config.get("plugins") or []
        names = {plugin.name() for plugin in (*from_client, *own) if isinstance(plugin, temporalio.worker.Plugin)}
        ours = [plugin for plugin in app_plugins(self.app) if isinstance(plugin, temporalio.worker.Plugin)]
        given = sorted(plugin.name() for plugin in ours if plugin.name() in names)
        if warn and given:
            logger.warning(
                "the app's Temporal plugins %s were given to this worker or its client as well: they configured it "
                "before McpTasksPlugin added the app's workflows, so a sub-agent's activities may be missing; "
                "give only McpTasksPlugin(app), which brings them",
                ", ".join(given),
            )
        return [plugin for plugin in ours if plugin.name() not in names]

    async def _agree_on_settings(self, config: dict[str, Any]) -> None:
        """As `worker` does at start: compare with the fronts' queue's record, or write it first.

        The settings are the ones the worker will read and write with: its client's converter.
        """
        client: temporalio.client.Client = config["client"]
        deployment: WorkerDeploymentConfig | None = config.get("deployment_config")
        versioned = deployment is not None and deployment.use_worker_versioning
        name = deployment.version.deployment_name if deployment is not None and versioned else ""
        mine = SharedSettings.of_converter("worker", client.data_converter, name)
        await check_shared_settings(client, self.task_queue or config.get("task_queue") or "", mine)

    def _serves_anything(self, config: dict[str, Any]) -> bool:
        """Whether the plugin put anything of the app's on this worker (one of another queue may get nothing)."""
        queue: str = config.get("task_queue") or ""
        return self._serves_tool_tasks(queue) or bool(
            workflow_tools_on(self.app, queue, default_queue=self.task_queue or queue)[0]
        )

    def _data_converter(self, existing: DataConverter | None) -> DataConverter:
        converter = data_converter(self.codec, self.external_storage)
        if existing is None or existing is DataConverter.default:
            return converter
        # A converter of the team's own (a payload converter of theirs, say) keeps its parts;
        # only what every process of the namespace must share is set.
        changes: dict[str, Any] = {}
        if self.codec is not None:
            changes.update(
                payload_codec=converter.payload_codec, failure_converter_class=converter.failure_converter_class
            )
        if self.external_storage is not None:
            changes.update(external_storage=self.external_storage)
        return dataclasses.replace(existing, **changes) if changes else existing

    def _serves_tool_tasks(self, queue: str) -> bool:
        return self.task_queue is None or queue == self.task_queue

    def _has_nexus_tools(self) -> bool:
        return any(isinstance(options, NexusToolOptions) for options in workflow_tool_options(self.app))


def workflow_tool_options(app: MCPServer[Any]) -> list[WorkflowToolOptions]:
    """The app's workflow tools, as its `TasksExtension` registered them."""
    for extension in server_extensions(app):
        if isinstance(extension, WorkflowToolRegistry):
            return list(extension.workflow_tools.values())
    return []


def workflow_tools_on(
    app: MCPServer[Any], task_queue: str, *, default_queue: str
) -> tuple[list[type], list[Callable[..., Any]]]:
    """The workflow classes and activities of the app's workflow tools that run on `task_queue`."""
    here = [options for options in workflow_tool_options(app) if (options.task_queue or default_queue) == task_queue]
    workflows = list(dict.fromkeys(options.workflow_class for options in here))
    return workflows, _distinct(fn for options in here for fn in options.activities)


def _distinct(activities: Iterable[Callable[..., Any]]) -> list[Callable[..., Any]]:
    """Two tools may share an activity; a worker refuses the same activity twice."""
    return list(dict.fromkeys(activities))


def _extend(values: dict[str, Any], key: str, added: Sequence[Any]) -> None:
    present = list(values.get(key) or [])
    values[key] = [*present, *(item for item in added if item not in present)]


def _interceptor(tools: Sequence[type], activities: Sequence[Callable[..., Any]]) -> TaskInterceptor:
    return TaskInterceptor(
        workflow_types=[workflow_definition(w).name for w in tools],
        # The tool activity heartbeats by itself, with the tool's status as details.
        activity_types=[name for name in map(_activity_name, activities) if name != RUN_TOOL_ACTIVITY],
    )


def _with_passthrough(runner: Any, tools: Sequence[type]) -> Any:
    """The team's sandbox with the modules a workflow tool shares with its server passed through.

    A runner that is not Temporal's sandbox (an unsandboxed one, say) is the team's choice and stays.
    """
    extra = (*passthrough_modules(), *app_module_passthrough(tools))
    if runner is None:
        runner = SandboxedWorkflowRunner()
    if not isinstance(runner, SandboxedWorkflowRunner):
        return runner
    return dataclasses.replace(runner, restrictions=runner.restrictions.with_passthrough_modules(*extra))


def _tool_activities(activities: Sequence[Callable[..., Any]]) -> ToolActivities | None:
    for fn in activities:
        owner = getattr(fn, "__self__", None)
        if isinstance(owner, ToolActivities):
            return owner
    return None


def _chain_connect(
    plugin: temporalio.client.Plugin, next: Callable[[ConnectConfig], Awaitable[ServiceClient]]
) -> Callable[[ConnectConfig], Awaitable[ServiceClient]]:
    return lambda config: plugin.connect_service_client(config, next)


def _chain_run(
    plugin: temporalio.worker.Plugin, next: Callable[[Worker], Awaitable[None]]
) -> Callable[[Worker], Awaitable[None]]:
    return lambda worker: plugin.run_worker(worker, next)


def _chain_replay(plugin: temporalio.worker.Plugin, next: _RunReplayer) -> _RunReplayer:
    def run(replayer: Replayer, histories: AsyncIterator[WorkflowHistory]) -> Any:
        return plugin.run_replayer(replayer, histories, next)

    return run


def _activity_name(fn: Callable[..., Any]) -> str:
    return activity_name(fn) or getattr(fn, "__name__", "")
