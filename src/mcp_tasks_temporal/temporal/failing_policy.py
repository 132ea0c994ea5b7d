"""When a task whose workflow code keeps failing is ended `failed`, instead of waiting for fixed code.

Temporal's default, and this package's, is to retry a failing workflow task until a
worker runs code that gets past it: the task stays open, names its failure in
`tasks/get`, and carries on once the fix is deployed. A team that would rather tell
its clients at once sets a `FailingWorkflowPolicy`, app-wide or per tool:

    tasks = TasksExtension(failing_workflows=FailingWorkflowPolicy(max_attempts=5, max_failing_s=600))
    tasks.workflow_tool(Release, failing_workflows=None)  # this one waits for a fix

The worker that sees a failure decides, from what Temporal records (the pending
workflow task's attempt, the time of the series' first recorded failure), and ends
the run with `terminate`, whose details carry the JSON-RPC error the client gets.
Workflow code takes no part, so the decision needs no replay, and a restarted or
another worker decides the same from the same record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from mcp_tasks_temporal.temporal.contract import INTERNAL_ERROR_CODE, as_object

ENDED_ERROR_KEY: Final = "mcp-tasks-temporal/taskError"
"""Key of the terminate details that hold the JSON-RPC error a task ended with (read by the fronts)."""
TERMINATE_REASON_PREFIX: Final = "mcp-tasks-temporal: "


@dataclass(frozen=True)
class FailingWorkflowPolicy:
    """End a task `failed` once its workflow task has failed this many attempts, or for this long.

    Either bound suffices; give at least one. A failed workflow task is retried
    about every 10 s (the workflow task timeout), then with a growing delay up to the
    server's `history.workflowTaskRetryMaxInterval` (10 min by default), and each failure
    is when a worker checks: `max_failing_s` is honoured within one retry.

    Attributes:
        max_attempts: Failed attempts of the workflow task, as Temporal numbers them.
        max_failing_s: Seconds since Temporal recorded the first failure of the series.
    """

    max_attempts: int | None = None
    max_failing_s: float | None = None

    def __post_init__(self) -> None:
        if self.max_attempts is None and self.max_failing_s is None:
            raise ValueError(
                "FailingWorkflowPolicy needs max_attempts or max_failing_s; "
                "None instead of a policy keeps retrying until fixed code runs"
            )
        if self.max_attempts is not None and self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if self.max_failing_s is not None and self.max_failing_s < 0:
            raise ValueError("max_failing_s must not be negative")

    def reached(self, attempts: int, failing_s: float) -> bool:
        """Whether a task failing for `attempts` attempts over `failing_s` seconds is to be ended."""
        if self.max_attempts is not None and attempts >= self.max_attempts:
            return True
        return self.max_failing_s is not None and failing_s >= self.max_failing_s

    def __str__(self) -> str:
        bounds = [f"max_attempts={self.max_attempts}"] if self.max_attempts is not None else []
        if self.max_failing_s is not None:
            bounds.append(f"max_failing_s={self.max_failing_s:g}")
        return f"FailingWorkflowPolicy({', '.join(bounds)})"


def attempt_that_failed(pending_attempt: int, pending_started_ms: int | None, failed_started_ms: int | None) -> int:
    """The attempt number of the workflow task a worker just saw fail, from the run's pending one.

    `pending_started_ms` is when the pending task started (None while it is only
    scheduled), `failed_started_ms` when the failed one did (None if unknown).

    The SDK reports only a first attempt's failure; a later attempt that fails stays
    started until its timeout. So a pending task started when the failed one started
    is that one; otherwise Temporal has already moved past it, to the next attempt.
    A non-determinism seen mid-replay has no start of its own to compare: an attempt
    past the second that is still started cannot be a successor (the failed one would
    still hold it), so that is the failed one too. Never more than the true count.
    """
    if pending_started_ms is not None and (
        pending_started_ms == failed_started_ms or (failed_started_ms is None and pending_attempt > 2)
    ):
        return pending_attempt
    return max(1, pending_attempt - 1)


def ended_error(
    kind: str, cause: str, attempts: int, failing_s: float, policy: FailingWorkflowPolicy
) -> dict[str, Any]:
    """The JSON-RPC error of a task the policy ended: the failure, how long it lasted, and the fix."""
    return {
        "code": INTERNAL_ERROR_CODE,
        "message": (
            f"Workflow failed: {cause}; ended after {attempts} failed attempt{'s' if attempts != 1 else ''} "
            f"over {failing_s:.0f} s by {policy}; deploy fixed workflow code and call the tool again"
        ),
        "data": {"failing": {"kind": kind, "attempts": attempts, "failingSeconds": round(failing_s, 1)}},
    }


def termination_details(error: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What `terminate` carries for the fronts: the error under a key of ours."""
    return [{ENDED_ERROR_KEY: dict(error)}]


def error_of_termination(details: Sequence[Any]) -> dict[str, Any] | None:
    """The JSON-RPC error a run was terminated with by the policy, or None for any other termination."""
    for item in details:
        error = as_object(as_object(item).get(ENDED_ERROR_KEY))
        if isinstance(error.get("code"), int) and isinstance(error.get("message"), str):
            return dict(error)
    return None
