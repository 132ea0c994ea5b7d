"""The SEP-2663 task as pydantic models: what a front server writes and a client reads.

The front builds every `DetailedTask` it sends (`tasks/get`, `notifications/tasks`)
through `DetailedTask.build`, and the client reads them with the same models, so
the two cannot drift. The workflows keep their stdlib form of the same shape
(`contract.detailed_task`): the sandbox stays free of pydantic models.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Final, Literal

import mcp_types as types
from mcp_types import Result
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from mcp_tasks_temporal.temporal.contract import detailed_task

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
        """The task as JSON, camelCase, with the absent fields left out (`ttlMs` is always there: null is unlimited)."""
        return {**self.model_dump(by_alias=True, mode="json", exclude_none=True), "ttlMs": self.ttl_ms}

    @classmethod
    def build(
        cls,
        *,
        task_id: str,
        status: str,
        created_at_ms: int,
        last_updated_at_ms: int,
        ttl_ms: int | None,
        poll_interval_ms: int | None,
        status_message: str | None = None,
        input_requests: dict[str, Any] | None = None,
        result: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
    ) -> DetailedTask:
        """The task in `status`, carrying only the field that status allows (see `contract.detailed_task`)."""
        return cls.model_validate(
            detailed_task(
                task_id=task_id,
                status=status,
                created_at_ms=created_at_ms,
                last_updated_at_ms=last_updated_at_ms,
                ttl_ms=ttl_ms,
                poll_interval_ms=poll_interval_ms,
                status_message=status_message,
                input_requests=input_requests,
                result=result,
                error=error,
            )
        )
