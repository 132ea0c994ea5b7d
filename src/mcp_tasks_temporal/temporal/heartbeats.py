"""Heartbeats for a workflow tool's activities, and a warning for the ones started without a heartbeat timeout.

Temporal learns that an activity's worker died only from a missed heartbeat
(`heartbeat_timeout`), and an activity learns of a cancel only in the answer to
a heartbeat. Without both, a step interrupted by a crash waits out its whole
`start_to_close_timeout` before the retry, and `tasks/cancel` never reaches
it (docs/workflows.md has the measurements). So the workers heartbeat for
every `async def` activity of a workflow tool while it runs, and the activity
only has to be started with a `heartbeat_timeout`; a workflow task that starts
one without is warned about, once per workflow and activity type.

The background heartbeat re-sends the activity's own latest heartbeat details
(or the ones its previous attempt left, until it sends new ones), so an
activity that checkpoints through heartbeat details keeps its checkpoint.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Sequence
from datetime import timedelta
from typing import Any, Final

from temporalio import activity, workflow
from temporalio.worker import (
    ActivityInboundInterceptor,
    ActivityOutboundInterceptor,
    ExecuteActivityInput,
    StartActivityInput,
    WorkflowOutboundInterceptor,
)

logger = logging.getLogger(__name__)

MAX_INTERVAL_S: Final = 1.0
"""Heartbeat period when the timeout allows: Temporal's throttle decides how often one reaches the server."""

_warned: set[tuple[str, str]] = set()
"""(workflow type, activity type) pairs already warned about in this worker process."""


def heartbeat_interval(timeout: timedelta | None, longest_s: float = MAX_INTERVAL_S) -> float:
    """How often to heartbeat: several times per `timeout`, and at least every `longest_s`."""
    if not timeout:
        return longest_s
    return max(0.05, min(longest_s, timeout.total_seconds() / 4))


class _LatestDetails(ActivityOutboundInterceptor):
    """Remembers what the activity itself last heartbeated, for the background heartbeat to repeat."""

    def __init__(self, next: ActivityOutboundInterceptor, initial: Sequence[Any]) -> None:
        super().__init__(next)
        self.details: tuple[Any, ...] = tuple(initial)

    def heartbeat(self, *details: Any) -> None:
        self.details = details
        super().heartbeat(*details)

    def repeat(self) -> None:
        super().heartbeat(*self.details)


class HeartbeatingActivity(ActivityInboundInterceptor):
    """Heartbeats in the background while an `async def` activity of a workflow tool runs."""

    def __init__(self, next: ActivityInboundInterceptor, activity_types: frozenset[str]) -> None:
        super().__init__(next)
        self._activity_types = activity_types
        self._latest: _LatestDetails | None = None

    def init(self, outbound: ActivityOutboundInterceptor) -> None:
        self._latest = _LatestDetails(outbound, outbound.info().heartbeat_details)
        super().init(self._latest)

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        info = activity.info()
        latest = self._latest
        if (
            latest is None
            or info.activity_type not in self._activity_types
            or not inspect.iscoroutinefunction(input.fn)
        ):
            # A plain `def` activity runs in a thread, which a heartbeat from here would not prove alive.
            return await super().execute_activity(input)
        beating = asyncio.create_task(_beat(latest, heartbeat_interval(info.heartbeat_timeout)))
        try:
            return await super().execute_activity(input)
        finally:
            beating.cancel()


async def _beat(latest: _LatestDetails, interval_s: float) -> None:
    while True:
        latest.repeat()
        await asyncio.sleep(interval_s)


class WarnWithoutHeartbeatTimeout(WorkflowOutboundInterceptor):
    """Logs once per workflow and activity type when a workflow tool starts an activity with no heartbeat timeout."""

    def __init__(
        self, next: WorkflowOutboundInterceptor, workflow_types: frozenset[str], activity_types: frozenset[str]
    ) -> None:
        super().__init__(next)
        self._workflow_types = workflow_types
        # Only the activities the worker heartbeats for: a plugin's own (pydantic-ai's) set their own timeouts.
        self._activity_types = activity_types

    def start_activity(self, input: StartActivityInput) -> workflow.ActivityHandle[Any]:
        workflow_type = workflow.info().workflow_type
        if (
            input.heartbeat_timeout is None
            and workflow_type in self._workflow_types
            and input.activity in self._activity_types
        ):
            _warn_once(workflow_type, input.activity, input.start_to_close_timeout)
        return super().start_activity(input)


def _warn_once(workflow_type: str, activity_type: str, start_to_close: timedelta | None) -> None:
    if (workflow_type, activity_type) in _warned or workflow.unsafe.is_replaying():
        return
    _warned.add((workflow_type, activity_type))
    stall = f"its start_to_close_timeout ({start_to_close})" if start_to_close else "its schedule_to_close_timeout"
    workflow.logger.warning(
        "workflow %s starts activity %s without heartbeat_timeout: after a worker crash it waits out %s "
        "before its retry, and tasks/cancel does not reach it; pass heartbeat_timeout=timedelta(seconds=30) "
        "(the worker heartbeats for async activities)",
        workflow_type,
        activity_type,
        stall,
    )
