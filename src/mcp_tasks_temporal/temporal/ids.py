"""Task IDs and the workflow IDs they map to.

A `taskId` is a UUID4 (122 random bits from the OS CSPRNG), the only thing a
client ever sees. The workflow ID is derived from it *and* from the principal
that created the task on every request, so a task ID presented by anyone else
names a workflow that does not exist: not found, with nothing to tell it apart
from an ID that was never issued. The principal is hashed because workflow IDs
show up in the Temporal UI, logs and visibility: with a keyed hash (HMAC-SHA256
under `MCP_TASKS_OWNER_SECRET`, which every front, worker, `admin` and `audit` of a
deployment shares), so that nobody without the secret can tell whose tasks they
see by hashing guessed names. Without the secret the key is the unkeyed SHA-256
of earlier versions; `MCP_TASKS_LEGACY_OWNER_KEYS=1` lets a keyed deployment still
find the tasks stored under those (docs/operations.md, "Owner keys").

Which secret keys a deployment's owner keys is a setting (`OwnerKeying`), handed to the
front (`FrontSettings.owner_keying`) and to the operator commands, which read both
variables (`ops.settings.owner_keying`); nothing here reads the environment.
"""

from __future__ import annotations

import hashlib
import hmac
import uuid
from dataclasses import dataclass
from typing import Final

WORKFLOW_ID_PREFIX = "mcp-task"
ANONYMOUS_OWNER = "anonymous"
OWNER_SECRET_ENV: Final = "MCP_TASKS_OWNER_SECRET"
LEGACY_OWNERS_ENV: Final = "MCP_TASKS_LEGACY_OWNER_KEYS"
MIN_SECRET_CHARS: Final = 16
_OWNER_LABEL: Final = b"mcp-tasks-temporal/owner\x00"
_FINGERPRINT_LABEL: Final = b"mcp-tasks-temporal/owner-keying-fingerprint\x00"
UNKEYED_FINGERPRINT: Final = "unkeyed"


class OwnerSecretError(ValueError):
    """`MCP_TASKS_OWNER_SECRET` is set but too short to key anything."""


@dataclass(frozen=True)
class OwnerKeying:
    """How owner keys are computed: under the deployment's secret (`None`: unkeyed), and whether the
    unkeyed keys of earlier versions are still read (a migration window)."""

    secret: bytes | None = None
    reads_legacy: bool = False

    @classmethod
    def of(cls, secret: str | None, legacy: str | None = None) -> OwnerKeying:
        """From the variables' values, as set (`None` or empty: unset).

        Raises:
            OwnerSecretError: The secret is shorter than `MIN_SECRET_CHARS`.
        """
        if secret and len(secret) < MIN_SECRET_CHARS:
            raise OwnerSecretError(f"${OWNER_SECRET_ENV} needs at least {MIN_SECRET_CHARS} characters")
        reads_legacy = (legacy or "").strip().lower() in ("1", "true", "yes")
        return cls(secret=secret.encode() if secret else None, reads_legacy=reads_legacy)

    def owner_key(self, principal: str | None) -> str:
        """A stable key for the principal that only holders of the secret can compute (or the anonymous key)."""
        if principal is None:
            return ANONYMOUS_OWNER
        if self.secret is None:
            return legacy_owner_key(principal)
        return hmac.new(self.secret, _OWNER_LABEL + principal.encode(), hashlib.sha256).hexdigest()[:32]

    def fingerprint(self) -> str:
        """Which secret keys the owner keys, as processes compare it: `unkeyed`, or 16 hex digits.

        An HMAC of a fixed label under the secret, so two processes learn whether they share it and
        nothing else; like any owner key, it lets whoever sees it test guessed secrets, which is why
        a secret is random and long (`MIN_SECRET_CHARS`).
        """
        if self.secret is None:
            return UNKEYED_FINGERPRINT
        return hmac.new(self.secret, _FINGERPRINT_LABEL, hashlib.sha256).hexdigest()[:16]

    def owner_keys(self, principal: str | None) -> list[str]:
        """The keys a principal's tasks may be stored under: the current one, then the legacy one while it is read."""
        keys = [self.owner_key(principal)]
        if principal is not None and self.reads_legacy and legacy_owner_key(principal) not in keys:
            keys.append(legacy_owner_key(principal))
        return keys

    def workflow_id(self, task_id: str, principal: str | None) -> str:
        """The workflow ID behind `task_id` for this principal."""
        return task_workflow_id(self.owner_key(principal), task_id)

    def workflow_ids(self, task_id: str, principal: str | None) -> list[tuple[str, str]]:
        """`(workflow ID, owner key)` of every place this principal's task may be, current key first."""
        return [(task_workflow_id(key, task_id), key) for key in self.owner_keys(principal)]


UNKEYED: Final = OwnerKeying()
"""Owner keys without a secret: the anonymous owner's are the same under any keying."""


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


def legacy_owner_key(principal: str) -> str:
    """The unkeyed owner key of earlier versions: anyone can compute it from a guessed principal."""
    return hashlib.sha256(principal.encode()).hexdigest()[:32]


def task_workflow_id(owner_key: str, task_id: str) -> str:
    """The workflow ID of the task `task_id` stored under `owner_key`."""
    return f"{WORKFLOW_ID_PREFIX}/{owner_key}/{task_id}"


def plain_call_task_id(session_id: str, request_id: str | int) -> str:
    """The task ID of the plain call `request_id` of the handshake session `session_id`: a UUID4 in shape.

    A front that gets the call's `notifications/cancelled` names the task from the same two values
    (`front/calls/call_cancels.py`), with no table of calls anywhere.
    """
    digest = hashlib.sha256(f"mcp-tasks-temporal/plain-call\n{session_id}\n{request_id}".encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))
