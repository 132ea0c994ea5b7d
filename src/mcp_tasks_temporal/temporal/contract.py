"""The Temporal contract shared by the front server, the workflow and the activity.

Everything here is safe to import inside the workflow sandbox: the stdlib, plain
dataclasses, and pydantic (which the sandbox passes through). Names of workflows,
activities, queries and signals are fixed strings, so renaming a Python symbol
never changes what in-flight histories recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, cast

from pydantic.dataclasses import dataclass as pydantic_dataclass

TASK_ID_ATTRIBUTE: Final = "mcp.task.id"
"""The span attribute naming the task a request or a tool run is about (front and workers alike)."""
EXTENSION_ID: Final = "io.modelcontextprotocol/tasks"

TERMINAL_STATUSES: Final = frozenset({"completed", "failed", "cancelled"})
TASK_STATUSES: Final = ("working", "input_required", "completed", "failed", "cancelled")

TOOL_TASK_WORKFLOW: Final = "mcp_tasks.ToolTask"
PINNED_TOOL_TASK_WORKFLOW: Final = "mcp_tasks.PinnedToolTask"
"""The same workflow, pinned to its build under worker versioning (a tool declared `versioning="pinned"`)."""
TOOL_TASK_WORKFLOWS: Final = frozenset({TOOL_TASK_WORKFLOW, PINNED_TOOL_TASK_WORKFLOW})
RUN_TOOL_ACTIVITY: Final = "mcp_tasks.run_tool"
RUN_TOOL_FIRST_ACTIVITY: Final = "mcp_tasks.run_tool_first"
"""The local activity that runs a task's first attempt inside the workflow's first task (`first_attempt_ms`)."""
ADOPT_TOOL_ACTIVITY: Final = "mcp_tasks.adopt_tool"
"""Takes over, on the worker that started it, a first attempt that outlived its local phase."""
ADOPT_QUEUE_INFIX: Final = "/adopt/"
"""A worker's own queue for `ADOPT_TOOL_ACTIVITY` is `<its queue>/adopt/<random>`: only that worker polls it."""
HANDED_OFF: Final = "mcp-tasks-temporal/handedOff"
"""Key of a first attempt's answer that says its tool still runs, and where to adopt it."""
NOT_RUN: Final = "mcp-tasks-temporal/notRun"
"""Key of a first attempt's answer that says it did not start the tool (no tool or no adoption queue here)."""
STATE_QUERY: Final = "mcp_tasks.state"
INPUT_SIGNAL: Final = "mcp_tasks.provide_input"
JOIN_FEED_SIGNAL: Final = "mcp_tasks.join_feed"
"""Sent by a front in feed mode when a listen first names a task that has not joined the task feed yet."""
REQUEST_INPUT_UPDATE: Final = "mcp_tasks.request_input"
SETTLED_UPDATE: Final = "mcp_tasks.settled"
"""Sent with the start by a front that answers the call itself when the tool is quick (update-with-start)."""

TASK_QUEUE_PREFIX: Final = "mcp-tasks"
"""Task queues default to `mcp-tasks/<app name>`: apps sharing a namespace never take each other's tasks."""
DEFAULT_NAMESPACE: Final = "default"
DEFAULT_ADDRESS: Final = "127.0.0.1:7233"
CODEC_KEYS_ENV: Final = "MCP_TASKS_CODEC_KEYS"
"""Comma-separated AES-256-GCM keys; read by the codec on every side and named by the command line."""

# ApplicationError types: the raise sites (workflow, activity) and the read site
# (front server) share these constants so they cannot drift apart.
JSONRPC_ERROR: Final = "JsonRpcError"
TASK_EXPIRED: Final = "TaskExpired"
UNKNOWN_TOOL: Final = "UnknownTool"
"""A worker was handed a tool it does not have (an older worker during a rolling deploy): retried, never failed."""
TOOL_HUNG: Final = "ToolHung"
ATTEMPT_LOST: Final = "AttemptLost"
"""An adoption found no running first attempt (its worker gave it up): the round runs as an ordinary activity."""

INTERNAL_ERROR_CODE: Final = -32603
INVALID_PARAMS_CODE: Final = -32602
MISSING_CAPABILITY_CODE: Final = -32021
PAYLOAD_TOO_LARGE_CODE: Final = -32040
"""A result too large for Temporal (or for payload storage): the task fails with this, naming size and limit."""

# Keys of a request's `_meta` envelope (2026-07-28), spelled out so sandboxed code needs no `mcp_types`.
PROTOCOL_VERSION_META_KEY: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_INFO_META_KEY: Final = "io.modelcontextprotocol/clientInfo"
CLIENT_CAPABILITIES_META_KEY: Final = "io.modelcontextprotocol/clientCapabilities"

PLAIN_CALL_META_KEY: Final = "mcp-tasks-temporal/plainCall"
"""Envelope key of a task a front holds open as a plain `tools/call`, holding `{"answerable": capabilities}`:
what the call's client can answer inside the call. The workflow publishes every question, and the front
relays it (an `InputRequiredResult`) or, for a client that cannot answer it, cancels the task with the reason."""

WORKFLOW_KIND: Final = "workflow"
"""`Memo.KIND` of a task whose workflow is the user's own (`TasksExtension.workflow_tool`)."""

WEB_UI_META: Final = "mcp-tasks-temporal/temporalWebUi"
"""`_meta` key of `tasks/get` results: the task's page in the Temporal Web UI, where the server knows the UI."""


class Memo:
    """Keys of the workflow memo, the worker-free mirror of the task state."""

    TASK_ID: Final = "taskId"
    TOOL: Final = "tool"
    OWNER: Final = "owner"
    """`ids.owner_key` of the creating principal: checked on every read, and what audits list tasks by."""
    CREATED_AT: Final = "createdAt"
    TTL_MS: Final = "ttlMs"
    POLL_INTERVAL_MS: Final = "pollIntervalMs"
    STATUS: Final = "status"
    STATUS_MESSAGE: Final = "statusMessage"
    LAST_UPDATED_AT: Final = "lastUpdatedAt"
    INPUT_REQUESTS: Final = "inputRequests"
    ERROR: Final = "error"
    KIND: Final = "kind"
    """`WORKFLOW_KIND` for a workflow tool's task; absent on tool tasks."""
    ENVELOPE: Final = "envelope"
    """The creating request's `_meta` envelope (protocol version, client info, client capabilities)."""
    SESSION: Final = "session"
    """An anonymous task's keyed hash of the handshake session that created it (`front/session_binding`):
    what its 2025-11-25 `tasks/list` lists by."""
    FEED_SEQ: Final = "feedSeq"
    """Number of the last transition published to the task feed; absent on a task that does not publish; -1
    (set by a front in feed mode as it starts the task) on one that joins the feed once a listen names it
    (`JOIN_FEED_SIGNAL`); item 0 is then its state as it joins."""


FEED_JOINS_ON_LISTEN: Final = -1
"""`Memo.FEED_SEQ` of a task that has not joined the feed yet, and joins it when a listen names it."""


# A worker decodes each new run's input with a payload converter it builds for that run, so with a new
# pydantic `TypeAdapter`: for a plain dataclass that is its schema built again, 1.2 ms of every task's first
# workflow task. A pydantic dataclass keeps its schema on the class, built once per process; its JSON is the same.


@pydantic_dataclass(frozen=True)
class ActivityPolicy:
    """How the workflow runs the tool's activity; chosen per tool at creation time."""

    start_to_close_timeout_s: float = 6 * 3600.0
    heartbeat_timeout_s: float = 30.0
    maximum_attempts: int = 3
    initial_retry_interval_s: float = 1.0
    task_queue: str | None = None
    """Queue of the tool's activities; `None` runs them on the workflow's queue."""
    progress_timeout_s: float | None = None
    """An attempt whose tool reports no status or progress for this long counts as hung and is
    retried (within `maximum_attempts`); `None` trusts the tool for as long as its worker lives."""


@pydantic_dataclass(frozen=True)
class ToolTaskInput:
    """The single argument of the task workflow: who asked for which tool call, and when."""

    task_id: str
    tool: str
    arguments: dict[str, Any]
    meta: dict[str, Any]
    """The creating request's `_meta` (protocol version, client info and capabilities)."""
    created_at_ms: int
    ttl_ms: int | None
    poll_interval_ms: int
    owner: str | None = None
    """Hashed key of the creating principal (see `ids.owner_key`), kept with the task for audits."""
    activity: ActivityPolicy = field(default_factory=ActivityPolicy)
    input_responses: dict[str, Any] | None = None
    """Answers given on the `tools/call` before the task existed (MRTR rounds), for the first round."""
    request_state: str | None = None
    feed: bool = False
    """Publish every transition to the task feed (`feed_contract`), for fronts that follow it."""
    first_attempt_ms: int = 0
    """Run the first round's first attempt as a local activity in the workflow's first task for up to this
    long, so a tool that ends sooner closes the run in one workflow task; 0 runs it as an activity at once."""


@dataclass(frozen=True)
class ToolRoundInput:
    """One execution of the tool, with the answers to the previous round's questions."""

    task_id: str
    tool: str
    arguments: dict[str, Any]
    meta: dict[str, Any]
    round: int = 0
    input_responses: dict[str, Any] | None = None
    request_state: str | None = None
    progress_timeout_s: float | None = None
    feed_workflow_id: str | None = None
    """The task's feed shard, if it publishes to the task feed: the tool's status lines go there too."""
    heartbeat_timeout_s: float | None = None
    """The round's heartbeat timeout, which the keep-alive must beat: a first attempt running locally has none
    of its own, only the one its adopting activity will have."""


@dataclass(frozen=True)
class FirstAttempt:
    """A first attempt run locally (`RUN_TOOL_FIRST_ACTIVITY`): the round, and how long it may run there."""

    round: ToolRoundInput
    local_ms: int


@dataclass(frozen=True)
class Adoption:
    """Which handed-off attempt `ADOPT_TOOL_ACTIVITY` takes over; `stop` only stops it (the task was cancelled)."""

    attempt: str
    stop: bool = False


@dataclass(frozen=True)
class InputAsk:
    """Questions a running tool asks midway (`request_input`), by the tool's own keys."""

    requests: dict[str, Any]


@dataclass(frozen=True)
class StatusDetails:
    """Heartbeat payload of a running tool: its latest free-text status."""

    message: str
    at_ms: int


def as_object(value: object) -> Mapping[str, Any]:
    """`value` as a JSON object, or an empty one: for data that crossed a wire or a history."""
    return cast(Mapping[str, Any], value) if isinstance(value, Mapping) else {}


def to_iso(ms: int) -> str:
    """Render epoch milliseconds as the ISO 8601 UTC form used on the wire."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def detailed_task(
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
) -> dict[str, Any]:
    """Build a SEP-2663 `DetailedTask`: the body of `tasks/get` and of `notifications/tasks`.

    Only the field that belongs to the status is included, so no caller can
    produce, say, a `working` task that carries a `result`.
    """
    task: dict[str, Any] = {
        "taskId": task_id,
        "status": status,
        "createdAt": to_iso(created_at_ms),
        "lastUpdatedAt": to_iso(max(last_updated_at_ms, created_at_ms)),
        "ttlMs": ttl_ms,
    }
    if poll_interval_ms is not None:
        task["pollIntervalMs"] = poll_interval_ms
    if status_message:
        task["statusMessage"] = status_message
    if status == "input_required":
        task["inputRequests"] = input_requests or {}
    elif status == "completed":
        task["result"] = result if result is not None else {"content": [], "isError": False}
    elif status == "failed":
        task["error"] = error if error is not None else {"code": INTERNAL_ERROR_CODE, "message": "Internal error"}
    return task
