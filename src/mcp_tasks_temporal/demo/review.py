"""`review_code`: a sub-agent that reviews a directory for duplicated code and house rules.

The agent loop runs here, in the workflow; its model requests and its file tools run as
activities (pydantic-ai's Temporal integration), `ask_user` waits in the workflow for the
task's `tasks/update`. Each turn shows as the task's status; the run stops at its turn or
token budget with a result that says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from pydantic import BaseModel, Field
from pydantic_ai import Agent, ModelRetry, RunContext, Tool
from pydantic_ai.durable_exec.temporal import PydanticAIWorkflow, TemporalDurability
from pydantic_ai.exceptions import AgentRunError, ModelAPIError, UsageLimitExceeded
from pydantic_ai.usage import RunUsage, UsageLimits
from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.workflow import ActivityConfig

from mcp_tasks_temporal.contrib.pydantic_ai.sub_agent import (
    ASK_USER_METADATA,
    DEFAULT_MODEL,
    TaskProgress,
    agent_model,
    ask_user,
    configured_model,
)
from mcp_tasks_temporal.demo import review_files
from mcp_tasks_temporal.temporal.workflow_api import set_status

DEFAULT_RULES = (
    "No block of code is duplicated in several places: each copy should be one shared function.",
    "Functions stay short (about 50 lines at most) and do one thing.",
    "No bare `except:` and no silently swallowed errors.",
)


class ReviewRequest(BaseModel):
    path: str = Field(description="Directory to review, relative to the server's review root (or absolute under it).")
    rules: list[str] | None = Field(
        default=None, description="House rules to check, one per item; the server's defaults when omitted."
    )
    max_turns: int = Field(default=12, ge=1, le=100, description="Most model requests the review may make.")
    max_tokens: int = Field(default=200_000, ge=1_000, description="Most tokens (in and out) the review may use.")


class LineRange(BaseModel):
    start: int = Field(ge=1)
    end: int = Field(ge=1)


class Finding(BaseModel):
    file: str = Field(description="Path relative to the reviewed directory.")
    lines: LineRange
    rule: str = Field(description="The rule broken: 'duplicate-code' or the house rule's wording.")
    message: str = Field(description="What is wrong and what to do about it, in a sentence or two.")


class ReviewReport(BaseModel):
    """What the agent finishes with."""

    findings: list[Finding]
    summary: str


class ReviewResult(BaseModel):
    complete: bool = Field(description="False when the review stopped early (budget); the summary says why.")
    summary: str
    findings: list[Finding]
    turns: int = Field(description="Model requests made.")
    tokens: int = Field(description="Tokens used, input and output.")


@dataclass
class ReviewDeps:
    tree: str
    """The reviewed directory, absolute, as checked by `prepare_review`."""


@activity.defn(name="review_code.prepare")
async def prepare_review(path: str) -> str:
    try:
        return str(review_files.resolve_review_path(path))
    except review_files.OutsideTree as exc:
        raise ApplicationError(str(exc), type="InvalidPath", non_retryable=True) from None


def _tree(ctx: RunContext[ReviewDeps]) -> Path:
    return Path(ctx.deps.tree)


async def list_files(ctx: RunContext[ReviewDeps], path: str = ".") -> list[str]:
    """List the files under `path` (relative to the reviewed directory), recursively."""
    try:
        return review_files.list_files(_tree(ctx), path)
    except review_files.OutsideTree as exc:
        raise ModelRetry(str(exc)) from None


async def read_file(ctx: RunContext[ReviewDeps], path: str, start_line: int = 1, end_line: int | None = None) -> str:
    """Read a file (relative to the reviewed directory); each line comes with its number."""
    try:
        return review_files.read_file(_tree(ctx), path, start_line, end_line)
    except review_files.OutsideTree as exc:
        raise ModelRetry(str(exc)) from None


async def find_duplicates(ctx: RunContext[ReviewDeps], path: str = ".", min_lines: int = 5) -> list[dict[str, object]]:
    """Find blocks of the same shape (renamed variables and changed literals included) in several places."""
    try:
        found = review_files.duplicates_in(_tree(ctx), path, min_lines)
    except review_files.OutsideTree as exc:
        raise ModelRetry(str(exc)) from None
    return [
        {"lines": d.lines, "locations": [f"{loc.file}:{loc.start_line}-{loc.end_line}" for loc in d.locations]}
        for d in found[:20]
    ]


INSTRUCTIONS = """\
You review the code in one directory. Every path you pass to a tool is relative to that directory.
Look for blocks of code duplicated in several places (call find_duplicates once, then read the places it
reports) and check the house rules you are given, reading the files you need with list_files and read_file.
If a rule is ambiguous and the answer changes your findings, ask with ask_user (rarely: someone has to answer).
Finish with your findings: one per problem and place, with the file, the line range, the rule
('duplicate-code' for copies) and a short message saying what to do. Report only what you have read."""

review_agent = Agent(
    DEFAULT_MODEL,
    name="review_code",
    deps_type=ReviewDeps,
    output_type=ReviewReport,
    instructions=INSTRUCTIONS,
    retries=3,
    tools=[
        Tool(list_files),
        Tool(read_file),
        Tool(find_duplicates),
        Tool(ask_user, metadata=ASK_USER_METADATA),
    ],
    capabilities=[
        configured_model(),
        TaskProgress(
            {
                "list_files": lambda args: f"listing {args.get('path', '.')}",
                "read_file": lambda args: f"reading {args['path']}",
                "find_duplicates": lambda args: "looking for duplicated blocks",
                "ask_user": lambda args: "waiting for an answer",
            }
        ),
        TemporalDurability(
            activity_config=ActivityConfig(start_to_close_timeout=timedelta(minutes=2)),
            # A local model may take minutes for one answer; a lost endpoint is retried a while, then reported.
            model_activity_config=ActivityConfig(
                start_to_close_timeout=timedelta(minutes=10),
                retry_policy=RetryPolicy(maximum_attempts=8, maximum_interval=timedelta(seconds=30)),
            ),
        ),
    ],
)


def _prompt(request: ReviewRequest) -> str:
    rules = request.rules or list(DEFAULT_RULES)
    listed = "\n".join(f"- {rule}" for rule in rules)
    return f"Review the directory. House rules:\n{listed}"


@workflow.defn(name="review_code")
class ReviewCode(PydanticAIWorkflow):
    """Review a directory for duplicated code and house rules with the server's own model."""

    __pydantic_ai_agents__ = (review_agent,)

    @workflow.run
    async def run(self, request: ReviewRequest) -> ReviewResult:
        set_status("preparing the review")
        try:
            tree = await workflow.execute_activity(
                prepare_review, request.path, start_to_close_timeout=timedelta(seconds=30)
            )
        except ActivityError as exc:
            raise ApplicationError(_cause(exc), non_retryable=True) from None
        model = await agent_model()
        limits = UsageLimits(request_limit=request.max_turns, total_tokens_limit=request.max_tokens)
        usage = RunUsage()
        try:
            async with review_agent.iter(
                _prompt(request), deps=ReviewDeps(tree=tree), model=model, usage_limits=limits
            ) as run:
                async for _ in run:
                    usage = run.usage
                usage = run.usage
                assert run.result is not None
                report = run.result.output
        except UsageLimitExceeded as exc:
            set_status(f"stopped: {exc}")
            return ReviewResult(
                complete=False,
                summary=f"The review stopped before it was finished: {exc}. Raise max_turns or max_tokens to go on.",
                findings=[],
                turns=usage.requests,
                tokens=usage.total_tokens,
            )
        except (ActivityError, ModelAPIError, AgentRunError) as exc:
            raise ApplicationError(f"the review failed: {_cause(exc)}", non_retryable=True) from None
        return ReviewResult(
            complete=True,
            summary=report.summary,
            findings=report.findings,
            turns=usage.requests,
            tokens=usage.total_tokens,
        )


def _cause(exc: BaseException) -> str:
    while isinstance(exc, ActivityError) and exc.cause is not None:
        exc = exc.cause
    return str(exc)
