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
from typing import Any, Final

from temporalio.contrib.workflow_streams import WorkflowStreamState

TASK_FEED_WORKFLOW: Final = "mcp_tasks.TaskFeed"
FEED_SHARDS: Final = 8
"""Fixed for the namespace: a task's shard is derived from its workflow ID on both sides."""
FEED_WORKFLOW_PREFIX: Final = "mcp-task-feed/"

TRANSITION_TOPIC: Final = "transition"
"""Items `{"w": workflow id, "s": seq, "m": upserted memo fields}`, one per memo upsert, in order."""
STATUS_TOPIC: Final = "status"
"""Items `{"w": workflow id, "message": str, "at_ms": int}`: the running tool's status line, throttled."""

# `workflow_streams` names its publish signal privately; a canary test checks it is still this.
STREAM_PUBLISH_SIGNAL: Final = "__temporal_workflow_stream_publish"

CONTINUE_AFTER_EVENTS: Final = 10_000
RETAINED_ITEMS: Final = 2_000
"""Items a feed keeps for fronts that fell behind; one further behind re-reads its tasks (a snapshot)."""


def feed_shard(workflow_id: str) -> int:
    """The shard of a task: stable across processes (not `hash()`, which is salted per process)."""
    return int.from_bytes(hashlib.blake2b(workflow_id.encode(), digest_size=4).digest(), "big") % FEED_SHARDS


def feed_workflow_id(task_queue: str, shard: int) -> str:
    """Shards are per task queue: each app's feed runs on the workers of its tasks."""
    return f"{FEED_WORKFLOW_PREFIX}{task_queue}/{shard}"


def task_feed_workflow_id(task_queue: str, task_workflow_id: str) -> str:
    return feed_workflow_id(task_queue, feed_shard(task_workflow_id))


@dataclass(frozen=True)
class TaskFeedInput:
    """The feed workflow's argument; `state` carries the stream across continue-as-new."""

    shard: int
    state: WorkflowStreamState | None = None
    continue_after_events: int = CONTINUE_AFTER_EVENTS
    retained_items: int = RETAINED_ITEMS


def transition_item(workflow_id: str, seq: int, fields: dict[str, Any]) -> dict[str, Any]:
    return {"w": workflow_id, "s": seq, "m": fields}
