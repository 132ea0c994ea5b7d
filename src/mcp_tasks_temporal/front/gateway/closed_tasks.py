"""A bounded memory of closed tasks on one front server.

A task that has closed never changes again, so once a front server has read
it, a repeated `tasks/get` (clients poll until they see the end, and often
read the result more than once) needs no Temporal call at all. Entries are
keyed by workflow ID, which already binds the principal (`ids.workflow_id`),
so another principal's request misses the cache and gets "not found" from
Temporal exactly as before. An entry never outlives the task's TTL, and
lives at most `max_age_s` besides, so a workflow an operator deleted stops
being served within that bound.
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Final

from mcp_tasks_temporal.front.errors import TaskExpiredError

DEFAULT_MAX_ENTRIES: Final = 10_000
DEFAULT_MAX_BYTES: Final = 64 * 1024 * 1024
DEFAULT_MAX_AGE_S: Final = 600.0
LARGEST_ENTRY_BYTES: Final = 256 * 1024
"""Bigger results are read from Temporal each time: a few of them would crowd out thousands of small ones."""


@dataclass(frozen=True)
class _Entry:
    task: dict[str, Any]
    size: int
    expires_at_ms: int | None
    """`createdAt + ttlMs`: past it the task is gone, cached or not."""
    stale_at: float
    """Monotonic time after which Temporal is asked again."""


class ClosedTaskCache:
    """LRU of closed tasks' `DetailedTask`s, bounded by count and by approximate size."""

    def __init__(
        self,
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_age_s: float = DEFAULT_MAX_AGE_S,
    ) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.max_age_s = max_age_s
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._bytes = 0

    def get(self, key: str, now_ms: int) -> dict[str, Any] | None:
        """The cached task, `None` on a miss.

        Raises:
            TaskExpiredError: the task is cached and its TTL has passed.
        """
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry.expires_at_ms is not None and now_ms >= entry.expires_at_ms:
            self._drop(key)
            raise TaskExpiredError()
        if time.monotonic() >= entry.stale_at:
            self._drop(key)
            return None
        self._entries.move_to_end(key)
        return entry.task

    def put(self, key: str, task: dict[str, Any], *, created_at_ms: int, ttl_ms: int | None) -> None:
        """Remember a closed task (the caller vouches that it is closed)."""
        if self.max_entries <= 0:
            return
        size = len(json.dumps(task, separators=(",", ":"), default=str))
        if size > LARGEST_ENTRY_BYTES:
            return
        self._drop(key)
        expires_at_ms = None if ttl_ms is None else created_at_ms + ttl_ms
        self._entries[key] = _Entry(task, size, expires_at_ms, time.monotonic() + self.max_age_s)
        self._bytes += size
        while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
            oldest = next(iter(self._entries))
            self._drop(oldest)

    def __len__(self) -> int:
        return len(self._entries)

    def _drop(self, key: str) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._bytes -= entry.size
