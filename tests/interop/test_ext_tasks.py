"""The official ext-tasks client (`@modelcontextprotocol/ext-tasks` on the TypeScript SDK) against live fronts.

Each flow runs tests/interop/js/ext_tasks_client.mjs once and reads the outcome it prints.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Stack
from tests.interop.node import NodeClients

SCRIPT = "ext_tasks_client.mjs"


def test_a_plain_call_and_a_task_tool_called_plainly(stack: Stack, node: NodeClients) -> None:
    report = node.run_json(SCRIPT, stack.url, "plain")
    assert report["echo"]["kind"] == "immediate"
    assert report["echo"]["result"]["content"][0]["text"] == "plain"
    assert report["double"]["kind"] == "task"
    assert report["double"]["result"]["structuredContent"] == {"value": 42}


def test_an_explicit_task(stack: Stack, node: NodeClients) -> None:
    report = node.run_json(SCRIPT, stack.url, "task")
    assert report["kind"] == "task" and report["taskId"]
    assert report["status"] == "completed"
    assert report["result"]["content"][0]["text"] == "15"


def test_a_question_is_answered_through_its_input_handler(stack: Stack, node: NodeClients, gate: Path) -> None:
    report = node.run_json(SCRIPT, stack.url, "question", str(gate))
    assert report["status"] == "completed"
    assert report["result"]["content"][0]["text"] == "approved"
    assert report["questions"] == ["Go on?"]
    assert (gate / "work-runs").read_text() == "1"


def test_cancel(stack: Stack, node: NodeClients, gate: Path) -> None:
    report = node.run_json(SCRIPT, stack.url, "cancel", str(gate))
    assert report["kind"] == "task"
    assert report["status"] == "cancelled"


def test_a_failing_tool_is_an_error_result_and_a_json_rpc_error_a_failed_task(stack: Stack, node: NodeClients) -> None:
    tool_error = node.run_json(SCRIPT, stack.url, "tool-error")
    assert tool_error["status"] == "completed"
    assert tool_error["result"]["isError"] is True
    protocol_error = node.run_json(SCRIPT, stack.url, "protocol-error")
    assert protocol_error["status"] == "failed"
    assert protocol_error["error"]["code"] == -32042


def test_a_workflow_tool_with_questions(wf_stack: Stack, node: NodeClients) -> None:
    report = node.run_json(SCRIPT, wf_stack.url, "workflow-question")
    assert report["status"] == "completed"
    assert sorted(report["questions"]) == ["Deploy?", "Reviewer?"]
    assert report["result"]["structuredContent"]["approve"] == {"action": "accept", "content": {"approve": True}}
