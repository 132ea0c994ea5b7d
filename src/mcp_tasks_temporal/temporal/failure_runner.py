"""The worker's workflow runner, seeing each workflow task of a task's workflow that fails.

A workflow task fails in one of two places. An exception in workflow code (a bug, a
sandbox violation, the SDK's own non-determinism checks) fails the activation: the
workflow instance hands back a failed completion. A command that does not match the
history (a code change under a running task) is found by the SDK's core after the
activation, which then evicts the run with the reason `NONDETERMINISM`. Both pass
through the runner's `WorkflowInstance.activate` on the worker, outside the sandbox,
and nowhere else both do: a workflow interceptor sees only the first (and runs in the
sandbox), the core's `temporal_workflow_task_execution_failed` metric knows no task.

So the runner Temporal's worker uses is wrapped. Temporal's sandbox runner is a
frozen dataclass that plugins adjust with `dataclasses.replace` (the sandbox
pass-through of this package, pydantic-ai's, OpenTelemetry's): the wrapper is a
subclass, so it stays a sandbox runner to them and survives their changes. A run that
is not a task (no `tool` in its memo) gets the plain instance, at no cost.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from temporalio.bridge.proto.workflow_activation import RemoveFromCache, WorkflowActivation
from temporalio.bridge.proto.workflow_completion import WorkflowActivationCompletion
from temporalio.worker import (
    UnsandboxedWorkflowRunner,
    WorkflowInstance,
    WorkflowInstanceDetails,
    WorkflowRunner,
)
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner
from temporalio.workflow import Info

from mcp_tasks_temporal.temporal.contract import Memo

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class FailedWorkflowTask:
    """A task's workflow task that just failed on this worker."""

    workflow_id: str
    run_id: str
    started_ms: int | None
    """When the failed workflow task started (None for a non-determinism found mid-replay)."""


class FailureReports:
    """Where the runner's instances report, from a workflow task's thread to the worker's event loop.

    Bound to the loop when the first task's run is created (the worker creates runs on its loop).
    """

    def __init__(self, report: Callable[[FailedWorkflowTask], None]) -> None:
        self._report = report
        self._loop: asyncio.AbstractEventLoop | None = None

    def bind(self) -> None:
        if self._loop is None:
            try:
                self._loop = asyncio.get_running_loop()
            except RuntimeError:
                return  # the sandbox's validation at worker construction: no run to report on

    def __call__(self, failed: FailedWorkflowTask) -> None:
        if self._loop is None:
            return
        try:
            self._loop.call_soon_threadsafe(self._report, failed)
        except RuntimeError:
            pass  # the worker's loop has closed: it is shutting down, and the next worker will see the failure


def watched_runner(runner: WorkflowRunner | None, reports: FailureReports) -> WorkflowRunner:
    """`runner` (Temporal's sandbox when None) with each failing workflow task of a task reported."""
    if runner is None:
        runner = SandboxedWorkflowRunner()
    if isinstance(runner, _WatchedSandbox | _WatchedUnsandboxed | _WatchedRunner):
        return runner  # a worker has one watch: the plugin given twice (client and worker) adds it once
    if type(runner) is SandboxedWorkflowRunner:
        return _WatchedSandbox(restrictions=runner.restrictions, runner_class=runner.runner_class, reports=reports)
    if type(runner) is UnsandboxedWorkflowRunner:
        return _WatchedUnsandboxed(reports)
    # A runner of the team's own: delegated to. A plugin applied after this one no longer sees
    # a sandbox runner in it, so the team's sandbox settings must be on the runner already.
    return _WatchedRunner(runner, reports)


@dataclass(frozen=True)
class _WatchedSandbox(SandboxedWorkflowRunner):
    reports: FailureReports | None = None

    def create_instance(self, det: WorkflowInstanceDetails) -> WorkflowInstance:
        return _watched(super().create_instance(det), det, self.reports)


class _WatchedUnsandboxed(UnsandboxedWorkflowRunner):
    def __init__(self, reports: FailureReports) -> None:
        self.reports = reports

    def create_instance(self, det: WorkflowInstanceDetails) -> WorkflowInstance:
        return _watched(super().create_instance(det), det, self.reports)


class _WatchedRunner(WorkflowRunner):
    def __init__(self, runner: WorkflowRunner, reports: FailureReports) -> None:
        self.runner = runner
        self.reports = reports

    def prepare_workflow(self, defn: Any) -> None:
        self.runner.prepare_workflow(defn)

    def create_instance(self, det: WorkflowInstanceDetails) -> WorkflowInstance:
        return _watched(self.runner.create_instance(det), det, self.reports)

    def set_worker_level_failure_exception_types(self, types: Sequence[type[BaseException]]) -> None:
        self.runner.set_worker_level_failure_exception_types(types)


def _watched(
    instance: WorkflowInstance, det: WorkflowInstanceDetails, reports: FailureReports | None
) -> WorkflowInstance:
    if reports is None or Memo.TOOL not in det.info.raw_memo:
        return instance
    reports.bind()
    return _WatchedInstance(instance, det.info, reports)


class _WatchedInstance(WorkflowInstance):
    """The run's own instance, with its failed activations and non-determinism evictions reported."""

    def __init__(self, instance: WorkflowInstance, info: Info, reports: FailureReports) -> None:
        self._instance = instance
        self._workflow_id = info.workflow_id
        self._run_id = info.run_id
        self._reports = reports

    def activate(self, act: WorkflowActivation) -> WorkflowActivationCompletion:
        completion = self._instance.activate(act)
        try:
            failed = self._failed(act, completion)
        except Exception:  # reporting must never be why a workflow task fails
            logger.exception("could not inspect workflow task of run %s", self._run_id)
            failed = None
        if failed is not None:
            self._reports(failed)
        return completion

    def _failed(self, act: WorkflowActivation, completion: WorkflowActivationCompletion) -> FailedWorkflowTask | None:
        evictions = [job.remove_from_cache for job in act.jobs if job.HasField("remove_from_cache")]
        if evictions:
            if any(job.reason == RemoveFromCache.EvictionReason.NONDETERMINISM for job in evictions):
                return FailedWorkflowTask(self._workflow_id, self._run_id, None)
            return None
        if not completion.HasField("failed"):
            return None
        started = act.timestamp.ToMilliseconds() if act.HasField("timestamp") else None
        return FailedWorkflowTask(self._workflow_id, self._run_id, started)

    def get_serialization_context(self, command_info: Any) -> Any:
        return self._instance.get_serialization_context(command_info)

    def get_external_store_context(self, command_info: Any) -> Any:
        return self._instance.get_external_store_context(command_info)

    def get_info(self) -> Info:
        return self._instance.get_info()

    def get_thread_id(self) -> int | None:
        return self._instance.get_thread_id()
