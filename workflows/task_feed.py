"""`TaskFeedWorkflow`: one shard of the task change feed (`feed_contract`), a workflow stream that never ends.

Task workflows publish to it with the stream's publish signal; fronts follow it
with the stream's long-poll update, from the offset they reached. It keeps the
last `retained_items` items and continues as new before its history grows
large, carrying those items, so a front's offset stays valid across the chain.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import VersioningBehavior
from temporalio.contrib.workflow_streams import WorkflowStream

with workflow.unsafe.imports_passed_through():
    from mcp_tasks_temporal.temporal.feed_contract import TASK_FEED_WORKFLOW, TaskFeedInput


@workflow.defn(name=TASK_FEED_WORKFLOW)
class TaskFeedWorkflow:
    """Holds one shard's stream; all its work is in the stream's handlers."""

    @workflow.init
    def __init__(self, feed: TaskFeedInput) -> None:
        self.stream = WorkflowStream(prior_state=feed.state)

    @workflow.run
    async def run(self, feed: TaskFeedInput) -> None:
        await workflow.wait_condition(
            lambda: (
                workflow.info().is_continue_as_new_suggested()
                or workflow.info().get_current_history_length() >= feed.continue_after_events
            )
        )
        state = self.stream.get_state()
        self.stream.truncate(max(0, state.base_offset + len(state.log) - feed.retained_items))
        await self.stream.continue_as_new(
            lambda state: [
                TaskFeedInput(
                    shard=feed.shard,
                    state=state,
                    continue_after_events=feed.continue_after_events,
                    retained_items=feed.retained_items,
                )
            ]
        )


@workflow.defn(name=TASK_FEED_WORKFLOW, versioning_behavior=VersioningBehavior.AUTO_UPGRADE)
class AutoUpgradeTaskFeedWorkflow(TaskFeedWorkflow):
    """On a versioned worker: a feed moves to the current build at its next step (it never ends on its own)."""

    @workflow.run
    async def run(self, feed: TaskFeedInput) -> None:
        await super().run(feed)
