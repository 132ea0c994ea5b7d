"""The demo `build_pipeline`: a Temporal workflow exposed as an MCP task tool.

Each step is its own activity, so a pipeline interrupted anywhere (Ctrl-C on
`dev`, a crashed worker) resumes at the step it was in; the finished ones are
in the history and never run again. Before publishing it asks the client for
approval and waits, durably and without holding a worker slot, for the answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

from mcp_tasks_temporal.temporal.workflow_api import request_input, set_status

with workflow.unsafe.imports_passed_through():
    from mcp_tasks_temporal.demo.pipeline_steps import BuildStep, build_step

PIPELINE = ("checkout", "resolve dependencies", "compile", "unit tests", "package", "publish")
APPROVAL_STEP = "publish"


@dataclass
class BuildRequest:
    ref: str = "main"
    """The git ref to build."""
    step_seconds: float = 2.0
    """How long each (simulated) step takes."""


def approval_question(ref: str) -> dict[str, object]:
    return {
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": f"Publish {ref}?",
            "requestedSchema": {
                "type": "object",
                "properties": {"approve": {"type": "boolean", "title": "Publish this build"}},
                "required": ["approve"],
            },
        },
    }


@workflow.defn(name="demo.BuildPipeline")
class BuildPipeline:
    """Run a multi-step build of `ref` (checkout, compile, test, package), then publish it once approved."""

    @workflow.run
    async def run(self, request: BuildRequest) -> str:
        artifact = ""
        for number, step in enumerate(PIPELINE, start=1):
            if step == APPROVAL_STEP:
                set_status(f"waiting for approval to publish {request.ref} ({number - 1}/{len(PIPELINE)})")
                answer = await request_input("approve", approval_question(request.ref))
                if answer.get("action") != "accept" or answer.get("content", {}).get("approve") is not True:
                    return f"Built {request.ref} as artifact {artifact}; not published (approval declined)"
            set_status(f"{step} ({request.ref}) ({number}/{len(PIPELINE)})")
            artifact = await workflow.execute_activity(
                build_step,
                BuildStep(request.ref, step, request.step_seconds),
                start_to_close_timeout=timedelta(minutes=10),
                heartbeat_timeout=timedelta(seconds=10),
                retry_policy=RetryPolicy(maximum_attempts=5),
            )
        return f"Built and published {request.ref} as artifact {artifact} in {len(PIPELINE)} steps"
