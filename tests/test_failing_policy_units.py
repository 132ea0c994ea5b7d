"""The failing-workflow policy's pure parts, and the runner that reports failing workflow tasks (no server).

tests/test_failing_workflows.py runs it all against a real Temporal and real workers.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer
from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker, WorkflowInstance, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from mcp_tasks_temporal import FailingWorkflowPolicy, McpTasksPlugin, TasksExtension
from mcp_tasks_temporal.temporal.failing_policy import (
    attempt_that_failed,
    ended_error,
    error_of_termination,
    termination_details,
)
from mcp_tasks_temporal.temporal.failure_runner import (
    FailureReports,
    _WatchedInstance,  # pyright: ignore[reportPrivateUsage]
    watched_runner,
)

pytestmark = pytest.mark.anyio


def test_a_policy_needs_a_bound_and_ends_at_either() -> None:
    with pytest.raises(ValueError, match="max_attempts or max_failing_s"):
        FailingWorkflowPolicy()
    with pytest.raises(ValueError):
        FailingWorkflowPolicy(max_attempts=0)
    policy = FailingWorkflowPolicy(max_attempts=3, max_failing_s=60)
    assert not policy.reached(2, 59.9)
    assert policy.reached(3, 0.0)
    assert policy.reached(1, 60.0)
    assert not FailingWorkflowPolicy(max_failing_s=60).reached(1000, 10)
    assert str(policy) == "FailingWorkflowPolicy(max_attempts=3, max_failing_s=60)"


def test_the_attempt_that_failed_is_the_pending_one_only_when_it_is_still_that_one() -> None:
    # A later attempt's failure is not reported: the task stays started, by the failed attempt itself.
    assert attempt_that_failed(5, pending_started_ms=1000, failed_started_ms=1000) == 5
    # A first attempt's failure is reported: Temporal scheduled (or another worker started) the next one.
    assert attempt_that_failed(2, pending_started_ms=None, failed_started_ms=1000) == 1
    assert attempt_that_failed(2, pending_started_ms=1200, failed_started_ms=1000) == 1
    # After a failure on a sticky queue Temporal starts again at attempt 1 on the normal queue.
    assert attempt_that_failed(1, pending_started_ms=1200, failed_started_ms=1000) == 1
    # Non-determinism found mid-replay has no start of its own: a started attempt past the second is it.
    assert attempt_that_failed(4, pending_started_ms=1200, failed_started_ms=None) == 4
    assert attempt_that_failed(2, pending_started_ms=1200, failed_started_ms=None) == 1  # never more than true


def test_the_ended_error_names_the_failure_the_policy_and_the_fix_and_survives_the_terminate_details() -> None:
    policy = FailingWorkflowPolicy(max_attempts=2)
    error = ended_error("sandbox", "RestrictedWorkflowAccessError: Cannot access os.environ", 2, 0.4, policy)
    assert error["code"] == -32603
    assert error["data"] == {"failing": {"kind": "sandbox", "attempts": 2, "failingSeconds": 0.4}}
    assert "max_attempts=2" in error["message"] and "deploy fixed workflow code" in error["message"]
    assert error_of_termination(termination_details(error)) == error
    # An operator's own terminate (no details, or details of another shape) is not mistaken for one.
    assert error_of_termination([]) is None
    assert error_of_termination(["by hand", {"code": -1}]) is None


@workflow.defn(name="failing-policy-units.Noop")
class _Noop:
    @workflow.run
    async def run(self) -> None:
        return None


def test_each_tool_takes_its_own_policy_or_the_apps_and_none_waits_for_a_fix() -> None:
    ends = FailingWorkflowPolicy(max_attempts=5)
    own = FailingWorkflowPolicy(max_failing_s=3600)
    tasks = TasksExtension(default_failing_workflow=ends)
    app = MCPServer("failing-policy-units", extensions=[tasks])

    @tasks.tool()
    @app.tool()
    async def inherits() -> str:
        return ""

    @tasks.tool(failing_workflow=None)
    @app.tool()
    async def waits() -> str:
        return ""

    tasks.workflow_tool(_Noop, name="own", failing_workflow=own)
    policy_for = tasks.failing_workflow_for
    assert policy_for("inherits") == ends
    assert policy_for("waits") is None
    assert policy_for("own") == own
    assert policy_for("unknown") == ends
    assert TasksExtension().failing_workflow_for("any") is None, "Temporal's default: retry until fixed"


def test_the_watched_runner_stays_a_sandbox_runner_that_plugins_can_adjust() -> None:
    reports = FailureReports(lambda failed: None)
    runner = watched_runner(SandboxedWorkflowRunner(), reports)
    assert isinstance(runner, SandboxedWorkflowRunner)
    # What this package's, pydantic-ai's and OpenTelemetry's plugins do to the sandbox keeps the watch.
    adjusted = dataclasses.replace(runner, restrictions=runner.restrictions.with_passthrough_modules("json"))
    assert type(adjusted) is type(runner) and getattr(adjusted, "reports", None) is reports
    assert watched_runner(adjusted, FailureReports(lambda failed: None)) is adjusted, "watched once"
    assert isinstance(watched_runner(UnsandboxedWorkflowRunner(), reports), UnsandboxedWorkflowRunner)

    class TeamRunner(UnsandboxedWorkflowRunner):
        pass

    team = watched_runner(TeamRunner(), reports)
    assert isinstance(team, WorkflowRunner) and not isinstance(team, TeamRunner)


async def test_a_worker_with_the_plugin_runs_its_workflows_under_the_watch(temporal_client: Client) -> None:
    tasks = TasksExtension()
    app = MCPServer("failing-policy-units-worker", extensions=[tasks])
    plugin = McpTasksPlugin(tasks, app, task_queue="failing-policy-units")
    worker = Worker(temporal_client, task_queue="failing-policy-units", plugins=[plugin])
    config: dict[str, Any] = dict(worker.config(active_config=True))
    for key in ("workflow_runner", "unsandboxed_workflow_runner"):
        assert watched_runner(config[key], FailureReports(lambda failed: None)) is config[key], key


def test_the_watched_instance_implements_what_temporalio_asks_of_a_workflow_instance() -> None:
    """A canary: a method temporalio adds to `WorkflowInstance` must be handed on, or every task's run breaks."""
    handed_on = {name for name in vars(_WatchedInstance) if not name.startswith("_")}
    public = {
        name for name in vars(WorkflowInstance) if not name.startswith("_") and callable(vars(WorkflowInstance)[name])
    }
    assert public <= handed_on, f"hand these on in _WatchedInstance: {sorted(public - handed_on)}"
