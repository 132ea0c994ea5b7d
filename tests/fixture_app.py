"""Tools the tests drive through real front servers and workers.

Tools that must be steered from a test wait on files in a directory the test
owns (`gate`), because the tool runs in another process (the worker) and a
file is the simplest event both sides can see.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Annotated

import anyio
from mcp.server.mcpserver import Context, Elicit, ListRoots, MCPServer, Resolve, Sample
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    InputRequiredResult,
    ListRootsResult,
    SamplingMessage,
    TextContent,
)
from pydantic import BaseModel

from mcp_tasks_temporal import ActivityPolicy, TasksExtension, set_status
from mcp_tasks_temporal.temporal.inputs import request_input, request_inputs

# The tests here are about tasks: every task-capable call is answered with its task, however quick its tool.
tasks = TasksExtension(default_poll_interval_ms=250, default_inline_budget_ms=0)
app = MCPServer("fixture-app", version="0.0.1", extensions=[tasks])


async def _wait_for(path: Path) -> None:
    while not path.exists():
        await anyio.sleep(0.05)


@app.tool()
def echo(text: str) -> str:
    """Not a task tool: always synchronous."""
    return text


@app.tool()
async def announce(ctx: Context) -> str:
    """Publishes a core tools-list-changed event (to listens on this front)."""
    await ctx.notify_tools_changed()
    return "announced"


@tasks.tool(policy="optional")
@app.tool()
async def double(x: int) -> dict[str, int]:
    """A quick task with structured output."""
    return {"value": 2 * x}


@tasks.tool(policy="never")
@app.tool()
async def never_task(x: int) -> int:
    """Declared task-incapable: synchronous even for declaring clients."""
    return x + 1


@tasks.tool(policy="required")
@app.tool()
async def needs_task(x: int) -> int:
    """Only runs as a task."""
    return x * 3


@tasks.tool(policy="optional")
@app.tool()
async def gated(gate: str, ctx: Context) -> str:
    """Report progress, then wait until `gate/release` exists; record a cancel in `gate/cancelled`."""
    folder = Path(gate)
    (folder / "started").write_text("1")
    await ctx.report_progress(1, 3, "waiting for release")
    set_status("waiting for the release file")
    try:
        await _wait_for(folder / "release")
    except anyio.get_cancelled_exc_class():
        (folder / "cancelled").write_text("1")
        raise
    runs = folder / "runs"
    runs.write_text(str(int(runs.read_text()) + 1 if runs.exists() else 1))
    return f"released {folder.name}"


@tasks.tool(policy="optional")
@app.tool()
async def tool_error(reason: str = "bad input") -> str:
    """A tool exception: the task completes with isError."""
    raise ValueError(reason)


@tasks.tool(policy="optional")
@app.tool()
async def protocol_error(code: int = -32042, message: str = "backend refused") -> str:
    """A JSON-RPC error: the task fails with exactly this error."""
    raise MCPError(code=code, message=message, data={"retryable": False})


@tasks.tool(policy="optional", ttl_ms=2000)
@app.tool()
async def short_lived(gate: str) -> str:
    """Waits for a release that never comes; its 2 s TTL ends it."""
    folder = Path(gate)
    (folder / "started").write_text("1")
    try:
        await _wait_for(folder / "release")
    except anyio.get_cancelled_exc_class():
        (folder / "cancelled").write_text("1")
        raise
    return "released"


@tasks.tool(policy="optional", ttl_ms=3000)
@app.tool()
async def brief(x: int) -> int:
    """Done at once, gone 3 s after it was created."""
    return x


@tasks.tool(policy="optional", ttl_ms=None)
@app.tool()
async def unlimited(x: int) -> int:
    """A task without a TTL."""
    return x


# -- input requests -------------------------------------------------------------


class Name(BaseModel):
    name: str


class Color(BaseModel):
    color: str


class Size(BaseModel):
    size: str


def ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


def ask_color() -> Elicit[Color]:
    return Elicit("Which color?", Color)


def ask_size() -> Elicit[Size]:
    return Elicit("Which size?", Size)


def ask_model() -> Sample:
    return Sample([SamplingMessage(role="user", content=TextContent(type="text", text="Name a river"))], max_tokens=20)


def ask_roots() -> ListRoots:
    return ListRoots()


@tasks.tool(policy="optional")
@app.tool()
async def greet_someone(who: Annotated[Name, Resolve(ask_name)]) -> str:
    """One elicitation, asked from the task."""
    return f"Hello, {who.name}!"


@tasks.tool(policy="optional", resolve_inputs_first=True)
@app.tool()
async def greet_first(who: Annotated[Name, Resolve(ask_name)]) -> str:
    """The same question, asked on the tools/call before the task exists (MRTR composition)."""
    return f"Hello, {who.name}, from a task!"


@tasks.tool(policy="optional")
@app.tool()
async def pick_variant(color: Annotated[Color, Resolve(ask_color)], size: Annotated[Size, Resolve(ask_size)]) -> str:
    """Two questions outstanding at once."""
    return f"{size.size} {color.color}"


@tasks.tool(policy="optional")
@app.tool()
async def sample_river(reply: Annotated[CreateMessageResult, Resolve(ask_model)]) -> str:
    """A sampling request to the client's model."""
    content = reply.content
    return f"The model said: {content.text if isinstance(content, TextContent) else content}"


@tasks.tool(policy="optional")
@app.tool()
async def count_roots(roots: Annotated[ListRootsResult, Resolve(ask_roots)]) -> str:
    """A roots request."""
    return f"{len(roots.roots)} roots: " + ", ".join(str(r.uri) for r in roots.roots)


def _approval(message: str) -> ElicitRequest:
    schema = {"type": "object", "properties": {"approve": {"type": "boolean"}}, "required": ["approve"]}
    return ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))


def _bump(folder: Path, name: str) -> int:
    counter = folder / name
    value = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(value))
    return value


@tasks.tool(policy="required")
@app.tool()
async def release(gate: str, ctx: Context) -> str | InputRequiredResult:
    """A pipeline in steps: build, then ask for approval, then publish; asks the same key twice.

    Each round runs in its own activity and the wait between rounds is in the
    workflow, so the build never runs again however long the approval takes.
    """
    folder = Path(gate)
    state = json.loads(ctx.request_state) if ctx.request_state else {"step": "build"}
    answers = ctx.input_responses or {}
    if state["step"] == "build":
        build = _bump(folder, "build-runs")
        set_status("built; waiting for approval")
        return InputRequiredResult(
            input_requests={"approve": _approval("Publish the build?")},
            request_state=json.dumps({"step": "approved?", "build": build}),
        )
    answer = answers.get("approve")
    content: dict[str, object] = getattr(answer, "content", None) or {}
    approved = getattr(answer, "action", None) == "accept" and content.get("approve")
    if state["step"] == "approved?":
        if not approved:
            return "not published"
        # The same tool-side key again: the task must show it under a new key.
        return InputRequiredResult(
            input_requests={"approve": _approval("Really publish?")},
            request_state=json.dumps({**state, "step": "really?"}),
        )
    return f"published build {state['build']}" if approved else "not published"


@tasks.tool(policy="required")
@app.tool()
async def ask_midway(gate: str) -> str:
    """Work, then ask in the middle of the same function, then finish."""
    folder = Path(gate)
    _bump(folder, "work-runs")
    set_status("prepared; asking")
    first, second = await _ask_two()
    _bump(folder, "finish-runs")
    return f"{first['action']}/{second['action']}"


async def _ask_two() -> tuple[dict[str, object], dict[str, object]]:
    answers = await request_inputs({"left": _approval("Left?"), "right": _approval("Right?")})
    return answers["left"], answers["right"]


@tasks.tool(policy="optional", asks=["elicitation"])
@app.tool()
async def approve_step(gate: str) -> str:
    """Declares that it asks: a client without `elicitation` is refused before the step runs."""
    _bump(Path(gate), "work-runs")
    answer = await request_input("approve", _approval("Go on?"))
    content: dict[str, object] = answer.get("content") or {}  # pyright: ignore[reportAssignmentType]
    return "approved" if answer.get("action") == "accept" and content.get("approve") else "declined"


@tasks.tool(policy="optional")
@app.tool()
async def build_then_approve(gate: str) -> str:
    """A long build that reports nothing until `gate/built` exists, then asks whether to ship."""
    await _wait_for(Path(gate) / "built")
    answer = await request_input("ship", _approval("Ship the build?"))
    return str(answer.get("action"))


@tasks.tool(policy="required")
@app.tool()
async def ask_one_midway() -> str:
    """`request_input` for a single question."""
    answer = await request_input("only", _approval("Go?"))
    return str(answer.get("action"))


@tasks.tool(policy="optional")
@app.tool()
async def ask_without_capability(ctx: Context) -> str | InputRequiredResult:
    """Returns an elicitation by hand; a client without `elicitation` must not receive it."""
    if ctx.input_responses:
        return "answered"
    return InputRequiredResult(input_requests={"q": _approval("Allowed?")}, request_state="{}")


@tasks.tool(policy="optional")
@app.tool()
async def numbered_steps(steps: int = 8, pause: float = 0.3) -> str:
    """Numbered status messages around a midway question: what a client shows must never count down."""
    set_status("step 0")
    answer = await request_input("go", _approval("Go on?"))
    for number in range(1, steps + 1):
        set_status(f"step {number}")
        await anyio.sleep(pause)
    return f"{answer.get('action')} after {steps} steps"


@tasks.tool(policy="required")
@app.tool()
async def survey(gate: str, ctx: Context) -> str | InputRequiredResult:
    """Waits for `gate/go` (a worker may be killed meanwhile), asks two questions, then waits for a release."""
    folder = Path(gate)
    if not ctx.input_responses:
        _bump(folder, "attempts")
        set_status("preparing the survey")
        await _wait_for(folder / "go")
        return InputRequiredResult(
            input_requests={"color": _approval("Color?"), "size": _approval("Size?")}, request_state="{}"
        )
    set_status("answers in; waiting for release")
    (folder / "answered").write_text("1")
    try:
        await _wait_for(folder / "release")
    except anyio.get_cancelled_exc_class():
        (folder / "cancelled").write_text("1")
        raise
    return "done"


# -- progress timeout ----------------------------------------------------------------

_QUICK_RETRY = ActivityPolicy(initial_retry_interval_s=0.2, maximum_attempts=3)


@tasks.tool(policy="required", progress_timeout=1.5, activity=_QUICK_RETRY)
@app.tool()
async def hangs_once(gate: str) -> str:
    """Goes silent for good on its first attempt (a lost connection, a deadlock); the next attempt finishes."""
    attempt = _bump(Path(gate), "attempts")
    set_status(f"attempt {attempt} started")
    if attempt == 1:
        await anyio.sleep_forever()
    return f"finished on attempt {attempt}"


@tasks.tool(policy="required", progress_timeout=1.5, activity=_QUICK_RETRY)
@app.tool()
async def slow_but_talking(gate: str, seconds: float = 4.0) -> str:
    """Runs well past its progress timeout, reporting all the while."""
    attempt = _bump(Path(gate), "attempts")
    for step in range(int(seconds / 0.25)):
        set_status(f"step {step}")
        await anyio.sleep(0.25)
    return f"finished on attempt {attempt}"


@tasks.tool(policy="required", progress_timeout=1.0, activity=ActivityPolicy(maximum_attempts=1))
@app.tool()
async def asks_and_waits(gate: str) -> str:
    """Waits for its answer far longer than its progress timeout: waiting for the client is not hanging."""
    _bump(Path(gate), "attempts")
    answer = await request_input("go", _approval("Go?"))
    return str(answer.get("action"))


@tasks.tool(policy="required")
@app.tool()
async def vault(codeword: str) -> str:
    """Argument, status, question, answer and result each carry text a test can look for in the history."""
    set_status(f"unlocking {codeword}-status")
    schema = {"type": "object", "properties": {"passphrase": {"type": "string"}}, "required": ["passphrase"]}
    question = ElicitRequestFormParams(message=f"Passphrase for {codeword}-question?", requested_schema=schema)  # pyright: ignore[reportArgumentType]
    answer = await request_input("passphrase", ElicitRequest(params=question))
    return f"opened {codeword}-result with {answer['content']['passphrase']}"


# -- large payloads -------------------------------------------------------------


def pattern(size: int, seed: str) -> str:
    """`size` characters that differ with `seed` and position: a reordered or cut result does not match."""
    return random.Random(seed).randbytes((size + 1) // 2).hex()[:size]


@tasks.tool(policy="optional")
@app.tool()
async def large_text(size: int, seed: str = "large") -> str:
    """A text result of `size` characters, as MCPServer returns it: content text and structuredContent."""
    return pattern(size, seed)


@tasks.tool(policy="optional")
@app.tool(structured_output=False)
async def large_blob(size: int, seed: str = "large") -> str:
    """A text result of `size` characters in `content` only."""
    return pattern(size, seed)


@tasks.tool(policy="optional")
@app.tool()
async def text_length(text: str) -> int:
    """The length of its argument: a tool whose arguments are what is large."""
    return len(text)
