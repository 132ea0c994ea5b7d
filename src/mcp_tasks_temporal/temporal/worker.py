"""The worker: runs task workflows and, through the user's app, their tools; and the app's workflow tools."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from mcp.server.mcpserver import MCPServer
from temporalio.client import Client
from temporalio.worker import Worker

from mcp_tasks_temporal.sdk_compat import activity_name, server_extensions
from mcp_tasks_temporal.temporal.activities import ToolActivities
from mcp_tasks_temporal.temporal.contract import RUN_TOOL_ACTIVITY
from mcp_tasks_temporal.temporal.deployment import Deployment
from mcp_tasks_temporal.temporal.nexus_reply import ReplyService
from mcp_tasks_temporal.temporal.nexus_tools import NexusToolOptions
from mcp_tasks_temporal.temporal.payload_limits import PayloadLimits
from mcp_tasks_temporal.temporal.sandbox import WorkflowSandboxError, app_module_passthrough, explain, workflow_runner
from mcp_tasks_temporal.temporal.task_interceptor import TaskInterceptor
from mcp_tasks_temporal.temporal.workflow_tools import WorkflowToolOptions, WorkflowToolRegistry, workflow_definition
from mcp_tasks_temporal.temporal.workflows import (
    AutoUpgradeToolTaskWorkflow,
    PinnedToolTaskWorkflow,
    ToolTaskWorkflow,
)
from mcp_tasks_temporal.temporal.workflows.nexus_question import NexusQuestionWorkflow

WORKFLOWS: Sequence[type] = (ToolTaskWorkflow, PinnedToolTaskWorkflow)
VERSIONED_WORKFLOWS: Sequence[type] = (AutoUpgradeToolTaskWorkflow, PinnedToolTaskWorkflow)
"""The same workflow types for a worker under worker versioning, each declaring its behaviour."""


def build_worker(
    client: Client,
    app: MCPServer[Any],
    lifespan_state: Any,
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
    """A Temporal worker for `app`'s task tools.

    Args:
        client: Connected Temporal client.
        app: The user's `MCPServer`; its tools run inside the activities.
        lifespan_state: What the app's lifespan yielded (enter it with `ToolActivities.lifespan`).
        task_queue: Queue of the task workflows and, by default, their activities.
        max_concurrent_activities: Tool executions this worker runs at once.
        keepalive_s: Heartbeat period of a running tool; a cancel reaches the tool within about this long.
        status_freshness_s: How stale a `set_status` may be when `tasks/get` reads it (heartbeat throttle).
        graceful_shutdown_s: How long running tools may finish when the worker stops.
        max_cached_workflows: Task workflows kept in memory (about 150 KB each); the rest replay on demand.
        payload_limits: How large a tool's result may be (Temporal's default limit, no payload storage, if None).
        deployment: The version this worker registers as under worker versioning (unversioned if None).
    """
    activities = ToolActivities(app, lifespan_state, keepalive_s=keepalive_s, payload_limits=payload_limits)
    workflows, own_activities = workflow_tools_on(app, task_queue, default_queue=task_queue)
    nexus = _has_nexus_tools(app)
    return _worker(
        client,
        task_queue=task_queue,
        workflows=[
            *(WORKFLOWS if deployment is None else VERSIONED_WORKFLOWS),
            *workflows,
            *([NexusQuestionWorkflow] if nexus else []),
        ],
        activities=[activities.run_tool, *own_activities],
        max_concurrent_activities=max_concurrent_activities,
        max_cached_workflows=max_cached_workflows,
        # A workflow cached on a worker that died waits this long before any other worker may take it.
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=3),
        max_heartbeat_throttle_interval=timedelta(seconds=status_freshness_s),
        default_heartbeat_throttle_interval=timedelta(seconds=status_freshness_s),
        graceful_shutdown_timeout=timedelta(seconds=graceful_shutdown_s),
        deployment=deployment,
        # Handler workflows of Nexus tools report status and ask through the reply endpoint, which targets this queue.
        nexus_service_handlers=[ReplyService()] if nexus else [],
    )


def workflow_tool_workers(
    client: Client,
    app: MCPServer[Any],
    *,
    task_queue: str,
    max_concurrent_activities: int = 100,
    graceful_shutdown_s: float = 30.0,
    deployment: Deployment | None = None,
) -> list[Worker]:
    """One worker per task queue a workflow tool names as its own; the app's `task_queue` is `build_worker`'s.

    Under a `deployment` they are the same version as the app's worker: a version spans task queues.
    """
    queues = {options.task_queue for options in _workflow_tools(app)} - {None, task_queue}
    workers: list[Worker] = []
    for queue in sorted(q for q in queues if q is not None):
        workflows, activities = workflow_tools_on(app, queue, default_queue=task_queue)
        workers.append(
            _worker(
                client,
                task_queue=queue,
                workflows=workflows,
                activities=activities,
                max_concurrent_activities=max_concurrent_activities,
                sticky_queue_schedule_to_start_timeout=timedelta(seconds=3),
                # As on the app's queue: a cancel reaches a heartbeating activity within about a second.
                max_heartbeat_throttle_interval=timedelta(seconds=1),
                default_heartbeat_throttle_interval=timedelta(seconds=1),
                graceful_shutdown_timeout=timedelta(seconds=graceful_shutdown_s),
                deployment=deployment,
            )
        )
    return workers


def workflow_tools_on(
    app: MCPServer[Any], task_queue: str, *, default_queue: str
) -> tuple[list[type], list[Callable[..., Any]]]:
    """The workflow classes and activities of the app's workflow tools that run on `task_queue`."""
    workflows: list[type] = []
    activities: list[Callable[..., Any]] = []
    for options in _workflow_tools(app):
        if (options.task_queue or default_queue) != task_queue:
            continue
        if options.workflow_class not in workflows:
            workflows.append(options.workflow_class)
        # Two tools may share an activity; a worker refuses the same activity twice.
        activities.extend(fn for fn in options.activities if fn not in activities)
    return workflows, activities


def _worker(
    client: Client,
    *,
    workflows: Sequence[type],
    activities: Sequence[Callable[..., Any]],
    deployment: Deployment | None = None,
    **options: Any,
) -> Worker:
    """A worker whose workflow tools load in the sandbox as written, or that says on one line why not."""
    tools = [w for w in workflows if w not in (*WORKFLOWS, *VERSIONED_WORKFLOWS)]
    interceptor = TaskInterceptor(
        workflow_types=[workflow_definition(w).name for w in tools],
        # The tool activity heartbeats by itself, with the tool's status as details.
        activity_types=[name for name in map(_activity_name, activities) if name != RUN_TOOL_ACTIVITY],
    )
    try:
        return Worker(
            client,
            workflows=workflows,
            activities=activities,
            workflow_runner=workflow_runner(app_module_passthrough(tools)),
            interceptors=[interceptor],
            deployment_config=deployment.worker_config() if deployment is not None else None,
            **options,
        )
    except RuntimeError as err:
        explained = explain(err, workflows)
        if explained is None:
            raise
        raise WorkflowSandboxError(explained) from err


def _activity_name(fn: Callable[..., Any]) -> str:
    return activity_name(fn) or getattr(fn, "__name__", "")


def _has_nexus_tools(app: MCPServer[Any]) -> bool:
    return any(isinstance(options, NexusToolOptions) for options in _workflow_tools(app))


def _workflow_tools(app: MCPServer[Any]) -> list[WorkflowToolOptions]:
    for extension in server_extensions(app):
        if isinstance(extension, WorkflowToolRegistry):
            return list(extension.workflow_tools.values())
    return []
