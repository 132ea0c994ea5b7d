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

The commands read both variables (`ops.settings.use_owner_keys`) and hand them to
`use_owner_keying` before the first key is computed; until then keys are unkeyed.
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


class OwnerSecretError(ValueError):
    """`MCP_TASKS_OWNER_SECRET` is set but too short to key anything."""


@dataclass(frozen=True)
class OwnerKeying:
    """How this process computes owner keys: under the deployment's secret (`None`: unkeyed), and
    whether the unkeyed keys of earlier versions are still read (a migration window)."""

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


_keying = OwnerKeying()
"""Process-wide, like the variables it comes from: every front, `admin` and `audit` of a deployment shares it."""


def use_owner_keying(keying: OwnerKeying) -> None:
    """Compute this process's owner keys so from now on."""
    global _keying
    _keying = keying


def owner_secret() -> bytes | None:
    """The deployment's owner-key secret (`None`: unkeyed)."""
    return _keying.secret


def reads_legacy_owners() -> bool:
    """Whether tasks stored under unkeyed owner keys are still found (a migration window)."""
    return _keying.reads_legacy


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
    """A stable key for the principal that only holders of the owner secret can compute (or the anonymous key)."""
    if principal is None:
        return ANONYMOUS_OWNER
    secret = owner_secret()
    if secret is None:
        return legacy_owner_key(principal)
    return hmac.new(secret, _OWNER_LABEL + principal.encode(), hashlib.sha256).hexdigest()[:32]


def legacy_owner_key(principal: str) -> str:
    """The unkeyed owner key of earlier versions: anyone can compute it from a guessed principal."""
    return hashlib.sha256(principal.encode()).hexdigest()[:32]


def owner_keys(principal: str | None) -> list[str]:
    """The keys a principal's tasks may be stored under: the current one, then the legacy one while it is read."""
    keys = [owner_key(principal)]
    if principal is not None and reads_legacy_owners() and legacy_owner_key(principal) not in keys:
        keys.append(legacy_owner_key(principal))
    return keys


def workflow_id(task_id: str, principal: str | None) -> str:
    """The workflow ID behind `task_id` for this principal."""
    return f"{WORKFLOW_ID_PREFIX}/{owner_key(principal)}/{task_id}"


def workflow_ids(task_id: str, principal: str | None) -> list[tuple[str, str]]:
    """`(workflow ID, owner key)` of every place this principal's task may be, current key first."""
    return [(f"{WORKFLOW_ID_PREFIX}/{key}/{task_id}", key) for key in owner_keys(principal)]
