"""langchain-mcp-adapters' `MultiServerMCPClient` (streamable HTTP), against live fronts.

It requires mcp<2, so it runs from the mcp 1.x venv (tests/interop/mcp1). Each tool call
opens a session of its own: 2025-11-25, `initialize` declaring `elicitation` when the
client has `Callbacks(on_elicitation=...)`, and `_meta.progressToken` when it has
`on_progress`. A plain call of a task tool or workflow tool is held open as a task; its
question comes back as `elicitation/create` on the call's stream, its status lines as
`notifications/progress`. Cancelling the tool's coroutine closes that session (a DELETE,
then the stream): the front cancels the call's task. No `notifications/cancelled` is sent.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Stack
from tests.interop.conftest import MATCHES, PIPELINE_STATUS, WAIT
from tests.interop.mcp1_venv import Mcp1Clients
from tests.processes import wait_until


def test_the_tools_are_listed(demo_stack: Stack, mcp1: Mcp1Clients) -> None:
    report = mcp1.run("langchain", "list", demo_stack.url)
    assert {"build_pipeline", "search_logs", "add"} <= set(report["tools"])


def test_a_long_call_reports_progress_and_returns_its_result(demo_stack: Stack, mcp1: Mcp1Clients) -> None:
    arguments = {"pattern": "release", "seconds_per_file": 1.2}
    report = mcp1.run("langchain", "call", demo_stack.url, tool="search_logs", arguments=arguments)
    result = report["result"]
    assert result["status"] == "success"
    assert [block["text"] for block in result["content"]] == MATCHES
    assert result["artifact"] == {"structured_content": {"result": MATCHES}}
    messages = [update["message"] for update in report["progress"]]
    assert messages[0] == "searching audit.log (1/3), 0 matches so far"
    assert len(messages) >= 2


def test_the_demo_question_goes_to_on_elicitation(demo_stack: Stack, mcp1: Mcp1Clients) -> None:
    arguments = {"ref": "v1", "step_seconds": 0.2}
    report = mcp1.run("langchain", "call", demo_stack.url, tool="build_pipeline", arguments=arguments)
    assert report["questions"] == ["Publish v1?"]
    assert report["result"]["content"][0]["text"].startswith("Built and published v1 as artifact")
    assert [update["message"] for update in report["progress"]] == PIPELINE_STATUS


def test_a_cancelled_tool_call_cancels_its_task(stack: Stack, mcp1: Mcp1Clients, gate: Path) -> None:
    arguments = {"gate": str(gate)}
    report = mcp1.run(
        "langchain", "cancel", stack.url, tool="gated", arguments=arguments, wait_for=str(gate / "started")
    )
    assert report["cancelled"] is True
    wait_until((gate / "cancelled").exists, timeout=WAIT, what="the tool's cancel")
    assert not (gate / "runs").exists()


def test_a_cancelled_workflow_tool_call_cancels_its_task(wf_stack: Stack, mcp1: Mcp1Clients, gate: Path) -> None:
    arguments = {"ref": "v3", "effects": str(gate), "gate_step": "compile"}
    wait_for = str(gate / "ran-compile")
    report = mcp1.run("langchain", "cancel", wf_stack.url, tool="release", arguments=arguments, wait_for=wait_for)
    assert report["cancelled"] is True
    wait_until((gate / "cancelled-compile").exists, timeout=WAIT, what="the workflow's cancel")
    assert not (gate / "ran-test").exists()
