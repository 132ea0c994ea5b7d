"""Client-side models of the SEP-2663 wire shapes (protocol 2026-07-28).

The SDK has no types for them (`mcp_types.CreateTaskResult` is the 2025-11-25
nested shape), so they are defined here. They are lenient readers: an unknown
field is ignored, and the raw `result`, `error` and `inputRequests` are kept as
sent so nothing is lost between `tasks/get` and the caller.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Final, Literal

import mcp_types as types
from mcp_types import RequestParams, Result
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from mcp_tasks_temporal.contract import WEB_UI_META

EXTENSION_ID: Final = "io.modelcontextprotocol/tasks"
SUBSCRIPTION_ID_META_KEY: Final = "io.modelcontextprotocol/subscriptionId"

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
TERMINAL_STATUSES: Final[frozenset[str]] = frozenset({"completed", "failed", "cancelled"})


def parse_timestamp(value: str) -> datetime | None:
    """An ISO 8601 `createdAt`/`lastUpdatedAt`, or `None` when it does not parse."""
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


class _TaskFields(BaseModel):
    """The `Task` fields every task shape carries."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    task_id: str
    status: str
    """One of `TaskStatus`; kept a plain string so a future status reads instead of failing."""
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None = None
    """Lifetime from `createdAt`; `None` means unlimited. It may change over the task's life."""
    poll_interval_ms: int | None = None
    """The server's suggested delay between `tasks/get` calls; it may change between polls."""

    @property
    def terminal(self) -> bool:
        """Whether the task reached `completed`, `failed` or `cancelled`; terminal states never change."""
        return self.status in TERMINAL_STATUSES

    @property
    def expires_at(self) -> datetime | None:
        """`createdAt + ttlMs`, after which the server may have discarded the task (`None`: never)."""
        created = parse_timestamp(self.created_at)
        if created is None or self.ttl_ms is None:
            return None
        return created + timedelta(milliseconds=self.ttl_ms)


class TaskCreated(Result, _TaskFields):
    """A `CreateTaskResult`: what `tools/call` returns when the server chose to run a task."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    result_type: Literal["task"] = "task"


class DetailedTask(_TaskFields):
    """A `DetailedTask`: the body of a `tasks/get` result and of a `notifications/tasks`.

    Exactly one of `input_requests` (status `input_required`), `result`
    (`completed`) and `error` (`failed`) is set, per the status.
    """

    input_requests: dict[str, dict[str, Any]] | None = None
    """Every outstanding request, by server-chosen key: `{method, params}` as on the wire."""
    result: dict[str, Any] | None = None
    """Exactly what the tool call would have returned (a `CallToolResult`, `isError` included)."""
    error: types.ErrorData | None = None
    """The JSON-RPC error the tool call ended with."""
    web_ui: str | None = Field(default=None, exclude=True)
    """The task's Temporal Web UI page, when the server tells it (`_meta`); not part of the task itself."""

    def call_tool_result(self) -> types.CallToolResult:
        """The completed task's `CallToolResult`.

        Raises:
            ValueError: The task is not `completed`.
        """
        if self.status != "completed" or self.result is None:
            raise ValueError(f"task {self.task_id} is {self.status}, not completed")
        return types.CallToolResult.model_validate(self.result, by_name=False)

    def wire(self) -> dict[str, Any]:
        """The task as JSON, camelCase, with the absent fields left out."""
        return self.model_dump(by_alias=True, mode="json", exclude_none=True)


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
