"""What a front serves with, as one typed value: checked once, when it is made.

`mcp_endpoint` and `TasksExtension.attach` take it; whoever runs the front decides
where each value comes from (a team's own configuration, or `serve` and `dev`, whose
flags and `MCP_TASKS_*` variables `ops/` turns into one). Nothing in the front reads
the environment.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Literal

from mcp_tasks_temporal.temporal.fairness_options import check_weight
from mcp_tasks_temporal.temporal.ids import UNKEYED, OwnerKeying

if TYPE_CHECKING:
    from mcp_tasks_temporal.temporal.payload_storage import StorageSettings

PushMode = Literal["poll", "feed"]
PUSH_MODES: Final[tuple[PushMode, ...]] = ("poll", "feed")

DEFAULT_MAX_BODY_BYTES: Final = 1024 * 1024
"""The largest request body a front reads: arguments past Temporal's 2 MiB payload limit need payload storage."""
DEFAULT_CLOSED_TASK_CACHE: Final = 10_000
DEFAULT_PUSH_GIVE_UP_S: Final = 300.0
DEFAULT_MAX_LISTEN_TASK_IDS: Final = 10_000
DEFAULT_MAX_LISTENS_PER_CALLER: Final = 8
DEFAULT_MAX_BODY_BYTES_IN_FLIGHT: Final = 32 * 1024 * 1024
"""32 bodies of the largest size at once: the front's memory for reading requests stays within about 100 MB
(docs/performance.md, "One client cannot cost the others")."""
DEFAULT_BODY_WAIT_S: Final = 10.0


@dataclass(frozen=True, kw_only=True)
class FrontSettings:
    """How one front serves an app's tasks; every field has the default `serve` starts with."""

    task_queue: str | None = None
    """Where its tasks run; `None`: the app's own queue, `mcp-tasks/<app name>`, as its workers default to."""
    push: PushMode = "feed"
    """How pushed task changes are followed: `feed`, the task feed's shards, a few long polls however many tasks
    are watched (a task publishes to them once a listen names it); `poll`, one history long poll per watched
    task, the fallback for a deployment whose workers cannot run the feed's shards (docs/design.md, "Push at
    scale"; docs/performance.md)."""
    push_give_up_s: float = DEFAULT_PUSH_GIVE_UP_S
    """How long Temporal calls may keep failing for a followed task before its listeners' streams end."""
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    """The largest request body taken; a larger one is refused with a JSON-RPC error (-32600)."""
    max_body_bytes_in_flight: int = DEFAULT_MAX_BODY_BYTES_IN_FLIGHT
    """Request body bytes this front takes in at once, whoever sends them: a request is counted with its
    declared size (`max_body_bytes` when it declares none) until its response starts. One that does not fit
    waits for room up to `body_wait_s`, then is refused with HTTP 503 and -32051 (`data.maxBodyBytesInFlight`)."""
    body_wait_s: float = DEFAULT_BODY_WAIT_S
    """How long a request waits for room among the bodies in flight before it is refused."""
    max_listen_task_ids: int = DEFAULT_MAX_LISTEN_TASK_IDS
    """Task IDs one `subscriptions/listen` may name; more is refused with -32602 (`data.maxTaskIds`)."""
    max_listens_per_caller: int = DEFAULT_MAX_LISTENS_PER_CALLER
    """Listens one caller may hold open at once on this front; one more is refused with -32050
    (`data.maxListens`). A caller is its principal; an anonymous one, its network address (behind a proxy,
    run uvicorn with the proxy's headers trusted, or every anonymous client is one caller)."""
    closed_task_cache: int = DEFAULT_CLOSED_TASK_CACHE
    """Closed tasks remembered, so repeated reads of a finished task cost Temporal nothing; 0 turns it off."""
    require_mcp_name: bool = False
    """Refuse `tasks/*` over HTTP without an `Mcp-Name` header (-32020). Off by default because FastMCP's and
    pydantic-ai's task clients send none; a header that names another task is always refused."""
    request_state_keys: tuple[str, ...] = ()
    """The secrets every front of the app shares: they seal `requestState` and tag handshake session IDs, so
    any front takes what another handed out (`keys[0]` seals, every key opens). Empty: a key of this process."""
    owner_keying: OwnerKeying = UNKEYED
    """How principals become owner keys in workflow IDs; every front, worker and operator command of a
    deployment must share it (docs/operations.md, "Owner keys")."""
    fairness_keys: bool = True
    """Give each principal's tasks their own fairness key; off, every task shares the queue's FIFO line."""
    fairness_weights: Mapping[str, float] = field(default_factory=dict[str, float])
    """A principal's share against the others' 1, by the name the token file or the JWT's principal claim gives."""
    search_attributes: bool = False
    """Start tasks with `McpTool`/`McpOwner`/`McpStatus`: only where the namespace has them registered."""
    web_ui: str | None = None
    """The Temporal Web UI's address: `tasks/get` then links the task's page in its `_meta`."""
    payload_storage: StorageSettings | None = None
    """Where large payloads go, as the workers store them: how large an argument or answer may be."""
    max_inline_budget_ms: int | None = None
    """The longest this front holds a task-capable call for its tool's outcome (each tool's `inline_budget_ms`,
    capped); `None`: the app's own budgets; `0`: every task-capable call is answered with its task at once."""

    def __post_init__(self) -> None:
        if self.push not in PUSH_MODES:
            raise ValueError(f"push must be one of {', '.join(PUSH_MODES)}, not {self.push!r}")
        if not math.isfinite(self.push_give_up_s) or self.push_give_up_s <= 0:
            raise ValueError(f"push_give_up_s must be a positive number of seconds, not {self.push_give_up_s}")
        if self.max_body_bytes <= 0:
            raise ValueError(f"max_body_bytes must be positive, not {self.max_body_bytes}")
        if self.max_body_bytes_in_flight < self.max_body_bytes:
            raise ValueError(
                f"max_body_bytes_in_flight ({self.max_body_bytes_in_flight}) must be at least max_body_bytes"
                f" ({self.max_body_bytes}), or a body of the largest size could never be read"
            )
        if not math.isfinite(self.body_wait_s) or self.body_wait_s < 0:
            raise ValueError(f"body_wait_s must be 0 or more seconds, not {self.body_wait_s}")
        if self.max_listen_task_ids <= 0:
            raise ValueError(f"max_listen_task_ids must be positive, not {self.max_listen_task_ids}")
        if self.max_listens_per_caller <= 0:
            raise ValueError(f"max_listens_per_caller must be positive, not {self.max_listens_per_caller}")
        if self.max_inline_budget_ms is not None and self.max_inline_budget_ms < 0:
            raise ValueError(f"max_inline_budget_ms must be 0 or more, not {self.max_inline_budget_ms}")
        if self.closed_task_cache < 0:
            raise ValueError(f"closed_task_cache must be 0 or more, not {self.closed_task_cache}")
        if isinstance(self.request_state_keys, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError("request_state_keys is a sequence of secrets, not one string")
        if any(not key for key in self.request_state_keys):
            raise ValueError("request_state_keys may not hold an empty secret")
        for weight in self.fairness_weights.values():
            check_weight(weight)
        object.__setattr__(self, "request_state_keys", tuple(self.request_state_keys))
        object.__setattr__(self, "fairness_weights", dict(self.fairness_weights))
