"""openai-agents' `MCPServerStreamableHttp`, its tools called directly (`call_tool`, no model), over real HTTP.

openai-agents 0.24 on mcp 2.x builds the SDK's `Client(mode="auto")`: 2026-07-28, no
`initialize`, `clientCapabilities` `{}` (it takes no elicitation, sampling or roots
callback, nor a progress callback: no `progressToken`). Its `client_session_timeout_seconds`
(5 s by default; a second here, so no test waits for it) bounds every request: a longer call
ends with `-32001` and the client closes the call's stream, which cancels the call's task, so
a host that runs long tools raises it. Cancelling the awaiting coroutine closes the stream as well.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from agents.mcp import MCPServerStreamableHttp
from mcp.shared.exceptions import MCPError

from tests.interop.conftest import MATCHES, WAIT

pytestmark = pytest.mark.anyio

REQUEST_TIMEOUT = -32001
"""The mcp SDK's code for a request its client stopped waiting for."""
LONG_ENOUGH_S = 60
SHORT_S = 1.0
"""A session timeout the tests outlast: the default's 5 s, shortened."""


def server(url: str, **options: Any) -> MCPServerStreamableHttp:
    return MCPServerStreamableHttp({"url": url}, **options)


async def until_file(path: Path) -> None:
    with anyio.fail_after(WAIT):
        while not path.exists():
            await anyio.sleep(0.05)


async def test_the_tools_are_listed(demo_url: str) -> None:
    async with server(demo_url) as demo:
        names = {tool.name for tool in await demo.list_tools()}
    assert {"build_pipeline", "search_logs", "add"} <= names


async def test_a_call_longer_than_a_session_timeout_completes_with_a_longer_one(demo_url: str) -> None:
    arguments = {"pattern": "release", "seconds_per_file": SHORT_S / 2}  # three files: past SHORT_S
    async with server(demo_url, client_session_timeout_seconds=LONG_ENOUGH_S) as demo:
        result = await demo.call_tool("search_logs", arguments)
    assert result.structured_content == {"result": MATCHES}


async def test_the_session_timeout_ends_the_call_and_cancels_its_task(wf_url: str, gate: Path) -> None:
    arguments = {"ref": "v5", "effects": str(gate), "gate_step": "compile"}
    async with server(wf_url, client_session_timeout_seconds=SHORT_S) as pipeline:
        with pytest.raises(MCPError) as timed_out:
            await pipeline.call_tool("release", arguments)
    assert timed_out.value.code == REQUEST_TIMEOUT
    assert (gate / "ran-compile").exists()
    await until_file(gate / "cancelled-compile")
    assert not (gate / "ran-test").exists()


async def test_a_cancelled_tool_call_cancels_the_tool(front_url: str, gate: Path) -> None:
    async with server(front_url, client_session_timeout_seconds=LONG_ENOUGH_S) as fixtures:
        async with anyio.create_task_group() as group:
            group.start_soon(fixtures.call_tool, "gated", {"gate": str(gate)})
            await until_file(gate / "started")
            group.cancel_scope.cancel()
    await until_file(gate / "cancelled")
    assert not (gate / "runs").exists()


async def test_a_cancelled_workflow_tool_call_cancels_its_task(wf_url: str, gate: Path) -> None:
    arguments = {"ref": "v6", "effects": str(gate), "gate_step": "compile"}
    async with server(wf_url, client_session_timeout_seconds=LONG_ENOUGH_S) as pipeline:
        async with anyio.create_task_group() as group:
            group.start_soon(pipeline.call_tool, "release", arguments)
            await until_file(gate / "ran-compile")
            group.cancel_scope.cancel()
    await until_file(gate / "cancelled-compile")
    assert not (gate / "ran-test").exists()


async def test_the_demo_question_is_refused_naming_elicitation(demo_url: str) -> None:
    """Without an elicitation callback the client cannot answer: the error says what would make it able to."""
    async with server(demo_url, client_session_timeout_seconds=LONG_ENOUGH_S) as demo:
        with pytest.raises(MCPError) as refused:
            await demo.call_tool("build_pipeline", {"ref": "v1", "step_seconds": 0.2})
    assert refused.value.code == -32021
    assert "elicitation" in refused.value.error.data["requiredCapabilities"]
