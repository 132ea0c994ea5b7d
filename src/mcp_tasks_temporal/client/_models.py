"""Client-side models of the SEP-2663 wire shapes (protocol 2026-07-28).

The SDK has no types for them (`mcp_types.CreateTaskResult` is the 2025-11-25
nested shape), so they are defined here. They are lenient readers: an unknown
field is ignored, and the raw `result`, `error` and `inputRequests` are kept as
sent so nothing is lost between `tasks/get` and the caller.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import mcp_types as types
from mcp_types import RequestParams, Result
from pydantic import ConfigDict, Field
from pydantic.alias_generators import to_camel

from mcp_tasks_temporal.task_wire import (
    TERMINAL_STATUSES,
    DetailedTask,
    TaskCreated,
    TaskStatus,
    parse_timestamp,
)
from mcp_tasks_temporal.temporal.contract import WEB_UI_META

EXTENSION_ID: Final = "io.modelcontextprotocol/tasks"
SUBSCRIPTION_ID_META_KEY: Final = "io.modelcontextprotocol/subscriptionId"

__all__ = ["TERMINAL_STATUSES", "DetailedTask", "TaskCreated", "TaskStatus", "parse_timestamp"]


class TaskStateResult(Result, DetailedTask):
    """A `GetTaskResult`: `resultType: "complete"` plus the `DetailedTask`."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    result_type: str | None = None

    def task(self) -> DetailedTask:
        fields = self.model_dump(exclude={"meta", "result_type"})
        link = (self.meta or {}).get(WEB_UI_META)
        fields["web_ui"] = link if isinstance(link, str) else None
        return DetailedTask.model_validate(fields)


class AckResult(Result):
    """The empty `{"resultType": "complete"}` of `tasks/update` and `tasks/cancel`."""

    result_type: str | None = None


class TaskNotificationParams(DetailedTask):
    """`notifications/tasks` params: a `DetailedTask` plus the listen stream's `_meta`."""

    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class TaskIdParams(RequestParams):
    task_id: str


class UpdateTaskParams(RequestParams):
    task_id: str
    input_responses: dict[str, Any]


class GetTaskRequest(types.Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskIdParams
    name_param = "taskId"  # ClientSession.send_request mirrors it into Mcp-Name (SEP-2663 routing header)


class UpdateTaskRequest(types.Request[UpdateTaskParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: UpdateTaskParams
    name_param = "taskId"


class CancelTaskRequest(types.Request[TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskIdParams
    name_param = "taskId"
