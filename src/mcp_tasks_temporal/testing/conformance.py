"""The official conformance suite's fixture tools, served as tasks on Temporal.

Run it with `mcp-tasks-temporal dev --app mcp_tasks_temporal.testing.conformance:app`
and point `npx @modelcontextprotocol/conformance server --url .../mcp` at it.
Names, arguments and behaviours are the ones the suite calls (see its
`src/scenarios/server/tasks/*.ts`).
"""

from __future__ import annotations

from typing import Annotated

import anyio
from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve, Sample
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, CreateMessageResult, SamplingMessage, TextContent
from pydantic import BaseModel

from mcp_tasks_temporal.front.extension import TasksExtension
from mcp_tasks_temporal.temporal.progress import set_status

tasks = TasksExtension(default_poll_interval_ms=200)
app = MCPServer("mcp-tasks-temporal-conformance", version="1.0.0", extensions=[tasks])


@app.tool()
def greet(name: str) -> str:
    """Say hello, synchronously (never a task)."""
    return f"Hello, {name}!"


@tasks.tool(policy="optional")
@app.tool()
async def slow_compute(seconds: float = 1, label: str = "job") -> str:
    """Work for `seconds`, reporting progress each second."""
    elapsed = 0.0
    while elapsed < seconds:
        set_status(f"{label}: {elapsed:g}/{seconds:g}s")
        step = min(1.0, seconds - elapsed)
        await anyio.sleep(step)
        elapsed += step
    return f"{label} finished after {seconds:g}s"


# The suite wants a task of each tool below however quick it is (`inline_budget_ms=0`); `slow_compute` and the
# tools that ask keep the default budget: a 0 s `slow_compute` is answered in the call, which the suite allows
# (`tasks-immediate-result-shortcut`), and one of a second or more, or a question, with the task.
@tasks.tool(policy="required", inline_budget_ms=0)
@app.tool()
async def failing_job() -> str:
    """A tool error: the task completes with `isError: true`."""
    raise RuntimeError("the job failed")


@tasks.tool(policy="optional", inline_budget_ms=0)
@app.tool()
async def protocol_error_job() -> str:
    """A JSON-RPC error: the task ends `failed`."""
    raise MCPError(code=INTERNAL_ERROR, message="Upstream service rejected the request")


class Confirmation(BaseModel):
    confirm: bool


def ask_confirmation(filename: str) -> Elicit[Confirmation]:
    return Elicit(f"Delete {filename}?", Confirmation)


@tasks.tool(policy="optional")
@app.tool()
async def confirm_delete(filename: str, answer: Annotated[Confirmation, Resolve(ask_confirmation)]) -> str:
    """Ask for confirmation before deleting a file."""
    return f"Deleted {filename}" if answer.confirm else f"Kept {filename}"


class Choice(BaseModel):
    """The shape of the suite's answers to `multi_input` (`{name, confirm}`): answers are checked against it."""

    name: str
    confirm: bool = False


def ask_first() -> Elicit[Choice]:
    return Elicit("Which first option?", Choice)


def ask_second() -> Elicit[Choice]:
    return Elicit("Which second option?", Choice)


@tasks.tool(policy="optional")
@app.tool()
async def multi_input(
    first: Annotated[Choice, Resolve(ask_first)], second: Annotated[Choice, Resolve(ask_second)]
) -> str:
    """Ask two questions at once."""
    return f"{first.name} and {second.name}"


class UserName(BaseModel):
    name: str


def ask_user_name() -> Elicit[UserName]:
    return Elicit("What is your name?", UserName)


@tasks.tool(policy="required", resolve_inputs_first=True, inline_budget_ms=0)
@app.tool()
async def test_tool_with_task(user_name: Annotated[UserName, Resolve(ask_user_name)]) -> str:
    """Ask for a name before the task exists, then greet in the task."""
    return f"Hello, {user_name.name}!"


def ask_model() -> Sample:
    return Sample([SamplingMessage(role="user", content=TextContent(type="text", text="Say hi"))], max_tokens=16)


@app.tool()
async def test_missing_capability(reply: Annotated[CreateMessageResult, Resolve(ask_model)], ctx: Context) -> str:
    """Needs `sampling`: a client that did not declare it gets -32021."""
    return str(reply.content)
