"""Which task runs first when the task queue has a backlog: a tool's priority and its principal's fairness key.

Temporal dispatches a backlogged task queue by `priority_key` first (1 highest
.. 5 lowest, 3 when unset), then round-robin over fairness keys in proportion
to their weights, then FIFO. Without fairness keys every principal's tasks
share one FIFO line, so one tenant's 500 tasks delay another's first one by
all 500 (docs/performance.md has the measurement). The priority is set when the
task's workflow starts; its activities inherit it, so the workflow's commands
carry none and nothing here needs a `workflow.patched` guard.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, cast

from temporalio.common import Priority

from mcp_tasks_temporal.temporal.fairness_options import check_weight
from mcp_tasks_temporal.temporal.ids import UNKEYED, OwnerKeying

HIGHEST_PRIORITY: Final = 1
LOWEST_PRIORITY: Final = 5
"""Temporal's default number of priority levels (`matching.priorityLevels`)."""


def check_priority(priority: int | None) -> None:
    """Raise `ValueError` unless `priority` is `None` (the queue's default, 3) or an integer 1..5."""
    if priority is None:
        return
    if isinstance(priority, bool) or not isinstance(priority, int):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"priority must be an integer from {HIGHEST_PRIORITY} to {LOWEST_PRIORITY}, not {priority!r}")
    if not HIGHEST_PRIORITY <= priority <= LOWEST_PRIORITY:
        raise ValueError(
            f"priority must be from {HIGHEST_PRIORITY} (highest) to {LOWEST_PRIORITY} (lowest), not {priority}"
        )


def fairness_key(principal: str | None, keying: OwnerKeying) -> str:
    """The principal's fairness key: its owner key, a hash, never the principal itself.

    Fairness keys are not secret: Temporal shows them in task queue statistics,
    the history and the Web UI, and keeps them in its metrics, places where a
    principal (an e-mail, a token subject) must not leak. The owner key is
    stable, so one principal's tasks share one key across front servers and
    restarts, and it is the same key the workflow ID and `McpOwner` carry, so
    an operator can match the two. Anonymous callers share one key.
    """
    return keying.owner_key(principal)


@dataclass(frozen=True)
class FairnessPolicy:
    """How the front server sets each task's priority: fairness keys on or off, and weights per principal."""

    keys: bool = True
    """Give each principal's tasks their own fairness key; off, every task shares the queue's FIFO line."""
    weights: Mapping[str, float] = field(default_factory=dict[str, float])
    """Weights by the hash of the name they were given for (see `weighted`); a principal not listed weighs 1."""
    keying: OwnerKeying = UNKEYED
    """How principals are hashed into fairness keys: the deployment's owner keying."""

    def __post_init__(self) -> None:
        for weight in self.weights.values():
            check_weight(weight)

    @classmethod
    def weighted(
        cls, weights: Mapping[str, float], *, keys: bool = True, keying: OwnerKeying = UNKEYED
    ) -> FairnessPolicy:
        """A policy from weights by principal (the `--fairness-weight PRINCIPAL=WEIGHT` setting).

        PRINCIPAL is the name a user is known by (the token file's name, the
        JWT's principal claim) or, for an exact match, the whole principal the
        front binds tasks to. The names are hashed at once, so the policy holds
        only their keys.
        """
        return cls(
            keys=keys,
            weights={fairness_key(principal, keying): weight for principal, weight in weights.items()},
            keying=keying,
        )

    def priority(self, principal: str | None, tool_priority: int | None = None) -> Priority:
        """The `Priority` a task of `principal` starts with; its activities inherit it."""
        check_priority(tool_priority)
        if not self.keys:
            return Priority(priority_key=tool_priority)
        return Priority(
            priority_key=tool_priority,
            fairness_key=fairness_key(principal, self.keying),
            fairness_weight=self.weight(principal),
        )

    def weight(self, principal: str | None) -> float | None:
        """The weight set for `principal`, by its whole value or by the name inside it; `None` is 1."""
        if not self.weights:  # the common case: no parsing or hashing on each task's creation
            return None
        for name in _names(principal):
            weight = self.weights.get(self.keying.owner_key(name))
            if weight is not None:
                return weight
        return None


def _names(principal: str | None) -> list[str]:
    """The principal itself, then the name an operator knows it by.

    The front binds tasks to the token's `["client_id", issuer, "subject"]` as
    JSON: the token file gives its name as client and subject, a JWT its
    principal claim with the issuer. Operators name users, not that triple.
    """
    if principal is None:
        return []
    try:
        parts = json.loads(principal)
    except ValueError:
        return [principal]
    if not isinstance(parts, list) or len(parts) != 3:  # pyright: ignore[reportUnknownArgumentType]
        return [principal]
    client, _issuer, subject = cast(list[object], parts)
    name = subject if isinstance(subject, str) else client
    return [principal, name] if isinstance(name, str) else [principal]
