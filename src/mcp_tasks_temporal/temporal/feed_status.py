"""A running tool's status lines on the task feed, so a front following the feed needs no `describe` for them.

Heartbeat details are in no history event; a front watching many tasks would
have to read each running one every second. The activity of a task that
publishes to the feed sends its newest status line to the task's shard
instead, at most once per `period_s` and only when it changed.
"""

from __future__ import annotations

import base64
import logging

import anyio
from temporalio import activity
from temporalio.contrib.workflow_streams import PublishEntry, PublishInput
from temporalio.service import RPCError

from mcp_tasks_temporal.temporal.contract import StatusDetails
from mcp_tasks_temporal.temporal.feed_contract import STATUS_TOPIC, STREAM_PUBLISH_SIGNAL
from mcp_tasks_temporal.temporal.progress import StatusReporter

logger = logging.getLogger(__name__)


async def publish_status_lines(
    reporter: StatusReporter, feed_workflow_id: str, period_s: float, shown: StatusDetails | None
) -> None:
    """Until cancelled: each new status of `reporter` to the task's feed shard.

    `shown` is the status fronts already have (a retried attempt's, restored from its heartbeat), taken
    before the tool runs: a tool may set its first status before this task first runs, and that one is new.
    """
    workflow_id = activity.info().workflow_id or ""
    shard = activity.client().get_workflow_handle(feed_workflow_id)
    converter = activity.client().data_converter.payload_converter
    sent = shown
    while True:
        await anyio.sleep(period_s)
        current = reporter.current
        if current is None or current == sent:
            continue
        item = {"w": workflow_id, "message": current.message, "at_ms": current.at_ms}
        data = base64.b64encode(converter.to_payloads([item])[0].SerializeToString()).decode()
        try:
            await shard.signal(STREAM_PUBLISH_SIGNAL, PublishInput(items=[PublishEntry(topic=STATUS_TOPIC, data=data)]))
        except RPCError as err:
            # A status line is advisory: the next one, or the front's own read, makes up for it.
            logger.debug("status line of %s not published: %s", workflow_id, err.status.name)
        sent = current
