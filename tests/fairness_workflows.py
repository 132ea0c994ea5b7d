"""A workflow tool for the fairness test: it answers with the priority its run was started with."""

from __future__ import annotations

from temporalio import workflow


@workflow.defn(name="fairness.Prioritised")
class PrioritisedWorkflow:
    @workflow.run
    async def run(self, label: str) -> str:
        priority = workflow.info().priority
        return f"{label} {priority.fairness_key or '-'} {priority.priority_key or '-'}"
