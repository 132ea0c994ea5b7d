"""Task IDs and the workflow IDs they map to.

A `taskId` is a UUID4 (122 random bits from the OS CSPRNG), the only thing a
client ever sees. The workflow ID is derived from it *and* from the principal
that created the task on every request, so a task ID presented by anyone else
names a workflow that does not exist: not found, with nothing to tell it apart
from an ID that was never issued. The principal is hashed because workflow IDs
show up in the Temporal UI, logs and visibility.
"""

from __future__ import annotations

import hashlib
import uuid

WORKFLOW_ID_PREFIX = "mcp-task"
ANONYMOUS_OWNER = "anonymous"


def new_task_id() -> str:
    """A fresh, unguessable task ID."""
    return str(uuid.uuid4())


def is_task_id(value: str) -> bool:
    """Whether `value` has the shape of an ID this server issues (a canonical UUID4)."""
    try:
        parsed = uuid.UUID(value)
    except ValueError:
        return False
    return parsed.version == 4 and str(parsed) == value


def owner_key(principal: str | None) -> str:
    """A stable, non-reversible key for the principal (or the shared anonymous key)."""
    if principal is None:
        return ANONYMOUS_OWNER
    return hashlib.sha256(principal.encode()).hexdigest()[:32]


def workflow_id(task_id: str, principal: str | None) -> str:
    """The workflow ID behind `task_id` for this principal."""
    return f"{WORKFLOW_ID_PREFIX}/{owner_key(principal)}/{task_id}"
