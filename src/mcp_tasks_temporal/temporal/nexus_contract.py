"""What a Nexus-backed task tool and the other team's handler say to each other.

Sandbox-safe (stdlib only): the task workflow, the reply service on our worker
and the handler helper on the other team's worker all import it. The names are
fixed strings, so renaming a Python symbol never changes a recorded history or
what a deployed handler expects.
"""

from __future__ import annotations

import base64
import binascii
import json
import urllib.parse
from dataclasses import dataclass
from typing import Any, Final, cast

NEXUS_TOOL_WORKFLOW: Final = "mcp_tasks.NexusTool"
NEXUS_EXPIRY_GRACE_S: Final = 60.0
"""How long past its TTL a Nexus tool's run may last. It cancels its operation shortly before the TTL and ends
once the handler has acknowledged; Temporal, timing the caller out first, would abandon the handler's workflow
instead (on a loaded machine a 10 s task's 2 s margin was not enough)."""

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
"""Memo key, on the handler workflow: the reply endpoint's name, and nothing that could speak for the task.

Handler workflows started before the route moved to `ROUTE_SIGNAL` also hold the task and its
nonce here; `nexus_status` still reads that form."""
ROUTE_SIGNAL: Final = "mcp_tasks.nexus_route"
"""The signal `start_task_workflow` sends a handler workflow right after its start: its `ReplyRoute`.

A signal's input is in the history only, encoded by the other team's codec, never in a memo,
search attribute or listing: whoever can list their namespace learns no way to speak for a task."""

MAX_SEQUENCE_STEP: Final = 10_000
"""How far past the newest shown report a status report's sequence may jump (reports are numbered 1, 2, ...)."""
ASKED_BY_META: Final = "mcp-tasks-temporal/askedBy"
"""`_meta` key of a question a Nexus handler asked: which operation of which endpoint asked it."""


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
class ReplyRoute:
    """Where a handler workflow reports, and the secret that makes the task take its reports."""

    endpoint: str
    task: str
    nonce: str


@dataclass(frozen=True)
class Caller:
    """The workflow that called the reply service, as Temporal recorded it in the request's link."""

    namespace: str
    workflow_id: str
    run_id: str


@dataclass(frozen=True)
class StatusReport:
    """One `set_status` of the handler workflow, on its way back to the task workflow."""

    task_workflow_id: str
    nonce: str
    """Drawn by the task workflow per operation; a report without it is ignored."""
    sequence: int
    """Reports travel as separate operations and may arrive out of order; only a newer one is shown."""
    text: str
    caller: Caller | None = None
    """Set by the reply service from the request, whatever the sender put here."""


def reply_route(headers: dict[str, str]) -> ReplyRoute | None:
    """Where a handler workflow reports, from the operation's start headers (`None` when none came)."""
    lowered = {key.lower(): value for key, value in headers.items()}
    endpoint = lowered.get(REPLY_ENDPOINT_HEADER)
    task = lowered.get(TASK_WORKFLOW_HEADER)
    nonce = lowered.get(NONCE_HEADER)
    if not endpoint or not task or not nonce:
        return None
    return ReplyRoute(endpoint=endpoint, task=task, nonce=nonce)


def reply_memo(route: ReplyRoute) -> dict[str, Any]:
    """The memo entry of a handler workflow: that it reports, through which endpoint; never the secret."""
    return {REPLY_MEMO: {"endpoint": route.endpoint}}


@dataclass(frozen=True)
class HandlerWorkflow:
    """The workflow a Nexus operation started, as its operation token names it."""

    namespace: str
    workflow_id: str


def handler_of_token(token: str | None) -> HandlerWorkflow | None:
    """The workflow behind a workflow-run operation's token; `None` for any other token.

    The token is what Temporal's start returned to the calling workflow: the other team cannot
    change it afterwards, so it says which workflow may report to the task.
    """
    if not token:
        return None
    try:
        details = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (binascii.Error, ValueError):
        return None
    if not isinstance(details, dict):
        return None
    fields = cast(dict[str, object], details)
    if fields.get("t") != 1:  # 1: a workflow run
        return None
    namespace, workflow_id = fields.get("ns"), fields.get("wid")
    if not isinstance(namespace, str) or not isinstance(workflow_id, str) or not namespace or not workflow_id:
        return None
    return HandlerWorkflow(namespace, workflow_id)


def caller_of_links(urls: list[str]) -> Caller | None:
    """The calling workflow of a Nexus request, from its links; `None` unless exactly one workflow event.

    Temporal adds the link of the caller's `NexusOperationScheduled` event itself. A request
    with no link did not come from a workflow; one with several may carry links of its
    sender's choosing besides Temporal's, so neither names its caller.
    """
    callers: list[Caller] = []
    for url in urls:
        parsed = urllib.parse.urlparse(url)
        segments = parsed.path.split("/")
        # /namespaces/{namespace}/workflows/{workflow_id}/{run_id}/history
        if parsed.scheme != "temporal" or len(segments) != 7 or segments[0] != "":
            return None
        if segments[1] != "namespaces" or segments[3] != "workflows" or segments[6] != "history":
            return None
        namespace, workflow_id, run_id = (urllib.parse.unquote(s) for s in (segments[2], segments[4], segments[5]))
        if not namespace or not workflow_id or not run_id:
            return None
        callers.append(Caller(namespace, workflow_id, run_id))
    return callers[0] if len(callers) == 1 else None


# Questions: the handler workflow's `request_input` asks through the reply endpoint; a relay workflow in
# our namespace carries the question to the task workflow and the answers back as the operation's result.
REPLY_ASK_OPERATION: Final = "ask"
NEXUS_QUESTION_WORKFLOW: Final = "mcp_tasks.NexusQuestion"
ASK_SIGNAL: Final = "mcp_tasks.nexus_ask"
"""Relay workflow -> task workflow: an `Ask`."""
ANSWER_SIGNAL: Final = "mcp_tasks.nexus_answer"
"""Task workflow -> relay workflow: an `Answers`."""
WITHDRAW_SIGNAL: Final = "mcp_tasks.nexus_withdraw"
"""Relay workflow -> task workflow: its relay workflow ID, once the handler cancelled the question."""


@dataclass(frozen=True)
class AskRequest:
    """The input of the `ask` operation: the handler workflow's questions, in wire form, by key."""

    task_workflow_id: str
    nonce: str
    questions: dict[str, dict[str, Any]]
    caller: Caller | None = None
    """Set by the reply service from the request, whatever the sender put here."""


@dataclass(frozen=True)
class Ask:
    nonce: str
    questions: dict[str, dict[str, Any]]
    relay_workflow_id: str
    caller: Caller | None = None


@dataclass(frozen=True)
class Answers:
    """Every answer by key, or the JSON-RPC error that ended the asking (a client that cannot answer)."""

    answers: dict[str, dict[str, Any]] | None = None
    error: dict[str, Any] | None = None
