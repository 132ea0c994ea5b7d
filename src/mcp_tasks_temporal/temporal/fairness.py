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

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from temporalio.common import Priority

from mcp_tasks_temporal.temporal.fairness_options import check_weight, parse_weight
from mcp_tasks_temporal.temporal.ids import owner_key

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


def fairness_key(principal: str | None) -> str:
    """The principal's fairness key: its owner key, a hash, never the principal itself.

    Fairness keys are not secret: Temporal shows them in task queue statistics,
    the history and the Web UI, and keeps them in its metrics, places where a
    principal (an e-mail, a token subject) must not leak. The owner key is
    stable, so one principal's tasks share one key across front servers and
    restarts, and it is the same key the workflow ID and `McpOwner` carry, so
    an operator can match the two. Anonymous callers share one key.
    """
    return owner_key(principal)


@dataclass(frozen=True)
class FairnessPolicy:
    """How the front server sets each task's priority: fairness keys on or off, and weights per principal."""

    keys: bool = True
    """Give each principal's tasks their own fairness key; off, every task shares the queue's FIFO line."""
    weights: Mapping[str, float] = field(default_factory=dict[str, float])
    """Weights by fairness key (see `weighted`); a principal not listed weighs 1."""

    def __post_init__(self) -> None:
        for weight in self.weights.values():
            check_weight(weight)

    @classmethod
    def weighted(cls, entries: Iterable[str], *, keys: bool = True) -> FairnessPolicy:
        """A policy from `PRINCIPAL=WEIGHT` entries (the `--fairness-weight` setting).

        The principals are hashed at once, so the policy holds only their keys.
        """
        weights: dict[str, float] = {}
        for entry in entries:
            principal, weight = parse_weight(entry)
            weights[fairness_key(principal)] = weight
        return cls(keys=keys, weights=weights)

    def priority(self, principal: str | None, tool_priority: int | None = None) -> Priority:
        """The `Priority` a task of `principal` starts with; its activities inherit it."""
        check_priority(tool_priority)
        if not self.keys:
            return Priority(priority_key=tool_priority)
        key = fairness_key(principal)
        return Priority(priority_key=tool_priority, fairness_key=key, fairness_weight=self.weights.get(key))
