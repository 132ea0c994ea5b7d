"""The mcp 1.x `ClientSession` (newest 1.x), against live fronts, from its own venv (tests/interop/mcp1).

mcp 1.x speaks 2025-11-25 over the `initialize` handshake and declares `elicitation` once it is given
a callback. A plain call of a task tool or a workflow tool is held open as a task: its questions come
back as `elicitation/create` on the call's stream, its status lines as `notifications/progress` when
the call carries a `progressToken` (mcp 1.x sends one whenever a progress callback is given). mcp 1.x
never sends `notifications/cancelled` itself (cancelling the awaiting coroutine only stops the wait);
a host that sends one with the call's request ID cancels the call's task. The experimental SEP-1686
API (`session.experimental`) drives the same workflows as 2025-11-25 tasks.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Stack
from tests.interop.conftest import MATCHES, PIPELINE_STATUS, WAIT
from tests.interop.mcp1_venv import Mcp1Clients
from tests.processes import wait_until


def test_the_handshake_and_the_tool_list(demo_stack: Stack, mcp1: Mcp1Clients) -> None:
    report = mcp1.run("mcp1", "list", demo_stack.url)
    assert report["protocol_version"] == "2025-11-25"
    assert report["server_tasks"] is True
    assert {"build_pipeline", "search_logs", "add"} <= set(report["tools"])


def test_a_long_call_reports_progress_and_returns_its_result(demo_stack: Stack, mcp1: Mcp1Clients) -> None:
    arguments = {"pattern": "release", "seconds_per_file": 1.2}
    report = mcp1.run("mcp1", "call", demo_stack.url, tool="search_logs", arguments=arguments)
    assert report["result"] == {"is_error": False, "text": MATCHES, "structured": {"result": MATCHES}}
    messages = [update["message"] for update in report["progress"]]
    assert messages[0] == "searching audit.log (1/3), 0 matches so far"
    assert len(messages) >= 2


def test_the_demo_question_is_answered_inside_the_call(demo_stack: Stack, mcp1: Mcp1Clients) -> None:
    arguments = {"ref": "v1", "step_seconds": 0.2}
    report = mcp1.run("mcp1", "call", demo_stack.url, tool="build_pipeline", arguments=arguments)
    assert report["questions"] == ["Publish v1?"]
    assert report["result"]["text"][0].startswith("Built and published v1 as artifact")
    # A workflow tool's status lines are history events: every one arrives, in order.
    assert [update["message"] for update in report["progress"]] == PIPELINE_STATUS
    assert [update["progress"] for update in report["progress"]] == list(range(1, len(PIPELINE_STATUS) + 1))


def test_notifications_cancelled_cancels_a_tool_call(stack: Stack, mcp1: Mcp1Clients, gate: Path) -> None:
    arguments = {"gate": str(gate)}
    report = mcp1.run("mcp1", "cancel", stack.url, tool="gated", arguments=arguments, wait_for=str(gate / "started"))
    wait_until((gate / "cancelled").exists, timeout=WAIT, what="the tool's cancel")
    assert "result" not in report and "still_waiting" not in report
    assert not (gate / "runs").exists()


def test_notifications_cancelled_cancels_a_workflow_tool_call(wf_stack: Stack, mcp1: Mcp1Clients, gate: Path) -> None:
    arguments = {"ref": "v3", "effects": str(gate), "gate_step": "compile"}
    wait_for = str(gate / "ran-compile")
    report = mcp1.run("mcp1", "cancel", wf_stack.url, tool="release", arguments=arguments, wait_for=wait_for)
    wait_until((gate / "cancelled-compile").exists, timeout=WAIT, what="the workflow's cancel")
    assert "result" not in report and "still_waiting" not in report
    assert not (gate / "ran-test").exists()


def test_the_experimental_task_api_answers_the_demo_question(demo_stack: Stack, mcp1: Mcp1Clients) -> None:
    arguments = {"ref": "v2", "step_seconds": 0.2}
    report = mcp1.run("mcp1", "task", demo_stack.url, tool="build_pipeline", arguments=arguments)
    assert report["created"] == "working"
    assert report["questions"] == ["Publish v2?"]
    assert report["result"]["text"][0].startswith("Built and published v2 as artifact")
    assert report["final"] == "completed"


def test_the_experimental_task_api_cancels(stack: Stack, mcp1: Mcp1Clients, gate: Path) -> None:
    arguments = {"gate": str(gate)}
    wait_for = str(gate / "started")
    report = mcp1.run("mcp1", "task_cancel", stack.url, tool="gated", arguments=arguments, wait_for=wait_for)
    assert report["cancel"] == "cancelled"
    assert report["final"] == "cancelled"
    wait_until((gate / "cancelled").exists, timeout=WAIT, what="the tool's cancel")
