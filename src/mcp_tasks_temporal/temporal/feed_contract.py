"""The task change feed: what task workflows publish and fronts follow, shared by both sides.

A front that watched each task with its own history long poll would make one
call per task while idle. Instead every task workflow created by a front in
feed mode publishes each memo transition, numbered, to one of `FEED_SHARDS`
feed workflows (a `temporalio.contrib.workflow_streams` stream each), and a
front follows the shards with one long poll each, whatever number of tasks it
watches. Running tools publish their status lines to the same shard.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final

from temporalio.contrib.workflow_streams import WorkflowStreamState

TASK_FEED_WORKFLOW: Final = "mcp_tasks.TaskFeed"
FEED_SHARDS: Final = 8
"""Fixed for the namespace: a task's shard is derived from its workflow ID on both sides."""
FEED_WORKFLOW_PREFIX: Final = "mcp-task-feed/"

TRANSITION_TOPIC: Final = "transition"
"""Items `{"w": workflow id, "s": seq, "m": upserted memo fields, "x": deadline}`, one per memo upsert, in order.

`"x"` is the task's `createdAt + ttlMs` in ms, `null` without a TTL; items of tasks started before it was
published have none (`UNKNOWN_DEADLINE` in the index)."""
STATUS_TOPIC: Final = "status"
"""Items `{"w": workflow id, "message": str, "at_ms": int}`: the running tool's status line, throttled."""
TICK_TOPIC: Final = "tick"
"""Items `null` the shard appends when nothing was published for a tick: each ends the polls waiting on it, so
that only the fronts still running poll again (a front skips what is not a task's)."""

# `workflow_streams` names its publish signal privately; a canary test checks it is still this.
STREAM_PUBLISH_SIGNAL: Final = "__temporal_workflow_stream_publish"

INDEX_QUERY: Final = "mcp_tasks.feed_index"
"""Query of a shard: which of the given workflow IDs its task index holds, with their entries."""
INDEX_MAX_TASKS: Final = 5_000
"""Open tasks a shard's index holds (40,000 a task queue); past it the least recently changed leaves the index
and is read from visibility instead. An entry is about 100 bytes carried across continue-as-new: 0.5 MB."""
UNKNOWN_DEADLINE: Final = -1
"""An index entry's deadline when the task's items did not say it (published by code from before they did)."""

CONTINUE_AFTER_EVENTS: Final = 10_000
RETAINED_ITEMS: Final = 2_000
"""Items a feed keeps for fronts that fell behind; one further behind re-reads its tasks (a snapshot)."""
TICK_S: Final = 60.0
"""How often a shard looks whether anything still uses it: a front's poll, a task's publish, an open task."""
MAX_RUN_S: Final = 3_600.0
"""A shard's run continues as new after this long at most, so that none reaches `RUN_TIMEOUT` while a worker runs it."""
RUN_TIMEOUT: Final = timedelta(hours=2)
"""Each run of a shard is started with it: only a shard no worker runs any more reaches it, and Temporal closes it."""


def feed_shard(workflow_id: str) -> int:
    """The shard of a task: stable across processes (not `hash()`, which is salted per process)."""
    return int.from_bytes(hashlib.blake2b(workflow_id.encode(), digest_size=4).digest(), "big") % FEED_SHARDS


def feed_workflow_id(task_queue: str, shard: int) -> str:
    """Shards are per task queue: each app's feed runs on the workers of its tasks."""
    return f"{FEED_WORKFLOW_PREFIX}{task_queue}/{shard}"


def task_feed_workflow_id(task_queue: str, task_workflow_id: str) -> str:
    return feed_workflow_id(task_queue, feed_shard(task_workflow_id))


IndexEntry = tuple[int, str, int | None]
"""A shard's index entry of an open task: its last feed number, its status, its deadline (ms, `None`: no TTL,
`UNKNOWN_DEADLINE`: not published)."""


@dataclass(frozen=True)
class TaskFeedInput:
    """The feed workflow's argument; `state` and `index` carry the stream and the task index across continue-as-new.

    `index` is `None` from a run of code from before the index: the next run builds it from the items carried.
    """

    shard: int
    state: WorkflowStreamState | None = None
    continue_after_events: int = CONTINUE_AFTER_EVENTS
    retained_items: int = RETAINED_ITEMS
    index: dict[str, IndexEntry] | None = None
    index_max_tasks: int = INDEX_MAX_TASKS
    tick_s: float = TICK_S
    max_run_s: float = MAX_RUN_S


def transition_item(
    workflow_id: str, seq: int, fields: dict[str, Any], *, deadline: int | None = UNKNOWN_DEADLINE
) -> dict[str, Any]:
    """A transition as published; `deadline` (ms, or `None`: no TTL) left out where it is `UNKNOWN_DEADLINE`."""
    item: dict[str, Any] = {"w": workflow_id, "s": seq, "m": fields}
    if deadline != UNKNOWN_DEADLINE:
        item["x"] = deadline
    return item
