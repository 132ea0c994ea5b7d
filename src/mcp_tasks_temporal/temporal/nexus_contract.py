"""What a Nexus-backed task tool and the other team's handler say to each other.

Sandbox-safe (stdlib only): the task workflow, the reply service on our worker
and the handler helper on the other team's worker all import it. The names are
fixed strings, so renaming a Python symbol never changes a recorded history or
what a deployed handler expects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

NEXUS_TOOL_WORKFLOW: Final = "mcp_tasks.NexusTool"

REPLY_SERVICE: Final = "mcp_tasks.Reply"
"""The Nexus service our worker hosts, reached through the reply endpoint (which targets our namespace)."""
REPLY_STATUS_OPERATION: Final = "status"
STATUS_SIGNAL: Final = "mcp_tasks.nexus_status"
"""What the reply service signals to the task workflow with a `StatusReport`."""

# Nexus request headers our task workflow sends with the operation's start.
REPLY_ENDPOINT_HEADER: Final = "mcp-tasks-reply-endpoint"
TASK_WORKFLOW_HEADER: Final = "mcp-tasks-task-workflow"
NONCE_HEADER: Final = "mcp-tasks-nonce"

REPLY_MEMO: Final = "mcp_tasks.nexusReply"
"""Memo key, on the handler workflow, of where its `set_status` reports (`start_task_workflow` sets it)."""


@dataclass(frozen=True)
class NexusCall:
    """The input of a Nexus tool's task workflow: which operation, with what, and where status comes back."""

    endpoint: str
    service: str
    operation: str
    input: Any
    reply_endpoint: str | None = None
    """Endpoint that targets this server's namespace and task queue; `None`: status does not cross."""
    schedule_to_close_s: float | None = None


@dataclass(frozen=True)
class StatusReport:
    """One `set_status` of the handler workflow, on its way back to the task workflow."""

    task_workflow_id: str
    nonce: str
    """Drawn by the task workflow per operation; a report without it is ignored."""
    sequence: int
    """Reports travel as separate operations and may arrive out of order; only a newer one is shown."""
    text: str


def reply_memo(headers: dict[str, str]) -> dict[str, Any]:
    """The memo entry for a handler workflow, from the operation's start headers (empty when none came)."""
    lowered = {key.lower(): value for key, value in headers.items()}
    endpoint = lowered.get(REPLY_ENDPOINT_HEADER)
    task = lowered.get(TASK_WORKFLOW_HEADER)
    nonce = lowered.get(NONCE_HEADER)
    if not endpoint or not task or not nonce:
        return {}
    return {REPLY_MEMO: {"endpoint": endpoint, "task": task, "nonce": nonce}}


# Questions: the handler workflow's `request_input` asks through the reply endpoint; a relay workflow in
# our namespace carries the question to the task workflow and the answers back as the operation's result.
REPLY_ASK_OPERATION: Final = "ask"
NEXUS_QUESTION_WORKFLOW: Final = "mcp_tasks.NexusQuestion"
ASK_SIGNAL: Final = "mcp_tasks.nexus_ask"
"""Relay workflow -> task workflow: an `Ask`."""
ANSWER_SIGNAL: Final = "mcp_tasks.nexus_answer"
"""Task workflow -> relay workflow: an `Answers`."""


@dataclass(frozen=True)
class AskRequest:
    """The input of the `ask` operation: the handler workflow's questions, in wire form, by key."""

    task_workflow_id: str
    nonce: str
    questions: dict[str, dict[str, Any]]


@dataclass(frozen=True)
class Ask:
    nonce: str
    questions: dict[str, dict[str, Any]]
    relay_workflow_id: str


@dataclass(frozen=True)
class Answers:
    """Every answer by key, or the JSON-RPC error that ended the asking (a client that cannot answer)."""

    answers: dict[str, dict[str, Any]] | None = None
    error: dict[str, Any] | None = None
