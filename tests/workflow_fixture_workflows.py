"""Workflows the tests expose as MCP tools. Sandboxed like any user's workflow: no passthrough set-up."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError

from mcp_tasks_temporal.temporal.workflow_api import can_ask, request_input, request_inputs, set_status, task_error

with workflow.unsafe.imports_passed_through():
    from tests.workflow_fixture_activities import refuse, run_step
    from tests.workflow_fixture_models import (
        FailureRequest,
        Greeting,
        LoopState,
        PipelineRequest,
        PipelineResult,
        Questions,
        StepInput,
    )

APPROVE = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "Deploy?",
        "requestedSchema": {"type": "object", "properties": {"approve": {"type": "boolean"}}, "required": ["approve"]},
    },
}
SAMPLE = {
    "method": "sampling/createMessage",
    "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "Summarise"}}], "maxTokens": 50},
}
QUICK_RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=200), maximum_interval=timedelta(seconds=1))


@workflow.defn
class GreetingWorkflow:
    """Greets someone: a samples-style workflow that knows nothing about MCP."""

    @workflow.run
    async def run(self, greeting: Greeting) -> str:
        return f"Hello, {greeting.name}{greeting.punctuation}"


@workflow.defn(name="ReleasePipeline")
class PipelineWorkflow:
    """Runs each step as an activity, reports it, and asks before deploying."""

    @workflow.run
    async def run(self, request: PipelineRequest) -> PipelineResult:
        done: list[str] = []
        for number, step in enumerate(request.steps, start=1):
            if step == request.approve_before:
                answer = await request_input("approve", APPROVE)
                if answer.get("action") != "accept" or not answer.get("content", {}).get("approve"):
                    set_status(f"not deployed ({len(done)}/{len(request.steps)})")
                    return PipelineResult(ref=request.ref, steps=done, deployed=False)
            set_status(f"{step} ({number}/{len(request.steps)})")
            await workflow.execute_activity(
                run_step,
                StepInput(request.effects, step, gated=step == request.gate_step),
                start_to_close_timeout=timedelta(minutes=5),
                heartbeat_timeout=timedelta(seconds=3),
                retry_policy=QUICK_RETRY,
            )
            done.append(step)
        return PipelineResult(ref=request.ref, steps=done, deployed=request.approve_before is not None)


@workflow.defn
class FailingWorkflow:
    """Fails in the way its input names."""

    @workflow.run
    async def run(self, request: FailureRequest) -> str:
        if request.mode == "application-error":
            raise ApplicationError("disk full on builder-3")
        if request.mode == "task-error":
            raise task_error(-32050, "Release window closed", {"opensAt": "09:00"})
        if request.mode in ("activity-json-rpc", "activity-crash"):
            await workflow.execute_activity(
                refuse,
                "json-rpc" if request.mode == "activity-json-rpc" else "crash",
                start_to_close_timeout=timedelta(seconds=30),
                retry_policy=RetryPolicy(maximum_attempts=1),
            )
        if request.mode == "hang":
            set_status("hanging")
            await workflow.execute_activity(
                run_step,
                StepInput(request.effects, "hang", gated=True),
                start_to_close_timeout=timedelta(minutes=5),
                heartbeat_timeout=timedelta(seconds=3),
            )
        return "no failure"


@workflow.defn
class LoopingWorkflow:
    """Continues-as-new each round; optionally asks a question in its last run."""

    @workflow.run
    async def run(self, state: LoopState) -> dict[str, Any]:
        set_status(f"round {state.round} of {state.until}")
        if state.effects:
            await workflow.execute_activity(
                run_step,
                StepInput(state.effects, f"round-{state.round}", gated=True),
                start_to_close_timeout=timedelta(minutes=5),
                heartbeat_timeout=timedelta(seconds=3),
            )
        if state.round < state.until:
            workflow.continue_as_new(LoopState(state.round + 1, state.until, state.ask_at_end, state.effects))
        answer = None
        if state.ask_at_end:
            answer = await request_input(f"confirm-{state.round}", APPROVE)
        info = workflow.info()
        return {"rounds": state.round, "continued": info.run_id != info.first_execution_run_id, "answer": answer}


@workflow.defn
class QuestionsWorkflow:
    """Asks several questions at once and returns the answers."""

    @workflow.run
    async def run(self, questions: Questions) -> dict[str, Any]:
        asked: dict[str, Any] = {}
        if "elicitation" in questions.kinds:
            asked["approve"] = APPROVE
            asked["reviewer"] = {
                "method": "elicitation/create",
                "params": {"message": "Reviewer?", "requestedSchema": {"type": "object", "properties": {}}},
            }
        if "sampling" in questions.kinds:
            asked["summary"] = SAMPLE
        set_status("waiting for answers")
        answers = await request_inputs(asked)
        set_status("answered")
        return answers


@workflow.defn
class NothingWorkflow:
    """Takes nothing, returns nothing."""

    @workflow.run
    async def run(self) -> None:
        set_status("did nothing")


@workflow.defn
class WaitingWorkflow:
    """Asks, then sleeps for days with a durable timer: waits of any length cost no worker slot."""

    @workflow.run
    async def run(self, days: int) -> list[str]:
        answer = await request_input("go", APPROVE)
        await workflow.sleep(timedelta(days=days))
        return ["waited", str(answer.get("action"))]


@workflow.defn
class OptionalApprovalWorkflow:
    """Asks for approval when the client can answer, and goes on without it otherwise."""

    @workflow.run
    async def run(self) -> str:
        if not can_ask(APPROVE):
            return "decided alone"
        answer = await request_input("approve", APPROVE)
        return str(answer.get("action"))
