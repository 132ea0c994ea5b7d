"""`McpTasksPlugin`: an MCP app's tasks served by a Temporal worker its team already runs.

    worker = Worker(
        client,
        task_queue="mcp-tasks/my-app",
        workflows=[TheirOwn],
        activities=[their_activity],
        plugins=[McpTasksPlugin(tasks, app), *tasks.plugins],
    )

`tasks` is the app's `TasksExtension`, `app` the `MCPServer` built with it. The plugin is
temporalio's `SimplePlugin` with its own parameters: the data converter as a function of the
team's (pydantic JSON, the codec and external storage when given), the worker interceptors
(`plugin_interceptors`), and the workflow runner as a function of the team's (their sandbox with
the modules a workflow may share with the server passed through, as temporalio's OpenTelemetry
plugin does). Three hooks add what no parameter can say, each calling `super()` first:

- `configure_worker`: what goes on a worker depends on its task queue and its versioning. On the
  queue the fronts start tasks on: the tool-task workflows, the task feed's shard workflow, the
  tool activity and, when the app has Nexus tools, the reply service; on every queue, the app's
  workflow tools that run there, with their activities.
- `configure_replayer`: every workflow of the app, whatever queue it ran on.
- `run_worker`: before a worker of the app's polls, the start-up checks (the namespace has the
  search attributes the tasks write; its settings agree with the running processes of the queue),
  refusing it with one line; while it runs, the app's lifespan around the tool activity and the
  worker's settings held out to processes that start later (`shared_settings`). Not `run_context`,
  which would also wrap the replayer and the workers of other queues: the app's lifespan may open
  connections that only the tool activity needs.

It changes no setting of the team's worker and starts no workflow. The app's own Temporal plugins
(`TasksExtension.add_plugin`: pydantic-ai's, for a sub-agent) are the team's to give, after this
one (`plugins=[McpTasksPlugin(tasks, app), *tasks.plugins]`): pydantic-ai's registers the
activities of the agents it finds among the worker's workflows, so it must come after the
workflows this plugin adds. A worker given them out of that order, or not at all, is warned about.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextlib import AsyncExitStack
from datetime import timedelta
from functools import partial
from typing import Any, cast

import temporalio.client
import temporalio.worker
from mcp.server.mcpserver import MCPServer
from temporalio.converter import DataConverter, ExternalStorage, PayloadCodec
from temporalio.plugin import SimplePlugin
from temporalio.worker import (
    Interceptor,
    ReplayerConfig,
    Worker,
    WorkerConfig,
    WorkerDeploymentConfig,
    WorkflowRunner,
)
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from mcp_tasks_temporal.sdk_compat import activity_name, end_unstarted_worker
from mcp_tasks_temporal.temporal.activities import ToolActivities
from mcp_tasks_temporal.temporal.adoption_queue import adoption_queue
from mcp_tasks_temporal.temporal.connection import data_converter
from mcp_tasks_temporal.temporal.contract import ADOPT_QUEUE_INFIX, RUN_TOOL_ACTIVITY
from mcp_tasks_temporal.temporal.failure_watch import watch_failing_workflows
from mcp_tasks_temporal.temporal.nexus_reply import ReplyService
from mcp_tasks_temporal.temporal.nexus_tools import NexusToolOptions
from mcp_tasks_temporal.temporal.payload_limits import PayloadLimits
from mcp_tasks_temporal.temporal.queue_fronts import fronts_watched
from mcp_tasks_temporal.temporal.sandbox import passthrough_modules
from mcp_tasks_temporal.temporal.search_attributes import require_on
from mcp_tasks_temporal.temporal.shared_settings import SharedSettings, announce_settings, check_shared_settings
from mcp_tasks_temporal.temporal.task_interceptor import TaskInterceptor
from mcp_tasks_temporal.temporal.tool_registry import TaskToolRegistry
from mcp_tasks_temporal.temporal.workflow_tools import WorkflowToolOptions, workflow_definition
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

STATUS_STALENESS_HINT = timedelta(seconds=5)
"""A worker whose heartbeat throttle lets a tool's status lines lag more than this says so once at start."""


def plugin_interceptors(tasks: TaskToolRegistry) -> list[Interceptor]:
    """Every worker interceptor `McpTasksPlugin` adds, in the order they wrap the team's.

    `TaskInterceptor`: heartbeats for the activities of the app's workflow tools, relays their
    status lines and questions to the workflow, and warns of one started without a heartbeat timeout.
    """
    options = list(tasks.workflow_tools.values())
    return [
        TaskInterceptor(
            workflow_types=[workflow_definition(w).name for w in _workflow_classes(options)],
            # The tool activity heartbeats by itself, with the tool's status as details.
            activity_types=[name for name in map(_activity_name, _activities(options)) if name != RUN_TOOL_ACTIVITY],
        )
    ]


class McpTasksPlugin(SimplePlugin):
    """Serves an app's tasks from any worker it is given to, beside the worker's own workflows.

    Args:
        tasks: The app's `TasksExtension`: its task tools, workflow tools and Nexus tools.
        app: The `MCPServer` built with `tasks`, whose tools the tool activity runs under its lifespan.
        task_queue: The queue the fronts start tool tasks on. Tool tasks, the tool activity and the
            Nexus reply service go only on a worker of this queue; workflow tools go on the queue they
            name (this one by default). None: every worker the plugin configures is that queue's.
        codec: The payload codec every process of the namespace shares (`--codec-key`); set on the
            client and the replayer the plugin is given to.
        external_storage: Where payloads over the storage threshold go (`--payload-storage`); likewise.
        payload_limits: How large a tool's result may be (Temporal's default limit if None).
        keepalive_s: Heartbeat period of a running tool; a cancel reaches it within about this long
            once the worker's heartbeat throttle lets the heartbeat through.
        passthrough: Modules, beyond `mcp` and this package's, that the app's workflow tools share
            with the server and that Temporal's sandbox must pass through.
        check_search_attributes: Refuse a worker of the app's whose namespace lacks the search
            attributes task workflows write (`search_attributes.require_on`).
        check_settings: Refuse a worker of the app's whose payload storage, codec keys or versioning
            disagree with a running process of the fronts' queue, and hold its own out to those that
            start later (`shared_settings`). False where the process did both itself (`worker`, `dev`).
        first_attempts: Run a task-capable call's first attempt in its workflow's first task, so a tool that
            ends within the call's budget answers the call in one workflow task (docs/design.md, "The first
            attempt in the first workflow task"). A tool still running at the end of that phase is taken over
            on a task queue of this process's own, which a second worker in this process polls: off by default,
            as the team did not ask for that worker; `worker` and `dev` turn it on. Off, the attempt runs as
            an activity, as before.
    """

    def __init__(
        self,
        tasks: TaskToolRegistry,
        app: MCPServer[Any],
        *,
        task_queue: str | None = None,
        codec: PayloadCodec | None = None,
        external_storage: ExternalStorage | None = None,
        payload_limits: PayloadLimits | None = None,
        keepalive_s: float = 2.0,
        passthrough: Sequence[str] = (),
        check_search_attributes: bool = True,
        check_settings: bool = True,
        first_attempts: bool = False,
    ) -> None:
        self.tasks = tasks
        self.app = app
        self.task_queue = task_queue
        self.codec = codec
        self.external_storage = external_storage
        self.payload_limits = payload_limits
        self.keepalive_s = keepalive_s
        self.passthrough = tuple(passthrough)
        self.check_search_attributes = check_search_attributes
        self.check_settings = check_settings
        self.first_attempts = first_attempts
        super().__init__(  # pyright: ignore[reportUnknownMemberType]
            PLUGIN_NAME,
            data_converter=self._data_converter,
            interceptors=plugin_interceptors(tasks),
            workflow_runner=self._workflow_runner,
        )

    # -- what no parameter can say ------------------------------------------------------

    def configure_worker(self, config: WorkerConfig) -> WorkerConfig:
        """Add the app's workflows, activities and Nexus services that run on this worker's queue."""
        config = super().configure_worker(config)
        values = _values(config)
        queue: str = values.get("task_queue") or ""
        tools = self._tools_on(queue)
        workflows = list(_workflow_classes(tools))
        activities = _activities(tools)
        if self._serves_tool_tasks(queue):
            deployment: WorkerDeploymentConfig | None = values.get("deployment_config")
            versioned = deployment is not None and deployment.use_worker_versioning
            workflows[:0] = VERSIONED_TOOL_TASK_WORKFLOWS if versioned else TOOL_TASK_WORKFLOWS
            # The task feed's shards run beside the tasks that publish to them.
            workflows.append(AutoUpgradeTaskFeedWorkflow if versioned else TaskFeedWorkflow)
            tool_activities = ToolActivities(
                self.app, None, keepalive_s=self.keepalive_s, payload_limits=self.payload_limits
            )
            activities[:0] = [tool_activities.run_tool, tool_activities.run_tool_first]
            if any(isinstance(options, NexusToolOptions) for options in self.tasks.workflow_tools.values()):
                # Handler workflows of Nexus tools report status and ask through the reply endpoint,
                # which targets this queue.
                workflows.append(NexusQuestionWorkflow)
                values["nexus_service_handlers"] = [*(values.get("nexus_service_handlers") or []), ReplyService()]
        values["workflows"] = _appended(values.get("workflows"), workflows)
        values["activities"] = _appended(values.get("activities"), activities)
        if workflows:
            # The runners stay the team's, each wrapped to see a task's workflow task fail (failure_watch).
            watch_failing_workflows(values, self.tasks)
            self._warn_about_app_plugins(values)
        return config

    def configure_replayer(self, config: ReplayerConfig) -> ReplayerConfig:
        """Add every workflow of the app, whichever queue it ran on."""
        config = super().configure_replayer(config)
        values = _values(config)
        tools = list(self.tasks.workflow_tools.values())
        # A versioned type replays as its unversioned twin: versioning changes routing, not commands.
        engine = [*TOOL_TASK_WORKFLOWS, NexusQuestionWorkflow, TaskFeedWorkflow]
        values["workflows"] = _appended(values.get("workflows"), [*engine, *_workflow_classes(tools)])
        return config

    async def run_worker(self, worker: Worker, next: Callable[[Worker], Awaitable[None]]) -> None:
        """Check before the worker polls, then run it under the app's lifespan, its settings held out."""
        await super().run_worker(worker, partial(self._run, next=next))

    async def _run(self, worker: Worker, *, next: Callable[[Worker], Awaitable[None]]) -> None:
        config = _values(worker.config(active_config=True))
        queue: str = config.get("task_queue") or ""
        if not (self._serves_tool_tasks(queue) or self._tools_on(queue)):
            await next(worker)  # a worker of another queue, with nothing of the app's on it
            return
        client: temporalio.client.Client = config["client"]
        mine = self._settings(config)
        try:
            await self._start_up_checks(client, self._fronts_queue(queue), mine)
        except BaseException:
            # Nothing polled yet: the worker ends here, as if it had run and stopped.
            await end_unstarted_worker(worker)
            raise
        tool_activities = _tool_activities(config.get("activities") or [])
        if tool_activities is not None:
            _say_how_fresh_status_lines_are(config, self.tasks)
        async with AsyncExitStack() as stack:
            if self.check_settings:
                await stack.enter_async_context(announce_settings(client, self._fronts_queue(queue), mine))
            if tool_activities is not None:
                # Entered once per worker that runs the app's tools, as once per front.
                tool_activities.lifespan_state = await stack.enter_async_context(ToolActivities.lifespan(self.app))
                if self.first_attempts:
                    await stack.enter_async_context(adoption_queue(worker, tool_activities))
            if self.check_settings and self._serves_tool_tasks(queue):
                # Once per app, from the worker of the fronts' queue: its log says while no front uses it.
                await stack.enter_async_context(fronts_watched(client, self._fronts_queue(queue)))
            await next(worker)

    # -- the parameters' functions ------------------------------------------------------

    def _data_converter(self, existing: DataConverter | None) -> DataConverter:
        """The team's converter with what every process of the namespace must share; pydantic JSON for none."""
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

    def _workflow_runner(self, runner: WorkflowRunner | None) -> WorkflowRunner:
        """The team's sandbox with the modules a workflow may share with the server passed through.

        A runner that is not Temporal's sandbox (an unsandboxed one, say) is the team's choice and stays.
        """
        if runner is None:
            raise ValueError("No WorkflowRunner provided to McpTasksPlugin.")
        if not isinstance(runner, SandboxedWorkflowRunner):
            return runner
        restrictions = runner.restrictions.with_passthrough_modules(*passthrough_modules(), *self.passthrough)
        return dataclasses.replace(runner, restrictions=restrictions)

    # -- start-up -----------------------------------------------------------------------

    async def _start_up_checks(self, client: temporalio.client.Client, queue: str, mine: SharedSettings) -> None:
        if self.check_search_attributes:
            await require_on(
                client,
                address=client.service_client.config.target_host,
                namespace=client.namespace,
                fix=" (or McpTasksPlugin(..., check_search_attributes=False) to run tasks without them)",
            )
        if self.check_settings:
            await check_shared_settings(client, queue, mine)

    def _settings(self, config: dict[str, Any]) -> SharedSettings:
        """What this worker reads and writes with (its client's converter) and its versioning."""
        client: temporalio.client.Client = config["client"]
        deployment: WorkerDeploymentConfig | None = config.get("deployment_config")
        versioned = deployment is not None and deployment.use_worker_versioning
        name = deployment.version.deployment_name if deployment is not None and versioned else ""
        return SharedSettings.of_converter("worker", client.data_converter, name)

    def _fronts_queue(self, queue: str) -> str:
        """Whose settings a worker shares: those of the fronts' queue, whichever queue it polls."""
        return self.task_queue or queue

    def _warn_about_app_plugins(self, config: dict[str, Any]) -> None:
        """The app's plugins must configure the worker after this one: one missing or before it is named."""
        client: temporalio.client.Client = config["client"]
        given: list[object] = [*client.config().get("plugins", []), *(config.get("plugins") or [])]
        chain = [plugin for plugin in given if isinstance(plugin, temporalio.worker.Plugin)]
        names = [plugin.name() for plugin in chain]
        mine = names.index(PLUGIN_NAME) if PLUGIN_NAME in names else -1
        for plugin in self.tasks.plugins:
            if not isinstance(plugin, temporalio.worker.Plugin):
                continue
            name = plugin.name()
            if name not in names:
                logger.warning(
                    "the app's Temporal plugin %s is not on this worker (task queue %s): give it after McpTasksPlugin,"
                    " plugins=[McpTasksPlugin(tasks, app), *tasks.plugins]",
                    name,
                    config.get("task_queue"),
                )
            elif names.index(name) < mine:
                logger.warning(
                    "the app's Temporal plugin %s configures this worker before McpTasksPlugin adds the app's workflows"
                    " (it is on the client, or earlier in the list): give it after McpTasksPlugin,"
                    " plugins=[McpTasksPlugin(tasks, app), *tasks.plugins]",
                    name,
                )

    def _tools_on(self, queue: str) -> list[WorkflowToolOptions]:
        if ADOPT_QUEUE_INFIX in queue:
            return []
        default_queue = self.task_queue or queue
        return [
            options for options in self.tasks.workflow_tools.values() if (options.task_queue or default_queue) == queue
        ]

    def _serves_tool_tasks(self, queue: str) -> bool:
        if ADOPT_QUEUE_INFIX in queue:
            return False  # a worker's own queue for the first attempts it hands off (`adoption_queue`)
        return self.task_queue is None or queue == self.task_queue


def _say_how_fresh_status_lines_are(config: dict[str, Any], tasks: TaskToolRegistry) -> None:
    """Once at start: how stale a running tool's status line (and how late a cancel) may be on this worker.

    Temporal sends an activity's heartbeats at most once per `min(max_heartbeat_throttle_interval,
    0.8 x heartbeat_timeout)`; the worker's throttle is the team's to choose.
    """
    throttle: timedelta = config.get("max_heartbeat_throttle_interval") or timedelta(seconds=60)
    lag = min(throttle, timedelta(seconds=tasks.default_activity.heartbeat_timeout_s * 0.8))
    if lag > STATUS_STALENESS_HINT:
        logger.info(
            "a running tool's status line reaches tasks/get, and a cancel the tool, up to %.0f s late on this worker"
            " (Temporal's heartbeat throttle); Worker(..., max_heartbeat_throttle_interval=timedelta(seconds=1))"
            " makes it about a second",
            lag.total_seconds(),
        )


def _values(config: WorkerConfig | ReplayerConfig) -> dict[str, Any]:
    """The config as the plain dict it is: temporalio types a few of its values loosely (`Sequence[Callable]`)."""
    return cast("dict[str, Any]", config)


def _workflow_classes(options: Iterable[WorkflowToolOptions]) -> list[type]:
    return list(dict.fromkeys(option.workflow_class for option in options))


def _activities(options: Iterable[WorkflowToolOptions]) -> list[Callable[..., Any]]:
    """Two tools may share an activity; a worker refuses the same activity twice."""
    return list(dict.fromkeys(fn for option in options for fn in option.activities))


def _appended(present: Sequence[Any] | None, added: Iterable[Any]) -> list[Any]:
    kept = list(present or [])
    return [*kept, *(item for item in added if item not in kept)]


def _tool_activities(activities: Sequence[Callable[..., Any]]) -> ToolActivities | None:
    for fn in activities:
        owner = getattr(fn, "__self__", None)
        if isinstance(owner, ToolActivities):
            return owner
    return None


def _activity_name(fn: Callable[..., Any]) -> str:
    return activity_name(fn) or getattr(fn, "__name__", "")
