"""The `worker` and `dev` commands' workers: `McpTasksPlugin` on the app's queue and on each workflow tool's own."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from mcp.server.mcpserver import MCPServer
from temporalio.client import Client
from temporalio.worker import PollerBehaviorSimpleMaximum, Worker

from mcp_tasks_temporal.temporal.deployment import Deployment
from mcp_tasks_temporal.temporal.payload_limits import PayloadLimits
from mcp_tasks_temporal.temporal.plugin import ENGINE_WORKFLOWS, TOOL_TASK_WORKFLOWS, McpTasksPlugin
from mcp_tasks_temporal.temporal.sandbox import WorkflowSandboxError, app_module_passthrough, explain
from mcp_tasks_temporal.temporal.tool_registry import TaskToolRegistry

__all__ = ["WORKFLOWS", "build_worker", "workflow_tool_workers", "workflow_tools_on"]

WORKFLOWS: Sequence[type] = TOOL_TASK_WORKFLOWS

# A workflow cached on a worker that died waits this long before any other worker may take it.
STICKY_TIMEOUT = timedelta(seconds=3)

WORKFLOW_TASK_POLLS = PollerBehaviorSimpleMaximum(maximum=8)
NONSTICKY_SHARE = 0.5
"""Half the workflow task polls on the queue's shared side, where every new task's first workflow task waits.
Temporal's default, one of five, takes a backlog one poll round trip at a time: on a busy dev server that
dispatched 1,000 new tasks' first workflow tasks at 3 a second while the workers stood idle."""


def build_worker(
    client: Client,
    tasks: TaskToolRegistry,
    app: MCPServer[Any],
    *,
    task_queue: str,
    max_concurrent_activities: int = 100,
    max_cached_workflows: int = 1000,
    keepalive_s: float = 2.0,
    status_freshness_s: float = 1.0,
    graceful_shutdown_s: float = 30.0,
    payload_limits: PayloadLimits | None = None,
    deployment: Deployment | None = None,
) -> Worker:
    """A Temporal worker for `app`'s task tools, built on `McpTasksPlugin` and the app's own plugins.

    The command compared its settings and the namespace's search attributes at start, from its flags,
    and holds its settings out itself: the plugin does neither again.

    Args:
        client: Connected Temporal client (with the namespace's codec and storage).
        tasks: The app's `TasksExtension`.
        app: The user's `MCPServer`; its tools run inside the activities, under its lifespan.
        task_queue: Queue of the task workflows and, by default, their activities.
        max_concurrent_activities: Tool executions this worker runs at once.
        keepalive_s: Heartbeat period of a running tool; a cancel reaches the tool within about this long.
        status_freshness_s: How stale a `set_status` may be when `tasks/get` reads it: this worker's
            heartbeat throttle (Temporal's default would let it lag up to 24 s).
        graceful_shutdown_s: How long running tools may finish when the worker stops.
        max_cached_workflows: Task workflows kept in memory (about 150 KB each); the rest replay on demand.
        payload_limits: How large a tool's result may be (Temporal's default limit, no payload storage, if None).
        deployment: The version this worker registers as under worker versioning (unversioned if None).
    """
    plugin = _plugin(tasks, app, task_queue, keepalive_s=keepalive_s, payload_limits=payload_limits)
    return _worker(
        client,
        [plugin, *tasks.plugins],
        task_queue=task_queue,
        max_concurrent_activities=max_concurrent_activities,
        max_cached_workflows=max_cached_workflows,
        graceful_shutdown_s=graceful_shutdown_s,
        status_freshness_s=status_freshness_s,
        deployment=deployment,
    )


def workflow_tool_workers(
    client: Client,
    tasks: TaskToolRegistry,
    app: MCPServer[Any],
    *,
    task_queue: str,
    max_concurrent_activities: int = 100,
    status_freshness_s: float = 1.0,
    graceful_shutdown_s: float = 30.0,
    deployment: Deployment | None = None,
) -> list[Worker]:
    """One worker per task queue a workflow tool names as its own; the app's `task_queue` is `build_worker`'s.

    Under a `deployment` they are the same version as the app's worker: a version spans task queues.
    """
    queues = {options.task_queue for options in tasks.workflow_tools.values()} - {None, task_queue}
    plugin = _plugin(tasks, app, task_queue)
    return [
        _worker(
            client,
            [plugin, *tasks.plugins],
            task_queue=queue,
            max_concurrent_activities=max_concurrent_activities,
            graceful_shutdown_s=graceful_shutdown_s,
            status_freshness_s=status_freshness_s,
            deployment=deployment,
        )
        for queue in sorted(q for q in queues if q is not None)
    ]


def workflow_tools_on(
    tasks: TaskToolRegistry, task_queue: str, *, default_queue: str
) -> tuple[list[type], list[Callable[..., Any]]]:
    """The workflow classes and activities of the app's workflow tools that run on `task_queue`."""
    here = [o for o in tasks.workflow_tools.values() if (o.task_queue or default_queue) == task_queue]
    workflows = list(dict.fromkeys(options.workflow_class for options in here))
    return workflows, list(dict.fromkeys(fn for options in here for fn in options.activities))


def _plugin(
    tasks: TaskToolRegistry,
    app: MCPServer[Any],
    task_queue: str,
    *,
    keepalive_s: float = 2.0,
    payload_limits: PayloadLimits | None = None,
) -> McpTasksPlugin:
    return McpTasksPlugin(
        tasks,
        app,
        task_queue=task_queue,
        payload_limits=payload_limits,
        keepalive_s=keepalive_s,
        # The command loads a one-file app: what its module imports beside the workflow passes the sandbox.
        passthrough=app_module_passthrough(options.workflow_class for options in tasks.workflow_tools.values()),
        check_search_attributes=False,
        check_settings=False,
        first_attempts=True,
    )


def _worker(
    client: Client,
    plugins: Sequence[Any],
    *,
    task_queue: str,
    graceful_shutdown_s: float,
    status_freshness_s: float,
    deployment: Deployment | None,
    **options: Any,
) -> Worker:
    """A worker whose workflow tools load in the sandbox as written, or that says on one line why not."""
    freshness = timedelta(seconds=status_freshness_s)
    try:
        return Worker(
            client,
            task_queue=task_queue,
            plugins=plugins,
            sticky_queue_schedule_to_start_timeout=STICKY_TIMEOUT,
            workflow_task_poller_behavior=WORKFLOW_TASK_POLLS,
            nonsticky_to_sticky_poll_ratio=NONSTICKY_SHARE,
            max_heartbeat_throttle_interval=freshness,
            default_heartbeat_throttle_interval=freshness,
            graceful_shutdown_timeout=timedelta(seconds=graceful_shutdown_s),
            deployment_config=deployment.worker_config() if deployment is not None else None,
            **options,
        )
    except RuntimeError as err:
        plugin: McpTasksPlugin = plugins[0]
        workflows = [options.workflow_class for options in plugin.tasks.workflow_tools.values()]
        explained = explain(err, [*workflows, *ENGINE_WORKFLOWS])
        if explained is None:
            raise
        raise WorkflowSandboxError(explained) from err
