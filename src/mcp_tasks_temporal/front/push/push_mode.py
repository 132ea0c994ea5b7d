"""How a front follows the tasks it pushes: the task feed, or one history long poll per task.

`feed` (the default) follows the feed's shards: a few long polls per front,
however many tasks it watches; a task this front starts publishes to them once
a listen names it. `poll` follows each watched task's history. Either mode
serves every task: a task not on the feed is followed through its history in
feed mode too.
"""

from __future__ import annotations

from mcp_tasks_temporal.front.gateway import TemporalTaskGateway
from mcp_tasks_temporal.front.push.task_watch import TaskWatchHub
from mcp_tasks_temporal.front.settings import PushMode


def push_hub(gateway: TemporalTaskGateway, mode: PushMode, *, give_up_after_s: float) -> TaskWatchHub:
    """The hub of this front's push mode; in feed mode the tasks it starts publish to the feed."""
    if mode == "feed":
        from mcp_tasks_temporal.front.push.feed_watch import FeedWatchHub

        hub = FeedWatchHub(gateway, give_up_after_s=give_up_after_s)
        gateway.feed_runs = hub.follows_shard_of
        return hub
    return TaskWatchHub(gateway, give_up_after_s=give_up_after_s)
