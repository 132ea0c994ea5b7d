"""The front's one door to Temporal: start, read, answer and cancel tasks, and follow them.

Everything the rest of the front knows of Temporal comes through `TemporalTaskGateway`
and the values it answers with; no other front module holds a client or a workflow
handle. The package is written in modules by job: `operations` (the gateway itself:
start, read, answer, cancel), `reads` (describe and visibility snapshots, readiness),
`views` (a task as its client sees it), `watchers` (what the push hubs read: histories,
close events, the task feed), `history` (history long polls, a failing workflow task's
cause), `closed_tasks` and `failing_workflows` (what a front remembers of both).
"""

from mcp_tasks_temporal.front.gateway.history import Change, HistoryChange, RunClosed
from mcp_tasks_temporal.front.gateway.operations import Settled, TemporalTaskGateway
from mcp_tasks_temporal.front.gateway.reads import (
    FeedItem,
    ListedTask,
    OwnedPage,
    OwnedTask,
    Snapshot,
    TemporalCallFailed,
    WorkflowTask,
    now_ms,
    temporal_errors,
)
from mcp_tasks_temporal.front.gateway.views import task_view, unreadable
from mcp_tasks_temporal.front.gateway.watchers import FEED_SHARDS, STATUS_TOPIC, TRANSITION_TOPIC, feed_shard

__all__ = [
    "FEED_SHARDS",
    "STATUS_TOPIC",
    "TRANSITION_TOPIC",
    "Change",
    "FeedItem",
    "HistoryChange",
    "ListedTask",
    "OwnedPage",
    "OwnedTask",
    "RunClosed",
    "Settled",
    "Snapshot",
    "TemporalCallFailed",
    "TemporalTaskGateway",
    "WorkflowTask",
    "feed_shard",
    "now_ms",
    "task_view",
    "temporal_errors",
    "unreadable",
]
